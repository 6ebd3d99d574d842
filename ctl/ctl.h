/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * What blkmqctl's verbs share (ctl/tree.c): the options, the tree's location, reading its
 * files, how values are shown, the JSON helpers, the exit codes. Each verb, in a file of its
 * own, takes argc/argv from the command on (argv[0] is the verb) and returns the exit status;
 * ctl/main.c parses the options and dispatches.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum {
        EXIT_OK = 0,
        EXIT_USAGE = 1,         /* verify: also "not as planned" (the differences printed) */
        EXIT_FAILED = 2,
        EXIT_NOT_RUNNING = 3,
};

/* The tree (-m, $BLKMQD_MOUNTPOINT, else the build's default /run/blkmqd). */
extern const char *arg_mountpoint;
/* -j: JSON output (status, explain); -w: status keeps every column; -n N: watch stops after N
 * frames (-1: never). */
extern bool arg_json;
extern bool arg_wide;
extern long arg_iterations;

/* "blkmqctl: <message>\n" on stderr. */
void ctl_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* arg_mountpoint/a/b/... (a NULL-terminated list of components), newly allocated; NULL on ENOMEM. */
char *path_join(const char *first, ...) __attribute__((sentinel));
/* A whole file into *ret, NUL-terminated, trailing newlines stripped. Returns 0 or -errno. */
int read_text(const char *path, char **ret);
/* A file of the tree's top (mode, version, restore, not_listed), read_text(); NULL when it
 * cannot be read. */
char *read_top(const char *name);
/* devices/<disk>/a[/b[/c]]; NULL when the file does not exist or cannot be read. */
char *read_dev(const char *disk, const char *a, const char *b, const char *c);
/* The entries of a directory (no dot files), sorted (numbers numerically), as a strv (lib/strv.h;
 * NULL when there are none). 0 or -errno. */
int list_dir(const char *path, char ***ret);
/* ... of devices/<disk>/<sub>. */
int list_dev_dir(const char *disk, const char *sub, char ***ret);
/* 0 when arg_mountpoint is a live blkmqd tree, else -EXIT_NOT_RUNNING (said on stderr). */
int check_running(void);
/* disk ("sda", "/dev/sda", "cciss/c0d0"; normalized in place) is under devices/: 0; else
 * -EXIT_USAGE (an invalid name) or -EXIT_FAILED, with blkmqd's reason on stderr. */
int check_disk(char *disk);
/* The DISK argument (argv[1]) of a disk command taking min_argc..max_argc words: usage
 * ("Usage: blkmqctl <usage>"), daemon running, disk present. 0 or an exit code. */
int disk_arguments(int argc, char **argv, int min_argc, int max_argc, const char *usage);

/*
 * The disks a verb works on, once check_running() found the daemon: argv[1..] (each checked
 * with check_disk(): *ret_missing counts those not listed, said on stderr), or every disk under
 * devices/ without arguments. Returns EXIT_OK with *ret (a strv), EXIT_NOT_RUNNING,
 * EXIT_USAGE for an invalid name, EXIT_FAILED when none is left or on an error (said).
 */
int disk_arguments_or_all(int argc, char **argv, char ***ret, int *ret_missing);

/* An applied/ line's state, in place: up to the ':', STATE_EXTERNAL without its detail. */
#define STATE_EXTERNAL "changed externally"
void state_word(char *v);

/* NULL (no such file), or a value that says "unknown..." or "unavailable...". */
bool value_unavailable(const char *v);
/* "-" when the file does not exist, "n/a" when it says unknown/unavailable, else the value. */
const char *show(const char *v);
/* The class as it is ("unknown" is a class), "-" when missing. */
const char *show_class(const char *v);
/* lib/'s parse_u64() of a file's value (read_text() dropped its newlines; the tree writes
 * numbers as "%" PRIu64 "\n"); false for NULL or anything else. */
bool value_u64(const char *v, uint64_t *ret);

/* s as a JSON string, null for NULL. */
void json_string(FILE *f, const char *s);
/* A number when v holds one, null when missing or unavailable, else the string. */
void json_value(FILE *f, const char *v);
/* ,"key":v on stdout: json_value() when number, else json_string(). */
void json_field(const char *key, const char *v, bool number);

/* The verbs: blkmqctl status [DISK...] (ctl/status.c), verify [DISK...] (ctl/verify.c),
 * explain DISK (ctl/explain.c), watch DISK (ctl/watch.c), set DISK KNOB VALUE, reset DISK
 * [KNOB], restore (ctl/set.c). */
int cmd_status(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_set(int argc, char **argv);
int cmd_reset(int argc, char **argv);
int cmd_restore(int argc, char **argv);
