/* backend_smb.c — SMB2/3 from user space with libsmbclient (Samba): one
 * SMB connection per rank, no kernel mount needed.
 *
 * target = smb://server[:port]/share[/path]; herd's relative paths resolve
 * below it. Login: smb_user with the password from smb_password_file (read
 * at connect, kept in memory only, never in the job, URL or results), or
 * smb_guest = yes; a refused login is never turned into a guest login
 * (NoAutoAnonymousLogin). Dialects offered: smb_min/max_protocol; the one
 * negotiated, the server's signing mode and the cipher it chose go into
 * /hosts (describe), from an SMB2 NEGOTIATE of our own at connect with the
 * same dialects (smbneg.h: libsmbclient has no call that returns them).
 *
 * Limits of libsmbclient (Samba 4.17), refused at `herd check` with the
 * reason: no byte-range lock call (lock phases), no flush call (fsync =
 * yes), no O_DIRECT. Its contexts are not thread-safe: one_thread keeps
 * every call in the rank's main thread (md5 reads without a read-ahead
 * thread). Paths: the same syntax check as every backend (safepath.h);
 * symbolic links are resolved by the server, never seen by a client
 * without SMB3 POSIX extensions: the server's `follow symlinks` / `wide
 * links` settings keep a planted link from leading out of the share
 * (the embedded server refuses every link).
 * A call that fails with a lost connection or a timeout marks the context
 * broken; the next open or phase makes a new one (a restarted smbd serves
 * later work). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "job.h"
#include "safepath.h"
#include "smb_lib.h"
#include "smbneg.h"
#include "urlserver.h"

#define SMB_URL_MAX (JOB_PATH_MAX + HERD_PATH_MAX + 2)
#define SMB_SECRET_MAX 256
#define SMB_PORT 445

struct smb_ctx {
    SMBCCTX *smb;
    char target[JOB_PATH_MAX];
    char user[JOB_NAME_MAX];
    char password[SMB_SECRET_MAX];
    bool guest;
    int min_protocol, max_protocol, encryption;
    int timeout_ms;
    bool broken;
    struct smbneg_result neg; /* what the server agreed to (smbneg.h) */
    int neg_rc;               /* 0, or why the probe failed */
};

struct backend_file {
    SMBCFILE *file;
};

/* libsmbclient's calls (smb_lib.h), loaded by the first check or connect
 * of an smb target: a run without one never maps Samba's libraries. */
static const struct smb_lib *lib;

static bool smb_url_has_userinfo(const char *target)
{
    const char *host = target + 6; /* after smb:// */
    size_t n = strcspn(host, "/");
    return memchr(host, '@', n) != NULL;
}

/* The password: the first line of path, without its newline. The file
 * must be a regular file that only its owner may read or write (as ssh
 * asks of a key) and hold a password. 0, or -errno with why filled. */
static int smb_read_secret(const char *path, char *buf, size_t len, char *why, size_t whylen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    int rc = 0;
    struct stat st;
    if (fd < 0) {
        rc = -errno;
        snprintf(why, whylen, "%s", strerror(-rc));
        return rc;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "not a regular file");
        rc = -EINVAL;
    } else if (st.st_mode & 077) {
        snprintf(why, whylen, "other users may read or write it (mode %04o): chmod 600 it",
                 (unsigned)(st.st_mode & 07777));
        rc = -EACCES;
    } else {
        ssize_t n = read(fd, buf, len - 1);
        if (n < 0) {
            rc = -errno;
            snprintf(why, whylen, "%s", strerror(-rc));
        } else {
            buf[n] = '\0';
            buf[strcspn(buf, "\r\n")] = '\0';
            if (!buf[0]) {
                snprintf(why, whylen, "empty: the password is its first line");
                rc = -ENODATA;
            }
        }
    }
    close(fd);
    return rc;
}

/* SMB dialects in order, as Samba names them (smb_min/max_protocol's
 * values: an index into this list, as smbneg_dialect_code takes it). */
