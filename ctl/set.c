/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The verbs that write to the tree:
 *
 *   blkmqctl set DISK KNOB VALUE   writes VALUE to devices/DISK/policy/KNOB (KNOB is a knob of
 *                                  policy/, or iosched/<elevator>/<tunable>), then prints the
 *                                  knob's applied/ state (applied/iosched's line for a tunable)
 *   blkmqctl reset DISK [KNOB]     writes "auto" to policy/KNOB, or to every policy file of DISK
 *                                  that does not read "auto" already (policy/elevator last)
 *   blkmqctl restore               writes 1 to restore, then reads how many values it put back
 *                                  and the mode (off after a restore)
 *
 * A write blkmqd refuses (EINVAL, ERANGE) points at its log, which says what it expects.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "macro.h"
#include "strv.h"

/* One write() of "value\n"; errors from write() and close() (FUSE may answer at flush). */
static int write_text(const char *path, const char *value) {
        int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        _cleanup_free_ char *buf = NULL;
        int len = asprintf(&buf, "%s\n", value);
        if (len < 0) {
                close(fd);
                return -ENOMEM;
        }
        ssize_t k = write(fd, buf, (size_t) len);
        int r = k < 0 ? -errno : k != len ? -EIO : 0;
        if (close(fd) < 0 && r == 0)
                r = -errno;
        return r;
}

/* "iosched/<elevator>/<tunable>": an elevator tunable's policy file (issue 18). */
static bool knob_is_iosched(const char *knob) {
        const char *e = startswith(knob, "iosched/"), *t = e ? strchr(e, '/') : NULL;
        return t && t > e && t[1] && !strchr(t + 1, '/') && e[0] != '.' && t[1] != '.';
}

static int write_policy(const char *disk, const char *knob, const char *value) {
        if (!*knob || (strchr(knob, '/') && !knob_is_iosched(knob)) || knob[0] == '.') {
                ctl_error("Invalid knob name \"%s\"", knob);
                return EXIT_USAGE;
        }
        _cleanup_free_ char *p = path_join("devices", disk, "policy", knob, NULL);
        if (!p)
                return EXIT_FAILED;
        _cleanup_strv_free_ char **knobs = NULL;
        int r = write_text(p, value);
        /* every disk has policy/ (fuse-fs/fuse-fs.c build_device()): a knob it does not have is
         * not there; policy/ itself is gone only with the disk, and that is the write's error */
        if (r == -ENOENT && list_dev_dir(disk, "policy", &knobs) >= 0) {
                fprintf(stderr, "blkmqctl: Unknown knob \"%s\" for %s; knobs:", knob, disk);
                STRV_FOREACH(k, knobs)
                        fprintf(stderr, " %s", *k);
                fputc('\n', stderr);
        } else if (r == -EINVAL || r == -ERANGE)
                /* blkmqd refused the value; its one log line says what it expects */
                ctl_error("Failed to write \"%s\" to \"%s\": %s (blkmqd's log says what it expects: journalctl -u blkmqd, or its standard error)",
                    value, p, strerror(-r));
        else if (r < 0)
                ctl_error("Failed to write \"%s\" to \"%s\": %s", value, p, strerror(-r));
        return r < 0 ? EXIT_FAILED : EXIT_OK;
}

/*
 * An elevator tunable's state: its line of applied/iosched ("<elevator>.<tunable> <state>"), the
 * state only; NULL when applied/iosched has no line for it (unmanaged).
 */
static char *read_applied_iosched(const char *disk, const char *knob) {
        _cleanup_free_ char *all = read_dev(disk, "applied", "iosched", NULL);
        char label[256];
        const char *e = knob + strlen("iosched/"), *t = strchr(e, '/');
        if (!all || !t)
                return NULL;
        snprintf(label, sizeof(label), "%.*s.%s ", (int) (t - e), e, t + 1);
        for (char *line = all, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                const char *state = startswith(line, label);
                if (state)
                        return strdup(state);
        }
        return NULL;
}

/* A policy file (devices/<disk>/<sub>/<file>) that reads "auto" already: no override to reset. */
static bool policy_is_auto(const char *disk, const char *sub, const char *file) {
        _cleanup_free_ char *v = read_dev(disk, sub, file, NULL);      /* read_text() drops the newline */
        return streq_ptr(v, "auto");
}

int cmd_set(int argc, char **argv) {
        int r = disk_arguments(argc, argv, 4, 4, "set DISK KNOB VALUE");
        if (r != 0)
                return r;
        r = write_policy(argv[1], argv[2], argv[3]);
        if (r == EXIT_OK) {
                _cleanup_free_ char *applied = knob_is_iosched(argv[2]) ? read_applied_iosched(argv[1], argv[2]) :
                                                                          read_dev(argv[1], "applied", argv[2], NULL);
                printf("%s %s = %s%s%s\n", argv[1], argv[2], argv[3], applied ? ", applied: " : "", strempty(applied));
        }
        return r;
}

