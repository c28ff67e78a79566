/* monitor_scope.c — the processes the monitor counts (see monitor_scope.h):
 * monitor_scope's value parsed; a namespace or cgroup opened on the
 * monitor host; a process tested by the inode of its namespace file or by
 * the cgroup its /proc/PID/cgroup names in the scope's hierarchy. */
#include "monitor_scope.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "textfile.h"
#include "textscan.h"

struct monitor_scope {
    enum monitor_scope_kind kind;
    const char *ns_type; /* ns: the name under /proc/PID/ns/ */
    dev_t ns_dev;        /* ns: the namespace's inode */
    ino_t ns_ino;
    struct cgroup_place place; /* cgroup */
    char *buf;                 /* /proc/PID/cgroup as read */
    size_t cap;
};

/* ---- the value ---- */

int monitor_scope_parse(const char *text, const char **path, char *why, size_t whylen)
{
    static const struct {
        const char *prefix;
        enum monitor_scope_kind kind;
    } kinds[] = {{"ns:", SCOPE_NS}, {"cgroup:", SCOPE_CGROUP}};
    *path = NULL;
    if (strcmp(text, "host") == 0)
        return SCOPE_HOST;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        size_t n = strlen(kinds[i].prefix);
        if (strncmp(text, kinds[i].prefix, n) != 0)
            continue;
        if (text[n] == '/') {
            *path = text + n;
            return (int)kinds[i].kind;
        }
        snprintf(why, whylen,
                 "'%s': the path after %s must be absolute (it is opened on the "
                 "monitor host)",
                 text, kinds[i].prefix);
        return -1;
    }
    snprintf(why, whylen,
             "'%s' is not host, ns:PATH (a namespace file) or cgroup:PATH (a cgroup directory)",
             text);
    return -1;
}

const char *monitor_scope_check(const char *text, char *why, size_t whylen)
{
    const char *path;
    if (!text[0])
        return NULL;
    return monitor_scope_parse(text, &path, why, whylen) < 0 ? why : NULL;
}

const char *monitor_scope_effective(const char *configured)
{
    if (configured && configured[0])
        return configured;
    const char *server = getenv("HERD_SERVER");
    return server && server[0] ? MONITOR_SCOPE_BESIDE_SERVER : "host";
}

/* ---- cgroups ---- */

/* A mountinfo field with its \ooo escapes undone, into out; -1 when it
 * does not fit. */
static int mountinfo_unescape(struct textscan f, char *out, size_t len)
{
    size_t o = 0;
    for (const char *p = f.p; p < f.end; p++) {
        char c = *p;
        if (c == '\\' && f.end - p >= 4 && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' &&
            p[2] <= '7' && p[3] >= '0' && p[3] <= '7') {
            c = (char)((p[1] - '0') << 6 | (p[2] - '0') << 3 | (p[3] - '0'));
            p += 3;
        }
        if (o + 1 >= len)
            return -1;
        out[o++] = c;
    }
    out[o] = '\0';
    return 0;
}

/* How much of path mount point mnt covers: its length when it is path or
 * a directory above it ("/" covers every path: 1), else 0. */
static size_t mount_covers(const char *mnt, const char *path)
{
    size_t n = strlen(mnt);
    if (strcmp(mnt, "/") == 0)
        return 1;
    return strncmp(mnt, path, n) == 0 && (path[n] == '/' || path[n] == '\0') ? n : 0;
}

int monitor_cgroup_place(const char *mountinfo, size_t n, const char *dir, struct cgroup_place *out)
{
    struct textscan text = {mountinfo, mountinfo + n}, line;
    size_t best = 0;
    bool found = false;
    char root[PATH_MAX], mnt[PATH_MAX];
    memset(out, 0, sizeof *out);
    while (textscan_line(&text, &line)) {
        /* ID PARENT MAJ:MIN ROOT MOUNT-POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER-OPTIONS */
        struct textscan f[5], dash, type, source, options;
        int nf = 0;
        while (nf < 5 && textscan_field(&line, &f[nf]))
            nf++;
        while (nf == 5 && textscan_field(&line, &dash) && !textscan_eq(dash, "-"))
            ;
        if (nf < 5 || !textscan_field(&line, &type) || !textscan_field(&line, &source) ||
            !textscan_field(&line, &options) || mountinfo_unescape(f[4], mnt, sizeof mnt) < 0)
            continue;
        size_t covers = mount_covers(mnt, dir);
        if (covers == 0 || covers < best)
            continue;
        best = covers; /* a later mount on the same point hides the earlier one */
        found = false;
        if ((!textscan_eq(type, "cgroup") && !textscan_eq(type, "cgroup2")) ||
            textscan_len(options) >= sizeof out->options ||
            mountinfo_unescape(f[3], root, sizeof root) < 0)
            continue;
        out->v2 = textscan_eq(type, "cgroup2");
        memcpy(out->options, options.p, textscan_len(options));
        out->options[textscan_len(options)] = '\0';
        const char *below = strcmp(mnt, "/") == 0 ? dir : dir + covers;
        int w = snprintf(out->path, sizeof out->path, "%s%s", strcmp(root, "/") == 0 ? "" : root,
                         below);
        if (w < 0 || (size_t)w >= sizeof out->path)
            continue;
        if (!out->path[0])
            snprintf(out->path, sizeof out->path, "/");
        found = true;
    }
    return found ? 0 : -1;
}

/* Whether the comma-separated list has the item [p, p + n). */
static bool list_has(const char *list, const char *p, size_t n)
{
    for (const char *q = list; *q;) {
        size_t len = strcspn(q, ",");
        if (len == n && memcmp(q, p, n) == 0)
            return true;
        q += len + (q[len] == ',');
    }
    return false;
}