static const char *const smb_protocols[] = {"NT1",     "SMB2_02", "SMB2_10", "SMB3_00",
                                            "SMB3_02", "SMB3_11", NULL};
enum smb_encryption {
    SMB_ENCRYPT_DEFAULT,
    SMB_ENCRYPT_OFF,
    SMB_ENCRYPT_DESIRED,
    SMB_ENCRYPT_REQUIRED
};
static const char *const smb_encryption_choices[] = {"default", "off", "desired", "required", NULL};

/* The smb backend's job-file options (its rows below), in the phase's
 * backend_opts block; all [global] only. */
struct smb_opts {
    char user[JOB_NAME_MAX];          /* smb_user */
    char password_file[JOB_PATH_MAX]; /* smb_password_file: its first line */
    bool guest;                       /* smb_guest */
    int min_protocol, max_protocol;   /* index into smb_protocols */
    int encryption;                   /* enum smb_encryption */
};
JOB_OPTS_FIT(struct smb_opts);

JOB_KEY_ROWS_BEGIN
static const struct job_key smb_keys[] = {
    {"smb_user", KEY_STRING, JOB_OPTS_MEMBER(struct smb_opts, user), NULL, "",
     "[global] only, smb: the user to log in as (its password in smb_password_file; never "
     "in the job or the URL)",
     .scope = KEY_GLOBAL_ONLY},
    {"smb_password_file", KEY_STRING, JOB_OPTS_MEMBER(struct smb_opts, password_file), NULL, "",
     "[global] only, smb: a file whose first line is smb_user's password, read by every "
     "rank at connect (mode 0600 advised); its path is recorded, never its content",
     .scope = KEY_GLOBAL_ONLY},
    {"smb_guest", KEY_BOOL, JOB_OPTS_MEMBER(struct smb_opts, guest), NULL, "no",
     "[global] only, smb: log in anonymously as guest (instead of smb_user); without it "
     "a refused login is an error, never a silent fall back to guest",
     .scope = KEY_GLOBAL_ONLY},
    {"smb_min_protocol", KEY_ENUM, JOB_OPTS_MEMBER(struct smb_opts, min_protocol), smb_protocols,
     "SMB2_02",
     "[global] only, smb: lowest dialect offered: NT1 | SMB2_02 | SMB2_10 | SMB3_00 | "
     "SMB3_02 | SMB3_11",
     .scope = KEY_GLOBAL_ONLY},
    {"smb_max_protocol", KEY_ENUM, JOB_OPTS_MEMBER(struct smb_opts, max_protocol), smb_protocols,
     "SMB3_11", "[global] only, smb: highest dialect offered (the negotiated one is in /hosts)",
     .scope = KEY_GLOBAL_ONLY},
    {"smb_encryption", KEY_ENUM, JOB_OPTS_MEMBER(struct smb_opts, encryption),
     smb_encryption_choices, "default",
     "[global] only, smb: default (the client configuration's) | off | desired | required",
     .scope = KEY_GLOBAL_ONLY},
};
JOB_KEY_ROWS_END

static const struct smb_opts *opts_of(const struct phase *ph)
{
    return job_backend_opts(ph);
}

