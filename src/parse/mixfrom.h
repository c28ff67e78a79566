/* mixfrom.h — a mix phase that behaves like a real NFS client: the
 * difference of two mountstats snapshots of one of its mounts, each of
 * the client's per-op counts mapped to herd's mix operations, as
 * weights, a rate and a block size (`herd mix-from`, and the job key
 * mix_from). Pure: counts in, text and numbers out.
 *
 * The map (mountstats op -> mix op): GETATTR getattr; SETATTR setattr;
 * LOOKUP lookup (its failed ones, the errors column, lookup_missing);
 * ACCESS access; READ read; WRITE write; COMMIT fsync; CREATE create;
 * REMOVE unlink; RENAME rename; MKDIR mkdir; RMDIR rmdir; READDIR and
 * READDIRPLUS readdir; LOCK lock (NFSv4: a LOCK with its LOCKU). Every
 * other op with calls (NULL, OPEN, CLOSE, READLINK, FSSTAT, RENEW...) is
 * named in left_out with its rate: herd reproduces none of them. */
#ifndef HERD_MIXFROM_H
#define HERD_MIXFROM_H

#include <stddef.h>
#include <stdint.h>

#include "mixspec.h"
#include "mountstats.h"

struct mixfrom {
    double seconds;             /* between the snapshots */
    char mix[MIXSPEC_TEXT_MAX]; /* the mix key's value: percents of the calls reproduced */
    double rate;                /* calls/s reproduced (the rate key's value) */
    double all_rate;            /* every op's calls/s, those left out too */
    uint64_t block_size;        /* the larger direction's average READ or WRITE, in 4 KiB */
    double read_per_s, read_size, write_per_s, write_size; /* as the client sent them */
    char left_out[512];                                    /* "FSSTAT 0.2/s, OPEN 3.1/s"; "" none */
    /* Each reproduced op's share of the reproduced calls (sum 1), in
     * mixspec_ops order: the mix before its text's rounding. */
    int nshares;
    int share_op[MIX_OPS];
    double share[MIX_OPS];
};

/* delta: after - before (mountstats_delta), over seconds (> 0). 0, or -1
 * with why (no call at all, no second). */
int mixfrom_compute(const struct mountstats *delta, double seconds, struct mixfrom *out, char *why,
                    size_t len);

/* Op's share of m's reproduced calls, 0 when m has none of it. */
double mixfrom_share(const struct mixfrom *m, int op);

/* The mix corrected by a replay: a herd run of mix `ran` through the
 * same kind of client made it send the shares of `replay` (its own
 * mixfrom), where the shares of `target` were wanted. Each op of target
 * gets ran's share of it x its target share / its replayed share, so
 * that an op the client's caches answered without a call (replayed
 * share below target) is asked more often, and one the client adds
 * calls of its own to (an open's GETATTR) less; an op the replay never
 * sent keeps ran's share (no evidence), or target's where ran lacks it;
 * an op of ran that target lacks is dropped. Written into mix as
 * mix-key text (percents). 0, or -1 with why (replay sent no call). */
int mixfrom_correct(const struct mixfrom *target, const struct mixfrom *replay,
                    const struct mix_spec *ran, char *mix, size_t mixlen, char *why, size_t len);

#endif
