/* hosts.c — hostname and the target's mount entry for /hosts in results. */
#include "hosts.h"

#include <limits.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

void hosts_describe(const char *target, struct host_info *out)
{
    memset(out, 0, sizeof *out);
    if (gethostname(out->hostname, sizeof out->hostname - 1) != 0)
        snprintf(out->hostname, sizeof out->hostname, "unknown");
    if (strstr(target, "://")) { /* libnfs, smb: no kernel mount; the backend describes it */
        snprintf(out->mount_source, sizeof out->mount_source, "%s", target);
        return;
    }
    char real[PATH_MAX];
    if (realpath(target, real))
        hosts_find_mount("/proc/self/mounts", real, out);
}