static const char *smb_check(const struct phase *ph, char *why, size_t len)
{
    const struct smb_opts *o = opts_of(ph);
    if (strncmp(ph->target, "smb://", 6) != 0 || !ph->target[6]) {
        snprintf(why, len, "the smb backend needs an smb://server/share[/path] URL, not '%s'",
                 ph->target);
        return "target";
    }
    if (smb_url_has_userinfo(ph->target)) {
        snprintf(why, len,
                 "no user or password in the URL: set smb_user and smb_password_file "
                 "(or smb_guest = yes)");
        return "target";
    }
    struct urlserver server;
    char bad[256];
    if (urlserver_parse(ph->target + 6, &server, bad, sizeof bad) < 0) {
        snprintf(why, len, "'%s': %s", ph->target, bad);
        return "target";
    }
    if (o->guest && (o->user[0] || o->password_file[0])) {
        snprintf(why, len,
                 "smb_guest = yes logs in as guest: leave smb_user and "
                 "smb_password_file unset");
        return "smb_guest";
    }
    if (!o->guest && (!o->user[0] || !o->password_file[0])) {
        snprintf(why, len, "set smb_user and smb_password_file, or smb_guest = yes");
        return o->user[0] ? "smb_password_file" : "smb_user";
    }
    if (o->min_protocol > o->max_protocol) {
        snprintf(why, len, "%s is above smb_max_protocol %s", smb_protocols[o->min_protocol],
                 smb_protocols[o->max_protocol]);
        return "smb_min_protocol";
    }
    if (job_kind_caps(ph->kind) & JOB_KIND_LOCKS) {
        snprintf(why, len,
                 "libsmbclient (Samba 4.17) has no byte-range lock call: lock "
                 "phases need backend = posix on a CIFS mount, or libnfs");
        return "kind";
    }
    if (ph->fsync && job_key_applies("fsync", ph->kind)) {
        snprintf(why, len,
                 "libsmbclient has no flush call: set fsync = no (the server's "
                 "`strict sync` decides what a flush would)");
        return "fsync";
    }
    if (ph->direct) {
        snprintf(why, len, "O_DIRECT has no meaning over libsmbclient: set direct = no");
        return "direct";
    }
    char loading[200];
    if (!(lib = smb_lib_load(loading, sizeof loading))) {
        snprintf(why, len, "%s", loading);
        return "backend";
    }
    if (!o->guest) { /* read here, so that check and run refuse a bad one */
        char secret[SMB_SECRET_MAX], what[160];
        int rc = smb_read_secret(o->password_file, secret, sizeof secret, what, sizeof what);
        explicit_bzero(secret, sizeof secret);
        if (rc < 0) {
            snprintf(why, len, "'%s': %s", o->password_file, what);
            return "smb_password_file";
        }
    }
    return NULL;
}

/* The server's host from smb://host[:port]/share... into host; its port
 * (SMB_PORT when the URL gives none), or -EINVAL (smb_check refused such
 * a URL). */
static int smb_host_port(const char *target, char *host, size_t len)
{
    struct urlserver server;
    char why[256];
    if (urlserver_parse(target + 6, &server, why, sizeof why) < 0)
        return -EINVAL;
    snprintf(host, len, "%s", server.host);
    return server.port ? (int)server.port : SMB_PORT;
}

static void smb_auth(SMBCCTX *smb, const char *server, const char *share, char *workgroup,
                     int wglen, char *user, int userlen, char *password, int pwlen)
{
    (void)server;
    (void)share;
    (void)workgroup;
    (void)wglen;
    struct smb_ctx *c = lib->getOptionUserData(smb);
    snprintf(user, (size_t)userlen, "%s", c->guest ? "" : c->user);
    snprintf(password, (size_t)pwlen, "%s", c->guest ? "" : c->password);
}

static void smb_drop(struct smb_ctx *c)
{
    if (c->smb)
        lib->free_context(c->smb, 1);
    c->smb = NULL;
}

/* A new context, logged in: every call on it reconnects by itself while
 * the server answers; -errno when the share cannot be reached. */
