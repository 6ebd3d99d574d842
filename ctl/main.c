/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * blkmqctl: the command-line face of blkmqd. It reads and writes files under the FUSE tree
 * (default /run/blkmqd) and nothing else: no private protocol. This file: the options (before
 * the command or after it), --help, --version and the dispatch to the verb, one file each
 * (ctl/status.c, verify.c, explain.c, watch.c, set.c for set, reset and restore) over what they
 * share (ctl/tree.c, ctl/ctl.h).
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "ctl.h"
#include "macro.h"

static void help(void) {
        printf("blkmqctl %s - query and steer blkmqd through its FUSE tree\n\n"
               "Usage: blkmqctl [OPTIONS] COMMAND [ARGS]\n\n"
               "Commands:\n"
               "  status [DISK...]        the mode, then one line per disk: class, hctx, elevator, state, remote %%\n"
               "                          (to the terminal's width, 80 columns in a pipe; --wide: every column)\n"
               "  verify [DISK...]        exit 0 when every disk is as planned, else 1 and one line per difference\n"
               "  explain DISK            why blkmqd decided what it did for DISK (or why it does not list DISK)\n"
               "  watch DISK              per-hctx rates, refreshed every second (q to quit)\n"
               "  set DISK KNOB VALUE     override a policy knob (writes devices/DISK/policy/KNOB)\n"
               "  reset DISK [KNOB]       give KNOB (or every knob) back to the policy (\"auto\")\n"
               "  restore                 restore every original value blkmqd changed\n\n"
               "Options:\n"
               "  -m, --mountpoint DIR    blkmqd tree (default $BLKMQD_MOUNTPOINT or %s)\n"
               "  -j, --json              JSON output (status, explain)\n"
               "  -w, --wide              status: every column, whatever the width\n"
               "  -n, --iterations N      watch: stop after N refreshes\n"
               "  -h, --help              this help\n"
               "      --version           print the version\n\n"
               "Exit status: 0 ok, 1 usage error (verify: not as planned), 2 operation failed, 3 blkmqd not running.\n",
               BLKMQD_VERSION, BLKMQD_DEFAULT_MOUNTPOINT);
}

/* --iterations N (watch): a positive number. Returns 0, or -EINVAL after saying why. */
static int parse_iterations(const char *arg) {
        char *end;
        errno = 0;
        long n = strtol(arg, &end, 10);
        if (errno || *end || n < 1) {
                ctl_error("Invalid --iterations \"%s\"", arg);
                return -EINVAL;
        }
        arg_iterations = n;
        return 0;
}

enum { ARG_VERSION = 0x100 };

/* The option c getopt_long() returned, before or after the command: -1 to go on, else the exit
 * status (--help, --version, an invalid option or value: said). */
static int handle_option(int c) {
        switch (c) {
        case 'm':
                arg_mountpoint = optarg;
                return -1;
        case 'j':
                arg_json = true;
                return -1;
        case 'w':
                arg_wide = true;
                return -1;
        case 'n':
                return parse_iterations(optarg) < 0 ? EXIT_USAGE : -1;
        case 'h':
                help();
                return EXIT_OK;
        case ARG_VERSION:
                printf("blkmqctl %s\n", BLKMQD_VERSION);
                return EXIT_OK;
        default:        /* getopt said which option */
                ctl_error("See blkmqctl --help for the commands and options.");
                return EXIT_USAGE;
        }
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "mountpoint", required_argument, NULL, 'm' },
                { "json",       no_argument,       NULL, 'j' },
                { "wide",       no_argument,       NULL, 'w' },
                { "iterations", required_argument, NULL, 'n' },
                { "help",       no_argument,       NULL, 'h' },
                { "version",    no_argument,       NULL, ARG_VERSION },
                {}
        };
        static const struct {
                const char *name;
                int (*run)(int argc, char **argv);
        } commands[] = {
                { "status",  cmd_status },
                { "explain", cmd_explain },
                { "watch",   cmd_watch },
                { "set",     cmd_set },
                { "reset",   cmd_reset },
                { "restore", cmd_restore },
                { "verify",  cmd_verify },
        };
        const char *e = getenv("BLKMQD_MOUNTPOINT");
        int c, r;

        if (e && *e)
                arg_mountpoint = e;

        while ((c = getopt_long(argc, argv, "+m:jwn:h", options, NULL)) >= 0)
                if ((r = handle_option(c)) >= 0)
                        return r;

        if (optind >= argc) {
                ctl_error("Missing command, see --help");
                return EXIT_USAGE;
        }
        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                if (streq(argv[optind], commands[i].name)) {
                        /* Options may also follow the command: blkmqctl status --json. */
                        int sub_argc = argc - optind;
                        char **sub_argv = argv + optind;
                        optind = 0;
                        while ((c = getopt_long(sub_argc, sub_argv, "m:jwn:h", options, NULL)) >= 0)
                                if ((r = handle_option(c)) >= 0)
                                        return r;
                        /* Rebuild argv as COMMAND ARGS... without the options. */
                        sub_argv[optind - 1] = sub_argv[0];
                        return commands[i].run(sub_argc - optind + 1, sub_argv + optind - 1);
                }
        ctl_error("Unknown command \"%s\", see --help", argv[optind]);
        return EXIT_USAGE;
}
