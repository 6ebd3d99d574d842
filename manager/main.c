/* SPDX-License-Identifier: GPL-2.0-or-later */
/* blkmqd: arguments -> manager -> run. Nothing else lives here. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "strv.h"

static void help(void) {
        printf("blkmqd %s - blk-mq hardware queue tuning daemon\n\n"
               "Usage: blkmqd [OPTIONS]\n\n"
               "  -m, --mountpoint DIR  mount the FUSE tree at DIR (default %s)\n"
               "      --no-mount        do not mount the FUSE tree\n"
               "  -d, --devices GLOB    manage only disks matching GLOB (fnmatch, repeatable,\n"
               "                        comma-separated), e.g. --devices 'loop*'\n"
               "  -n, --dry-run         compute and show everything, write nothing\n"
               "  -c, --config FILE     configuration file (default %s/blkmqd.conf,\n"
               "                        drop-ins in FILE.d/*.conf)\n"
               "  -s, --state-dir DIR   where overrides and original values persist, one blkmqd\n"
               "                        at a time (default $STATE_DIRECTORY or %s)\n"
               "  -r, --root DIR        read sysfs/procfs/debugfs below DIR (fixture trees;\n"
               "                        default $BLKMQD_ROOT or /)\n"
               "  -v, --verbose         debug logging\n"
               "  -h, --help            this help\n"
               "      --version         print the version\n",
               BLKMQD_VERSION, BLKMQD_DEFAULT_MOUNTPOINT, BLKMQD_SYSCONFDIR, BLKMQD_DEFAULT_STATEDIR);
}

int main(int argc, char *argv[]) {
        enum { ARG_VERSION = 0x100, ARG_NO_MOUNT };
        static const struct option options[] = {
                { "mountpoint", required_argument, NULL, 'm' },
                { "no-mount",   no_argument,       NULL, ARG_NO_MOUNT },
                { "devices",    required_argument, NULL, 'd' },
                { "dry-run",    no_argument,       NULL, 'n' },
                { "root",       required_argument, NULL, 'r' },
                { "config",     required_argument, NULL, 'c' },
                { "state-dir",  required_argument, NULL, 's' },
                { "verbose",    no_argument,       NULL, 'v' },
                { "help",       no_argument,       NULL, 'h' },
                { "version",    no_argument,       NULL, ARG_VERSION },
                {}
        };
        ManagerOptions o = { .mountpoint = BLKMQD_DEFAULT_MOUNTPOINT };
        _cleanup_strv_free_ char **globs = NULL;
        int c, r;

        log_open();

        while ((c = getopt_long(argc, argv, "m:d:nr:c:s:vh", options, NULL)) >= 0)
                switch (c) {
                case 'm':
                        o.mountpoint = optarg;
                        break;
                case ARG_NO_MOUNT:
                        o.mountpoint = NULL;
                        break;
                case 'd': {
                        char *save = NULL;
                        size_t n = 0;
                        _cleanup_free_ char *copy = strdup(optarg);
                        if (!copy)
                                return EXIT_FAILURE;
                        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save), n++)
                                if (strv_extend(&globs, t) < 0)
                                        return EXIT_FAILURE;
                        /* "" or ",": no glob at all would leave the list empty, which is "every
                         * disk" (--devices "$UNSET" widened a limited run to the root disk) */
                        if (n == 0) {
                                log_error("--devices \"%s\" names no disk: give a glob (e.g. --devices 'loop*'); "
                                          "to manage every disk, leave --devices out", optarg);
                                return EXIT_FAILURE;
                        }
                        break;
                }
                case 'n':
                        o.dry_run = true;
                        break;
                case 'r':
                        o.root = optarg;
                        break;
                case 'c':
                        o.config_path = optarg;
                        break;
                case 's':
                        o.state_dir = optarg;
                        break;
                case 'v':
                        log_set_max_level(LOG_DEBUG);
                        break;
                case 'h':
                        help();
                        return EXIT_SUCCESS;
                case ARG_VERSION:
                        printf("blkmqd %s\n", BLKMQD_VERSION);
                        return EXIT_SUCCESS;
                default:        /* getopt said which option */
                        log_error("See blkmqd --help for the options.");
                        return EXIT_FAILURE;
                }
        if (optind < argc) {
                log_error("Unexpected argument \"%s\", see --help", argv[optind]);
                return EXIT_FAILURE;
        }
        o.device_globs = globs;

        Manager *m = NULL;
        r = manager_new(&o, &m);
        if (r < 0)
                return EXIT_FAILURE;
        r = manager_startup(m);
        if (r >= 0)
                r = manager_run(m);
        manager_free(m);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
