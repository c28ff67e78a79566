/* cli.c — herd's command line: the table of commands and options that
 * both the parser and the help text read (cli.h states the contract). */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

enum opt_id {
    OPT_OUTPUT,
    OPT_FORCE,
    OPT_JSON,
    OPT_SET,
    OPT_PHASE,
    OPT_PRINT_JOB,
    OPT_PROBE,
    OPT_RANKS,
    OPT_RANKS_PER_HOST,
    OPT_STRICT,
    OPT_LABEL,
    OPT_QUIET,
    OPT_MOUNT,
    OPT_SECONDS,
    OPT_SECTION,
    OPT_REPLAY,
    OPT_REPLAY_MIX,
    OPT_HELP
};

#define ON_RUN (1u << CLI_RUN)
#define ON_CHECK (1u << CLI_CHECK)
#define ON_MIX_FROM (1u << CLI_MIX_FROM)
#define ON_ALL                                                                                     \
    (ON_RUN | ON_CHECK | (1u << CLI_KEYS) | (1u << CLI_TABLES) | (1u << CLI_HELP) |                \
     (1u << CLI_VERSION) | ON_MIX_FROM)

struct cli_option {
    enum opt_id id;
    const char *name;  /* "--output" */
    const char *alias; /* "-o", or NULL */
    const char *arg;   /* its value's name, NULL for a flag */
    unsigned on;       /* the commands that take it (ON_ bits) */
    const char *help;  /* one line */
};

static const struct cli_option options[] = {
    {OPT_OUTPUT, "--output", "-o", "FILE", ON_RUN,
     "the results file (default herd-<run id>.h5); an\n"
     "existing file is kept unless --force"},
    {OPT_FORCE, "--force", NULL, NULL, ON_RUN,
     "replace an earlier results file or summary of\n"
     "yours (only those)"},
    {OPT_JSON, "--json", NULL, "FILE", ON_RUN,
     "also write the end-of-run summary as JSON\n"
     "(docs/results-format.md); a bad path is refused\n"
     "before any I/O; - for standard output, which then\n"
     "holds the JSON alone (the table goes to stderr)"},
    {OPT_QUIET, "--quiet", "-q", NULL, ON_RUN,
     "no progress lines and no legend under the table\n"
     "(herd help units); the phase lines, warnings,\n"
     "errors and the table stay (with --json -: no table)"},
    {OPT_RANKS, "--ranks", "-n", "N", ON_CHECK,
     "the bytes for N ranks, and whether the job\n"
     "scales to them (default 1)"},
    {OPT_RANKS_PER_HOST, "--ranks-per-host", NULL, "N", ON_CHECK,
     "the ranks that will share one host (default: all\n"
     "of -n's): their clients must fit half its memory"},
    {OPT_STRICT, "--strict", NULL, NULL, ON_CHECK, "refuse (exit 2) what it would only warn about"},
    {OPT_SET, "--set", NULL, "KEY=VALUE", ON_RUN | ON_CHECK,
     "a job key's value in every phase it applies to,\n"
     "over the job file (PHASE.KEY=VALUE: that phase\n"
     "only); repeatable, also as --set=KEY=VALUE"},
    {OPT_PHASE, "--phase", NULL, "KINDS", ON_RUN | ON_CHECK,
     "instead of a job file: phases of these kinds, in\n"
     "order, comma separated (write,read,md5), each named\n"
     "by its kind; their keys come from --set"},
    {OPT_PRINT_JOB, "--print-job", NULL, NULL, ON_CHECK,
     "print the job as a file: what --phase and --set make"},
    {OPT_PROBE, "--probe", NULL, NULL, ON_CHECK,
     "also look at each target from this host: a writable\n"
     "directory with room for what the job writes, or a\n"
     "server name that resolves and a port that answers"},
    {OPT_LABEL, "--label", NULL, "TEXT", ON_RUN | ON_CHECK,
     "free text naming the run, in its results: the same\n"
     "as --set label=TEXT"},
    {OPT_MOUNT, "--mount", NULL, "PATH", ON_MIX_FROM,
     "the NFS mount whose counters to use (when the\n"
     "snapshots hold more than one)"},
    {OPT_SECONDS, "--seconds", NULL, "S", ON_MIX_FROM,
     "the time between the snapshots (default: the\n"
     "difference of the mount's age: lines)"},
    {OPT_SECTION, "--section", NULL, "NAME", ON_MIX_FROM, "the phase's section name (default mix)"},
    {OPT_REPLAY, "--replay", NULL, "BEFORE,AFTER", ON_MIX_FROM,
     "two snapshots of the same client around a herd\n"
     "run of the printed mix: correct the weights by\n"
     "what the client's caches made of it"},
    {OPT_REPLAY_MIX, "--replay-mix", NULL, "MIX", ON_MIX_FROM,
     "the mix that replay ran (default: the one\n"
     "printed without --replay)"},
    {OPT_HELP, "--help", "-h", NULL, ON_ALL, "this help"},
};
#define NOPTIONS (sizeof options / sizeof options[0])

