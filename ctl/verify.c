/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * blkmqctl verify [DISK...]: is every managed disk as blkmqd planned it? Like tuned-adm verify,
 * but each difference is one line saying what differs:
 *
 *   sdb elevator: changed externally to bfq (blkmqd wrote mq-deadline; ...)
 *   sdc iosched.bfq.slice_idle: error: EINVAL writing 0 to queue/iosched/slice_idle ...
 *   module megaraid_sas host_tagset_enable: pending-reboot (now 1, wanted 0)
 *   mode dry-run: blkmqd writes nothing (echo auto > /run/blkmqd/mode)
 *
 * Reading applied/<knob> makes blkmqd read the disk's values from the kernel first
 * (manager/verify.c), so what is printed is what the kernel has now. In effect: ok, kept,
 * unmanaged (no wish, or a tunable waiting for its elevator), managed by kernel; a module
 * parameter effective, or only proposed (ModuleParams=propose: nothing is to be written).
 * Anything else is a difference. Exit status: 0 all as planned ("N disk(s) as planned" on
 * stdout), 1 differences (one line each on stdout), 2 failed, 3 blkmqd not running.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "macro.h"
#include "strv.h"

static bool in_effect(const char *state) {
        static const char *const ok[] = { "ok", "kept", "unmanaged", "managed by kernel" };
        for (size_t i = 0; i < ELEMENTSOF(ok); i++)
                if (streq(state, ok[i]))
                        return true;
        return false;
}

/* The differences of disk's applied/ files, printed; how many, or -1 when it cannot be read. */
static int verify_disk(const char *disk) {
        _cleanup_strv_free_ char **knobs = NULL;
        int diffs = 0;

        if (list_dev_dir(disk, "applied", &knobs) < 0) {
                ctl_error("Failed to list %s/devices/%s/applied", arg_mountpoint, disk);
                return -1;
        }
        STRV_FOREACH(k, knobs) {
                _cleanup_free_ char *v = read_dev(disk, "applied", *k, NULL);
                if (!v)
                        continue;       /* gone meanwhile */
                if (streq(*k, "iosched")) {
                        /* one "<elevator>.<tunable> <state>: ..." line per tunable */
                        for (char *save = NULL, *l = strtok_r(v, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                                char *sp = strchr(l, ' ');
                                if (!sp)
                                        continue;
                                _cleanup_free_ char *st = strdup(sp + 1);
                                if (st)
                                        state_word(st);
                                if (st && !in_effect(st)) {
                                        *sp = '\0';
                                        printf("%s iosched.%s: %s\n", disk, l, sp + 1);
                                        diffs++;
                                }
                        }
                } else {
                        _cleanup_free_ char *st = strdup(v);
                        if (st)
                                state_word(st);
                        if (st && !in_effect(st)) {
                                printf("%s %s: %s\n", disk, *k, v);
                                diffs++;
                        }
                }
        }
        return diffs;
}

static char *read_module(const char *m, const char *p, const char *file) {
        _cleanup_free_ char *path = path_join("modules", m, p, file, NULL);
        char *v = NULL;
        if (!path || read_text(path, &v) < 0)
                return NULL;
        return v;
}

/* Module parameters blkmqd wants and has not brought into effect. */
static int verify_modules(void) {
        _cleanup_free_ char *dir = path_join("modules", NULL);
        _cleanup_strv_free_ char **mods = NULL;
        int diffs = 0;

        if (!dir || list_dir(dir, &mods) < 0)
                return 0;       /* modules/ lists the parameters blkmqd wants: gone only with the daemon */
        STRV_FOREACH(m, mods) {
                _cleanup_free_ char *mdir = path_join("modules", *m, NULL);
                _cleanup_strv_free_ char **params = NULL;
                if (mdir && list_dir(mdir, &params) >= 0)
                        STRV_FOREACH(p, params) {
                                _cleanup_free_ char *state = read_module(*m, *p, "state");
                                if (state && !streq(state, "effective") && !streq(state, "proposed")) {
                                        _cleanup_free_ char *cur = read_module(*m, *p, "current"),
                                                            *want = read_module(*m, *p, "wanted");
                                        printf("module %s %s: %s (now %s, wanted %s)\n", *m, *p, state,
                                               cur ?: "-", want ?: "-");
                                        diffs++;
                                }
                        }
        }
        return diffs;
}

int cmd_verify(int argc, char **argv) {
        _cleanup_strv_free_ char **disks = NULL;
        int r, diffs = 0;
        int missing;
        r = disk_arguments_or_all(argc, argv, &disks, &missing);
        if (r != EXIT_OK)
                return r;
        if (missing > 0)                /* said by check_disk(): not a difference, a failure */
                return EXIT_FAILED;

        /* in dry-run and off nothing is applied: the plan is not in effect, whatever applied/ says */
        _cleanup_free_ char *mode = read_top("mode");
        if (mode && !streq(mode, "auto")) {
                printf("mode %s: blkmqd writes nothing (echo auto > %s/mode)\n", mode, arg_mountpoint);
                diffs++;
        }

        STRV_FOREACH(d, disks) {
                r = verify_disk(*d);
                if (r < 0)
                        return EXIT_FAILED;
                diffs += r;
        }
        if (argc <= 1)
                diffs += verify_modules();
        if (diffs == 0)
                printf("%zu disk(s) as planned\n", strv_length(disks));
        if (fflush(stdout) != 0)
                return EXIT_FAILED;
        return diffs > 0 ? EXIT_USAGE : EXIT_OK;
}
