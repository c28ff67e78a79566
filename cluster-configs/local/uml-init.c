/* uml-init.c — PID 1 of the User-Mode Linux guests: the one in which
 * nfs-server.sh --server knfsd runs the Linux kernel's nfsd (role=server,
 * the default), and the client hosts of vcluster.sh --kernel-client, which
 * run the kernel's NFS client and herd's ranks (role=client).
 *
 * The guest boots with the host's / as its hostfs root. As a server, it
 *   1. reads its settings from $HERD_GUEST/config (HERD_GUEST, the host
 *      path of the guest's state directory, comes from the kernel command
 *      line; KEY=VALUE lines: knfsd.py's guest_config, vcluster.sh's
 *      guest_config);
 *   2. moves to a tmpfs root that holds read-only binds of the host's /usr
 *      and /etc and the state directory at /state (read-write: logs):
 *      nothing else of the host is reachable from the guest's processes
 *      afterwards;
 *   3. loads the NFS server's modules from the host's
 *      /usr/lib/uml/modules/VERSION with finit_module, mounts the export,
 *      a ubd disk image, at /export (with `disk_delay` "READ WRITE FLUSH",
 *      milliseconds: on device-mapper's delay target over the disk, a
 *      disk that takes time; nfs-server.sh --disk-latency), sets up lo,
 *      eth0 and the `routes` (DEST/PREFIX,GATEWAY words) with system calls
 *      (every exec costs 0.1-0.5 s in UML);
 *   4. starts rpcbind, rpc.statd (with nlm=1), exports /export to the
 *      `client` hosts and networks (the host side of the link; a virtual
 *      cluster's subnet; those also in `secure_client` from ports below
 *      1024 only), starts rpc.mountd and nfsd with the asked number
 *      of threads, grace and lease, and ends the NFSv4 grace period at
 *      once when grace=0; proves that /export can be written (a probe
 *      file created, written, fsynced and removed: a guest whose disk
 *      image sits on a full host file system fails here, not at its
 *      clients' first write);
 *   5. serves the agent (below) and reaps every orphan, as a PID 1 must.
 * As a client, it keeps the host's / as its root, read-only (the kernel
 * command line says ro), so that herd, Open MPI and the job files are at
 * their host paths; mounts tmpfs on /run, /dev/shm and /var/lib/nfs, and
 * the host directory `share` read-write at its own path (results); loads
 * the NFS client's modules; starts rpcbind and rpc.statd (the kernel's
 * NLM client needs statd); and serves the agent. The NFS mounts
 * themselves are sh commands of vcluster.sh.
 * A failed step is written to the console (the supervisor or vcluster.sh
 * keeps it in a log) and the guest powers off.
 *
 * The agent listens on TCP port `agent_port` of the guest's address and
 * takes one request per connection. A request is a list of words, each a
 * netstring "LEN:BYTES," (LEN in decimal, no leading zero, at most
 * WORD_MAX bytes, no NUL among them), ended by a newline:
 *     64:<secret>,4:exec,7:/bin/sh,2:-c,8:echo A B,\n
 * The first word is the guest's secret: $HERD_GUEST/secret, written by the
 * host side before each boot (knfsd.py, vc-guests.sh; a regular file of
 * root's, mode 0600, or 0640 where linux.uml runs as the guests' user and
 * reads it through its group; 32-128 hex digits), read once at boot and compared
 * in constant time. A wrong or missing secret, a malformed request, or
 * one not complete within REQUEST_WAIT_MS, gets the line "error: not
 * authorized" (or "error: malformed request" once the secret matched) and
 * the connection is closed. The words after it are the command and its
 * arguments, passed on as they are (no splitting, no shell); at most
 * WORDS_MAX words, REQUEST_MAX bytes. Every connection is served by a
 * process of its own, so a slow caller or a long command never holds up
 * another connection or the metrics refresh; CONNECTIONS_MAX are served
 * at once, the ones beyond get "error: busy". The reply is "ok" or
 * "error: WHY" on its first line, then the output:
 *   threads N          write /proc/fs/nfsd/threads (a live change); N
 *                      1..threads_max (the config's: lib-knfsd.sh's cap)
 *   read PATH          a regular file under /proc or /sys, opened beneath
 *                      it (openat2 RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS:
 *                      "..", symbolic links out of it and magic links
 *                      such as /proc/self/root are refused)
 *   exec [--timeout=S] PROG ARG...
 *                      run PROG with these arguments (execvp), its output
 *                      streamed back, then the line "exit N"; after S
 *                      seconds (default EXEC_TIMEOUT_S, 1..COMMAND_MAX_S)
 *                      or when the caller hangs up, its process group gets
 *                      SIGTERM and KILL_AFTER_MS later SIGKILL ("exit 124"
 *                      after a time-out)
 *   export sync|async  re-export /export so (a live change)
 *   export-check       "ok" when /export can take writes: mounted, not
 *                      read-only (statvfs ST_RDONLY), no errors recorded
 *                      by ext4 (its journal aborts on a failed write to
 *                      its disk), its directory readable (a shut-down xfs
 *                      answers EIO); writes nothing
 *   end-grace          end the NFSv4 grace period now
 *   disk-delay [READ WRITE FLUSH]
 *                      with disk_delay: the delay table (dm-delay's
 *                      DEV OFFSET MS for reads, writes and flushes);
 *                      with the three (ms, 0..DELAY_MAX_MS) those delays
 *                      from now on (a live table reload)
 *   drop-caches        sync, then drop the clean page cache, dentries and
 *                      inodes: the next reads reach the disk
 *   restart GRACE LEASE THREADS
 *                      stop nfsd (threads 0: lockd and every client's
 *                      state go) and start it again with this grace
 *                      period (0..3600 s), lease (10..3600 s) and thread
 *                      count (1..threads_max)
 *   poweroff           server: stop nfsd, unmount the export, remove its
 *                      delay device, power off;
 *                      client: unmount the NFS mounts (10 s at most),
 *                      power off
 *   sh [--timeout=S] LINE
 *                      run LINE with /bin/sh as exec runs PROG, with no
 *                      time limit unless S is given (Open MPI's remote
 *                      start runs orted so for the job's length: vc-agent);
 *                      ends with a NUL byte and "exit N" instead of "ok"
 *                      first
 * Every number the agent takes (N, GRACE, LEASE, THREADS, S) must be
 * decimal digits in its range, or the command gets one error line and
 * does nothing. threads, export, end-grace, restart and disk-delay's
 * change wait for each other (one at a time, NFSD_LOCK_WAIT_MS at most); the commands other
 * than exec and sh end within COMMAND_MAX_S. The server role has all the
 * commands but sh, the client role read, exec, sh and poweroff. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/blkpg.h>
#include <linux/dm-ioctl.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <linux/reboot.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CONFIG_MAX 64
#define LINE_MAX_ 4096
#define AGENT_TICK_MS 100 /* between two refreshes of pool.prom */
/* The agent's requests (see the top) */
#define WORD_MAX 8192
#define WORDS_MAX 64         /* the secret included */
#define REQUEST_MAX 16384    /* bytes of one request */
#define REQUEST_WAIT_MS 5000 /* for a whole request, from the connection on */
#define SECRET_MIN 32        /* hex digits */
#define SECRET_MAX 128
#define CONNECTIONS_MAX 32   /* served at once */
#define EXEC_TIMEOUT_S 60    /* exec's time limit unless the caller gives one */
#define COMMAND_MAX_S 3600   /* the longest --timeout=S; also bounds the other commands */
#define KILL_AFTER_MS 5000   /* from a command's SIGTERM to SIGKILL */
#define TIMED_OUT_STATUS 124 /* the exit status reported for a timed-out command */
#define NFSD_LOCK_WAIT_MS 60000
#define READ_MAX (64L << 20) /* bytes `read` sends at most */
#define PROBE_BYTES 65536    /* the export probe's write */
/* The export's delay device (disk_delay: export_mount) */
#define DM_NAME "herd-export"
#define DM_BUF 16384        /* bytes of one device-mapper ioctl's buffer */
#define DELAY_MAX_MS 10010  /* disklatency.py: 10 s and the tick it adds */
#define DEVICE_WAIT_MS 5000 /* for devtmpfs to show a new device */

