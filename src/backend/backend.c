/* backend.c — the list of backends built into this herd. */
#include "backend.h"

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
