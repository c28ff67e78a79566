/* ops.h — the operation vocabulary shared by error tables, latency
 * histograms and results: every timed or counted call is one of these. */
#ifndef HERD_OPS_H
#define HERD_OPS_H

#include <stdbool.h>

enum op {
    OP_OPEN,
    OP_READ,
    OP_WRITE,
    OP_FSYNC,
    OP_CLOSE,
    OP_MD5, /* digest of one whole file (or segment) */
    OP_MKDIR,
    OP_UNLINK,
    OP_RMDIR,
    OP_STAT,
    OP_RENAME,
    OP_LOCK,
    /* A mix phase's calls besides those above (kind = mix): */
    OP_GETATTR,        /* the attributes of an open file (NFS GETATTR) */
    OP_SETATTR,        /* an open file's mode (SETATTR) */
    OP_TRUNCATE,       /* an open file's size (SETATTR of the size) */
    OP_ACCESS,         /* may this user read and write an open file (ACCESS) */
    OP_READDIR,        /* a directory listed whole (READDIRPLUS) */
    OP_LOOKUP,         /* a name that exists, by name (LOOKUP) */
    OP_LOOKUP_MISSING, /* a name that does not (LOOKUP answered NOENT) */
    OP_CREATE,         /* a new empty file, created and closed (CREATE) */
    OP_READ_FILE,      /* a whole file read (READs) */
    OP_WRITE_FILE,     /* a whole file written again (WRITEs) */
    OP_APPEND,         /* a block written at a file's end (WRITE) */
    OP_CONNECT,        /* (re)connecting a backend to its target */
    OP_RPC_READ,       /* one READ RPC a backend kept in flight: its round trip */
    OP_RPC_WRITE,      /* one WRITE RPC likewise */
    /* A paced call (rate > 0: one on its client's schedule, pace.h), as
     * measured whole: */
    OP_RESPONSE, /* from its intended instant to its end */
    OP_SERVICE,  /* from its send to its end */
    OP_LAG,      /* herd's own delay: from its instant (or the client's ready time) to its send */
    OP_COUNT
};

/* Stable lower-case name ("open", "read", ...), used in results.h5. */
const char *op_name(enum op op);

/* Whether op is a call a workload makes (open, read, lock...), counted in
 * calls/s; not a backend's connect, its RPCs' round trips or a paced
 * call's response, service and lag, which time calls already counted. */
bool op_is_call(enum op op);

#endif
