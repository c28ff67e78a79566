/* backend_mem.c — the skeleton of a herd backend, built into a test herd
 * by `cmake -DHERD_EXTRA_BACKEND=tests/skeleton/backend_mem.c` (docs/
 * extending.md): this file is all a new backend needs. It keeps each
 * rank's files in the rank's own memory (nothing is shared between ranks,
 * nothing reaches a disk), so a job of unique files writes, reads back,
 * verifies and digests without storage: `backend = mem`.
 *
 * What every backend must keep (src/backend/backend.h): every call
 * returns 0 or a byte count, or a negative errno; paths are relative to
 * the target and pass safepath_check; nothing aborts. Locks are not
 * offered (lock = NULL: herd check refuses lock phases). Its one option,
 * mem_file_max, shows how a backend declares its own keys. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend.h"
#include "job.h"
#include "safepath.h"

#define MEM_PATH_MAX 1024

/* The backend's job-file options: a struct in the phase's backend_opts
 * block, one key row per member (the table refuses them on other
 * backends, applies bounds and defaults, lists them in `herd keys` and
 * writes them into the results file). */
struct mem_opts {
    uint64_t file_max; /* mem_file_max: one file's bytes, at most */
};
JOB_OPTS_FIT(struct mem_opts);

JOB_KEY_ROWS_BEGIN
static const struct job_key mem_keys[] = {
    {"mem_file_max", KEY_SIZE, JOB_OPTS_MEMBER(struct mem_opts, file_max), NULL, "1G",
     "mem: bytes one file may hold; a write beyond fails with EFBIG", .bounds = KEY_MIN | KEY_MAX,
     .min = 4096, .max = 1ull << 34},
};
JOB_KEY_ROWS_END

struct mem_node {
    char path[MEM_PATH_MAX]; /* "" : the target itself; "\n" : removed */
    bool dir;
    unsigned char *data;
    size_t size, cap;
};

struct mem_ctx {
    struct mem_node *nodes;
    size_t n, cap;
    uint64_t file_max; /* the running phase's mem_file_max */
};

struct backend_file {
    size_t node; /* index into the context's nodes: they move, indexes do not */
};

static long mem_find(const struct mem_ctx *c, const char *path)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->nodes[i].path, path) == 0)
            return (long)i;
    return -1;
}

/* The node of path's parent directory: >= 0, or -ENOENT / -ENOTDIR. */
static long mem_parent(const struct mem_ctx *c, const char *path)
{
    char parent[MEM_PATH_MAX];
    const char *slash = strrchr(path, '/');
    size_t len = slash ? (size_t)(slash - path) : 0;
    memcpy(parent, path, len);
    parent[len] = '\0';
    long p = mem_find(c, parent);
    if (p < 0)
        return -ENOENT;
    return c->nodes[p].dir ? p : -ENOTDIR;
}

static long mem_add(struct mem_ctx *c, const char *path, bool dir)
{
    if (strlen(path) >= MEM_PATH_MAX)
        return -ENAMETOOLONG;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        struct mem_node *grown = realloc(c->nodes, cap * sizeof *grown);
        if (!grown)
            return -ENOMEM;
        c->nodes = grown;
        c->cap = cap;
    }
    struct mem_node *node = &c->nodes[c->n];
    memset(node, 0, sizeof *node);
    strcpy(node->path, path);
    node->dir = dir;
    return (long)c->n++;
}

/* A path herd may use (safepath's rule), its node (or -ENOENT). */
static long mem_lookup(const struct mem_ctx *c, const char *path)
{
    int rc = safepath_check(path);
    if (rc < 0)
        return rc;
    long i = mem_find(c, path);
    return i < 0 ? -ENOENT : i;
}

static int mem_connect(const char *target, const struct phase *ph, const char *client, void **ctx)
{
    (void)target, (void)ph, (void)client;
    struct mem_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    if (mem_add(c, "", true) < 0) { /* the target: an empty directory */
        free(c);
        return -ENOMEM;
    }
    c->file_max = UINT64_MAX; /* before a phase (the run directory's lock file): no bound */
    *ctx = c;
    return 0;
}

/* Each phase's options before it runs (ph NULL: the clean-up). */
static int mem_configure(void *ctx, const struct phase *ph)
{
    const struct mem_opts *o = ph ? job_backend_opts(ph) : NULL;
    ((struct mem_ctx *)ctx)->file_max = o ? o->file_max : UINT64_MAX;
    return 0;
}

static void mem_disconnect(void *ctx)
{
    struct mem_ctx *c = ctx;
    for (size_t i = 0; i < c->n; i++)
        free(c->nodes[i].data);
    free(c->nodes);
    free(c);
}

static int mem_open(void *ctx, const char *path, int flags, struct backend_file **f)
{
    struct mem_ctx *c = ctx;
    long i = mem_lookup(c, path);
    if (i >= 0 && (flags & BACKEND_CREATE) && (flags & BACKEND_EXCL))
        return -EEXIST;
    if (i == -ENOENT && (flags & BACKEND_CREATE)) {
        long p = mem_parent(c, path);
        i = p < 0 ? p : mem_add(c, path, false);
    }
    if (i < 0)
        return (int)i;
    if (c->nodes[i].dir)
        return -EISDIR;
    *f = malloc(sizeof **f);
    if (!*f)
        return -ENOMEM;
    (*f)->node = (size_t)i;
    return 0;
}

static ssize_t mem_pread(void *ctx, struct backend_file *f, void *buf, size_t len, uint64_t offset)
{
    const struct mem_node *node = &((struct mem_ctx *)ctx)->nodes[f->node];
    if (offset >= node->size)
        return 0;
    size_t n = node->size - offset < len ? node->size - (size_t)offset : len;
    memcpy(buf, node->data + offset, n);
    return (ssize_t)n;
}

