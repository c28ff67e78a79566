/* ops.c — names of the operations in ops.h. */
#include "ops.h"

static const char *const op_names[OP_COUNT] = {
    [OP_OPEN] = "open",
    [OP_READ] = "read",
    [OP_WRITE] = "write",
    [OP_FSYNC] = "fsync",
    [OP_CLOSE] = "close",
    [OP_MD5] = "md5",
    [OP_MKDIR] = "mkdir",
    [OP_UNLINK] = "unlink",
    [OP_RMDIR] = "rmdir",
    [OP_STAT] = "stat",
    [OP_RENAME] = "rename",
    [OP_LOCK] = "lock",
    [OP_GETATTR] = "getattr",
    [OP_SETATTR] = "setattr",
    [OP_TRUNCATE] = "truncate",
    [OP_ACCESS] = "access",
    [OP_READDIR] = "readdir",
    [OP_LOOKUP] = "lookup",
    [OP_LOOKUP_MISSING] = "lookup_missing",
    [OP_CREATE] = "create",
    [OP_READ_FILE] = "read_file",
    [OP_WRITE_FILE] = "write_file",
    [OP_APPEND] = "append",
    [OP_CONNECT] = "connect",
    [OP_RPC_READ] = "rpc_read",
    [OP_RPC_WRITE] = "rpc_write",
    [OP_RESPONSE] = "response",
    [OP_SERVICE] = "service",
    [OP_LAG] = "lag",
};

const char *op_name(enum op op)
{
    return (op >= 0 && op < OP_COUNT) ? op_names[op] : "unknown";
}

bool op_is_call(enum op op)
{
    return op >= 0 && op < OP_CONNECT;
}
