/* jobtext.c — a job file's text with includes, comments and ${VAR} done
 * (jobtext.h). */
#include "jobtext.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "joblimits.h"
#include "textfile.h"
#include "utf8.h"

/* Where a job file's bytes come from: an include (a regular file only),
 * the file the user named (also a pipe such as `<(...)`), or standard
 * input ("-" as the job itself). */
enum job_source { JOB_INCLUDE, JOB_NAMED, JOB_STDIN };

static int job_bytes_read(const char *path, enum job_source from, char **text)
{
    char *buf = NULL;
    size_t cap = 0;
    long n;
    if (from == JOB_STDIN)
        n = textfile_read_fd(STDIN_FILENO, JOB_FILE_MAX, &buf, &cap);
    else if (from == JOB_NAMED)
        n = textfile_read_given(path, JOB_FILE_MAX, &buf, &cap);
    else
        n = textfile_read(path, JOB_FILE_MAX, &buf, &cap);
    if (n >= 0 && strlen(buf) != (size_t)n)
        n = -EILSEQ; /* a NUL byte: not a text file */
    if (n < 0) {
        free(buf);
        return (int)n;
    }
    *text = buf;
    return 0;
}

/* The output being built and where errors go. */
struct out {
    char *buf;
    size_t len, cap;
    char *err;
    size_t errlen;
    int nsources;
    bool failed;
    int rc; /* the first failure's -errno */
};

static void out_fail(struct out *o, const char *path, int line, const char *fmt, ...)
{
    if (o->failed)
        return;
    o->failed = true;
    if (!o->err)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char raw[JOB_ERR_MAX];
    if (line > 0)
        snprintf(raw, sizeof raw, "%s:%d: %s", path, line, msg);
    else
        snprintf(raw, sizeof raw, "%s: %s", path, msg);
    utf8_escape(raw, o->err, o->errlen);
}