/*
 * Every override of disk back to "auto", but only files that are not "auto" already (each
 * write is a log line and an evaluation in blkmqd). policy/elevator goes last: an elevator
 * switch resets nr_requests and the elevator's tunables, so while their overrides are still
 * set blkmqd would write them again after the switch only to put them back at the next file.
 */
/* write_policy(disk, knob, "auto"), and on success say so: "DISK: policy/KNOB -> auto". */
static int reset_knob(const char *disk, const char *knob, unsigned *n_reset) {
        int r = write_policy(disk, knob, "auto");
        if (r == EXIT_OK) {
                printf("%s: policy/%s -> auto\n", disk, knob);
                (*n_reset)++;
        }
        return r;
}

int cmd_reset(int argc, char **argv) {
        int r = disk_arguments(argc, argv, 2, 3, "reset DISK [KNOB]");
        unsigned n_reset = 0;
        if (r != 0)
                return r;
        if (argc == 3) {
                /* like reset DISK: a file that reads "auto" has no override to give back (the
                 * write would be one more log line and evaluation in blkmqd, and "-> auto" a
                 * change that did not happen) */
                if (policy_is_auto(argv[1], "policy", argv[2])) {
                        printf("%s: no override to reset: policy/%s reads auto\n", argv[1], argv[2]);
                        return EXIT_OK;
                }
                return reset_knob(argv[1], argv[2], &n_reset);
        }

        _cleanup_strv_free_ char **knobs = NULL;
        r = list_dev_dir(argv[1], "policy", &knobs);
        if (r < 0) {            /* the disk went away since check_disk() */
                ctl_error("Failed to list %s/devices/%s/policy: %s", arg_mountpoint, argv[1], strerror(-r));
                return EXIT_FAILED;
        }
        int ret = EXIT_OK;
        bool elevator = false;
        STRV_FOREACH(k, knobs) {
                if (streq(*k, "iosched")) {
                        /* policy/iosched/<elevator>/<tunable>: each one not auto already */
                        _cleanup_strv_free_ char **elevs = NULL;
                        if (list_dev_dir(argv[1], "policy/iosched", &elevs) < 0)
                                continue;
                        STRV_FOREACH(e, elevs) {
                                _cleanup_strv_free_ char **tun = NULL;
                                char sub[512];
                                snprintf(sub, sizeof(sub), "policy/iosched/%s", *e);
                                if (list_dev_dir(argv[1], sub, &tun) < 0)
                                        continue;
                                STRV_FOREACH(t, tun) {
                                        char knob[768];
                                        if (policy_is_auto(argv[1], sub, *t))
                                                continue;
                                        snprintf(knob, sizeof(knob), "iosched/%s/%s", *e, *t);
                                        if (reset_knob(argv[1], knob, &n_reset) != EXIT_OK)
                                                ret = EXIT_FAILED;
                                }
                        }
                        continue;
                }
                if (streq(*k, "elevator")) {
                        elevator = true;
                        continue;
                }
                if (!policy_is_auto(argv[1], "policy", *k) && reset_knob(argv[1], *k, &n_reset) != EXIT_OK)
                        ret = EXIT_FAILED;
        }
        if (elevator && !policy_is_auto(argv[1], "policy", "elevator") && reset_knob(argv[1], "elevator", &n_reset) != EXIT_OK)
                ret = EXIT_FAILED;
        if (ret == EXIT_OK && n_reset == 0)
                printf("%s: no override to reset: every policy file reads auto\n", argv[1]);
        return ret;
}

int cmd_restore(int argc, char **argv) {
        (void) argv;
        if (argc != 1) {
                ctl_error("restore takes no arguments");
                return EXIT_USAGE;
        }
        int r = check_running();
        if (r < 0)
                return -r;
        _cleanup_free_ char *p = path_join("restore", NULL);
        if (!p)
                return EXIT_FAILED;
        r = write_text(p, "1");
        if (r < 0)
                ctl_error("Failed to write 1 to \"%s\": %s", p, strerror(-r));
        else {
                /* the write returns once every value is back (or its write failed, which blkmqd
                 * logs); restore then reads how many the last restore put back */
                _cleanup_free_ char *count = read_top("restore"), *mode = read_top("mode"), *modep = path_join("mode", NULL);
                uint64_t k;
                if (!value_u64(count, &k))
                        printf("Restore done (%s does not say how many values it put back).\n", p);
                else if (k == 0)
                        printf("Nothing to restore: blkmqd had changed no value.\n");
                else
                        printf("Restored %" PRIu64 " original value(s).\n", k);
                if (mode && modep) {
                        if (streq(mode, "off"))
                                printf("mode: off: blkmqd writes nothing until 'echo auto > %s'\n", modep);
                        else
                                printf("mode: %s\n", mode);
                }
        }
        return r < 0 ? EXIT_FAILED : EXIT_OK;
}
