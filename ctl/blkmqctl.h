/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * What blkmqctl's verbs share (ctl/blkmqctl.c): the tree's location, reading its files, the
 * exit codes. Each verb in a file of its own takes argc/argv from the command on
 * (argv[0] is the verb) and returns the exit status.
 */

#include <stdbool.h>
#include <stdlib.h>

enum {
        EXIT_OK = 0,
        EXIT_USAGE = 1,         /* verify: also "not as planned" (the differences printed) */
        EXIT_FAILED = 2,
        EXIT_NOT_RUNNING = 3,
};

/* The tree (-m, $BLKMQD_MOUNTPOINT, else the build's default /run/blkmqd). */
extern const char *arg_mountpoint;

#define FREE_STRV(v, n) do { for (size_t _i = 0; _i < (n); _i++) free((v)[_i]); free(v); } while (0)

/* "blkmqctl: <message>\n" on stderr. */
void err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* arg_mountpoint/a/b/... (a NULL-terminated list of components), newly allocated; NULL on ENOMEM. */
char *path_join(const char *first, ...) __attribute__((sentinel));
/* A whole file into *ret, NUL-terminated, trailing newlines stripped. Returns 0 or -errno. */
int read_text(const char *path, char **ret);
/* devices/<disk>/a[/b[/c]]; NULL when the file does not exist or cannot be read. */
char *read_dev(const char *disk, const char *a, const char *b, const char *c);
/* The entries of a directory (no dot files), sorted (numbers numerically). 0 or -errno. */
int list_dir(const char *path, char ***ret, size_t *ret_n);
/* ... of devices/<disk>/<sub>. */
int list_dev_dir(const char *disk, const char *sub, char ***ret, size_t *ret_n);
/* 0 when arg_mountpoint is a live blkmqd tree, else -EXIT_NOT_RUNNING (said on stderr). */
int check_running(void);
/* disk ("sda", "/dev/sda", "cciss/c0d0"; normalized in place) is under devices/: 0; else
 * -EXIT_USAGE (an invalid name) or -EXIT_FAILED, with blkmqd's reason on stderr. */
int check_disk(char *disk);

/*
 * The disks a verb works on: argv[1..] (each checked with check_disk(): *ret_missing counts
 * those not listed, said on stderr), or every disk under devices/ without arguments. Returns
 * EXIT_OK with *ret (free with FREE_STRV), EXIT_USAGE for an invalid name, EXIT_FAILED when
 * none is left or on an error (said).
 */
int disk_arguments_or_all(int argc, char **argv, char ***ret, size_t *ret_n, int *ret_missing);

/* An applied/ line's state, in place: up to the ':', STATE_EXTERNAL without its detail. */
#define STATE_EXTERNAL "changed externally"
void state_word(char *v);

/* blkmqctl verify [DISK...] (ctl/blkmqctl-verify.c). */
int cmd_verify(int argc, char **argv);