static int smb_open_context(struct smb_ctx *c)
{
    c->smb = lib->new_context();
    if (!c->smb)
        return -ENOMEM;
    lib->setOptionUserData(c->smb, c);
    lib->setFunctionAuthDataWithContext(c->smb, smb_auth);
    lib->setOptionNoAutoAnonymousLogin(c->smb, !c->guest);
    lib->setOptionProtocols(c->smb, smb_protocols[c->min_protocol], smb_protocols[c->max_protocol]);
    static const smbc_smb_encrypt_level levels[] = {
        [SMB_ENCRYPT_DEFAULT] = SMBC_ENCRYPTLEVEL_DEFAULT,
        [SMB_ENCRYPT_OFF] = SMBC_ENCRYPTLEVEL_NONE,
        [SMB_ENCRYPT_DESIRED] = SMBC_ENCRYPTLEVEL_REQUEST,
        [SMB_ENCRYPT_REQUIRED] = SMBC_ENCRYPTLEVEL_REQUIRE};
    lib->setOptionSmbEncryptionLevel(c->smb, levels[c->encryption]);
    lib->setTimeout(c->smb, c->timeout_ms > 0 ? c->timeout_ms : 0);
    if (!lib->init_context(c->smb)) {
        int err = errno ? errno : EINVAL;
        lib->free_context(c->smb, 0);
        c->smb = NULL;
        return -err;
    }
    /* The first call logs in: the share's root must answer. */
    struct stat st;
    errno = 0;
    int rc = lib->getFunctionStat(c->smb)(c->smb, c->target, &st);
    int err = errno ? errno : EIO;
    if (rc < 0) {
        smb_drop(c);
        return -err;
    }
    if (!S_ISDIR(st.st_mode)) {
        smb_drop(c);
        return -ENOTDIR;
    }
    c->broken = false;
    return 0;
}

static int smb_timeout_ms(double seconds)
{
    return seconds > 0 ? (int)(seconds * 1000 + 0.5) : 0;
}

static int smb_connect(const char *target, const struct phase *ph, const char *client, void **ctx)
{
    (void)client; /* one connection per process (check refuses clients_per_rank) */
    char loading[200];
    if (!(lib = smb_lib_load(loading, sizeof loading)))
        return -ELIBACC; /* smb_check said why */
    struct smb_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    snprintf(c->target, sizeof c->target, "%s", target);
    size_t n = strlen(c->target);
    while (n > 6 && c->target[n - 1] == '/')
        c->target[--n] = '\0';
    const struct smb_opts *o = opts_of(ph);
    snprintf(c->user, sizeof c->user, "%s", o->user);
    c->guest = o->guest;
    c->min_protocol = o->min_protocol;
    c->max_protocol = o->max_protocol;
    c->encryption = o->encryption;
    c->timeout_ms = smb_timeout_ms(ph->op_timeout);
    char why[160];
    int rc = c->guest ? 0
                      : smb_read_secret(o->password_file, c->password, sizeof c->password, why,
                                        sizeof why);
    if (rc == 0)
        rc = smb_open_context(c);
    if (rc == 0) {
        char host[256];
        int port = smb_host_port(c->target, host, sizeof host);
        int timeout_ms = c->timeout_ms > 0 ? c->timeout_ms : 10000;
        c->neg_rc = -EINVAL;
        if (port > 0 && port <= 65535)
            c->neg_rc =
                smbneg_probe(host, port, c->min_protocol, c->max_protocol, timeout_ms, &c->neg);
    }
    if (rc < 0) {
        explicit_bzero(c->password, sizeof c->password);
        free(c);
        return rc;
    }
    *ctx = c;
    return 0;
}

static void smb_disconnect(void *ctx)
{
    struct smb_ctx *c = ctx;
    if (!c)
        return;
    smb_drop(c);
    explicit_bzero(c->password, sizeof c->password);
    free(c);
}

/* A broken (or never made) context is made anew. */
static int smb_ready(struct smb_ctx *c)
{
    if (c->smb && !c->broken)
        return 0;
    smb_drop(c);
    return smb_open_context(c);
}

static int smb_configure(void *ctx, const struct phase *ph)
{
    struct smb_ctx *c = ctx;
    c->timeout_ms = smb_timeout_ms(ph ? ph->op_timeout : 60);
    int rc = smb_ready(c);
    if (rc == 0)
        lib->setTimeout(c->smb, c->timeout_ms);
    return rc;
}

