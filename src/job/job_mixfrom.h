/* job_mixfrom.h — a mix phase from two mountstats snapshots of a real
 * client (parse/mixfrom.h): the files read, the mount chosen, and the
 * job lines that make one herd client behave like that client. For
 * `herd mix-from` and the job key mix_from. */
#ifndef HERD_JOB_MIXFROM_H
#define HERD_JOB_MIXFROM_H

#include <stddef.h>
#include <stdio.h>

#include "mixfrom.h"

struct job_mixfrom {
    struct mixfrom m;
    char device[256], mount[256]; /* the mount whose counters these are */
    char fstype[16];
    char vers[16]; /* the opts line's vers=, "" when not said */
    /* Corrected by a replay (job_mixfrom_correct): the mix the replay
     * ran, and what the client sent then against what was wanted, as a
     * comment ("getattr 76.8% (74.9%), ..."); "" when not corrected. */
    char ran[MIXSPEC_TEXT_MAX];
    char replayed[1024];
};

/* Read the snapshots at before and after (regular files, at most
 * TEXTFILE_PROC_MAX), take the NFS mount at mount ("" or NULL: the only
 * NFS mount in after) and compute its mix over seconds (<= 0: the
 * difference of the mount's age: lines). 0, or -1 with one line in err. */
int job_mixfrom_load(const char *before, const char *after, const char *mount, double seconds,
                     struct job_mixfrom *out, char *err, size_t len);

/* "BEFORE,AFTER" (the key mix_from, --replay): BEFORE into before (blen
 * bytes), *after at AFTER. 0, or -1 when text is not two non-empty names
 * around one comma (or BEFORE does not fit). */
int job_mixfrom_pair(const char *text, char *before, size_t blen, const char **after);

/* The file_size a mix from m gets: 16 blocks, at least 64 KiB. */
uint64_t job_mixfrom_file_size(const struct mixfrom *m);

/* Correct j's mix by a replay (mixfrom_correct): replay is
 * "BEFORE,AFTER", two snapshots of the same client's mountstats around a
 * herd run of mix ran (NULL or "": j's own mix, as first printed), read
 * as job_mixfrom_load reads (mount, seconds). 0, or -1 with one line in
 * err. */
int job_mixfrom_correct(struct job_mixfrom *j, const char *replay, const char *ran,
                        const char *mount, double seconds, char *err, size_t len);

/* The job lines: comments saying where they come from and what is left
 * out, then [section] with kind = mix, mix, rate, block_size and a
 * file_size that holds 16 blocks. */
void job_mixfrom_print(FILE *out, const struct job_mixfrom *m, const char *section);

#endif
