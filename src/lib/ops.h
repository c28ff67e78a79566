/* ops.h — the operation vocabulary shared by error tables, latency
 * histograms and results: every timed or counted call is one of these. */
#ifndef HERD_OPS_H
#define HERD_OPS_H

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
    OP_CONNECT,   /* (re)connecting a backend to its target */
    OP_RPC_READ,  /* one READ RPC a backend kept in flight: its round trip */
    OP_RPC_WRITE, /* one WRITE RPC likewise */
    OP_COUNT
};

/* Stable lower-case name ("open", "read", ...), used in results.h5. */
const char *op_name(enum op op);

#endif
