/* nosync.c — run a command with the sync family of system calls turned into
 * no-ops: nfs-server.sh --async runs ganesha.nfsd under it, so ganesha's
 * COMMIT and stable WRITEs reply before anything is flushed, as a kernel
 * export with `async` does. (LD_PRELOAD tricks such as eatmydata do not work:
 * ganesha loads its FSAL with RTLD_DEEPBIND, so the FSAL's fsync binds to
 * libc directly.)
 *
 *   nosync COMMAND [ARG...]
 *
 * Installs a seccomp BPF filter that makes fsync, fdatasync, sync, syncfs,
 * sync_file_range (and sync_file_range2 where it exists) and msync return 0
 * without entering the kernel, then execs COMMAND; the filter is inherited
 * by every thread and child of COMMAND and cannot be removed. No privilege is
 * needed (PR_SET_NO_NEW_PRIVS). Exit status: COMMAND's, or 125 when the
 * filter cannot be installed, 127 when COMMAND cannot be run, 2 for usage.
 *
 * nfs-server.sh compiles it with cc into its state directory when --async is
 * asked for; tests/integration/test_nosync.py compiles and exercises it. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__) && !defined(__ILP32__)
#define NOSYNC_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__) && !defined(__AARCH64EB__)
#define NOSYNC_AUDIT_ARCH AUDIT_ARCH_AARCH64
#elif defined(__i386__)
#define NOSYNC_AUDIT_ARCH AUDIT_ARCH_I386
#else
#error "nosync: no AUDIT_ARCH for this architecture; add it here"
#endif

/* The system calls that become no-ops; numbers from this build's headers. */
static const int nosync_nrs[] = {
    __NR_fsync,
    __NR_fdatasync,
    __NR_sync,
    __NR_syncfs,
#ifdef __NR_sync_file_range
    __NR_sync_file_range,
#endif
#ifdef __NR_sync_file_range2
    __NR_sync_file_range2,
#endif
    __NR_msync,
};
#define NOSYNC_N (sizeof(nosync_nrs) / sizeof(nosync_nrs[0]))

/* nosync_filter: fill prog (room for NOSYNC_N + 5 instructions) and return
 * its length. Layout: load arch; another arch jumps to ALLOW. Load nr; each
 * listed nr jumps to ERRNO(0) (the call is skipped and returns 0); anything
 * else falls through to ALLOW. Jump offsets count from the next
 * instruction. */
static size_t nosync_filter(struct sock_filter *prog)
{
    size_t n = 0;
    prog[n++] =
        (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    prog[n++] =
        (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NOSYNC_AUDIT_ARCH, 0, NOSYNC_N + 1);
    prog[n++] =
        (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
    for (size_t i = 0; i < NOSYNC_N; i++)
        prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nosync_nrs[i],
                                                 NOSYNC_N - i, 0);
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 0);
    return n;
}

/* nosync_install: 0, or a negative errno when the kernel refuses. */
static int nosync_install(void)
{
    struct sock_filter prog[NOSYNC_N + 5];
    struct sock_fprog fprog = {.len = (unsigned short)nosync_filter(prog), .filter = prog};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -errno;
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) != 0)
        return -errno;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: nosync COMMAND [ARG...]\n");
        return 2;
    }
    int rc = nosync_install();
    if (rc < 0) {
        fprintf(stderr, "nosync: cannot install the seccomp filter: %s\n", strerror(-rc));
        return 125;
    }
    execvp(argv[1], argv + 1);
    fprintf(stderr, "nosync: %s: %s\n", argv[1], strerror(errno));
    return 127;
}
