/* errtab.h — per-rank error accounting: one entry per (op, errno,
 * protocol status) with a count and the first failing path and time;
 * also an errno's symbolic name and which errnos say a connection was
 * lost or refused. Nothing here aborts. */
#ifndef HERD_ERRTAB_H
#define HERD_ERRTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops.h"

#define ERRTAB_PATH_MAX 256
#define ERRTAB_STATUS_MAX 32

struct err_entry {
    int32_t rank;
    int32_t op;     /* enum op */
    int32_t err;    /* positive errno value */
    int32_t client; /* the rank's client that failed (clients_per_rank) */
    uint64_t count;
    double first_time; /* common clock, seconds */
    char first_path[ERRTAB_PATH_MAX];
    /* The protocol's name for the failure ("NLM4_DENIED_GRACE_PERIOD",
     * "NFS4ERR_GRACE"), "" when it said nothing more: part of the key, so
     * one errno from two protocol statuses is two entries. */
    char status[ERRTAB_STATUS_MAX];
};

struct errtab {
    struct err_entry *entries;
    size_t n, cap;
    uint64_t total;
};

void errtab_init(struct errtab *t);
void errtab_free(struct errtab *t);
void errtab_clear(struct errtab *t);
/* Count one failure; err may be given negative or positive. */
void errtab_add(struct errtab *t, int rank, enum op op, int err, const char *path, double when);
/* The same, with the protocol's status (NULL or "" = none). */
void errtab_add_status(struct errtab *t, int rank, enum op op, int err, const char *status,
                       const char *path, double when);
/* Add every entry of from (one client's table) to t as entries of their
 * own, with rank and client set, and from's total to t's. Without memory
 * the entries are lost and the total still counts. */
void errtab_absorb(struct errtab *t, const struct errtab *from, int rank, int client);
/* Count of failures recorded for (op, err), whatever their status. */
uint64_t errtab_count(const struct errtab *t, enum op op, int err);

/* Whether errno err (either sign) says a connection is gone: the server
 * closed or reset it (ECONNRESET, EPIPE, ENOTCONN, ECONNABORTED,
 * ESHUTDOWN) or refused a new one (ECONNREFUSED). */
bool errtab_connection_lost(int err);

/* The symbolic name of errno e (either sign): "EROFS" for 30, "E<n>" for
 * a value nobody names. */
void errtab_errno_name(int e, char *buf, size_t len);

#endif