struct cli_command_info {
    enum cli_cmd cmd;
    const char *name;
    const char *usage; /* after "herd NAME" */
    const char *what;  /* what it does, lines of at most ~76 columns */
};

static const struct cli_command_info commands[] = {
    {CLI_RUN, "run", " JOB.ini|- [OPTION]...",
     "run the job under MPI: mpirun -np N herd run JOB.ini -o out.h5\n"
     "(-: the job from standard input, which mpirun gives rank 0)"},
    {CLI_CHECK, "check", " JOB.ini|- [OPTION]...",
     "validate the job without MPI and print the resolved phases with the bytes\n"
     "each moves, per rank and for the ranks of -n (-: the job from standard input)"},
    {CLI_KEYS, "keys", "", "list every job-file key with its default and meaning"},
    {CLI_TABLES, "tables", "",
     "list every table of the results file with its columns and their types,\n"
     "as JSON (docs/results-format.md says what each column means)"},
    {CLI_VERSION, "version", "",
     "herd's version, the backends built in and the libraries it runs with\n"
     "(also herd --version)"},
    {CLI_MIX_FROM, "mix-from", " BEFORE AFTER [OPTION]...",
     "print a mix phase that behaves like a real NFS client: BEFORE and AFTER are\n"
     "two copies of its /proc/self/mountstats (e.g. a minute apart); its calls\n"
     "between them become the mix's weights, its calls/s the rate of one herd\n"
     "client, its average READ or WRITE the block_size (docs/job-file.md, mix)"},
    {CLI_HELP, "help", " [COMMAND|units]",
     "this overview, one command's options, or (units) what the columns of the\n"
     "summary table at the end of a run mean"},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const struct cli_command_info *command_find(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static const struct cli_command_info *command_info(enum cli_cmd cmd)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (commands[i].cmd == cmd)
            return &commands[i];
    return NULL;
}

/* The option argv word s names for cmd (its value, when joined with '=',
 * in *joined), or NULL. */
static const struct cli_option *option_find(char *s, enum cli_cmd cmd, char **joined)
{
    *joined = NULL;
    for (size_t i = 0; i < NOPTIONS; i++) {
        const struct cli_option *o = &options[i];
        if (!(o->on & (1u << cmd)))
            continue;
        size_t n = strlen(o->name);
        if (strcmp(s, o->name) == 0 || (o->alias && strcmp(s, o->alias) == 0))
            return o;
        if (strncmp(s, o->name, n) == 0 && s[n] == '=') {
            *joined = s + n + 1;
            return o;
        }
    }
    return NULL;
}

/* err = BEFORE 'WORD' AFTER (WORD escaped: it comes from the user); -1. */
static int refuse(char *err, size_t errlen, const char *before, const char *word, const char *after)
{
    char shown[256];
    utf8_escape(word, shown, sizeof shown);
    snprintf(err, errlen, "%s'%s'%s", before, shown, after);
    return -1;
}

/* A count of ranks (1 to ranks_max) for option `name` into *out: 0, or
 * -1 with why in err. */
static int option_ranks(const char *value, const char *name, long ranks_max, long *out, char *err,
                        size_t errlen)
{
    char *end;
    errno = 0; /* (strtol's overflow) */
    *out = strtol(value, &end, 10);
    if (end == value || *end || errno || *out < 1 || *out > ranks_max) {
        char shown[256];
        utf8_escape(value, shown, sizeof shown);
        snprintf(err, errlen, "%s %s: expected a number of ranks (1-%ld)", name, shown, ranks_max);
        return -1;
    }
    return 0;
}

static int option_apply(const struct cli_option *o, char *value, long ranks_max, struct cli_args *a,
                        char *err, size_t errlen)
{
    switch (o->id) {
    case OPT_OUTPUT:
        a->output = value;
        break;
    case OPT_JSON:
        a->json = value;
        break;
    case OPT_FORCE:
        a->force = true;
        break;
    case OPT_STRICT:
        a->strict = true;
        break;
    case OPT_QUIET:
        a->quiet = true;
        break;
    case OPT_HELP:
        a->help = true;
        break;
    case OPT_PHASE:
        a->phases = value;
        break;
    case OPT_PRINT_JOB:
        a->print_job = true;
        break;
    case OPT_PROBE:
        a->probe = true;
        break;
    case OPT_LABEL:
        a->label = value;
        break;
    case OPT_MOUNT:
        a->mount = value;
        break;
    case OPT_SECONDS:
        a->seconds = value;
        break;
    case OPT_SECTION:
        a->section = value;
        break;
    case OPT_REPLAY:
        a->replay = value;
        break;
    case OPT_REPLAY_MIX:
        a->replay_mix = value;
        break;
    case OPT_SET:
        if (a->nsets == CLI_SETS_MAX) {
            snprintf(err, errlen, "too many --set options (at most %d)", CLI_SETS_MAX);
            return -1;
        }
        a->sets[a->nsets++] = value;
        break;
    case OPT_RANKS:
        return option_ranks(value, "-n", ranks_max, &a->ranks, err, errlen);
    case OPT_RANKS_PER_HOST:
        return option_ranks(value, "--ranks-per-host", ranks_max, &a->host_ranks, err, errlen);
    }
    return 0;
}

/* The words after the command: options and at most one operand. */
static int words_parse(int argc, char **argv, long ranks_max, struct cli_args *a, const char *cmd,
                       char *err, size_t errlen)
{
    char see[64];
    snprintf(see, sizeof see, " (see herd %s --help)", cmd);
    for (int i = 2; i < argc; i++) {
        char *s = argv[i], *value;
        const struct cli_option *o = option_find(s, a->command, &value);
        if (o) {
            char tail[96];
            if (o->arg && !value) {
                snprintf(tail, sizeof tail, " needs a value%s", see);
                if (i + 1 >= argc)
                    return refuse(err, errlen, "", s, tail);
                value = argv[++i];
            } else if (!o->arg && value) {
                snprintf(tail, sizeof tail, " takes no value%s", see);
                return refuse(err, errlen, "", s, tail);
            }
            if (option_apply(o, value, ranks_max, a, err, errlen) < 0)
                return -1;
        } else if (s[0] == '-' && s[1]) {
            return refuse(err, errlen, "unknown option ", s, see);
        } else if (a->command == CLI_HELP && a->help_on == CLI_NONE) {
            const struct cli_command_info *c = command_find(s);
            if (!c && strcmp(s, "units") != 0)
                return refuse(err, errlen, "help: no command ", s,
                              " (run, check, keys, tables, version, mix-from, help; or units)");
            a->help_on = c ? c->cmd : CLI_UNITS;
        } else if ((a->command == CLI_RUN || a->command == CLI_CHECK) && !a->job) {
            a->job = s;
        } else if (a->command == CLI_MIX_FROM && (!a->before || !a->after)) {
            *(a->before ? &a->after : &a->before) = s;
        } else {
            return refuse(err, errlen, "unexpected argument ", s, see);
        }
    }
    return 0;
}

int cli_parse(int argc, char **argv, long ranks_max, struct cli_args *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    a->ranks = 1;
    if (argc < 2) {
        snprintf(err, errlen,
                 "no command; usage: herd run|check JOB.ini [OPTION]... | keys | tables | "
                 "version | mix-from BEFORE AFTER | help [COMMAND|units]");
        return -1;
    }
    const char *s = argv[1];
    if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
        a->command = CLI_HELP;
        s = "help";
    } else if (strcmp(s, "--version") == 0 || strcmp(s, "-V") == 0) {
        a->command = CLI_VERSION;
        return argc == 2 ? 0 : refuse(err, errlen, "unexpected argument ", argv[2], "");
    }
    const struct cli_command_info *c = command_find(s);
    if (!c)
        return refuse(err, errlen, "unknown command ", s, " (see herd --help)");
    a->command = c->cmd;
    if (words_parse(argc, argv, ranks_max, a, c->name, err, errlen) < 0)
        return -1;
    if (a->command == CLI_HELP) {
        if (a->help && a->help_on == CLI_NONE) /* help --help: help's own */
            a->help_on = CLI_HELP;
        a->help = true;
    } else if (a->help) {
        a->help_on = a->command;
    } else if ((a->command == CLI_RUN || a->command == CLI_CHECK) && !a->job == !a->phases) {
        snprintf(err, errlen, "%s needs a job file or --phase KINDS%s (see herd %s --help)",
                 c->name, a->job ? ", not both" : "", c->name);
        return -1;
    } else if (a->command == CLI_MIX_FROM && !a->after) {
        snprintf(err, errlen,
                 "mix-from needs two mountstats snapshots: BEFORE AFTER (see herd "
                 "mix-from --help)");
        return -1;
    } else if (a->print_job && !a->phases) {
        snprintf(err, errlen, "--print-job goes with --phase (a job file is its own print)");
        return -1;
    }
    return 0;
}

