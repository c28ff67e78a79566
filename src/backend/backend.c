/* backend.c — the list of backends built into this herd (and one built
 * from a file outside src/: -DHERD_EXTRA_BACKEND, docs/extending.md), and
 * which backend a target's form asks for (backend_for_target: a URL's
 * scheme, else a path, posix's). */
#include "backend.h"

#include <stdio.h>
#include <string.h>

/* The built-in backends' ops tables, each defined in its backend_NAME.c. */
extern const struct backend_ops backend_fault;
#ifdef HERD_HAVE_LIBNFS
extern const struct backend_ops backend_libnfs;
#endif
#ifdef HERD_HAVE_SMB
extern const struct backend_ops backend_smb;
#endif

/* A backend built from a file outside src/ (cmake -DHERD_EXTRA_BACKEND=
 * FILE.c, docs/extending.md): its ops table's name. */
#ifdef HERD_EXTRA_BACKEND
extern const struct backend_ops HERD_EXTRA_BACKEND;
#endif

static const struct backend_ops *const backends[] = {
    &backend_posix,      &backend_fault,
#ifdef HERD_HAVE_LIBNFS
    &backend_libnfs,
#endif
#ifdef HERD_HAVE_SMB
    &backend_smb,
#endif
#ifdef HERD_EXTRA_BACKEND
    &HERD_EXTRA_BACKEND,
#endif
};

#define NBACKENDS (sizeof backends / sizeof backends[0])

const struct backend_ops *backend_at(size_t i)
{
    return i < NBACKENDS ? backends[i] : NULL;
}

const char *backend_library_version(const char *library)
{
    for (size_t i = 0; i < NBACKENDS; i++)
        if (backends[i]->library && strcmp(backends[i]->library, library) == 0)
            return backends[i]->version();
    return NULL;
}

const struct backend_ops *backend_find(const char *name)
{
    for (size_t i = 0; i < NBACKENDS; i++)
        if (strcmp(backends[i]->name, name) == 0)
            return backends[i];
    return NULL;
}

/* The backends a build may leave out, by their targets' scheme, with the
 * CMake setting that builds them in: a target of theirs is refused by
 * name when they are not here. */
static const struct {
    const char *scheme, *backend, *setting;
} optional[] = {
    {"nfs", "libnfs", "build it with libnfs: HERD_WITH_LIBNFS=ON, Spack's +libnfs"},
    {"smb", "smb", "build it with libsmbclient: HERD_WITH_SMBCLIENT=ON, Spack's +smb"},
};
#define NOPTIONAL (sizeof optional / sizeof optional[0])

/* The length of target's scheme (3 for nfs://...), 0 for a path. */
static size_t scheme_len(const char *target)
{
    size_t n = strspn(target, "abcdefghijklmnopqrstuvwxyz0123456789+.-");
    return n > 0 && target[0] >= 'a' && target[0] <= 'z' && strncmp(target + n, "://", 3) == 0 ? n
                                                                                               : 0;
}

/* Whether scheme (NULL: a path) is the n-byte scheme at target. */
static bool scheme_is(const char *scheme, const char *target, size_t n)
{
    return scheme ? strlen(scheme) == n && strncmp(scheme, target, n) == 0 : n == 0;
}

/* The first backend built in for the n-byte scheme at target (0: a path),
 * or NULL. */
static const struct backend_ops *backend_of_scheme(const char *target, size_t n)
{
    for (size_t i = 0; i < NBACKENDS; i++)
        if (scheme_is(backends[i]->scheme, target, n))
            return backends[i];
    return NULL;
}

/* The backend this build left out that takes the n-byte scheme at target
 * (or is called name), or -1. */
static int optional_left_out(const char *target, size_t n, const char *name)
{
    for (size_t i = 0; i < NOPTIONAL; i++)
        if ((name ? strcmp(optional[i].backend, name) == 0
                  : scheme_is(optional[i].scheme, target, n)) &&
            !backend_find(optional[i].backend))
            return (int)i;
    return -1;
}

/* Who takes target, for a message: "nfs:// is libnfs's: leave backend
 * out", or why nothing here does. */
static void target_taker(const char *target, size_t n, char *buf, size_t len)
{
    const struct backend_ops *be = backend_of_scheme(target, n);
    int left = optional_left_out(target, n, NULL);
    if (be && n)
        snprintf(buf, len, "%.*s:// is %s's: leave backend out", (int)n, target, be->name);
    else if (be)
        snprintf(buf, len, "a path is %s's: leave backend out", be->name);
    else if (left >= 0)
        snprintf(buf, len, "%.*s:// is %s's, which this herd was built without: %s", (int)n, target,
                 optional[left].backend, optional[left].setting);
    else
        snprintf(buf, len, "no backend of this herd takes %.*s://", (int)n, target);
}

const char *backend_for_target(const char *named, const char *target, char *why, size_t len)
{
    size_t n = scheme_len(target);
    char taker[192];
    if (named) {
        const struct backend_ops *be = backend_find(named);
        int left = optional_left_out(target, n, named);
        if (left >= 0) {
            snprintf(why, len, "this herd was built without the %s backend: %s", named,
                     optional[left].setting);
            return NULL;
        }
        if (!be || scheme_is(be->scheme, target, n))
            return named;
        target_taker(target, n, taker, sizeof taker);
        if (be->scheme)
            snprintf(why, len, "backend = %s needs target = %s://..., not '%s' (%s)", named,
                     be->scheme, target, taker);
        else
            snprintf(why, len,
                     "backend = %s works on a directory path, not on target '%s' (%s; or mount "
                     "it and give the mount point)",
                     named, target, taker);
        return NULL;
    }
    const struct backend_ops *be = backend_of_scheme(target, n);
    if (be)
        return be->name;
    target_taker(target, n, taker, sizeof taker);
    snprintf(why, len, "target '%s': %s%s", target, taker,
             n ? "; or mount it and give the mount point" : "");
    return NULL;
}