static void smb_describe(void *ctx, char *fstype, size_t flen, char *options, size_t olen)
{
    struct smb_ctx *c = ctx;
    static const char *const levels[] = {"default", "off", "desired", "required"};
    snprintf(fstype, flen, "smb");
    if (c->neg_rc < 0) {
        snprintf(options, olen, "dialect=unknown (negotiate probe: %s),min=%s,max=%s,encryption=%s",
                 strerror(-c->neg_rc), smb_protocols[c->min_protocol],
                 smb_protocols[c->max_protocol], levels[c->encryption]);
        return;
    }
    const struct smbneg_result *n = &c->neg;
    const char *signing = "off";
    if (n->signing_required)
        signing = "required";
    else if (n->signing_enabled)
        signing = "enabled";
    snprintf(options, olen,
             "dialect=%s,signing=%s,encryption=%s,cipher=%s,rsize=%u,wsize=%u,min=%s,max=%s",
             smbneg_dialect_name(n->dialect), signing, levels[c->encryption],
             smbneg_cipher_name(n->cipher), n->max_read, n->max_write,
             smb_protocols[c->min_protocol], smb_protocols[c->max_protocol]);
}

/* -errno of a failed libsmbclient call; a lost or silent server breaks
 * the context. */
static int smb_errno(struct smb_ctx *c)
{
    int err = errno ? errno : EIO;
    if (err == ETIMEDOUT || err == ECONNRESET || err == ECONNREFUSED || err == EPIPE ||
        err == ENOTCONN || err == ECONNABORTED || err == EHOSTUNREACH || err == ENETRESET)
        c->broken = true;
    return -err;
}

/* The URL of a herd path, after the common check. */
static int smb_url(struct smb_ctx *c, const char *path, char *buf, size_t len)
{
    int rc = safepath_check(path);
    if (rc < 0)
        return rc;
    if ((size_t)snprintf(buf, len, "%s/%s", c->target, path) >= len)
        return -ENAMETOOLONG;
    return smb_ready(c);
}

static int smb_open(void *ctx, const char *path, int flags, struct backend_file **f)
{
    struct smb_ctx *c = ctx;
    char url[SMB_URL_MAX];
    int rc = smb_url(c, path, url, sizeof url);
    if (rc < 0)
        return rc;
    int oflags = O_RDONLY;
    if (flags & BACKEND_WRITE)
        oflags = (flags & BACKEND_READ) ? O_RDWR : O_WRONLY;
    if (flags & BACKEND_CREATE)
        oflags |= O_CREAT;
    if ((flags & BACKEND_CREATE) && (flags & BACKEND_EXCL))
        oflags |= O_EXCL;
    struct backend_file *bf = malloc(sizeof *bf);
    if (!bf)
        return -ENOMEM;
    errno = 0;
    bf->file = lib->getFunctionOpen(c->smb)(c->smb, url, oflags, 0644);
    if (!bf->file) {
        rc = smb_errno(c);
        free(bf);
        return rc;
    }
    *f = bf;
    return 0;
}

static int smb_seek(struct smb_ctx *c, struct backend_file *f, uint64_t offset)
{
    if (c->broken)
        return -ENOTCONN;
    errno = 0;
    off_t at = lib->getFunctionLseek(c->smb)(c->smb, f->file, (off_t)offset, SEEK_SET);
    return at == (off_t)offset ? 0 : smb_errno(c);
}

/* Move len bytes at offset in as many read or write calls as it takes:
 * bytes moved (short at the end of the file for reads) or -errno. */
static ssize_t smb_move(struct smb_ctx *c, struct backend_file *f, char *buf, size_t len,
                        uint64_t offset, bool write)
{
    int rc = smb_seek(c, f, offset);
    if (rc < 0)
        return rc;
    size_t done = 0;
    while (done < len) {
        errno = 0;
        ssize_t n = write ? lib->getFunctionWrite(c->smb)(c->smb, f->file, buf + done, len - done)
                          : lib->getFunctionRead(c->smb)(c->smb, f->file, buf + done, len - done);
        if (n < 0)
            return smb_errno(c);
        if (n == 0) {
            if (write)
                return -EIO;
            break; /* end of file */
        }
        done += (size_t)n;
    }
    return (ssize_t)done;
}