static ssize_t mem_pwrite(void *ctx, struct backend_file *f, const void *buf, size_t len,
                          uint64_t offset)
{
    struct mem_ctx *c = ctx;
    struct mem_node *node = &c->nodes[f->node];
    if (offset > c->file_max || len > c->file_max - offset)
        return -EFBIG;
    size_t end = (size_t)offset + len;
    if (end > node->cap) {
        size_t cap = node->cap ? node->cap : 65536;
        while (cap < end)
            cap *= 2;
        unsigned char *grown = realloc(node->data, cap);
        if (!grown)
            return -ENOSPC;
        node->data = grown;
        node->cap = cap;
    }
    if (offset > node->size) /* a hole reads as zeros */
        memset(node->data + node->size, 0, (size_t)offset - node->size);
    memcpy(node->data + offset, buf, len);
    if (end > node->size)
        node->size = end;
    return (ssize_t)len;
}

static int mem_fsync(void *ctx, struct backend_file *f)
{
    (void)ctx, (void)f;
    return 0; /* memory is as durable as it gets here */
}

static int mem_close(void *ctx, struct backend_file *f)
{
    (void)ctx;
    free(f);
    return 0;
}

static int mem_stat(void *ctx, const char *path, struct stat *st)
{
    struct mem_ctx *c = ctx;
    long i = mem_lookup(c, path);
    if (i < 0)
        return (int)i;
    memset(st, 0, sizeof *st);
    st->st_mode = c->nodes[i].dir ? S_IFDIR | 0755 : S_IFREG | 0644;
    st->st_size = (off_t)c->nodes[i].size;
    st->st_nlink = 1;
    return 0;
}

/* A removed node stays as a tombstone: open files keep their index. */
static void mem_remove(struct mem_ctx *c, long i)
{
    struct mem_node *node = &c->nodes[i];
    free(node->data);
    memset(node, 0, sizeof *node);
    strcpy(node->path, "\n"); /* no path herd uses has a new line */
}

static int mem_unlink(void *ctx, const char *path)
{
    struct mem_ctx *c = ctx;
    long i = mem_lookup(c, path);
    if (i < 0)
        return (int)i;
    if (c->nodes[i].dir)
        return -EISDIR;
    mem_remove(c, i);
    return 0;
}

static int mem_mkdir(void *ctx, const char *path)
{
    struct mem_ctx *c = ctx;
    long i = mem_lookup(c, path);
    if (i >= 0)
        return -EEXIST;
    if (i != -ENOENT)
        return (int)i;
    long p = mem_parent(c, path);
    if (p < 0)
        return (int)p;
    long made = mem_add(c, path, true);
    return made < 0 ? (int)made : 0;
}

/* Whether any node lies beneath directory path. */
static bool mem_has_children(const struct mem_ctx *c, const char *path)
{
    size_t len = strlen(path);
    for (size_t i = 0; i < c->n; i++)
        if (strncmp(c->nodes[i].path, path, len) == 0 && c->nodes[i].path[len] == '/')
            return true;
    return false;
}

static int mem_rmdir(void *ctx, const char *path)
{
    struct mem_ctx *c = ctx;
    long i = mem_lookup(c, path);
    if (i < 0)
        return (int)i;
    if (!c->nodes[i].dir)
        return -ENOTDIR;
    if (path[0] == '\0')
        return -EBUSY; /* the target itself */
    if (mem_has_children(c, path))
        return -ENOTEMPTY;
    mem_remove(c, i);
    return 0;
}

/* A file renamed over another file replaces it; a directory moves with
 * everything beneath it. */
static int mem_rename(void *ctx, const char *from, const char *to)
{
    struct mem_ctx *c = ctx;
    long i = mem_lookup(c, from);
    if (i < 0)
        return (int)i;
    int rc = safepath_check(to);
    if (rc < 0)
        return rc;
    long p = mem_parent(c, to);
    if (p < 0)
        return (int)p;
    long j = mem_find(c, to);
    if (j >= 0 && (c->nodes[j].dir || c->nodes[i].dir))
        return c->nodes[j].dir ? -EISDIR : -ENOTDIR;
    size_t fl = strlen(from), tl = strlen(to);
    for (size_t k = 0; k < c->n; k++) {
        char *q = c->nodes[k].path;
        if (strncmp(q, from, fl) == 0 && (q[fl] == '\0' || q[fl] == '/')) {
            if (tl + strlen(q + fl) >= MEM_PATH_MAX)
                return -ENAMETOOLONG;
        }
    }
    if (j >= 0)
        mem_remove(c, j);
    for (size_t k = 0; k < c->n; k++) {
        char *q = c->nodes[k].path;
        if (strncmp(q, from, fl) == 0 && (q[fl] == '\0' || q[fl] == '/')) {
            char moved[MEM_PATH_MAX];
            strcpy(moved, to);
            strcat(moved, q + fl);
            strcpy(q, moved);
        }
    }
    return 0;
}

const struct backend_ops backend_mem = {
    .name = "mem",
    .rank_private = true, /* each rank's store is its own */
    .keys = mem_keys,
    .nkeys = sizeof mem_keys / sizeof mem_keys[0],
    .connect = mem_connect,
    .configure = mem_configure,
    .disconnect = mem_disconnect,
    .open = mem_open,
    .pread = mem_pread,
    .pwrite = mem_pwrite,
    .fsync = mem_fsync,
    .close = mem_close,
    .stat = mem_stat,
    .unlink = mem_unlink,
    .mkdir = mem_mkdir,
    .rmdir = mem_rmdir,
    .rename = mem_rename,
};
