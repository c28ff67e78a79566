/* cli.h — herd's command line as one table: the commands, each one's
 * options (with its argument and one line of help), the parser and the
 * help text. The parser accepts exactly the options the table gives a
 * command, and the help prints exactly those, so neither can go stale
 * (tests/integration/test_cli.py holds them to each other).
 *
 * A job operand "-" is standard input (jobtext.h's JOBTEXT_STDIN).
 *
 * Invariants: cli_parse reads argv[1..argc-1] only, copies nothing (the
 * result points into argv) and, on a refusal, writes one line without a
 * newline into err and returns -1. An option's value may follow it
 * (`--set K=V`, `-o F`) or be joined to a long name with '='
 * (`--set=K=V`, `--output=F`). */
#ifndef HERD_CLI_H
#define HERD_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The commands; CLI_UNITS is no command but help's topic `herd help
 * units` (what the summary table's columns mean). */
enum cli_cmd {
    CLI_NONE,
    CLI_RUN,
    CLI_CHECK,
    CLI_KEYS,
    CLI_TABLES,
    CLI_HELP,
    CLI_VERSION,
    CLI_MIX_FROM,
    CLI_UNITS
};

#define CLI_SETS_MAX 64

struct cli_args {
    enum cli_cmd command;
    const char *job;    /* run, check: the job file; "-" is standard input */
    const char *output; /* run: -o */
    const char *json;   /* run: --json; "-" is standard output */
    bool force;         /* run */
    bool quiet;         /* run: -q */
    bool strict;        /* check */
    const char *phases; /* run, check: --phase KINDS instead of a job file */
    bool print_job;     /* check: print the job as a file */
    bool probe;         /* check: look at the targets (probe.h) */
    const char *label;  /* run, check: --label (main.c makes it --set label=) */
    long ranks;         /* check: -n (default 1) */
    long host_ranks;    /* check: --ranks-per-host (0: all of -n's) */
    bool help;          /* COMMAND --help, or help [COMMAND|units]: print help_on's help */
    enum cli_cmd help_on;
    char *sets[CLI_SETS_MAX];
    int nsets;
    const char *before, *after; /* mix-from: the two mountstats snapshots */
    const char *mount;          /* mix-from: --mount, the mount point ("": the only NFS one) */
    const char *seconds;        /* mix-from: --seconds, between the snapshots (NULL: their age) */
    const char *section;        /* mix-from: --section, the phase's name (NULL: mix) */
    const char *replay;         /* mix-from: --replay BEFORE,AFTER (NULL: none) */
    const char *replay_mix;     /* mix-from: --replay-mix, the mix the replay ran */
};

/* argv into *a; ranks_max bounds -n. 0, or -1 with the reason in err. */
int cli_parse(int argc, char **argv, long ranks_max, struct cli_args *a, char *err, size_t errlen);

/* The help of one command (its usage line, what it does, one line per
 * option), or with CLI_NONE the overview: every command's usage and
 * help, and the exit codes. (CLI_UNITS, the summary's legend, is the
 * caller's: the results layer prints it.) */
void cli_help(FILE *out, enum cli_cmd command);

#endif
