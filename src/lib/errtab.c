/* errtab.c — per-rank error table: one entry per (op, errno, protocol
 * status) holding a count and where and when that failure was first seen. Grows as needed;
 * if memory runs out the failure still counts in the total. */
#include "errtab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERRTAB_FIRST_CAP 16

void errtab_init(struct errtab *t)
{
    t->entries = NULL;
    t->n = 0;
    t->cap = 0;
    t->total = 0;
}

void errtab_free(struct errtab *t)
{
    free(t->entries);
    errtab_init(t);
}

void errtab_clear(struct errtab *t)
{
    t->n = 0;
    t->total = 0;
}

static int32_t errtab_norm(int err)
{
    if (err >= 0)
        return err;
    return err == INT32_MIN ? INT32_MAX : -err;
}

static struct err_entry *errtab_find(const struct errtab *t, enum op op, int32_t err,
                                     const char *status)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->entries[i].op == (int32_t)op && t->entries[i].err == err &&
            strncmp(t->entries[i].status, status, ERRTAB_STATUS_MAX - 1) == 0)
            return &t->entries[i];
    return NULL;
}

static int errtab_grow(struct errtab *t)
{
    size_t cap = t->cap ? t->cap * 2 : ERRTAB_FIRST_CAP;
    struct err_entry *e;

    if (cap < t->cap || cap > SIZE_MAX / sizeof(*e))
        return -1;
    e = realloc(t->entries, cap * sizeof(*e));
    if (!e)
        return -1;
    t->entries = e;
    t->cap = cap;
    return 0;
}

void errtab_add(struct errtab *t, int rank, enum op op, int err, const char *path, double when)
{
    errtab_add_status(t, rank, op, err, NULL, path, when);
}

void errtab_add_status(struct errtab *t, int rank, enum op op, int err, const char *status,
                       const char *path, double when)
{
    int32_t e = errtab_norm(err);
    if (!status)
        status = "";
    struct err_entry *ent = errtab_find(t, op, e, status);

    t->total++;
    if (ent) {
        ent->count++;
        return;
    }
    if (t->n == t->cap && errtab_grow(t) != 0)
        return;
    ent = &t->entries[t->n++];
    memset(ent, 0, sizeof(*ent));
    ent->rank = rank;
    ent->op = (int32_t)op;
    ent->err = e;
    ent->count = 1;
    ent->first_time = when;
    size_t slen = strnlen(status, ERRTAB_STATUS_MAX - 1);
    memcpy(ent->status, status, slen);
    ent->status[slen] = '\0';
    if (path) {
        size_t len = strnlen(path, ERRTAB_PATH_MAX - 1);
        memcpy(ent->first_path, path, len);
        ent->first_path[len] = '\0';
    }
}

void errtab_absorb(struct errtab *t, const struct errtab *from, int rank, int client)
{
    t->total += from->total;
    for (size_t i = 0; i < from->n; i++) {
        if (t->n == t->cap && errtab_grow(t) != 0)
            return;
        struct err_entry *e = &t->entries[t->n++];
        *e = from->entries[i];
        e->rank = rank;
        e->client = client;
    }
}

uint64_t errtab_count(const struct errtab *t, enum op op, int err)
{
    int32_t e = errtab_norm(err);
    uint64_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->entries[i].op == (int32_t)op && t->entries[i].err == e)
            n += t->entries[i].count;
    return n;
}

bool errtab_connection_lost(int err)
{
    int32_t e = errtab_norm(err);
    return e == ECONNRESET || e == EPIPE || e == ENOTCONN || e == ECONNABORTED || e == ESHUTDOWN ||
           e == ECONNREFUSED;
}

/* clang-format off */
#define ERRNO_ENTRY(e) {e, #e}
static const struct {
    int value;
    const char *name;
} errno_names[] = {
    ERRNO_ENTRY(EPERM),        ERRNO_ENTRY(ENOENT),       ERRNO_ENTRY(ESRCH),
    ERRNO_ENTRY(EINTR),        ERRNO_ENTRY(EIO),          ERRNO_ENTRY(ENXIO),
    ERRNO_ENTRY(E2BIG),        ERRNO_ENTRY(EBADF),        ERRNO_ENTRY(EAGAIN),
    ERRNO_ENTRY(ENOMEM),       ERRNO_ENTRY(EACCES),       ERRNO_ENTRY(EFAULT),
    ERRNO_ENTRY(EBUSY),        ERRNO_ENTRY(EEXIST),       ERRNO_ENTRY(EXDEV),
    ERRNO_ENTRY(ENODEV),       ERRNO_ENTRY(ENOTDIR),      ERRNO_ENTRY(EISDIR),
    ERRNO_ENTRY(EINVAL),       ERRNO_ENTRY(ENFILE),       ERRNO_ENTRY(EMFILE),
    ERRNO_ENTRY(ETXTBSY),      ERRNO_ENTRY(EFBIG),        ERRNO_ENTRY(ENOSPC),
    ERRNO_ENTRY(ESPIPE),       ERRNO_ENTRY(EROFS),        ERRNO_ENTRY(EMLINK),
    ERRNO_ENTRY(EPIPE),        ERRNO_ENTRY(EDEADLK),      ERRNO_ENTRY(ENAMETOOLONG),
    ERRNO_ENTRY(ENOLCK),       ERRNO_ENTRY(ENOSYS),       ERRNO_ENTRY(ENOTEMPTY),
    ERRNO_ENTRY(ELOOP),        ERRNO_ENTRY(EOVERFLOW),    ERRNO_ENTRY(ENOTSUP),
    ERRNO_ENTRY(EOPNOTSUPP),   ERRNO_ENTRY(ECANCELED),    ERRNO_ENTRY(ETIMEDOUT),
    ERRNO_ENTRY(ECONNREFUSED), ERRNO_ENTRY(ECONNRESET),   ERRNO_ENTRY(ECONNABORTED),
    ERRNO_ENTRY(ENOTCONN),     ERRNO_ENTRY(EHOSTUNREACH), ERRNO_ENTRY(ENETUNREACH),
    ERRNO_ENTRY(ENETDOWN),     ERRNO_ENTRY(ESTALE),       ERRNO_ENTRY(EDQUOT),
#ifdef EREMOTEIO
    ERRNO_ENTRY(EREMOTEIO),
#endif
};
/* clang-format on */

/* "EROFS" for 30; "E<n>" for a value nobody names. */
void errtab_errno_name(int e, char *buf, size_t len)
{
    if (e < 0)
        e = -e;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
    const char *name = strerrorname_np(e);
    if (name != NULL) {
        snprintf(buf, len, "%s", name);
        return;
    }
#endif
    for (size_t i = 0; i < sizeof errno_names / sizeof errno_names[0]; i++) {
        if (errno_names[i].value == e) {
            snprintf(buf, len, "%s", errno_names[i].name);
            return;
        }
    }
    snprintf(buf, len, "E%d", e);
}
