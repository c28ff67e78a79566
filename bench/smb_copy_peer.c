/* smb_copy_peer.c — the plain libsmbclient copy loop that
 * bench/smb_vs_smbclient.sh compares herd's smb backend with: one context,
 * one file, open, BLOCK-byte read or write calls one after the other,
 * close; nothing else (no pattern, no check, no timing per call).
 *
 *   smb_copy_peer read|write smb://HOST/SHARE/FILE BLOCK BYTES USER PASSWORD_FILE
 *
 * The password is read from PASSWORD_FILE (first line), never taken from
 * the command line. write writes BYTES bytes of random data (one block
 * from /dev/urandom, repeated) into a new file; read reads the file to its
 * end (it must hold BYTES bytes). The clock (CLOCK_MONOTONIC) runs from
 * just before the open to just after the close, as herd's phase time
 * does (herd connects before its phase starts; so does this: the login
 * is outside the clock). Prints one line, "MIB_PER_S SECONDS BYTES".
 * Exit 0 on success, 1 on a failed call (with the errno on stderr), 2 on
 * bad usage. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libsmbclient.h>

static const char *peer_user;
static char peer_password[256];

static void peer_auth(SMBCCTX *c, const char *srv, const char *shr, char *wg, int wglen,
                      char *un, int unlen, char *pw, int pwlen)
{
    (void)c, (void)srv, (void)shr, (void)wg, (void)wglen;
    snprintf(un, (size_t)unlen, "%s", peer_user);
    snprintf(pw, (size_t)pwlen, "%s", peer_password);
}

/* The first line of path into peer_password: 0 or -errno. */
static int peer_read_password(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -errno;
    int rc = fgets(peer_password, sizeof peer_password, f) ? 0 : -EINVAL;
    fclose(f);
    peer_password[strcspn(peer_password, "\r\n")] = '\0';
    return rc;
}

static double peer_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int peer_fail(const char *what, int err)
{
    fprintf(stderr, "smb_copy_peer: %s: %s\n", what, strerror(err));
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 7 || (strcmp(argv[1], "read") != 0 && strcmp(argv[1], "write") != 0)) {
        fprintf(stderr, "usage: smb_copy_peer read|write smb://HOST/SHARE/FILE BLOCK BYTES "
                        "USER PASSWORD_FILE\n");
        return 2;
    }
    int writing = strcmp(argv[1], "write") == 0;
    const char *url = argv[2];
    size_t block = strtoul(argv[3], NULL, 10);
    long long bytes = strtoll(argv[4], NULL, 10);
    peer_user = argv[5];
    if (block == 0 || bytes <= 0) {
        fprintf(stderr, "smb_copy_peer: BLOCK and BYTES must be positive byte counts\n");
        return 2;
    }
    int rc = peer_read_password(argv[6]);
    if (rc < 0)
        return peer_fail(argv[6], -rc);
    char *buf = malloc(block);
    if (!buf)
        return peer_fail("malloc", ENOMEM);
    if (writing) {
        int fd = open("/dev/urandom", O_RDONLY);
        if (fd < 0 || read(fd, buf, block) != (ssize_t)block)
            return peer_fail("/dev/urandom", errno ? errno : EIO);
        close(fd);
    }

    SMBCCTX *ctx = smbc_new_context();
    if (!ctx)
        return peer_fail("smbc_new_context", errno);
    smbc_setFunctionAuthDataWithContext(ctx, peer_auth);
    smbc_setOptionNoAutoAnonymousLogin(ctx, 1);
    if (!smbc_init_context(ctx))
        return peer_fail("smbc_init_context", errno);
    /* Log in before the clock starts: stat the share (herd's connect). */
    struct stat st;
    char share[1024];
    snprintf(share, sizeof share, "%s", url);
    char *slash = strrchr(share, '/');
    if (slash)
        *slash = '\0';
    if (smbc_getFunctionStat(ctx)(ctx, share, &st) < 0)
        return peer_fail("stat of the share (login)", errno);

    double t0 = peer_now();
    int flags = writing ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY;
    SMBCFILE *f = smbc_getFunctionOpen(ctx)(ctx, url, flags, 0644);
    if (!f)
        return peer_fail("open", errno);
    long long done = 0;
    while (done < bytes) {
        size_t want = bytes - done < (long long)block ? (size_t)(bytes - done) : block;
        ssize_t n = writing ? smbc_getFunctionWrite(ctx)(ctx, f, buf, want)
                            : smbc_getFunctionRead(ctx)(ctx, f, buf, want);
        if (n < 0)
            return peer_fail(writing ? "write" : "read", errno);
        if (n == 0)
            break;
        done += n;
    }
    if (smbc_getFunctionClose(ctx)(ctx, f) < 0)
        return peer_fail("close", errno);
    double secs = peer_now() - t0;
    if (done != bytes) {
        fprintf(stderr, "smb_copy_peer: moved %lld of %lld bytes\n", done, bytes);
        return 1;
    }
    printf("%.1f %.6f %lld\n", (double)done / 1048576.0 / secs, secs, done);
    smbc_free_context(ctx, 1);
    free(buf);
    return 0;
}
