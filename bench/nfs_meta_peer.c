/* nfs_meta_peer.c — the plain libnfs program that bench/nfs_meta_vs_peer.sh
 * sets against herd's meta phase over libnfs: in a directory tree of its
 * own as deep as herd's (<top>/m/r000000/a/d0000/), FILES files created
 * and closed (nfs_create O_EXCL, nfs_close), then stat'ed (nfs_lstat64),
 * then removed (nfs_unlink), each step timed on its own, every call by
 * path with libnfs's own resolution and no checks of any kind: what a
 * program written straight against libnfs's synchronous API does. Prints
 * "steps CREATE STAT REMOVAL" (calls per second of each step) and removes
 * its tree.
 *
 * usage: nfs_meta_peer nfs://SERVER/EXPORT[?version=3|4] TOP FILES
 * Exit: 0, 1 on a failed call (its message on stderr), 2 on bad usage. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h> /* before libnfs.h, which needs struct timeval */
#include <time.h>

#include <nfsc/libnfs.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fail(struct nfs_context *nfs, const char *what, const char *path)
{
    fprintf(stderr, "nfs_meta_peer: %s %s: %s\n", what, path, nfs_get_error(nfs));
    return 1;
}

int main(int argc, char **argv)
{
    long files = argc == 4 ? strtol(argv[3], NULL, 10) : 0;
    if (files < 1 || files > 999999 || argv[2][0] == '/' || strchr(argv[2], '/')) {
        fprintf(stderr, "usage: nfs_meta_peer nfs://SERVER/EXPORT[?version=3|4] TOP FILES\n");
        return 2;
    }
    struct nfs_context *nfs = nfs_init_context();
    struct nfs_url *url = nfs ? nfs_parse_url_dir(nfs, argv[1]) : NULL;
    if (!url || nfs_mount(nfs, url->server, url->path) != 0)
        return fail(nfs, "mount", argv[1]);
    static const char *const levels[] = {"", "/m", "/m/r000000", "/m/r000000/a",
                                         "/m/r000000/a/d0000"};
    const int nlevels = (int)(sizeof levels / sizeof levels[0]);
    char dir[512], path[600];
    for (int i = 0; i < nlevels; i++) {
        snprintf(dir, sizeof dir, "/%s%s", argv[2], levels[i]);
        if (nfs_mkdir(nfs, dir) != 0)
            return fail(nfs, "mkdir", dir);
    }
    double rate[3];
    for (int step = 0; step < 3; step++) {
        double t0 = now();
        for (long i = 0; i < files; i++) {
            snprintf(path, sizeof path, "%s/f%06ld", dir, i);
            struct nfsfh *fh;
            struct nfs_stat_64 st;
            if (step == 0 && (nfs_create(nfs, path, O_WRONLY | O_EXCL, 0644, &fh) != 0 ||
                              nfs_close(nfs, fh) != 0))
                return fail(nfs, "create", path);
            if (step == 1 && nfs_lstat64(nfs, path, &st) != 0)
                return fail(nfs, "stat", path);
            if (step == 2 && nfs_unlink(nfs, path) != 0)
                return fail(nfs, "unlink", path);
        }
        rate[step] = (double)files / (now() - t0);
    }
    for (int i = nlevels - 1; i >= 0; i--) {
        snprintf(dir, sizeof dir, "/%s%s", argv[2], levels[i]);
        if (nfs_rmdir(nfs, dir) != 0)
            return fail(nfs, "rmdir", dir);
    }
    printf("steps %.1f %.1f %.1f\n", rate[0], rate[1], rate[2]);
    nfs_destroy_url(url);
    nfs_destroy_context(nfs);
    return 0;
}