static void out_put(struct out *o, const char *s, size_t n)
{
    if (o->failed)
        return;
    if (o->len + n > JOBTEXT_MAX) { /* the whole text obeys the job file limit */
        o->failed = true;
        return;
    }
    if (o->len + n + 1 > o->cap) {
        size_t cap = (o->len + n + 1) * 2;
        char *b = realloc(o->buf, cap);
        if (!b) {
            o->failed = true;
            return;
        }
        o->buf = b;
        o->cap = cap;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    o->buf[o->len] = '\0';
}

static void out_marker(struct out *o, int index, int line, const char *path)
{
    char m[JOB_PATH_MAX + 64];
    int n = snprintf(m, sizeof m, "%s%d %d %s\n", JOBTEXT_MARKER, index, line, path);
    out_put(o, m, (size_t)n < sizeof m ? (size_t)n : sizeof m - 1);
}

/* Where a line's comment starts: at its first non-blank byte when that is
 * ';' or '#', else at the first ';' or '#' after a space or tab; end when
 * it has none. */
static const char *line_comment(const char *line, const char *end)
{
    const char *p = line + strspn(line, " \t");
    if (p < end && (*p == ';' || *p == '#'))
        return p;
    for (; p < end; p++)
        if ((*p == ';' || *p == '#') && (p[-1] == ' ' || p[-1] == '\t'))
            return p;
    return end;
}

/* Whether [p, end) holds a "${". */
static bool has_variable(const char *p, const char *end)
{
    for (; p + 1 < end; p++)
        if (p[0] == '$' && p[1] == '{')
            return true;
    return false;
}

/* Copy a value to the output with each ${NAME} replaced by the
 * environment's NAME, which must be one line of text. */
static void out_value(struct out *o, const char *v, const char *end, const char *path, int line)
{
    for (const char *p = v; p < end && !o->failed;) {
        if (p[0] == '$' && p + 1 < end && p[1] == '{') {
            const char *name = p + 2, *close = memchr(name, '}', (size_t)(end - name));
            size_t n = close ? (size_t)(close - name) : 0;
            if (!close) {
                out_fail(o, path, line, "'${' without a closing '}'");
                return;
            }
            bool ok = n > 0 && n < 128 && (isalpha((unsigned char)*name) || *name == '_');
            for (size_t i = 0; ok && i < n; i++)
                ok = isalnum((unsigned char)name[i]) || name[i] == '_';
            char var[128], why[128];
            snprintf(var, sizeof var, "%.*s", (int)(n < 127 ? n : 127), name);
            if (!ok) {
                out_fail(o, path, line, "'${%s}' is not a variable name (letters, digits, _)", var);
                return;
            }
            const char *val = getenv(var);
            if (!val) {
                out_fail(o, path, line, "${%s} is not set in the environment", var);
                return;
            }
            if (utf8_check(val, why, sizeof why) < 0) {
                out_fail(o, path, line, "${%s}: %s (a value is one line of text)", var, why);
                return;
            }
            out_put(o, val, strlen(val));
            p = close + 1;
            continue;
        }
        out_put(o, p, 1);
        p++;
    }
}

/* One line that is not an include, comment stripped (at end): a section
 * header or a line without '=' as it is, a `key = value` line with its
 * value's variables replaced. libinih splits a key from its value at the
 * first '=' or ':', so this does too. */
static void out_line(struct out *o, const char *line, const char *end, const char *path, int lineno)
{
    const char *p = line + strspn(line, " \t"), *sep = NULL;
    for (const char *q = p; q < end && *p != '[' && !sep; q++)
        if (*q == '=' || *q == ':')
            sep = q;
    if (has_variable(p, sep ? sep : end)) {
        out_fail(o, path, lineno, "%s: variables are replaced in values only",
                 p < end && *p == '[' ? "a ${...} in a section name" : "a ${...} in a key name");
        return;
    }
    out_put(o, line, (size_t)((sep ? sep + 1 : end) - line));
    if (sep)
        out_value(o, sep + 1, end, path, lineno);
}

/* A comment line as it is, but never one that job.c would read as a
 * source line: ";@source" becomes "; @source". */
static void out_comment(struct out *o, const char *c, const char *end)
{
    if (strncmp(c, JOBTEXT_MARKER, strlen(JOBTEXT_MARKER)) == 0) {
        out_put(o, "; ", 2);
        c++;
    }
    out_put(o, c, (size_t)(end - c));
}

/* An `include PATH` line: PATH, else NULL. */
static bool line_include(const char *line, const char *end, char *path, size_t len)
{
    const char *p = line;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if ((size_t)(end - p) < 8 || strncmp(p, "include", 7) != 0 || (p[7] != ' ' && p[7] != '\t'))
        return false;
    p += 8;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    const char *e = end;
    while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        e--;
    snprintf(path, len, "%.*s", (int)(e - p), p);
    return true;
}

/* Add the file at path; from:line names the include line (NULL: the job
 * file itself). */
static void text_add(struct out *o, const char *path, int depth, const char *from, int line);

/* The file an include line names: relative to the including file's
 * directory. False when the result does not fit. */
static bool include_path(const char *from, const char *name, char *buf, size_t len)
{
    const char *slash = strrchr(from, '/');
    int n = name[0] == '/' || !slash
                ? snprintf(buf, len, "%s", name)
                : snprintf(buf, len, "%.*s/%s", (int)(slash - from), from, name);
    return n >= 0 && (size_t)n < len;
}

static void text_lines(struct out *o, const char *path, int index, const char *text, int depth)
{
    int line = 0;
    for (const char *p = text; *p && !o->failed;) {
        const char *nl = strchr(p, '\n');
        const char *end = nl ? nl : p + strlen(p);
        line++;
        const char *cut = line_comment(p, end);
        char name[JOB_PATH_MAX];
        if (line_include(p, cut, name, sizeof name)) {
            char inc[JOB_PATH_MAX];
            if (!include_path(path, name, inc, sizeof inc))
                out_fail(o, path, line, "include: the path is too long");
            else if (!name[0])
                out_fail(o, path, line, "include: no file named");
            else if (depth + 1 >= JOBTEXT_DEPTH)
                out_fail(o, path, line, "include %s: nested more than %d deep (a cycle?)", name,
                         JOBTEXT_DEPTH);
            else
                text_add(o, inc, depth + 1, path, line);
            out_marker(o, index, line + 1, path);
        } else {
            out_line(o, p, cut, path, line);
            if (cut == p + strspn(p, " \t")) /* a comment line: kept, for the record */
                out_comment(o, cut, end);
            out_put(o, "\n", 1);
        }
        p = nl ? nl + 1 : end;
    }
}

static const char *jobtext_error(int rc)
{
    switch (rc) {
    case -EILSEQ:
        return "not a text file";
    case -EISDIR:
        return "is a directory";
    case -ENOTSUP:
        return "not a regular file";
    case -EFBIG:
        return "larger than 1 MiB: not a job file";
    default:
        return strerror(-rc);
    }
}

static void text_add(struct out *o, const char *path, int depth, const char *from, int line)
{
    if (o->nsources == JOBTEXT_SOURCES) {
        out_fail(o, from, line, "include %s: more than %d files included", path,
                 JOBTEXT_SOURCES - 1);
        return;
    }
    char *text = NULL;
    /* standard input only as the job itself: an include "-" is a file */
    enum job_source source = JOB_INCLUDE;
    if (!from)
        source = strcmp(path, JOBTEXT_STDIN) == 0 ? JOB_STDIN : JOB_NAMED;
    int rc = job_bytes_read(path, source, &text);
    if (rc < 0 && !o->failed)
        o->rc = rc;
    if (rc < 0) {
        if (from)
            out_fail(o, from, line, "include %s: %s", path, jobtext_error(rc));
        else
            out_fail(o, path, 0, "cannot read job file: %s", jobtext_error(rc));
        return;
    }
    int index = o->nsources++;
    const char *shown = source == JOB_STDIN ? JOBTEXT_STDIN_NAME : path;
    out_marker(o, index, 1, shown);
    text_lines(o, shown, index, text, depth);
    free(text);
}

/* Whether dir (a real path) holds this process's descriptors:
 * /proc/PID/fd, or /proc/PID/task/TID/fd of any of its threads. */
static bool is_own_fd_dir(const char *dir)
{
    char own[32];
    size_t n = (size_t)snprintf(own, sizeof own, "/proc/%d/", (int)getpid());
    if (strncmp(dir, own, n) != 0)
        return false;
    const char *rest = dir + n;
    if (strncmp(rest, "task/", 5) == 0) {
        rest += 5;
        size_t tid = strspn(rest, "0123456789");
        if (tid == 0 || rest[tid] != '/')
            return false;
        rest += tid + 1;
    }
    return strcmp(rest, "fd") == 0;
}

/* name as a descriptor's number, as /proc writes one (no leading zero),
 * or -1. */
static int descriptor_number(const char *name)
{
    size_t n = strspn(name, "0123456789");
    if (n == 0 || n > 9 || name[n] || (n > 1 && name[0] == '0'))
        return -1;
    return atoi(name);
}

/* The descriptor of this process that path names through /proc, its
 * links followed (a few deep), or -1. */
static int path_descriptor(const char *path)
{
    char cur[JOB_PATH_MAX], dir[JOB_PATH_MAX], real[PATH_MAX], link[JOB_PATH_MAX];
    if (snprintf(cur, sizeof cur, "%s", path) >= (int)sizeof cur)
        return -1;
    for (int hop = 0; hop < 8; hop++) {
        char *slash = strrchr(cur, '/');
        if (!slash)
            snprintf(dir, sizeof dir, ".");
        else
            snprintf(dir, sizeof dir, "%.*s", slash == cur ? 1 : (int)(slash - cur), cur);
        if (!realpath(dir, real))
            return -1;
        int fd = descriptor_number(slash ? slash + 1 : cur);
        if (fd >= 0 && is_own_fd_dir(real))
            return fd;
        ssize_t n = readlink(cur, link, sizeof link - 1);
        if (n <= 0)
            return -1;
        link[n] = '\0';
        int len = link[0] == '/' ? snprintf(cur, sizeof cur, "%s", link)
                                 : snprintf(cur, sizeof cur, "%s/%s", real, link);
        if (len >= (int)sizeof cur)
            return -1;
    }
    return -1;
}

/* Whether a launcher started this process as a rank of a parallel job:
 * the variables each sets in its ranks' environment (Open MPI's mpirun
 * and prterun, any PMIx launcher such as srun --mpi=pmix, PMI-1/2 ones
 * such as MPICH's hydra and srun --mpi=pmi2). */
static bool launcher_started(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_FD"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]))
            return true;
    return false;
}

int jobtext_check_given(const char *path, char *err, size_t errlen)
{
    int fd = strcmp(path, JOBTEXT_STDIN) == 0 ? -1 : path_descriptor(path);
    struct out o = {.err = err, .errlen = errlen};
    if (fd < 0)
        return 0;
    if (fcntl(fd, F_GETFD) < 0)
        out_fail(&o, path, 0,
                 "cannot read job file: not open in this process (a `<(...)` given to "
                 "mpirun stays with mpirun: herd run - < FILE)");
    else if (fd > 2 && launcher_started())
        out_fail(&o, path, 0,
                 "cannot read job file: a rank that a launcher started reads no descriptor "
                 "above 2 (mpirun and srun pass on only 0-2 of your shell's: herd run - < FILE)");
    return o.failed ? -EBADF : 0;
}

int jobtext_read(const char *path, char **text, char *err, size_t errlen)
{
    struct out o = {.err = err, .errlen = errlen};
    if (err && errlen)
        err[0] = '\0';
    text_add(&o, path, 0, NULL, 0);
    if (o.failed) {
        if (err && errlen && !err[0])
            out_fail(&(struct out){.err = err, .errlen = errlen}, path, 0,
                     "larger than 1 MiB with its includes: not a job file");
        free(o.buf);
        return o.rc ? o.rc : -EINVAL;
    }
    *text = o.buf ? o.buf : strdup("");
    return *text ? 0 : -ENOMEM;
}

int jobtext_from_kinds(const char *kinds, char **text, char *err, size_t errlen)
{
    size_t cap = strlen(kinds) * 3 + 64 * JOBTEXT_PHASES_MAX, len = 0;
    char *out = malloc(cap);
    char seen[JOBTEXT_PHASES_MAX][32];
    int n = 0;
    if (!out) {
        snprintf(err, errlen, "--phase: out of memory");
        return -ENOMEM;
    }
    for (const char *p = kinds;; p++) {
        size_t w = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_");
        if (w == 0 || w >= sizeof seen[0] || (p[w] != ',' && p[w] != '\0') ||
            n == JOBTEXT_PHASES_MAX) {
            char shown[128];
            utf8_escape(kinds, shown, sizeof shown);
            snprintf(err, errlen,
                     "--phase '%s': expected kinds, comma separated (write,read,md5), at most %d",
                     shown, JOBTEXT_PHASES_MAX);
            free(out);
            return -EINVAL;
        }
        snprintf(seen[n], sizeof seen[n], "%.*s", (int)w, p);
        int again = 1;
        for (int i = 0; i < n; i++)
            again += strcmp(seen[i], seen[n]) == 0;
        char name[48];
        if (again > 1)
            snprintf(name, sizeof name, "%.31s-%d", seen[n], again);
        else
            snprintf(name, sizeof name, "%.31s", seen[n]);
        len += (size_t)snprintf(out + len, cap - len, "[%s]\nkind = %s\n", name, seen[n]);
        n++;
        p += w;
        if (*p == '\0')
            break;
    }
    *text = out;
    return 0;
}
