/* joblimits.h — the bounds a job obeys: the lengths of names, paths,
 * messages and the job file itself, and the largest counts and durations
 * a key may take. Apart from job.h so that the reader of a job file's
 * text (jobtext.c) needs nothing of the parser: job.c calls jobtext, never
 * the other way. */
#ifndef HERD_JOBLIMITS_H
#define HERD_JOBLIMITS_H

#define JOB_NAME_MAX 64
#define JOB_PATH_MAX 1024
#define JOB_ERR_MAX 1536
#define JOB_KEYS_MAX 96           /* job_key_count() <= JOB_KEYS_MAX */
#define JOB_BACKENDS_MAX 8        /* backends built into one herd */
#define JOB_BACKEND_OPTS_MAX 1536 /* bytes of a backend's options in struct phase */
#define JOB_KIND_OPTS_MAX 256     /* bytes of the kinds' own options in struct phase */
#define JOB_FILE_MAX (1 << 20)    /* a job file is at most 1 MiB */
#define JOB_META_MAX 10000000     /* meta: files and dirs per rank, at most */
#define JOB_DURATION_MAX 604800.0 /* every duration: at most one week */
#define JOB_RANKS_MAX 10000000    /* -n RANKS, at most */
#define JOB_CLIENTS_MAX 4096      /* clients_per_rank, at most (fiber.h's FIBER_MAX) */
#define JOB_LABEL_MAX 129         /* label: at most 128 bytes */
#define JOB_LINK_CHARS                                                                             \
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789=,._:+-" /* link's */

#endif