struct setting {
    char key[32];
    char value[256];
};

static struct setting settings[CONFIG_MAX];
static int nsettings;
static char export_dev[16] = "ubda"; /* the block device under /export */

static void say(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    dprintf(2, "uml-init: [%ld.%03ld] %s\n", (long)t.tv_sec, t.tv_nsec / 1000000, buf);
}

static void power_off(void)
{
    sync();
    reboot(LINUX_REBOOT_CMD_POWER_OFF);
    _exit(1);
}

static void die(const char *what)
{
    say("FAILED: %s: %s", what, strerror(errno));
    power_off();
}

static const char *setting(const char *key, const char *fallback)
{
    for (int i = 0; i < nsettings; i++)
        if (strcmp(settings[i].key, key) == 0)
            return settings[i].value;
    return fallback;
}

static void config_read(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        die(path);
    char line[512];
    while (fgets(line, sizeof line, f) && nsettings < CONFIG_MAX) {
        line[strcspn(line, "\n")] = '\0';
        char *eq = strchr(line, '=');
        if (!eq || line[0] == '#')
            continue;
        *eq = '\0';
        if (strlen(line) >= sizeof settings[0].key || strlen(eq + 1) >= sizeof settings[0].value)
            continue;
        strcpy(settings[nsettings].key, line);
        strcpy(settings[nsettings].value, eq + 1);
        nsettings++;
    }
    fclose(f);
}

static char agent_secret[SECRET_MAX + 1];
static size_t agent_secret_len;

/* The agent's secret from path: a regular file of root's with mode 0600,
 * or 0640 (the kernel nfsd guest reads it through the group of the
 * guests' user; the host side checks which group), holding
 * SECRET_MIN..SECRET_MAX hex digits and a newline; the guest powers off
 * when it is not so. */
static void secret_read(const char *path)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        die(path);
    struct stat st;
    char text[SECRET_MAX + 2];
    ssize_t n = fstat(fd, &st) == 0 ? read(fd, text, sizeof text) : -1;
    close(fd);
    if (n < 0)
        die(path);
    size_t len = (size_t)n;
    if (len > 0 && text[len - 1] == '\n')
        len--;
    bool hex = len >= SECRET_MIN && len <= SECRET_MAX;
    for (size_t i = 0; hex && i < len; i++)
        hex = (text[i] >= '0' && text[i] <= '9') || (text[i] >= 'a' && text[i] <= 'f');
    mode_t mode = st.st_mode & 07777;
    if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (mode != 0600 && mode != 0640) || !hex) {
        errno = EINVAL;
        say("%s: not a regular file of root's with mode 0600 or 0640 and %d-%d hex digits", path,
            SECRET_MIN, SECRET_MAX);
        die("the agent's secret");
    }
    memcpy(agent_secret, text, len);
    agent_secret_len = len;
}

/* Whether word (len bytes) is the secret; as long whatever it holds. */
static bool secret_matches(const char *word, size_t len)
{
    unsigned char given[SECRET_MAX] = {0};
    memcpy(given, word, len < SECRET_MAX ? len : SECRET_MAX);
    unsigned diff = len != agent_secret_len;
    for (size_t i = 0; i < SECRET_MAX; i++)
        diff |= given[i] ^ (unsigned char)agent_secret[i];
    return diff == 0;
}

/* text as a decimal number min..max: digits only (no sign, space or
 * leading zero), at most 9 of them; false otherwise. */
static bool number_parse(const char *text, long min, long max, long *out)
{
    size_t len = strlen(text);
    if (len == 0 || len > 9 || (text[0] == '0' && len > 1))
        return false;
    long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] < '0' || text[i] > '9')
            return false;
        v = v * 10 + (text[i] - '0');
    }
    if (v < min || v > max)
        return false;
    *out = v;
    return true;
}

static void must_mount(const char *src, const char *dst, const char *type, unsigned long flags,
                       const char *data)
{
    if (mount(src, dst, type, flags, data) != 0) {
        say("mount %s on %s (%s)", src, dst, type ? type : "bind");
        die("mount");
    }
}

static void bind_readonly(const char *src, const char *dst)
{
    must_mount(src, dst, NULL, MS_BIND | MS_REC, NULL);
    must_mount(NULL, dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL);
}

static bool file_write(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = write(fd, text, strlen(text));
    int saved = errno;
    close(fd);
    errno = saved;
    return n == (ssize_t)strlen(text);
}

/* The export disk holds one file system, no partition table; but the
 * guest kernel tries every partition format it knows on it, and some
 * trust a one-byte checksum: Acorn PowerTec's matches the first sector of
 * one xfs image in 256 (its UUID is random), and the fields there become
 * partitions ubda1, ubda2... which node_exporter then reports as disks.
 * Drop whatever partitions were found (a ubd disk has 15 at most). */
