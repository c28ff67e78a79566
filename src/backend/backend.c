/* backend.c — the list of backends built into this herd. */
#include "backend.h"

#include <string.h>

static const struct backend_ops *const backends[] = {
    &backend_posix,
    &backend_fault,
#ifdef HERD_HAVE_LIBNFS
    &backend_libnfs,
#endif
#ifdef HERD_HAVE_SMB
    &backend_smb,
#endif
};

const char *backend_library_version(const char *library)
{
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        if (backends[i]->library && strcmp(backends[i]->library, library) == 0)
            return backends[i]->version();
    return NULL;
}

const struct backend_ops *backend_find(const char *name)
{
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        if (strcmp(backends[i]->name, name) == 0)
            return backends[i];
    return NULL;
}
