/* nfs_swap.c — a second NFS client for the safety tests: swaps a
 * directory of the export for a symbolic link and back, again and again,
 * through the NFS server (so that a caching server such as ganesha sees
 * every swap as it happens, which a swap made on its file system
 * underneath it does not), until a local stop file appears.
 *
 *   nfs_swap nfs://SERVER/EXPORT DIR LINK_TARGET STOP_FILE
 *
 * DIR is export-relative ("herd-nfs-c/fs"); each round renames DIR to
 * DIR.aside, makes DIR a link to LINK_TARGET, waits 20 ms, removes the
 * link, renames DIR.aside back and waits 20 ms. A client that makes DIR
 * anew while it is away (herd makes its missing directories) has that
 * directory moved to DIR.made<N> and the step is tried again. Writes
 * "started" on stdout once mounted, and "ROUNDS MOVED" (the rounds, the
 * directories moved) when it stops. Exit 0; 1 when a call fails (its message on stderr); 2 on bad
 * usage. DIR gone (the run removed its tree) ends it as the stop file does. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h> /* before libnfs.h */
#include <time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>

static void swap_nap(void)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

static int swap_fail(struct nfs_context *nfs, const char *what)
{
    fprintf(stderr, "nfs_swap: %s: %s\n", what, nfs_get_error(nfs));
    return 1;
}

/* Make a link at dir, or rename from onto dir (from NULL: the link);
 * a directory another client made at dir meanwhile is moved to
 * dir.made<N> first, up to 3 times. 0 or -errno. */
static int swap_put(struct nfs_context *nfs, const char *from, const char *target, const char *dir,
                    long *made)
{
    int rc = 0;
    for (int tries = 0; tries < 3; tries++) {
        rc = from ? nfs_rename(nfs, from, dir) : nfs_symlink(nfs, target, dir);
        if (rc != -EEXIST && rc != -ENOTEMPTY && rc != -EISDIR)
            return rc;
        char away[1200];
        snprintf(away, sizeof away, "%s.made%ld", dir, (*made)++);
        if (nfs_rename(nfs, dir, away) != 0)
            return rc;
    }
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: nfs_swap nfs://SERVER/EXPORT DIR LINK_TARGET STOP_FILE\n");
        return 2;
    }
    struct nfs_context *nfs = nfs_init_context();
    if (!nfs)
        return 1;
    struct nfs_url *url = nfs_parse_url_dir(nfs, argv[1]);
    if (!url)
        return swap_fail(nfs, "URL");
    if (nfs_mount(nfs, url->server, url->path) != 0)
        return swap_fail(nfs, "mount");
    char dir[1024], aside[1100];
    snprintf(dir, sizeof dir, "/%s", argv[2]);
    snprintf(aside, sizeof aside, "%s.aside", dir);
    printf("started\n");
    fflush(stdout);
    long rounds = 0, made = 0;
    struct stat st;
    while (stat(argv[4], &st) != 0) {
        int rc = nfs_rename(nfs, dir, aside);
        if (rc == -ENOENT)
            break; /* the run removed its tree (keep = no) */
        if (rc != 0)
            return swap_fail(nfs, "rename aside");
        if (swap_put(nfs, NULL, argv[3], dir, &made) != 0)
            return swap_fail(nfs, "symlink");
        swap_nap();
        if (nfs_unlink(nfs, dir) != 0)
            return swap_fail(nfs, "unlink the link");
        if (swap_put(nfs, aside, NULL, dir, &made) != 0)
            return swap_fail(nfs, "rename back");
        rounds++;
        swap_nap();
    }
    printf("%ld %ld\n", rounds, made);
    nfs_destroy_url(url);
    nfs_destroy_context(nfs);
    return 0;
}
