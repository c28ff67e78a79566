/* smb_lib.c — libsmbclient loaded on first use (smb_lib.h). */
#include "smb_lib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static struct smb_lib smb_lib_table;
static const struct smb_lib *smb_lib_loaded;

/* The address of symbol `smbc_<name>` into *slot (a function pointer's
 * bytes: ISO C has no cast from an object pointer to a function pointer).
 * 0, or -1 with why filled. */
static int smb_lib_resolve(void *library, const char *name, void *slot, char *why, size_t len)
{
    char symbol[64];
    snprintf(symbol, sizeof symbol, "smbc_%s", name);
    void *address = dlsym(library, symbol);
    if (!address) {
        snprintf(why, len, "%s has no %s (%s)", SMB_LIB_SONAME, symbol, dlerror());
        return -1;
    }
    memcpy(slot, &address, sizeof address);
    return 0;
}

const struct smb_lib *smb_lib_load(char *why, size_t len)
{
    if (smb_lib_loaded)
        return smb_lib_loaded;
    void *library = dlopen(SMB_LIB_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(why, len, "cannot load %s, which the smb backend calls (%s)", SMB_LIB_SONAME,
                 dlerror());
        return NULL;
    }
    struct smb_lib table;
#define SMB_LIB_RESOLVE(name)                                                                      \
    if (smb_lib_resolve(library, #name, &table.name, why, len) < 0) {                              \
        dlclose(library);                                                                          \
        return NULL;                                                                               \
    }
    SMB_LIB_CALLS(SMB_LIB_RESOLVE)
#undef SMB_LIB_RESOLVE
    smb_lib_table = table;
    smb_lib_loaded = &smb_lib_table;
    return smb_lib_loaded;
}
