/* uml-xstate.c — an LD_PRELOAD shim that lets Debian 12's User-Mode Linux
 * (linux.uml 6.1) run guest programs on hosts whose XSAVE area is larger
 * than AVX's (AVX-512, PKRU, AMX: most x86 servers since 2017).
 *
 * UML keeps each guest thread's FPU state in a buffer of the size of
 * struct _xstate (832 bytes: x87/SSE, the XSAVE header, the AVX upper
 * halves) and moves it with ptrace(PTRACE_GETREGSET / PTRACE_SETREGSET,
 * NT_X86_XSTATE). The host kernel returns a shorter read, but refuses any
 * write that is not the whole XSAVE area (EFAULT): UML then kills the
 * guest's init ("ptrace set fp regs failed, errno = 14", "Attempted to
 * kill init"). Later kernels size the buffer at run time; 6.1 does not.
 *
 * The shim keeps, for every buffer UML reads the state into (one per guest
 * thread), a shadow copy of the whole area as the host returned it; a
 * write of that buffer is the shadow with UML's bytes laid over its start,
 * so the components beyond UML's 832 bytes (AVX-512's registers, PKRU)
 * come back as they were when the thread was saved. A buffer never read
 * before (a new thread) gets the traced process's current state under
 * UML's bytes. Every other ptrace call passes through unchanged, and on a
 * host whose area is no larger than UML's the shim changes nothing.
 *
 * Built by nfs-server.sh start --server knfsd (lib-knfsd.sh) and
 * vcluster.sh up --kernel-client (vc-guests.sh) into the state directory,
 * and preloaded into linux.uml only. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/elf.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/uio.h>

#define XSTATE_MAX 65536 /* bytes: far above any XSAVE area (AMX's is ~11 KiB) */
#define SHADOWS 4096     /* guest threads remembered; more share the fallback */

typedef long (*ptrace_fn)(enum __ptrace_request, pid_t, void *, void *);

struct shadow {
    const void *buf; /* UML's buffer (a guest thread's saved state), NULL = free */
    size_t len;      /* bytes of data */
    unsigned char *data;
};

static struct shadow shadows[SHADOWS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static ptrace_fn real_ptrace(void)
{
    static ptrace_fn fn;
    if (!fn)
        fn = (ptrace_fn)dlsym(RTLD_NEXT, "ptrace");
    return fn;
}

/* The shadow of buf (made when make is true and a slot is free), or NULL. */
static struct shadow *shadow_of(const void *buf, int make)
{
    size_t start = ((uintptr_t)buf >> 4) % SHADOWS;
    for (size_t i = 0; i < SHADOWS; i++) {
        struct shadow *s = &shadows[(start + i) % SHADOWS];
        if (s->buf == buf)
            return s;
        if (!s->buf) {
            if (!make)
                return NULL;
            s->data = malloc(XSTATE_MAX);
            if (!s->data)
                return NULL;
            s->buf = buf;
            return s;
        }
    }
    return NULL;
}

/* GETREGSET into UML's short buffer: the whole area into the shadow, its
 * start into UML's buffer, as the kernel itself would truncate it. */
static long xstate_get(pid_t pid, struct iovec *iov)
{
    static unsigned char scratch[XSTATE_MAX];
    struct shadow *s = shadow_of(iov->iov_base, 1);
    struct iovec whole = {s ? s->data : scratch, XSTATE_MAX};
    long rc = real_ptrace()(PTRACE_GETREGSET, pid, (void *)NT_X86_XSTATE, &whole);
    if (rc < 0)
        return rc;
    if (s)
        s->len = whole.iov_len;
    if (iov->iov_len > whole.iov_len)
        iov->iov_len = whole.iov_len;
    memcpy(iov->iov_base, whole.iov_base, iov->iov_len);
    return rc;
}

/* SETREGSET from UML's short buffer: the shadow (or the process's current
 * state) with UML's bytes over its start, written whole. */
static long xstate_set(pid_t pid, struct iovec *iov)
{
    static unsigned char scratch[XSTATE_MAX];
    struct shadow *s = shadow_of(iov->iov_base, 0);
    struct iovec whole = {scratch, XSTATE_MAX};
    if (s && s->len > iov->iov_len) {
        whole.iov_base = s->data;
        whole.iov_len = s->len;
    } else {
        long rc = real_ptrace()(PTRACE_GETREGSET, pid, (void *)NT_X86_XSTATE, &whole);
        if (rc < 0)
            return rc;
    }
    if (whole.iov_len <= iov->iov_len) /* the host's area fits UML's buffer */
        return real_ptrace()(PTRACE_SETREGSET, pid, (void *)NT_X86_XSTATE, iov);
    memcpy(whole.iov_base, iov->iov_base, iov->iov_len);
    return real_ptrace()(PTRACE_SETREGSET, pid, (void *)NT_X86_XSTATE, &whole);
}

long ptrace(enum __ptrace_request req, ...)
{
    va_list ap;
    va_start(ap, req);
    pid_t pid = va_arg(ap, pid_t);
    void *addr = va_arg(ap, void *);
    void *data = va_arg(ap, void *);
    va_end(ap);
    if ((req != PTRACE_GETREGSET && req != PTRACE_SETREGSET) || (long)addr != NT_X86_XSTATE ||
        !data)
        return real_ptrace()(req, pid, addr, data);
    pthread_mutex_lock(&lock);
    long rc = req == PTRACE_GETREGSET ? xstate_get(pid, data) : xstate_set(pid, data);
    int saved = errno;
    pthread_mutex_unlock(&lock);
    errno = saved;
    return rc;
}
