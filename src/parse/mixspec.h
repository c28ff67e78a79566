/* mixspec.h — a mix phase's operations and their weights, as text and
 * as a table to draw from: "getattr:40,lookup:15,read:20,write:10".
 * Pure: parse text, pick an op for a number in [0, 1).
 *
 * Grammar: ITEM ( "," ITEM )*, at most MIX_OPS items; ITEM = NAME ":"
 * WEIGHT; NAME = a mix operation's name (mixspec_ops lists them; remove
 * and commit are also taken, for unlink and fsync, as mountstats names
 * them); WEIGHT = a decimal number above 0 (digits, at most one '.').
 * Invariant: a parsed spec has n >= 1 distinct ops whose cumulative
 * shares rise strictly to exactly 1, so mixspec_pick always picks one. */
#ifndef HERD_MIXSPEC_H
#define HERD_MIXSPEC_H

#include <stdbool.h>
#include <stddef.h>

#define MIX_OPS 24
#define MIXSPEC_TEXT_MAX 512 /* the key's text, at most */

/* Ops are enum op values (ops.h), held as int so that this header may go
 * where another header defines names like OP_READ (libnfs's NFSv4). */
struct mix_spec {
    int n;
    int op[MIX_OPS];
    double weight[MIX_OPS]; /* as written */
    double upto[MIX_OPS];   /* cumulative share: op[i] for draws below upto[i] */
};

/* The ops a mix can name, in enum op order, -1 ended. */
extern const int mixspec_ops[];

/* Parse text into spec. NULL, or what is wrong, in why. */
const char *mixspec_parse(const char *text, struct mix_spec *spec, char *why, size_t len);

/* The op a draw u in [0, 1) picks. */
int mixspec_pick(const struct mix_spec *spec, double u);

/* Op's share of the spec's calls (0 when it names none). */
double mixspec_share(const struct mix_spec *spec, int op);

/* The share of the calls that read, write or cut a file's data: read,
 * read_file, write, write_file, append, truncate (over NFSv4 the calls
 * that carry an open's stateid, which renew the client's lease). */
double mixspec_data_share(const struct mix_spec *spec);

/* Whether the spec names lock. */
bool mixspec_locks(const struct mix_spec *spec);

#endif