static ssize_t smb_pread(void *ctx, struct backend_file *f, void *buf, size_t len, uint64_t offset)
{
    return smb_move(ctx, f, buf, len, offset, false);
}

static ssize_t smb_pwrite(void *ctx, struct backend_file *f, const void *buf, size_t len,
                          uint64_t offset)
{
    return smb_move(ctx, f, (char *)buf, len, offset, true); /* write never writes into buf */
}

static int smb_fsync(void *ctx, struct backend_file *f)
{
    (void)ctx;
    (void)f;
    return -EOPNOTSUPP; /* smb_check refuses fsync = yes */
}

static int smb_close(void *ctx, struct backend_file *f)
{
    struct smb_ctx *c = ctx;
    int rc = 0;
    /* On a broken context the handle died with it: only free our side. */
    if (!c->broken && c->smb) {
        errno = 0;
        if (lib->getFunctionClose(c->smb)(c->smb, f->file) < 0)
            rc = smb_errno(c);
    }
    free(f);
    return rc;
}

/* The path-only calls share their shape: the URL (check, reconnect), the
 * call on it, errno mapped. */
#define SMB_PATH_CALL(call)                                                                        \
    struct smb_ctx *c = ctx;                                                                       \
    char url[SMB_URL_MAX];                                                                         \
    int rc = smb_url(c, path, url, sizeof url);                                                    \
    if (rc < 0)                                                                                    \
        return rc;                                                                                 \
    errno = 0;                                                                                     \
    return (call) < 0 ? smb_errno(c) : 0;

static int smb_stat(void *ctx, const char *path, struct stat *st)
{
    SMB_PATH_CALL(lib->getFunctionStat(c->smb)(c->smb, url, st))
}

static int smb_unlink(void *ctx, const char *path)
{
    SMB_PATH_CALL(lib->getFunctionUnlink(c->smb)(c->smb, url))
}

static int smb_mkdir(void *ctx, const char *path)
{
    SMB_PATH_CALL(lib->getFunctionMkdir(c->smb)(c->smb, url, 0755))
}

static int smb_rmdir(void *ctx, const char *path)
{
    SMB_PATH_CALL(lib->getFunctionRmdir(c->smb)(c->smb, url))
}

static int smb_rename(void *ctx, const char *from, const char *to)
{
    struct smb_ctx *c = ctx;
    char a[SMB_URL_MAX], b[SMB_URL_MAX];
    int rc = smb_url(c, from, a, sizeof a);
    if (rc == 0)
        rc = smb_url(c, to, b, sizeof b);
    if (rc < 0)
        return rc;
    errno = 0;
    return lib->getFunctionRename(c->smb)(c->smb, a, c->smb, b) < 0 ? smb_errno(c) : 0;
}

/* The library's own version: loads it (herd --version, a --json summary). */
static const char *smb_version(void)
{
    char why[200];
    const struct smb_lib *loaded = smb_lib_load(why, sizeof why);
    return loaded ? loaded->version() : NULL;
}

const struct backend_ops backend_smb = {
    .name = "smb",
    .scheme = "smb",
    .library = "libsmbclient",
    .version = smb_version,
    .one_thread = true,
    .keys = smb_keys,
    .nkeys = sizeof smb_keys / sizeof smb_keys[0],
    .check = smb_check,
    .connect = smb_connect,
    .configure = smb_configure,
    .disconnect = smb_disconnect,
    .open = smb_open,
    .pread = smb_pread,
    .pwrite = smb_pwrite,
    .fsync = smb_fsync,
    .close = smb_close,
    .stat = smb_stat,
    .unlink = smb_unlink,
    .mkdir = smb_mkdir,
    .rmdir = smb_rmdir,
    .rename = smb_rename,
    .describe = smb_describe,
};
