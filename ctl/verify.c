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

static bool in_effect(const char *state) {
        static const char *const ok[] = { "ok", "kept", "unmanaged", "managed by kernel" };
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
                if (strcmp(state, ok[i]) == 0)
                        return true;
        return false;
}

/* The differences of disk's applied/ files, printed; how many, or -1 when it cannot be read. */
static int verify_disk(const char *disk) {
        char **knobs = NULL;
        size_t n = 0;
        int diffs = 0;

        if (list_dev_dir(disk, "applied", &knobs, &n) < 0) {
                err("Failed to list %s/devices/%s/applied", arg_mountpoint, disk);
                return -1;
        }
        for (size_t i = 0; i < n; i++) {
                char *v = read_dev(disk, "applied", knobs[i], NULL);
                if (!v)
                        continue;       /* gone meanwhile */
                if (strcmp(knobs[i], "iosched") == 0) {
                        /* one "<elevator>.<tunable> <state>: ..." line per tunable */
                        for (char *save = NULL, *l = strtok_r(v, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                                char *sp = strchr(l, ' ');
                                if (!sp)
                                        continue;
                                char *st = strdup(sp + 1);
                                if (st)
                                        state_word(st);
                                if (st && !in_effect(st)) {
                                        *sp = '\0';
                                        printf("%s iosched.%s: %s\n", disk, l, sp + 1);
                                        diffs++;
                                }
                                free(st);
                        }
                } else {
                        char *st = strdup(v);
                        if (st)
                                state_word(st);
                        if (st && !in_effect(st)) {
                                printf("%s %s: %s\n", disk, knobs[i], v);
                                diffs++;
                        }
                        free(st);
                }
                free(v);
        }
        FREE_STRV(knobs, n);
        return diffs;
}

static char *read_module(const char *m, const char *p, const char *file) {
        char *path = path_join("modules", m, p, file, NULL), *v = NULL;
        if (path && read_text(path, &v) < 0)
                v = NULL;
        free(path);
        return v;
}

/* Module parameters blkmqd wants and has not brought into effect. */
static int verify_modules(void) {
        char *dir = path_join("modules", NULL), **mods = NULL;
        size_t n_mods = 0;
        int diffs = 0;

        if (!dir || list_dir(dir, &mods, &n_mods) < 0) {
                free(dir);
                return 0;       /* none wanted (or an older blkmqd without modules/) */
        }
        for (size_t i = 0; i < n_mods; i++) {
                char *mdir = path_join("modules", mods[i], NULL), **params = NULL;
                size_t n_params = 0;
                if (mdir && list_dir(mdir, &params, &n_params) >= 0)
                        for (size_t k = 0; k < n_params; k++) {
                                char *state = read_module(mods[i], params[k], "state");
                                if (state && strcmp(state, "effective") != 0 && strcmp(state, "proposed") != 0) {
                                        char *cur = read_module(mods[i], params[k], "current"),
                                             *want = read_module(mods[i], params[k], "wanted");
                                        printf("module %s %s: %s (now %s, wanted %s)\n", mods[i], params[k], state,
                                               cur ?: "-", want ?: "-");
                                        free(cur);
                                        free(want);
                                        diffs++;
                                }
                                free(state);
                        }
                FREE_STRV(params, n_params);
                free(mdir);
        }
        FREE_STRV(mods, n_mods);
        free(dir);
        return diffs;
}

int cmd_verify(int argc, char **argv) {
        char **disks = NULL, *mode = NULL, *mp;
        size_t n = 0;
        int r, diffs = 0;

        r = check_running();
        if (r < 0)
                return -r;
        int missing;
        r = disk_arguments_or_all(argc, argv, &disks, &n, &missing);
        if (r != EXIT_OK)
                return r;
        if (missing > 0) {              /* said by check_disk(): not a difference, a failure */
                FREE_STRV(disks, n);
                return EXIT_FAILED;
        }

        /* in dry-run and off nothing is applied: the plan is not in effect, whatever applied/ says */
        mp = path_join("mode", NULL);
        if (mp && read_text(mp, &mode) >= 0 && strcmp(mode, "auto") != 0) {
                printf("mode %s: blkmqd writes nothing (echo auto > %s/mode)\n", mode, arg_mountpoint);
                diffs++;
        }
        free(mp);
        free(mode);

        for (size_t i = 0; i < n; i++) {
                r = verify_disk(disks[i]);
                if (r < 0) {
                        FREE_STRV(disks, n);
                        return EXIT_FAILED;
                }
                diffs += r;
        }
        if (argc <= 1)
                diffs += verify_modules();
        if (diffs == 0)
                printf("%zu disk(s) as planned\n", n);
        FREE_STRV(disks, n);
        if (fflush(stdout) != 0)
                return EXIT_FAILED;
        return diffs > 0 ? EXIT_USAGE : EXIT_OK;
}
