/* srcport.c — the source ports of new connections (srcport.h).
 *
 * libnfs binds each socket of a privileged process to a reserved port,
 * trying them one by one (and each against /etc/services) until one is
 * free; a host has 512 (libnfs takes 512-1023), so past a few hundred
 * clients every connect tried all of them (measured: 1000 clients, 1.15
 * million binds, 22 s). Without CAP_NET_BIND_SERVICE in its effective
 * set the first bind fails with EACCES, and libnfs stops trying: the
 * connection leaves from an ordinary port, which the server must accept
 * (ganesha does by default, the kernel's nfsd with `insecure`). Only the
 * effective bit changes, so the permitted one can raise it again. */
#include "srcport.h"

#include <errno.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

/* This process's capability sets: 0, or -errno. */
static int srcport_caps(struct __user_cap_header_struct *head, struct __user_cap_data_struct *data)
{
    *head = (struct __user_cap_header_struct){.version = _LINUX_CAPABILITY_VERSION_3};
    return syscall(SYS_capget, head, data) == 0 ? 0 : -errno;
}

int srcport_allow_reserved(bool allow)
{
    struct __user_cap_header_struct head;
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
    int rc = srcport_caps(&head, data);
    if (rc < 0)
        return rc;
    unsigned i = CAP_TO_INDEX(CAP_NET_BIND_SERVICE), bit = CAP_TO_MASK(CAP_NET_BIND_SERVICE);
    if (allow && !(data[i].permitted & bit))
        return -EPERM;
    data[i].effective = allow ? data[i].effective | bit : data[i].effective & ~bit;
    return syscall(SYS_capset, &head, data) == 0 ? 0 : -errno;
}

bool srcport_reserved(void)
{
    struct __user_cap_header_struct head;
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
    return srcport_caps(&head, data) == 0 &&
           (data[CAP_TO_INDEX(CAP_NET_BIND_SERVICE)].effective & CAP_TO_MASK(CAP_NET_BIND_SERVICE));
}