/* Whether every controller of a /proc/PID/cgroup line ("cpu,cpuacct",
 * "name=systemd") is among a v1 mount's options: that line is the mount's
 * hierarchy. */
static bool controllers_mounted(struct textscan controllers, const char *options)
{
    if (textscan_len(controllers) == 0)
        return false;
    for (const char *p = controllers.p; p < controllers.end;) {
        const char *comma = memchr(p, ',', (size_t)(controllers.end - p));
        const char *end = comma ? comma : controllers.end;
        if (!list_has(options, p, (size_t)(end - p)))
            return false;
        p = comma ? comma + 1 : controllers.end;
    }
    return true;
}

/* Whether cgroup path is want or below it. */
static bool cgroup_within(struct textscan path, const char *want)
{
    size_t n = strcmp(want, "/") == 0 ? 0 : strlen(want);
    return textscan_len(path) >= n && memcmp(path.p, want, n) == 0 &&
           (textscan_len(path) == n || path.p[n] == '/');
}

bool monitor_cgroup_member(const char *cgroup, size_t n, const struct cgroup_place *place)
{
    struct textscan text = {cgroup, cgroup + n}, line;
    while (textscan_line(&text, &line)) {
        /* ID:CONTROLLERS:PATH, PATH being all after the second ':' */
        const char *c1 = memchr(line.p, ':', textscan_len(line));
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(line.end - c1 - 1)) : NULL;
        if (!c2)
            continue;
        struct textscan id = {line.p, c1}, controllers = {c1 + 1, c2}, path = {c2 + 1, line.end};
        bool hierarchy = place->v2 ? textscan_eq(id, "0") && textscan_len(controllers) == 0
                                   : controllers_mounted(controllers, place->options);
        if (hierarchy)
            return cgroup_within(path, place->path);
    }
    return false;
}

/* ---- on the monitor host ---- */

static const struct {
    int flag;
    const char *name;
} ns_types[] = {
    {CLONE_NEWNET, "net"},       {CLONE_NEWPID, "pid"},   {CLONE_NEWNS, "mnt"},
    {CLONE_NEWUTS, "uts"},       {CLONE_NEWIPC, "ipc"},   {CLONE_NEWUSER, "user"},
    {CLONE_NEWCGROUP, "cgroup"}, {CLONE_NEWTIME, "time"},
};

/* The namespace file at path; NULL, or what is wrong. */
static const char *scope_open_ns(struct monitor_scope *s, const char *path)
{
    static const char *const not_ns = "not a namespace file (/proc/PID/ns/TYPE, /run/netns/NAME)";
    struct stat st;
    if (stat(path, &st) != 0)
        return strerror(errno);
    if (!S_ISREG(st.st_mode)) /* namespace files are; never open a FIFO or a device */
        return not_ns;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return strerror(errno);
    int type = fstat(fd, &st) == 0 ? ioctl(fd, NS_GET_NSTYPE) : -1;
    close(fd);
    for (size_t i = 0; i < sizeof ns_types / sizeof ns_types[0]; i++)
        if (ns_types[i].flag == type) {
            s->ns_type = ns_types[i].name;
            s->ns_dev = st.st_dev;
            s->ns_ino = st.st_ino;
            return NULL;
        }
    return not_ns;
}

/* The cgroup directory at path; NULL, or what is wrong. */
static const char *scope_open_cgroup(struct monitor_scope *s, const char *path)
{
    char real[PATH_MAX];
    struct stat st;
    if (!realpath(path, real) || stat(real, &st) != 0)
        return strerror(errno);
    if (!S_ISDIR(st.st_mode))
        return "not a directory";
    long n = textfile_read("/proc/self/mountinfo", TEXTFILE_PROC_MAX, &s->buf, &s->cap);
    if (n < 0)
        return strerror((int)-n);
    if (monitor_cgroup_place(s->buf, (size_t)n, real, &s->place) != 0)
        return "not a directory of a cgroup file system (cgroup or cgroup2)";
    return NULL;
}

struct monitor_scope *monitor_scope_open(const char *text, char *why, size_t whylen)
{
    const char *path;
    int kind = monitor_scope_parse(text, &path, why, whylen);
    if (kind < 0)
        return NULL;
    struct monitor_scope *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(why, whylen, "monitor_scope '%s': out of memory", text);
        return NULL;
    }
    s->kind = (enum monitor_scope_kind)kind;
    const char *bad = NULL;
    if (kind == SCOPE_NS)
        bad = scope_open_ns(s, path);
    else if (kind == SCOPE_CGROUP)
        bad = scope_open_cgroup(s, path);
    if (bad) {
        snprintf(why, whylen, "monitor_scope '%s': %s", text, bad);
        monitor_scope_close(s);
        return NULL;
    }
    return s;
}

int monitor_scope_has(struct monitor_scope *s, const char *pid)
{
    char path[64];
    if (s->kind == SCOPE_NS) {
        struct stat st;
        snprintf(path, sizeof path, "/proc/%.20s/ns/%s", pid, s->ns_type);
        if (stat(path, &st) != 0)
            return -errno;
        return st.st_dev == s->ns_dev && st.st_ino == s->ns_ino;
    }
    if (s->kind == SCOPE_CGROUP) {
        snprintf(path, sizeof path, "/proc/%.20s/cgroup", pid);
        long n = textfile_read(path, TEXTFILE_PROC_MAX, &s->buf, &s->cap);
        if (n < 0)
            return (int)n;
        return monitor_cgroup_member(s->buf, (size_t)n, &s->place);
    }
    return 1;
}

void monitor_scope_close(struct monitor_scope *s)
{
    if (!s)
        return;
    free(s->buf);
    free(s);
}