/* text's lines, the first after `first` (padded to `indent` columns),
 * the others indented by `indent`. */
static void lines_print(FILE *out, int indent, const char *first, const char *text)
{
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        fprintf(out, "%-*s%.*s\n", indent, p == text ? first : "", (int)n, p);
        p += n + (nl ? 1 : 0);
    }
}

/* One command's help: its usage line (unless the overview printed them
 * all, then its name), what it does, one line per option. */
static void command_help(FILE *out, const struct cli_command_info *c, bool overview)
{
    if (overview)
        fprintf(out, "%s:\n", c->name);
    else
        fprintf(out, "usage: herd %s%s\n", c->name, c->usage);
    lines_print(out, 2, "", c->what);
    for (size_t i = 0; i < NOPTIONS; i++) {
        const struct cli_option *o = &options[i];
        if (!(o->on & (1u << c->cmd)))
            continue;
        char left[64];
        snprintf(left, sizeof left, "  %s%s%s%s%s", o->alias ? o->alias : "", o->alias ? ", " : "",
                 o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        lines_print(out, 25, left, o->help);
    }
}

void cli_help(FILE *out, enum cli_cmd command)
{
    const struct cli_command_info *one = command_info(command);
    if (one) {
        command_help(out, one, false);
        return;
    }
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "%s herd %s%s\n", i ? "      " : "usage:", commands[i].name,
                commands[i].usage);
    fputs("       herd --version\n\n", out);
    fputs("herd loads a shared file system (NFS, or any mount; NFS and SMB directly too)\n"
          "from many MPI ranks at once: phases of data, lock or metadata work (herd keys\n"
          "lists the kinds) on unique or shared files, all ranks starting each phase at\n"
          "one instant.\n"
          "Per-rank timings, errors by errno and latency histograms go into one HDF5\n"
          "results file.\n\n",
          out);
    for (size_t i = 0; i < NCOMMANDS; i++) {
        command_help(out, &commands[i], true);
        fputc('\n', out);
    }
    fputs("herd help units: what the columns of the summary table at the end of a run\n"
          "mean.\n\n",
          out);
    fputs("exit codes: 0 clean; 2 bad input (also a target or run directory herd cannot\n"
          "use: refused before the first phase); 3 the run completed with I/O errors,\n"
          "verify failures or clean-up leftovers; 4 an output (a phase, the --json\n"
          "summary) could not be written; 128+N stopped by signal N (results kept);\n"
          "1 internal.\n",
          out);
}
