/* hosts.c — hostname and the target's mount entry for /hosts in results. */
#include "hosts.h"

#include "textscan.h"

#include <fcntl.h>
#include <limits.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static size_t mount_prefix_len(const char *dir, const char *path)
{
    size_t n = strlen(dir);
    if (strcmp(dir, "/") == 0)
        return 1;
    if (strncmp(dir, path, n) == 0 && (path[n] == '/' || path[n] == '\0'))
        return n;
    return 0;
}

int hosts_find_mount(const char *mounts_file, const char *path, struct host_info *out)
{
    FILE *f = setmntent(mounts_file, "r");
    if (!f)
        return -1;
    size_t best = 0;
    struct mntent *m;
    while ((m = getmntent(f)) != NULL) {
        size_t n = mount_prefix_len(m->mnt_dir, path);
        if (n > 0 && n >= best) { /* later entries shadow earlier ones */
            best = n;
            snprintf(out->mount_source, sizeof out->mount_source, "%s", m->mnt_fsname);
            snprintf(out->mount_point, sizeof out->mount_point, "%s", m->mnt_dir);
            snprintf(out->fstype, sizeof out->fstype, "%s", m->mnt_type);
            snprintf(out->mount_options, sizeof out->mount_options, "%s", m->mnt_opts);
        }
    }
    endmntent(f);
    return best > 0 ? 0 : -1;
}

int32_t hosts_read_ahead_kb(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    char name[96];
    snprintf(name, sizeof name, "/sys/class/bdi/%u:%u/read_ahead_kb", major(st.st_dev),
             minor(st.st_dev));
    int fd = open(name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    char buf[32];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    struct textscan text = {buf, buf + n}, line;
    uint64_t kb;
    if (!textscan_line(&text, &line) || textscan_u64(line, &kb) != 0 || kb > INT32_MAX)
        return -1;
    return (int32_t)kb;
}

void hosts_describe(const char *target, struct host_info *out)
{
    memset(out, 0, sizeof *out);
    out->read_ahead_kb = -1;
    if (gethostname(out->hostname, sizeof out->hostname - 1) != 0)
        snprintf(out->hostname, sizeof out->hostname, "unknown");
    if (strstr(target, "://")) { /* libnfs, smb: no kernel mount; the backend describes it */
        snprintf(out->mount_source, sizeof out->mount_source, "%s", target);
        return;
    }
    char real[PATH_MAX];
    if (realpath(target, real) && hosts_find_mount("/proc/self/mounts", real, out) == 0)
        out->read_ahead_kb = hosts_read_ahead_kb(out->mount_point);
}