static void disk_drop_partitions(const char *disk)
{
    int fd = open(disk, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        die(disk);
    for (int pno = 1; pno < 16; pno++) {
        struct blkpg_partition part = {.pno = pno};
        struct blkpg_ioctl_arg arg = {
            .op = BLKPG_DEL_PARTITION, .datalen = sizeof part, .data = &part};
        if (ioctl(fd, BLKPG, &arg) == 0)
            say("%s: dropped partition %d (read into the file system's bytes)", disk, pno);
        else if (errno != ENXIO)
            say("%s: partition %d stays: %s", disk, pno, strerror(errno));
    }
    close(fd);
}

/* Moves into a tmpfs root: /usr and /etc of the host read-only, the
 * state directory read-write, an empty /export (export_mount mounts the
 * disk there once the modules are loaded). */
static void root_make(const char *guest_dir)
{
    must_mount("tmpfs", "/mnt", "tmpfs", 0, "mode=0755");
    const char *dirs[] = {"/mnt/usr",
                          "/mnt/etc",
                          "/mnt/proc",
                          "/mnt/sys",
                          "/mnt/dev",
                          "/mnt/run",
                          "/mnt/tmp",
                          "/mnt/var",
                          "/mnt/var/lib",
                          "/mnt/var/lib/nfs",
                          "/mnt/var/lib/nfs/sm",
                          "/mnt/var/lib/nfs/sm.bak",
                          "/mnt/var/lib/nfs/v4recovery",
                          "/mnt/state",
                          "/mnt/export",
                          "/mnt/run/rpcbind"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (mkdir(dirs[i], 0755) != 0 && errno != EEXIST)
            die(dirs[i]);
    chmod("/mnt/tmp", 01777);
    const char *links[][2] = {{"usr/bin", "/mnt/bin"},
                              {"usr/sbin", "/mnt/sbin"},
                              {"usr/lib", "/mnt/lib"},
                              {"usr/lib64", "/mnt/lib64"}};
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
        if (symlink(links[i][0], links[i][1]) != 0)
            die(links[i][1]);
    bind_readonly("/usr", "/mnt/usr");
    bind_readonly("/etc", "/mnt/etc");
    must_mount("none", "/mnt/state", "hostfs", 0, guest_dir);
    must_mount("proc", "/mnt/proc", "proc", 0, NULL);
    must_mount("sysfs", "/mnt/sys", "sysfs", 0, NULL);
    must_mount("devtmpfs", "/mnt/dev", "devtmpfs", 0, NULL);
    /* statd runs as the owner of sm/ (Debian: statd). */
    struct stat st;
    if (stat("/mnt/state/statd-owner", &st) == 0) {
        chown("/mnt/var/lib/nfs/sm", st.st_uid, st.st_gid);
        chown("/mnt/var/lib/nfs/sm.bak", st.st_uid, st.st_gid);
    }
    if (chdir("/mnt") != 0)
        die("chdir /mnt");
    must_mount(".", "/", NULL, MS_MOVE, NULL);
    if (chroot(".") != 0 || chdir("/") != 0)
        die("chroot");
}

/* In dependency order (modules.dep of 6.1um). */
static const char *const server_modules[] = {
    "lib/crc-ccitt", "net/ipv6/ipv6", "net/sunrpc/sunrpc", "fs/nfs_common/grace", "fs/lockd/lockd",
    "fs/nfs_common/nfs_acl", "lib/oid_registry", "net/sunrpc/auth_gss/auth_rpcgss", "fs/nfsd/nfsd",
    /* the link (nfs-server.sh --link): netem and tbf on eth0, and on
     * ifb0 for what arrives (an ingress redirect) */
    "net/sched/sch_netem", "net/sched/sch_tbf", "net/sched/sch_ingress", "net/sched/act_mirred",
    "net/sched/cls_matchall", "drivers/net/ifb", NULL};
/* --disk-latency: device-mapper's delay target (export_mount) */
static const char *const dm_modules[] = {"drivers/md/dm-mod", "drivers/md/dm-delay", NULL};
static const char *const client_modules[] = {"lib/crc-ccitt",
                                             "net/ipv6/ipv6",
                                             "net/sunrpc/sunrpc",
                                             "fs/nfs_common/grace",
                                             "fs/lockd/lockd",
                                             "fs/nfs_common/nfs_acl",
                                             "lib/oid_registry",
                                             "net/sunrpc/auth_gss/auth_rpcgss",
                                             "fs/netfs/netfs",
                                             "fs/fscache/fscache",
                                             "fs/nfs/nfs",
                                             "fs/nfs/nfsv3",
                                             "net/dns_resolver/dns_resolver",
                                             "fs/nfs/nfsv4",
                                             NULL};

/* A client's mounts over its read-only hostfs root (every mount point is
 * a directory of the host's tree): tmpfs where the guest writes, the
 * share directory read-write at its host path. */
static void root_client(void)
{
    must_mount("proc", "/proc", "proc", 0, NULL);
    must_mount("sysfs", "/sys", "sysfs", 0, NULL);
    /* (the kernel has mounted devtmpfs on /dev already) */
    if (mount("devtmpfs", "/dev", "devtmpfs", 0, NULL) != 0 && errno != EBUSY)
        die("mount devtmpfs on /dev");
    must_mount("tmpfs", "/run", "tmpfs", 0, "mode=0755");
    must_mount("tmpfs", "/var/lib/nfs", "tmpfs", 0, "mode=0755");
    const char *dirs[] = {"/dev/shm",     "/run/tmp",        "/run/home",
                          "/run/rpcbind", "/var/lib/nfs/sm", "/var/lib/nfs/sm.bak"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (mkdir(dirs[i], 0755) != 0 && errno != EEXIST)
            die(dirs[i]);
    must_mount("tmpfs", "/dev/shm", "tmpfs", 0, "mode=1777");
    chmod("/run/tmp", 01777);
    const char *share = setting("share", "");
    if (*share)
        must_mount("none", share, "hostfs", 0, share);
    char owner[512];
    struct stat st;
    snprintf(owner, sizeof owner, "%s/statd-owner", getenv("HERD_GUEST"));
    if (stat(owner, &st) == 0) {
        chown("/var/lib/nfs/sm", st.st_uid, st.st_gid);
        chown("/var/lib/nfs/sm.bak", st.st_uid, st.st_gid);
    }
    setenv("TMPDIR", "/run/tmp", 1);
    setenv("HOME", "/run/home", 1);
}

static void modules_load(const char *const *mods)
{
    struct utsname u;
    uname(&u);
    for (size_t i = 0; mods[i]; i++) {
        char path[256];
        snprintf(path, sizeof path, "/usr/lib/uml/modules/%s/kernel/%s.ko", u.release, mods[i]);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            die(path);
        const char *params = "";
        if (strcmp(mods[i], "fs/lockd/lockd") == 0)
            params = setting("lockd_params", "");
        if (syscall(SYS_finit_module, fd, params, 0) != 0 && errno != EEXIST)
            die(path);
        close(fd);
    }
}

static void if_up(int sock, const char *name, const char *addr, const char *mask)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
    if (addr) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
        sin->sin_family = AF_INET;
        if (inet_pton(AF_INET, addr, &sin->sin_addr) != 1)
            die(addr);
        if (ioctl(sock, SIOCSIFADDR, &ifr) != 0)
            die("SIOCSIFADDR");
        if (inet_pton(AF_INET, mask, &sin->sin_addr) != 1)
            die(mask);
        if (ioctl(sock, SIOCSIFNETMASK, &ifr) != 0)
            die("SIOCSIFNETMASK");
    }
    if (ioctl(sock, SIOCGIFFLAGS, &ifr) != 0)
        die("SIOCGIFFLAGS");
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (ioctl(sock, SIOCSIFFLAGS, &ifr) != 0)
        die("SIOCSIFFLAGS");
}

static void sin_set(struct sockaddr *sa, const char *addr)
{
    struct sockaddr_in *sin = (struct sockaddr_in *)sa;
    sin->sin_family = AF_INET;
    if (inet_pton(AF_INET, addr, &sin->sin_addr) != 1)
        die(addr);
}

/* One route of the `routes` setting, "DEST/PREFIX,GATEWAY" (0.0.0.0/0 is
 * the default route), added with SIOCADDRT. */
static void route_add(int sock, char *word)
{
    char *gw = strchr(word, ','), *prefix = strchr(word, '/');
    if (!gw || !prefix || prefix > gw)
        die(word);
    *gw++ = '\0';
    *prefix++ = '\0';
    int bits = atoi(prefix);
    if (bits < 0 || bits > 32)
        die(prefix);
    char mask[INET_ADDRSTRLEN];
    uint32_t m = bits ? htonl(~0u << (32 - bits)) : 0;
    inet_ntop(AF_INET, &m, mask, sizeof mask);
    struct rtentry rt;
    memset(&rt, 0, sizeof rt);
    sin_set(&rt.rt_dst, word);
    sin_set(&rt.rt_genmask, mask);
    sin_set(&rt.rt_gateway, gw);
    rt.rt_flags = RTF_UP | RTF_GATEWAY;
    if (ioctl(sock, SIOCADDRT, &rt) != 0)
        die("SIOCADDRT");
}

static void network_up(void)
{
    int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sock < 0)
        die("socket");
    if_up(sock, "lo", "127.0.0.1", "255.0.0.0");
    if_up(sock, "eth0", setting("addr", "10.77.0.2"), setting("netmask", "255.255.255.252"));
    char routes[LINE_MAX_];
    snprintf(routes, sizeof routes, "%s", setting("routes", ""));
    for (char *save = NULL, *w = strtok_r(routes, " ", &save); w; w = strtok_r(NULL, " ", &save))
        route_add(sock, w);
    close(sock);
    sethostname(setting("hostname", "knfsd"), strlen(setting("hostname", "knfsd")));
    /* One guest CPU takes the tap's packets in bursts: a longer backlog
     * than the default 1000 (which dropped ~1500 packets of a 128 MiB
     * write) */
    file_write("/proc/sys/net/core/netdev_max_backlog", "10000\n");
}

/* The log file /state/log/LOG (server) or HERD_GUEST/log/LOG (client):
 * an fd, -1 when it cannot be opened. */
