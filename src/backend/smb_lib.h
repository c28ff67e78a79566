/* smb_lib.h — libsmbclient, loaded when the first smb:// target needs it.
 *
 * herd is built against libsmbclient's header but does not link it: the
 * library pulls in about 110 of Samba's shared libraries, two thirds of
 * what herd would otherwise map at every start, which cost each rank 1 to
 * 3 s of start-up on a slow node (a User-Mode Linux guest). A run without
 * an smb:// target never loads it; the smb backend calls it through the
 * table below, filled by dlopen and dlsym on first use.
 *
 * smb_lib_load: the table, loaded once per process (later calls return
 * the same table); NULL with a one-line reason in why when the library
 * or one of its calls cannot be found. Not thread-safe: the smb backend
 * keeps every call in the rank's main thread (backend.h one_thread). */
#ifndef HERD_SMB_LIB_H
#define HERD_SMB_LIB_H

#include <stddef.h>

#include <libsmbclient.h>

/* The library's soname (the ABI herd is built for) and every call the
 * backend makes, by their name without the smbc_ prefix. */
#define SMB_LIB_SONAME "libsmbclient.so.0"
#define SMB_LIB_CALLS(X)                                                                           \
    X(version)                                                                                     \
    X(new_context)                                                                                 \
    X(init_context)                                                                                \
    X(free_context)                                                                                \
    X(setTimeout)                                                                                  \
    X(setOptionUserData)                                                                           \
    X(getOptionUserData)                                                                           \
    X(setFunctionAuthDataWithContext)                                                              \
    X(setOptionNoAutoAnonymousLogin)                                                               \
    X(setOptionProtocols)                                                                          \
    X(setOptionSmbEncryptionLevel)                                                                 \
    X(getFunctionOpen)                                                                             \
    X(getFunctionRead)                                                                             \
    X(getFunctionWrite)                                                                            \
    X(getFunctionLseek)                                                                            \
    X(getFunctionClose)                                                                            \
    X(getFunctionStat)                                                                             \
    X(getFunctionUnlink)                                                                           \
    X(getFunctionMkdir)                                                                            \
    X(getFunctionRmdir)                                                                            \
    X(getFunctionRename)

struct smb_lib {
#define SMB_LIB_MEMBER(name) __typeof__(smbc_##name) *name;
    SMB_LIB_CALLS(SMB_LIB_MEMBER)
#undef SMB_LIB_MEMBER
};

const struct smb_lib *smb_lib_load(char *why, size_t len);

#endif