static int log_open(const char *logname)
{
    char path[512];
    if (strcmp(setting("role", "server"), "client") == 0)
        snprintf(path, sizeof path, "%s/log/%s", getenv("HERD_GUEST"), logname);
    else
        snprintf(path, sizeof path, "/state/log/%s", logname);
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

/* In a forked child: stdout and stderr on fd `out`, stdin /dev/null, no
 * blocked signal, then exec argv. */
static _Noreturn void spawn_child(char *const argv[], int out)
{
    if (out >= 0) {
        dup2(out, 1);
        dup2(out, 2);
    }
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0)
        dup2(null, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execvp(argv[0], argv);
    dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Starts argv with stdout and stderr on fd `out` (or the log file LOG
 * when out < 0: log_open); returns its pid. */
static pid_t spawn(char *const argv[], int out, const char *logname)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    spawn_child(argv, out >= 0 ? out : log_open(logname));
}

/* Runs argv to its end with its output on `out` (or into LOG); its
 * exit status, -1 when it could not be waited for. */
static int run(char *const argv[], int out, const char *logname)
{
    pid_t pid = spawn(argv, out, logname);
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void must_run(char *const argv[], const char *logname)
{
    int rc = run(argv, -1, logname);
    if (rc != 0) {
        errno = 0;
        say("%s: exit %d (see log/%s)", argv[0], rc, logname);
        power_off();
    }
}

/* word is one of the space-separated words of list. */
static bool word_in(const char *word, const char *list)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

/* exportfs of /export to each of the `client` setting's space-separated
 * hosts or networks (the host side of the link, a cluster's subnet),
 * `mode` sync or async; exportfs flushes the kernel's export cache, so a
 * live change holds from the next request on. Clients also named in
 * `secure_client` (nfs-server.sh --reach host: the host's side) must send
 * from a port below 1024 (root's), the others may not (insecure: herd as
 * another user). The first failing exit status, else 0. */
static int nfs_export(const char *mode)
{
    char clients[LINE_MAX_];
    snprintf(clients, sizeof clients, "%s", setting("client", "10.77.0.1"));
    const char *secure = setting("secure_client", "");
    for (char *save = NULL, *c = strtok_r(clients, " ", &save); c; c = strtok_r(NULL, " ", &save)) {
        char options[128], target[LINE_MAX_];
        snprintf(options, sizeof options, "rw,%s,no_root_squash,no_subtree_check,%s,fsid=1", mode,
                 word_in(c, secure) ? "secure" : "insecure");
        snprintf(target, sizeof target, "%s:/export", c);
        char *argv[] = {"exportfs", "-o", options, target, NULL};
        int rc = run(argv, -1, "exportfs.log");
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* lockd's grace period for its next start (it reads the module parameter
 * then); at least nlm_timeout, as lockd rounds up to it. */
static void lockd_grace(const char *grace)
{
    char text[32];
    int seconds = atoi(grace);
    snprintf(text, sizeof text, "%d\n", seconds < 1 ? 1 : seconds);
    file_write("/sys/module/lockd/parameters/nlm_grace_period", text);
}

static bool nfsd_threads(const char *n)
{
    char text[32];
    snprintf(text, sizeof text, "%s\n", n);
    return file_write("/proc/fs/nfsd/threads", text);
}

/* The NFSv4 grace and lease times, written before nfsd starts; nfsd takes
 * 10 s at least (grace 0: the grace period is ended once nfsd runs). */
static void nfsd_times(const char *grace, const char *lease)
{
    char text[32];
    int seconds = atoi(grace);
    snprintf(text, sizeof text, "%d\n", seconds < 10 ? 10 : seconds);
    file_write("/proc/fs/nfsd/nfsv4gracetime", text);
    snprintf(text, sizeof text, "%s\n", lease);
    file_write("/proc/fs/nfsd/nfsv4leasetime", text);
}

static long threads_max; /* the config's threads_max: lib-knfsd.sh's KNFSD_THREADS_MAX */

/* Why GRACE LEASE THREADS cannot be nfsd's, in why (false when they can):
 * decimal digits, grace 0..3600 s and lease 10..3600 s (the kernel's
 * range for both), threads 1..threads_max. */
static bool nfsd_settings_refused(const char *grace, const char *lease, const char *threads,
                                  char *why, size_t size)
{
    long v;
    if (!number_parse(grace, 0, 3600, &v))
        snprintf(why, size, "grace '%.24s' is not 0..3600 seconds", grace);
    else if (!number_parse(lease, 10, 3600, &v))
        snprintf(why, size, "lease '%.24s' is not 10..3600 seconds", lease);
    else if (!number_parse(threads, 1, threads_max, &v))
        snprintf(why, size, "threads '%.24s' is not a count 1..%ld", threads, threads_max);
    else
        return false;
    return true;
}

/* Writes /proc/fs/nfsd/pool_stats as Prometheus text for node_exporter's
 * textfile collector (renamed into place: a scrape never sees half a
 * file); the agent's loop calls it every AGENT_TICK_MS. */
static void metrics_refresh(void)
{
    if (!*setting("metrics_port", ""))
        return;
    FILE *in = fopen("/proc/fs/nfsd/pool_stats", "r");
    if (!in)
        return;
    FILE *out = fopen("/run/herd-metrics/pool.prom.tmp", "w");
    if (!out) {
        fclose(in);
        return;
    }
    static const char *names[] = {"packets_arrived", "sockets_enqueued", "threads_woken",
                                  "threads_timedout"};
    for (int i = 0; i < 4; i++)
        fprintf(out, "# TYPE node_nfsd_pool_%s_total counter\n", names[i]);
    char line[256];
    while (fgets(line, sizeof line, in)) {
        unsigned long long pool, v[4];
        if (sscanf(line, "%llu %llu %llu %llu %llu", &pool, &v[0], &v[1], &v[2], &v[3]) != 5)
            continue;
        for (int i = 0; i < 4; i++)
            fprintf(out, "node_nfsd_pool_%s_total{pool=\"%llu\"} %llu\n", names[i], pool, v[i]);
    }
    fclose(in);
    if (fclose(out) == 0)
        rename("/run/herd-metrics/pool.prom.tmp", "/run/herd-metrics/pool.prom");
}

/* Waits up to ms milliseconds for path to exist. */
static bool path_wait(const char *path, int ms)
{
    for (int waited = 0; waited < ms; waited += 10) {
        if (access(path, F_OK) == 0)
            return true;
        usleep(10000);
    }
    return false;
}

/* node_exporter (Debian's prometheus-node-exporter) on metrics_port, with
 * the collectors herd's monitor reads, and its textfile collector for
 * pool_stats (metrics_refresh). Its disks: not device-mapper's delay
 * device (above ubda, the disk itself: it counts no flush, and every
 * request it passes on is ubda's too). */
static void metrics_start(void)
{
    const char *port = setting("metrics_port", "");
    if (!*port)
        return;
    if (mkdir("/run/herd-metrics", 0755) != 0 && errno != EEXIST)
        die("/run/herd-metrics");
    metrics_refresh();
    char listen[64];
    snprintf(listen, sizeof listen, "--web.listen-address=%s:%s", setting("addr", "10.77.0.2"),
             port);
    char *argv[] = {"prometheus-node-exporter",
                    listen,
                    "--collector.disable-defaults",
                    "--collector.cpu",
                    "--collector.loadavg",
                    "--collector.meminfo",
                    "--collector.nfsd",
                    "--collector.diskstats",
                    "--collector.diskstats.device-exclude=^(ram|loop|fd|dm-)[0-9]+$",
                    "--collector.textfile",
                    "--collector.textfile.directory=/run/herd-metrics",
                    NULL};
    spawn(argv, -1, "node-exporter.log");
}

/* With grace 0 (none): end nfsd's NFSv4 grace now and wait out lockd's,
 * which cannot be ended and lasts lockd_grace_min seconds at least (its
 * nlm_timeout), so that the first lock after a start is granted. */
static void grace_none(const char *grace)
{
    if (strcmp(grace, "0") != 0)
        return;
    file_write("/proc/fs/nfsd/v4_end_grace", "Y\n");
    if (strcmp(setting("nlm", "1"), "1") == 0)
        usleep((useconds_t)(atoi(setting("lockd_grace_min", "3")) * 1000000 + 200000));
}

/* The first line of the file path in buf (size bytes), without its
 * newline; false when it cannot be read. */
static bool line_read(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "re");
    bool ok = f && fgets(buf, (int)size, f);
    if (f)
        fclose(f);
    if (ok)
        buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

/* Why /export cannot take writes now, in why (false when it can): not
 * mounted, read-only (statvfs ST_RDONLY: btrfs after an error), with
 * errors recorded by ext4 (whose journal aborts on a failed write to its
 * disk: it refuses writes from then on, ST_RDONLY or not) or with its
 * directory unreadable (a shut-down xfs answers EIO). Writes nothing:
 * cheap enough for every status. */
static bool export_refuses_writes(char *why, size_t size)
{
    struct statvfs vfs;
    struct stat root, export;
    char errors[32], last[64] = "?";
    if (statvfs("/export", &vfs) != 0 || stat("/", &root) != 0 || stat("/export", &export) != 0) {
        snprintf(why, size, "/export: %s", strerror(errno));
        return true;
    }
    if (export.st_dev == root.st_dev) {
        snprintf(why, size, "/export is not mounted");
        return true;
    }
    if (vfs.f_flag & ST_RDONLY) {
        snprintf(why, size, "/export is read-only (its file system turned read-only)");
        return true;
    }
    /* (the ext4 that start makes has none: errors_count is the disk's) */
    char errors_path[64], last_path[64];
    snprintf(errors_path, sizeof errors_path, "/sys/fs/ext4/%s/errors_count", export_dev);
    snprintf(last_path, sizeof last_path, "/sys/fs/ext4/%s/last_error_func", export_dev);
    if (strcmp(setting("fs", "xfs"), "ext4") == 0 &&
        line_read(errors_path, errors, sizeof errors) && strcmp(errors, "0") != 0) {
        line_read(last_path, last, sizeof last);
        snprintf(why, size,
                 "/export: ext4 has recorded %s errors (the last in %s); after a failed write "
                 "to its disk it refuses writes",
                 errors, last);
        return true;
    }
    /* (O_NOATIME: no atime update either) */
    int fd = open("/export", O_RDONLY | O_DIRECTORY | O_NOATIME | O_CLOEXEC);
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    if (dir)
        errno = 0;
    if (!dir || (!readdir(dir) && errno != 0)) {
        snprintf(why, size, "/export cannot be read: %s (xfs shuts down after a failed write)",
                 strerror(errno));
        if (dir)
            closedir(dir);
        else if (fd >= 0)
            close(fd);
        return true;
    }
    closedir(dir);
    return false;
}

/* Whether /export takes a write: a probe file created, written
 * (PROBE_BYTES of new blocks), fsynced and removed; false with *step
 * saying which failed and errno why. */
static bool export_probe(const char **step)
{
    static char block[PROBE_BYTES];
    const char *path = "/export/.herd-export-probe";
    memset(block, 'p', sizeof block);
    unlink(path);
    *step = "create";
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    *step = "write";
    ssize_t n = write(fd, block, sizeof block);
    if (n >= 0 && n < (ssize_t)sizeof block)
        errno = ENOSPC;
    bool ok = n == (ssize_t)sizeof block && (*step = "fsync", fsync(fd) == 0);
    int saved = errno;
    close(fd);
    if (unlink(path) != 0 && ok) {
        *step = "remove";
        return false;
    }
    errno = saved;
    return ok;
}

/* Powers off unless the export takes writes (export_refuses_writes, then
 * export_probe): a disk image on a full host file system fails here. */
static void export_must_take_writes(void)
{
    char why[256];
    const char *step;
    if (export_refuses_writes(why, sizeof why)) {
        say("FAILED: the export cannot be written: %s", why);
        power_off();
    }
    if (!export_probe(&step)) {
        say("FAILED: the export cannot be written: probe file %s: %s (is the host file system "
            "that holds the disk image full?)",
            step, strerror(errno));
        power_off();
    }
}

/* The export's slow disk (nfs-server.sh --disk-latency; the config's
 * disk_delay, "READ WRITE FLUSH" in ms, empty for none): device-mapper's
 * delay target DM_NAME over ubda, made with device-mapper's ioctls (no
 * dmsetup: every exec costs 0.1-0.5 s here). Each bio waits its class's
 * delay (a flush: a bio with REQ_PREFLUSH) on a timer of its own, then
 * goes on to ubda. */
union dm_buffer {
    struct dm_ioctl io;
    char bytes[DM_BUF];
};

/* One device-mapper ioctl on DM_NAME, the reply in b; with params, the
 * table of one delay target over `sectors` (DM_TABLE_LOAD). 0, or -1
 * with errno. */
static int dm_call(unsigned long cmd, unsigned flags, const char *params,
                   unsigned long long sectors, union dm_buffer *b)
{
    memset(b, 0, sizeof *b);
    b->io.version[0] = DM_VERSION_MAJOR;
    b->io.data_size = sizeof *b;
    b->io.data_start = sizeof b->io;
    b->io.flags = flags;
    snprintf(b->io.name, sizeof b->io.name, "%s", DM_NAME);
    if (params) {
        struct dm_target_spec *spec = (struct dm_target_spec *)(b->bytes + b->io.data_start);
        spec->length = sectors;
        snprintf(spec->target_type, sizeof spec->target_type, "delay");
        snprintf((char *)(spec + 1), sizeof *b - b->io.data_start - sizeof *spec, "%s", params);
        b->io.target_count = 1;
    }
    int fd = open("/dev/mapper/control", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = ioctl(fd, cmd, &b->io);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

/* ubda's size in 512-byte sectors; 0 when it cannot be read. */
static unsigned long long disk_sectors(void)
{
    unsigned long long bytes = 0;
    int fd = open("/dev/ubda", O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && ioctl(fd, BLKGETSIZE64, &bytes) != 0)
        bytes = 0;
    if (fd >= 0)
        close(fd);
    return bytes / 512;
}

/* ms[0..2] (read, write, flush) as delays: decimal 0..DELAY_MAX_MS. */
static bool delays_valid(char *const ms[3])
{
    long v;
    for (int i = 0; i < 3; i++)
        if (!ms[i] || !number_parse(ms[i], 0, DELAY_MAX_MS, &v))
            return false;
    return true;
}

/* DM_NAME's table: a delay target over all of ubda with the read, write
 * and flush delays ms[0..2] (checked), made live (a resume swaps it in;
 * bios held by the old table are let through at once). False with errno
 * when the kernel refused. */
static bool disk_delay_load(char *const ms[3])
{
    char params[256];
    snprintf(params, sizeof params, "/dev/ubda 0 %s /dev/ubda 0 %s /dev/ubda 0 %s", ms[0], ms[1],
             ms[2]);
    unsigned long long sectors = disk_sectors();
    union dm_buffer b;
    if (sectors == 0) {
        errno = EIO;
        return false;
    }
    /* (resume without freezing the file system: the delay moves no data) */
    return dm_call(DM_TABLE_LOAD, 0, params, sectors, &b) == 0 &&
           dm_call(DM_DEV_SUSPEND, DM_SKIP_LOCKFS_FLAG, NULL, 0, &b) == 0;
}

/* The delay device over ubda with the config's disk_delay: its path in
 * path, its name in export_dev. Powers off when it cannot be made. */
static void disk_delay_create(char *path, size_t size)
{
    char words[LINE_MAX_], *ms[4] = {NULL}, *save = NULL;
    snprintf(words, sizeof words, "%s", setting("disk_delay", ""));
    for (int i = 0; i < 4; i++)
        ms[i] = strtok_r(i ? NULL : words, " ", &save);
    if (ms[3] || !delays_valid(ms)) {
        errno = EINVAL;
        say("the config's disk_delay '%s' is not READ WRITE FLUSH (ms, 0..%d)",
            setting("disk_delay", ""), DELAY_MAX_MS);
        die("disk_delay");
    }
    modules_load(dm_modules);
    if (!path_wait("/dev/mapper/control", DEVICE_WAIT_MS))
        die("/dev/mapper/control");
    union dm_buffer b;
    if (dm_call(DM_DEV_CREATE, 0, NULL, 0, &b) != 0)
        die("device-mapper: create " DM_NAME);
    unsigned dm_minor = minor((dev_t)b.io.dev);
    if (!disk_delay_load(ms))
        die("device-mapper: the delay table");
    snprintf(path, size, "/dev/dm-%u", dm_minor);
    snprintf(export_dev, sizeof export_dev, "dm-%u", dm_minor);
    if (!path_wait(path, DEVICE_WAIT_MS))
        die(path);
    say("%s: dm-delay over ubda, read %s ms, write %s ms, flush %s ms", path, ms[0], ms[1], ms[2]);
}

/* The delay device goes (after the export's umount; a lazy one leaves it
 * busy: it goes with the guest). */
static void disk_delay_remove(void)
{
    union dm_buffer b;
    if (!*setting("disk_delay", ""))
        return;
    if (dm_call(DM_DEV_REMOVE, 0, NULL, 0, &b) == 0)
        say("device-mapper: %s removed", DM_NAME);
    else
        say("device-mapper: remove %s: %s", DM_NAME, strerror(errno));
}

/* The export's disk mounted at /export: ubda, or with disk_delay the
 * delay device over it. */
static void export_mount(void)
{
    char dev[32] = "/dev/ubda";
    disk_drop_partitions(dev);
    if (*setting("disk_delay", ""))
        disk_delay_create(dev, sizeof dev);
    must_mount(dev, "/export", setting("fs", "xfs"), 0, NULL);
    chmod("/export", 0777);
}

/* threads_max, and the config's grace, lease and threads checked as the
 * agent's restart checks them. */
static void nfs_settings_check(void)
{
    char why[128];
    if (!number_parse(setting("threads_max", ""), 1, 999999999, &threads_max)) {
        say("FAILED: the config's threads_max '%s' is not a count", setting("threads_max", ""));
        power_off();
    }
    if (nfsd_settings_refused(setting("grace", "0"), setting("lease", "60"),
                              setting("threads", "8"), why, sizeof why)) {
        say("FAILED: the config's %s", why);
        power_off();
    }
}

static void nfs_start(void)
{
    nfs_settings_check();
    must_mount("nfsd", "/proc/fs/nfsd", "nfsd", 0, NULL);
    int etab = open("/var/lib/nfs/etab", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (etab < 0)
        die("/var/lib/nfs/etab");
    close(etab);
    char *rpcbind[] = {"rpcbind", "-w", "-f", NULL};
    spawn(rpcbind, -1, "rpcbind.log");
    if (!path_wait("/run/rpcbind.sock", 5000))
        die("rpcbind did not make /run/rpcbind.sock");
    if (strcmp(setting("nlm", "1"), "1") == 0) {
        char *statd[] = {"rpc.statd", "-F", "-L", "-d", NULL};
        spawn(statd, -1, "statd.log");
    }
    if (nfs_export(setting("mode", "sync")) != 0)
        die("exportfs (see log/exportfs.log)");
    char *mountd[] = {"rpc.mountd", "-F", "-N", "2", NULL};
    spawn(mountd, -1, "mountd.log");
    nfsd_times(setting("grace", "0"), setting("lease", "60"));
    char *nfsd[] = {"rpc.nfsd", (char *)setting("threads", "8"), NULL};
    must_run(nfsd, "nfsd.log");
    grace_none(setting("grace", "0"));
    metrics_start();
    export_must_take_writes();
    say("nfsd up: %s threads, %s export of %s", setting("threads", "8"), setting("mode", "sync"),
        setting("fs", "xfs"));
}

static void nfs_stop(void)
{
    nfsd_threads("0");
    sync();
    if (umount2("/export", 0) != 0)
        umount2("/export", MNT_DETACH);
    disk_delay_remove();
    sync();
}

/* rpcbind and rpc.statd: the kernel's NLM client asks statd to monitor
 * the server before its first lock. */
static void client_start(void)
{
    char *rpcbind[] = {"rpcbind", "-w", "-f", NULL};
    spawn(rpcbind, -1, "rpcbind.log");
    if (!path_wait("/run/rpcbind.sock", 5000))
        die("rpcbind did not make /run/rpcbind.sock");
    char *statd[] = {"rpc.statd", "-F", "-d", NULL};
    spawn(statd, -1, "statd.log");
    say("client up: %s", setting("hostname", "client"));
}

/* Runs argv, killed after `seconds`; its exit status or -1. */
static int run_within(char *const argv[], int seconds, const char *logname)
{
    pid_t pid = spawn(argv, -1, logname);
    for (int waited = 0; pid > 0 && waited < seconds * 10; waited++) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        usleep(100000);
    }
    if (pid > 0)
        kill(pid, SIGKILL);
    return -1;
}

static void client_stop(void)
{
    char *umount_all[] = {"umount", "-a", "-f", "-t", "nfs,nfs4", NULL};
    if (run_within(umount_all, 10, "umount.log") != 0) {
        char *detach[] = {"umount", "-a", "-l", "-t", "nfs,nfs4", NULL};
        run_within(detach, 2, "umount.log");
    }
    sync();
}

static long ms_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000L + t.tv_nsec / 1000000;
}

/* Text to the caller (a caller that hung up raises no SIGPIPE). */
static void reply(int fd, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0)
        (void)!send(fd, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1, MSG_NOSIGNAL);
}

enum command_end { COMMAND_EXITED, COMMAND_TIMED_OUT, COMMAND_HUNG_UP };

/* exec and sh: runs argv in a process group of its own with its output on
 * fd (the caller's connection) until it exits; when timeout_s seconds
 * pass (0: no limit) or the caller hangs up, the group gets SIGTERM, and
 * SIGKILL KILL_AFTER_MS later (what ignores SIGTERM). Its exit status
 * (TIMED_OUT_STATUS after a time-out), and in *end why it ended. */
static int command_run(int fd, char *const argv[], long timeout_s, enum command_end *end)
{
    *end = COMMAND_EXITED;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        setpgid(0, 0);
        spawn_child(argv, fd);
    }
    setpgid(pid, pid); /* (whichever runs first makes the group) */
    long start = ms_now(), kill_at = -1;
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) != pid) {
        if (kill_at >= 0) {
            usleep(100000);
            if (ms_now() >= kill_at)
                kill(-pid, SIGKILL);
            continue;
        }
        struct pollfd p = {.fd = fd, .events = POLLRDHUP};
        if (poll(&p, 1, 100) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
            *end = COMMAND_HUNG_UP;
        else if (timeout_s > 0 && ms_now() - start >= timeout_s * 1000)
            *end = COMMAND_TIMED_OUT;
        if (*end != COMMAND_EXITED) {
            kill(-pid, SIGTERM);
            kill_at = ms_now() + KILL_AFTER_MS;
        }
    }
    if (kill_at >= 0)
        kill(-pid, SIGKILL); /* what is left of the group */
    if (*end == COMMAND_TIMED_OUT)
        return TIMED_OUT_STATUS;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The optional first word --timeout=S of exec and sh: S in *timeout_s
 * and *argv moved past it; false when S is not 1..COMMAND_MAX_S. */
static bool timeout_option(char ***argv, long *timeout_s)
{
    if (!**argv || strncmp(**argv, "--timeout=", 10) != 0)
        return true;
    if (!number_parse(**argv + 10, 1, COMMAND_MAX_S, timeout_s))
        return false;
    (*argv)++;
    return true;
}

/* exec [--timeout=S] PROG ARG...: "ok", the output, "exit N". */
static void exec_serve(int fd, char **argv)
{
    long timeout_s = EXEC_TIMEOUT_S;
    if (!timeout_option(&argv, &timeout_s) || !argv[0]) {
        reply(fd, "error: exec [--timeout=S] PROG ARG... (S: 1..%d seconds)\n", COMMAND_MAX_S);
        return;
    }
    reply(fd, "ok\n");
    enum command_end end;
    int rc = command_run(fd, argv, timeout_s, &end);
    if (end == COMMAND_HUNG_UP)
        return;
    if (end == COMMAND_TIMED_OUT)
        reply(fd, "exec: timed out after %ld s; its process group was killed\n", timeout_s);
    reply(fd, "exit %d\n", rc);
}

/* sh [--timeout=S] LINE: LINE's output, a NUL byte, "exit N". */
static void sh_serve(int fd, char **argv)
{
    long timeout_s = 0;
    if (!timeout_option(&argv, &timeout_s) || !argv[0] || argv[1]) {
        reply(fd, "error: sh [--timeout=S] LINE (S: 1..%d seconds)\n", COMMAND_MAX_S);
        return;
    }
    char *sh[] = {"/bin/sh", "-c", argv[0], NULL};
    enum command_end end;
    int rc = command_run(fd, sh, timeout_s, &end);
    if (end == COMMAND_HUNG_UP)
        return;
    (void)!send(fd, "", 1, MSG_NOSIGNAL);
    reply(fd, "exit %d\n", rc);
}

/* PATH opened beneath /proc or /sys without leaving it: openat2 relative
 * to that directory with RESOLVE_BENEATH ("..", absolute paths and
 * symbolic links out of it fail with EXDEV) and RESOLVE_NO_MAGICLINKS
 * (/proc/PID/root, cwd, exe, fd/N fail with ELOOP). The walk of a ".."
 * (the links of /sys/block/NAME hold them) fails EAGAIN when any rename
 * or mount in the guest ran meanwhile, for the caller to retry: up to
 * OPEN_BENEATH_TRIES times. An fd, or -1. */
#define OPEN_BENEATH_TRIES 100
static int open_beneath(const char *path)
{
    const char *top, *rest;
    if (strncmp(path, "/proc/", 6) == 0) {
        top = "/proc";
        rest = path + 6;
    } else if (strncmp(path, "/sys/", 5) == 0) {
        top = "/sys";
        rest = path + 5;
    } else {
        errno = EXDEV;
        return -1;
    }
    int dir = open(top, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return -1;
    struct open_how how = {.flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC,
                           .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
    int fd = -1;
    for (int i = 0; i < OPEN_BENEATH_TRIES && fd < 0; i++) {
        fd = (int)syscall(SYS_openat2, dir, rest, &how, sizeof how);
        if (fd < 0 && errno != EAGAIN)
            break;
    }
    int saved = errno;
    close(dir);
    errno = saved;
    return fd;
}

/* read PATH: "ok" and the file (READ_MAX bytes at most). */
static void reply_file(int fd, const char *path)
{
    int in = open_beneath(path);
    if (in < 0) {
        if (errno == EXDEV || errno == ELOOP)
            reply(fd,
                  "error: %.256s: not beneath /proc or /sys (.., a link out of it or a "
                  "magic link)\n",
                  path);
        else
            reply(fd, "error: %.256s: %s\n", path, strerror(errno));
        return;
    }
    struct stat st;
    if (fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
        reply(fd, "error: %.256s: not a regular file\n", path);
        close(in);
        return;
    }
    reply(fd, "ok\n");
    char buf[65536];
    ssize_t n;
    for (long sent = 0; sent < READ_MAX && (n = read(in, buf, sizeof buf)) > 0; sent += n)
        if (send(fd, buf, (size_t)n, MSG_NOSIGNAL) != n)
            break;
    close(in);
}

/* Until no other connection changes nfsd (NFSD_LOCK_WAIT_MS at most);
 * held until this connection's process ends. */
static bool nfsd_lock(void)
{
    int fd = open("/run/herd-agent.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    for (long waited = 0; fd >= 0 && waited < NFSD_LOCK_WAIT_MS; waited += 50) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return true;
        usleep(50000);
    }
    return false;
}

/* restart GRACE LEASE THREADS (checked by the caller) */
static void nfsd_restart(int fd, char **argv)
{
    nfsd_threads("0");
    nfsd_times(argv[1], argv[2]);
    lockd_grace(argv[1]);
    if (!nfsd_threads(argv[3])) {
        reply(fd, "error: threads: %s\n", strerror(errno));
        return;
    }
    grace_none(argv[1]);
    reply(fd, "ok\n");
}

/* threads, export, end-grace and restart: nfsd's live changes, one at a
 * time. */
static void nfsd_change(int fd, char **argv, int argc)
{
    char why[128];
    long n;
    if (!nfsd_lock()) {
        reply(fd, "error: another command kept changing nfsd for %d s\n", NFSD_LOCK_WAIT_MS / 1000);
    } else if (strcmp(argv[0], "threads") == 0 && argc == 2) {
        if (!number_parse(argv[1], 1, threads_max, &n))
            reply(fd, "error: threads '%.24s' is not a count 1..%ld\n", argv[1], threads_max);
        else if (nfsd_threads(argv[1]))
            reply(fd, "ok\n");
        else
            reply(fd, "error: threads %s: %s\n", argv[1], strerror(errno));
    } else if (strcmp(argv[0], "export") == 0 && argc == 2 &&
               (strcmp(argv[1], "sync") == 0 || strcmp(argv[1], "async") == 0)) {
        int rc = nfs_export(argv[1]);
        if (rc == 0)
            reply(fd, "ok\n");
        else
            reply(fd, "error: exportfs exit %d (see log/exportfs.log)\n", rc);
    } else if (strcmp(argv[0], "end-grace") == 0 && argc == 1) {
        if (file_write("/proc/fs/nfsd/v4_end_grace", "Y\n"))
            reply(fd, "ok\n");
        else
            reply(fd, "error: v4_end_grace: %s\n", strerror(errno));
    } else if (strcmp(argv[0], "restart") == 0 && argc == 4) {
        if (nfsd_settings_refused(argv[1], argv[2], argv[3], why, sizeof why))
            reply(fd, "error: restart: %s\n", why);
        else
            nfsd_restart(fd, argv);
    } else {
        reply(fd, "error: %s: wrong arguments (see uml-init.c)\n", argv[0]);
    }
}

/* disk-delay: "ok" and the delay table (dm-delay's: DEV OFFSET MS for
 * reads, writes, flushes); disk-delay READ WRITE FLUSH (ms): those delays
 * from now on. Only with the config's disk_delay (the device is made at
 * boot). */
static void disk_delay_serve(int fd, char **argv, int argc)
{
    union dm_buffer b;
    if (!*setting("disk_delay", "")) {
        reply(fd, "error: the export has no delay device (nfs-server.sh start --disk-latency)\n");
    } else if (argc == 1) {
        if (dm_call(DM_TABLE_STATUS, DM_STATUS_TABLE_FLAG, NULL, 0, &b) != 0 ||
            b.io.target_count != 1) {
            reply(fd, "error: device-mapper: table of %s: %s\n", DM_NAME, strerror(errno));
            return;
        }
        b.bytes[sizeof b - 1] = '\0';
        reply(fd, "ok\n%s\n", (char *)((struct dm_target_spec *)(b.bytes + b.io.data_start) + 1));
    } else if (argc != 4 || !delays_valid(argv + 1)) {
        reply(fd, "error: disk-delay [READ WRITE FLUSH] (milliseconds, 0..%d)\n", DELAY_MAX_MS);
    } else if (!nfsd_lock()) {
        reply(fd, "error: another command kept changing nfsd for %d s\n", NFSD_LOCK_WAIT_MS / 1000);
    } else if (disk_delay_load(argv + 1)) {
        reply(fd, "ok\n");
    } else {
        reply(fd, "error: device-mapper: the delay table: %s\n", strerror(errno));
    }
}

/* drop-caches: the guest's clean page cache, dentries and inodes dropped
 * after a sync, so that the next reads of the export reach its disk. */
static void drop_caches_serve(int fd)
{
    sync();
    if (file_write("/proc/sys/vm/drop_caches", "3\n"))
        reply(fd, "ok\n");
    else
        reply(fd, "error: drop_caches: %s\n", strerror(errno));
}

static void poweroff_serve(int fd)
{
    reply(fd, "ok\n");
    close(fd);
    say("poweroff");
    if (strcmp(setting("role", "server"), "client") == 0)
        client_stop();
    else
        nfs_stop();
    power_off();
}

/* export-check: "ok", or "error: WHY" (export_refuses_writes). */
static void export_check_serve(int fd)
{
    char why[256];
    if (export_refuses_writes(why, sizeof why))
        reply(fd, "error: %s\n", why);
    else
        reply(fd, "ok\n");
}

/* Whether cmd is one of nfsd's live changes (nfsd_change). */
static bool nfsd_changes(const char *cmd)
{
    return strcmp(cmd, "threads") == 0 || strcmp(cmd, "export") == 0 ||
           strcmp(cmd, "end-grace") == 0 || strcmp(cmd, "restart") == 0;
}

/* One command (argv[0]) with its arguments, for the caller on fd. exec
 * and sh end by their own time limits; the others within COMMAND_MAX_S
 * (SIGALRM ends the connection's process). */
static void command_do(int fd, char **argv, int argc)
{
    bool client = strcmp(setting("role", "server"), "client") == 0;
    if (argc > 0 && strcmp(argv[0], "exec") != 0 && strcmp(argv[0], "sh") != 0)
        alarm(COMMAND_MAX_S);
    if (argc == 0)
        reply(fd, "error: empty command\n");
    else if (strcmp(argv[0], "exec") == 0)
        exec_serve(fd, argv + 1);
    else if (strcmp(argv[0], "sh") == 0 && client)
        sh_serve(fd, argv + 1);
    else if (strcmp(argv[0], "read") == 0 && argc == 2)
        reply_file(fd, argv[1]);
    else if (strcmp(argv[0], "poweroff") == 0 && argc == 1)
        poweroff_serve(fd);
    else if (!client && strcmp(argv[0], "export-check") == 0 && argc == 1)
        export_check_serve(fd);
    else if (!client && strcmp(argv[0], "disk-delay") == 0)
        disk_delay_serve(fd, argv, argc);
    else if (!client && strcmp(argv[0], "drop-caches") == 0 && argc == 1)
        drop_caches_serve(fd);
    else if (!client && nfsd_changes(argv[0]))
        nfsd_change(fd, argv, argc);
    else
        reply(fd, "error: unknown command '%.64s' (see uml-init.c)\n", argv[0]);
}

/* One request as it is read: its bytes, and its words parsed so far. */
struct request {
    char buf[REQUEST_MAX + 1];
    size_t len, parsed;
    char *words[WORDS_MAX + 1]; /* NULL after the last */
    int n;
};

/* Parses the bytes read since the last call: each complete netstring
 * becomes a word (NUL-terminated where its comma was). 1 when the request
 * is complete (its newline parsed), 0 when it needs more bytes, -1 when
 * it is malformed or over the limits. */
static int request_parse(struct request *r)
{
    while (r->parsed < r->len) {
        char *p = r->buf + r->parsed;
        size_t avail = r->len - r->parsed, digits = 0, len = 0;
        if (*p == '\n')
            return 1;
        for (; digits < avail && p[digits] >= '0' && p[digits] <= '9'; digits++) {
            if (digits == 5)
                return -1;
            len = len * 10 + (size_t)(p[digits] - '0');
        }
        if (digits == avail)
            return 0;
        if (digits == 0 || p[digits] != ':' || (p[0] == '0' && digits > 1) || len > WORD_MAX ||
            r->n == WORDS_MAX)
            return -1;
        if (avail < digits + len + 2)
            return 0;
        char *word = p + digits + 1;
        if (word[len] != ',' || memchr(word, '\0', len))
            return -1;
        word[len] = '\0';
        r->words[r->n++] = word;
        r->parsed += digits + len + 2;
    }
    return 0;
}

/* Reads one request from fd within REQUEST_WAIT_MS, the secret checked
 * as soon as its word is complete. NULL when the request is complete and
 * carries the secret, else the error line's text ("not authorized" for
 * anything before the secret matched). */
static const char *request_read(int fd, struct request *r)
{
    long deadline = ms_now() + REQUEST_WAIT_MS;
    bool authorized = false;
    for (;;) {
        int rc = request_parse(r);
        if (!authorized && r->n >= 1) {
            if (!secret_matches(r->words[0], strlen(r->words[0])))
                return "not authorized";
            authorized = true;
        }
        if (!authorized && (rc != 0 || r->len == REQUEST_MAX))
            return "not authorized";
        if (rc == 1)
            return NULL;
        if (rc < 0 || r->len == REQUEST_MAX)
            return "malformed request";
        long left = deadline - ms_now();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t n = left > 0 && poll(&p, 1, (int)left) > 0
                        ? read(fd, r->buf + r->len, REQUEST_MAX - r->len)
                        : -1;
        if (n <= 0)
            return authorized ? "malformed request (incomplete)" : "not authorized";
        r->len += (size_t)n;
    }
}

/* One connection, in a process of its own: its request, then its
 * command. */
static void connection_serve(int fd)
{
    static struct request r;
    const char *refused = request_read(fd, &r);
    if (refused)
        reply(fd, "error: %s\n", refused);
    else
        command_do(fd, r.words + 1, r.n - 1);
}

static pid_t connections[CONNECTIONS_MAX]; /* their processes; 0: a free slot */

/* Reaps every child that ended (orphans too) and frees its slot. */
static void children_reap(void)
{
    pid_t pid;
    while ((pid = waitpid(-1, NULL, WNOHANG)) > 0)
        for (int i = 0; i < CONNECTIONS_MAX; i++)
            if (connections[i] == pid)
                connections[i] = 0;
}

/* Serves connection fd in a process of its own, in a free slot;
 * "error: busy" when there is none. */
static void connection_start(int fd, int lsock)
{
    int slot = 0;
    while (slot < CONNECTIONS_MAX && connections[slot])
        slot++;
    if (slot == CONNECTIONS_MAX) {
        reply(fd, "error: busy (%d connections served)\n", CONNECTIONS_MAX);
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(lsock);
        connection_serve(fd);
        _exit(0);
    }
    if (pid < 0)
        reply(fd, "error: fork: %s\n", strerror(errno));
    else
        connections[slot] = pid;
}

static void agent_serve(void)
{
    int lsock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lsock < 0)
        die("agent socket");
    int one = 1;
    setsockopt(lsock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_port = htons((uint16_t)atoi(setting("agent_port", "7070")))};
    inet_pton(AF_INET, setting("addr", "10.77.0.2"), &sin.sin_addr);
    if (bind(lsock, (struct sockaddr *)&sin, sizeof sin) != 0 || listen(lsock, 16) != 0)
        die("agent bind");
    say("agent listening on %s:%s", setting("addr", "10.77.0.2"), setting("agent_port", "7070"));
    for (;;) {
        children_reap();
        metrics_refresh();
        struct pollfd p = {.fd = lsock, .events = POLLIN};
        if (poll(&p, 1, AGENT_TICK_MS) <= 0)
            continue;
        int fd = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        connection_start(fd, lsock);
        close(fd);
    }
}

int main(void)
{
    setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", 1);
    const char *guest_dir = getenv("HERD_GUEST");
    if (!guest_dir) {
        errno = EINVAL;
        die("HERD_GUEST is not on the kernel command line");
    }
    char path[512];
    snprintf(path, sizeof path, "%s/config", guest_dir);
    config_read(path);
    snprintf(path, sizeof path, "%s/secret", guest_dir);
    secret_read(path);
    say("start");
    bool client = strcmp(setting("role", "server"), "client") == 0;
    if (client)
        root_client();
    else
        root_make(guest_dir);
    modules_load(client ? client_modules : server_modules);
    if (!client)
        export_mount();
    network_up();
    say("modules and network");
    if (client)
        client_start();
    else
        nfs_start();
    agent_serve();
    return 0;
}
