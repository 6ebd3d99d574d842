/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * umockdev suite: udev semantics of the built daemon. A UMockdevTestbed holds disks,
 * partitions and a dm-multipath map (mock-disk.h); blkmqd runs with --root at the testbed and
 * BLKMQD_TEST_UDEV_MONITOR=1, so its libudev (under umockdev's preload, inherited from this
 * process) enumerates the testbed's sys/ at coldplug and receives the uevents this test sends
 * with umockdev_testbed_uevent(), while its facts come from the same tree through hostfs.
 * Each case asserts what the daemon decided: its decision lines ("<disk>: ... -> class ...
 * (rule ...)"), "Evaluating", "Disk removed", and the disks it has at the end (a SIGHUP
 * re-gathers every registered disk).
 *
 * Usage: test-udev BLKMQD CASE, run under umockdev-wrapper (tests/umockdev/meson.build).
 * Cases: coldplug, events-kernel, events-udev, map. TAP on stdout, one point per check; skipped
 * ("1..0 # SKIP") without the preload. Waits
 * poll the log with a generous deadline; nothing is timed.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mock-disk.h"

/* generous: a loaded 2-core CI machine; the debounce window is 1 s. After a failure the test
 * is red anyway: later waits are short, so that the remaining checks still report. */
#define DEADLINE_SEC (t.failures ? 3.0 : 30.0)

static struct {
        UMockdevTestbed *bed;
        char *root, *tmp, *log;
        const char *exe;
        pid_t pid;
        unsigned failures, checks;
} t;

static void cleanup(void) {
        if (t.pid > 0) {
                (void) kill(t.pid, SIGKILL);
                (void) waitpid(t.pid, NULL, 0);
                t.pid = 0;
        }
        if (t.tmp) {
                g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", t.tmp);
                if (system(cmd) != 0)
                        fprintf(stderr, "could not remove %s\n", t.tmp);
        }
        g_clear_object(&t.bed);
}

static void show_log(void) {
        g_autofree char *s = NULL;
        if (t.log && g_file_get_contents(t.log, &s, NULL, NULL)) {
                size_t n = strlen(s);
                fprintf(stderr, "---- blkmqd log (last 6000 bytes) ----\n%s\n----\n", s + (n > 6000 ? n - 6000 : 0));
        }
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        printf("Bail out! ");           /* TAP: the test ended early */
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
        fflush(stdout);
        va_start(ap, fmt);
        fputs("FATAL: ", stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        show_log();
        cleanup();
        exit(EXIT_FAILURE);
}

static void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(bool ok, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        /* one TAP point per check (meson's protocol 'tap') */
        t.checks++;
        printf("%s %u - ", ok ? "ok" : "not ok", t.checks);
        vprintf(fmt, ap);
        putchar('\n');
        fflush(stdout);
        va_end(ap);
        if (!ok)
                t.failures++;
}

static double now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void nap(void) {
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
}

static void daemon_must_live(void) {
        int status;
        if (t.pid > 0 && waitpid(t.pid, &status, WNOHANG) == t.pid) {
                t.pid = 0;
                die("blkmqd exited (status 0x%x)", status);
        }
}

/* The daemon's log (stdout and stderr), "" while unreadable. */
static char *log_text(void) {
        char *s = NULL;
        return g_file_get_contents(t.log, &s, NULL, NULL) ? s : g_strdup("");
}

/* Where the log ends now: what an event causes is looked for after it. */
static size_t log_mark(void) {
        g_autofree char *s = log_text();
        return strlen(s);
}

/* Whether a line of the log after mark starts with "<level>" then prefix and contains needle
 * (NULL: any). The daemon logs "<6>" priority prefixes on stderr (host/log.c). */
static bool log_has_line(size_t mark, const char *prefix, const char *needle) {
        g_autofree char *s = log_text();
        if (strlen(s) < mark)
                return false;
        g_auto(GStrv) lines = g_strsplit(s + mark, "\n", -1);
        for (char **l = lines; *l; l++) {
                const char *x = *l;
                if (x[0] == '<' && strchr(x, '>'))
                        x = strchr(x, '>') + 1;
                if (g_str_has_prefix(x, prefix) && (!needle || strstr(x, needle)))
                        return true;
        }
        return false;
}

/* Wait for such a line after mark; checked, with the deadline. */
static void expect_line(size_t mark, const char *prefix, const char *needle, const char *what) {
        double end = now() + DEADLINE_SEC;
        bool ok;
        while (!(ok = log_has_line(mark, prefix, needle)) && now() <= end) {
                daemon_must_live();
                nap();
        }
        check(ok, "%s: a line \"%s...%s\"%s", what, prefix, needle ?: "", ok ? "" : " within the deadline");
}

/* Decisions: the class line of policies/policy.c classify's explanation, "<disk>: nr_hw_queues=
 * ... -> class <class> (rule ...)". */
static void expect_class(size_t mark, const char *disk, const char *facts, const char *class, const char *what) {
        g_autofree char *prefix = g_strdup_printf("%s: nr_hw_queues=", disk);
        g_autofree char *needle = class ? g_strdup_printf("-> class %s (rule", class) : g_strdup("-> class ");
        double end = now() + DEADLINE_SEC;
        bool ok = false;
        while (now() <= end) {
                g_autofree char *s = log_text();
                g_auto(GStrv) lines = g_strsplit(strlen(s) >= mark ? s + mark : "", "\n", -1);
                for (char **l = lines; *l && !ok; l++) {
                        const char *x = strchr(*l, '>') ? strchr(*l, '>') + 1 : *l;
                        ok = g_str_has_prefix(x, prefix) && strstr(x, needle) && (!facts || strstr(x, facts));
                }
                if (ok)
                        break;
                daemon_must_live();
                nap();
        }
        check(ok, "%s: %s classed %s%s%s", what, disk, class ?: "(any)", facts ? " with " : "", facts ?: "");
}

/* Send a uevent to the daemon's monitor. umockdev 0.17.16 delivers it as a datagram on a
 * non-blocking Unix socket and abort()s on EAGAIN: the daemon's queue holds
 * net.unix.max_dgram_qlen (10) datagrams, so a case sends a few, then waits for their effect. */
static void uevent(const char *syspath, const char *action) {
        daemon_must_live();
        umockdev_testbed_uevent(t.bed, syspath, action);
}

static void set_attr(const char *syspath, const char *attr, const char *value) {
        umockdev_testbed_set_attribute(t.bed, syspath, attr, value);
}

static void daemon_start(void) {
        g_autofree char *state = g_build_filename(t.tmp, "state", NULL), *conf = g_build_filename(t.tmp, "blkmqd.conf", NULL);
        /* the mock disks have no parent device, so no driver: their rotational flag is taken as
         * the test sets it (the suites' opt-in, docs/TESTING.md "Speed in the suites") */
        static const char text[] = "[Speed]\nTrustRotational=*\n";
        if (!g_file_set_contents(conf, text, sizeof(text) - 1, NULL))
                die("cannot write %s", conf);
        t.log = g_build_filename(t.tmp, "blkmqd.log", NULL);
        t.pid = fork();
        if (t.pid < 0)
                die("fork: %m");
        if (t.pid == 0) {
                int fd = open(t.log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0)
                        _exit(127);
                setenv("BLKMQD_TEST_UDEV_MONITOR", "1", 1);
                /* --no-mount: umockdev's preload holds one lock across every path call it wraps,
                 * the open() of a file in the daemon's own FUSE mount included, so a FUSE server
                 * under it deadlocks (its mount probe, fuse-fs.c probe_main(), did). The decisions
                 * are read from the log instead. --dry-run: udev semantics here, not writes. */
                execl(t.exe, t.exe, "--root", t.root, "--no-mount", "--state-dir", state,
                      "--config", conf, "--dry-run", "-v", (char *) NULL);
                _exit(127);
        }
        double end = now() + DEADLINE_SEC;
        while (!log_has_line(0, "blkmqd ", " started: ")) {
                if (now() > end)
                        die("blkmqd did not start within %.0f s", DEADLINE_SEC);
                daemon_must_live();
                nap();
        }
}

static int compare_names(gconstpointer a, gconstpointer b) {
        return strcmp(*(char * const *) a, *(char * const *) b);
}

/*
 * The disks the daemon has: SIGHUP re-gathers every registered disk ("Evaluating (facts
 * gathered)" each, after "Configuration reloaded"), then SIGTERM; sorted, space separated.
 * Stops the daemon (checked: exit status 0).
 */
static char *daemon_stop_listing(void) {
        size_t mark = log_mark();
        int status = 0;

        if (kill(t.pid, SIGHUP) < 0)
                die("kill: %m");
        expect_line(mark, "Configuration reloaded", NULL, "SIGHUP");
        /* signals are taken one at a time by the event loop: the reload's re-evaluation is done
         * before SIGTERM is looked at */
        if (kill(t.pid, SIGTERM) < 0)
                die("kill: %m");
        double end = now() + DEADLINE_SEC;
        while (waitpid(t.pid, &status, WNOHANG) == 0) {
                if (now() > end)
                        die("blkmqd did not stop within %.0f s of SIGTERM", DEADLINE_SEC);
                nap();
        }
        t.pid = 0;
        check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "blkmqd stopped with status 0 (status 0x%x)", status);

        g_autofree char *s = log_text();
        const char *from = strstr(s + mark, "Configuration reloaded");
        g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
        g_auto(GStrv) lines = g_strsplit(from ?: "", "\n", -1);
        for (char **l = lines; *l; l++) {
                const char *x = strchr(*l, '>') ? strchr(*l, '>') + 1 : *l;
                const char *e = strstr(x, ": Evaluating (facts gathered");
                if (e)
                        g_ptr_array_add(names, g_strndup(x, e - x));
        }
        g_ptr_array_sort(names, compare_names);
        GString *out = g_string_new(NULL);
        for (unsigned i = 0; i < names->len; i++)
                g_string_append_printf(out, "%s%s", i ? " " : "", (char *) names->pdata[i]);
        return g_string_free(out, false);
}

static void expect_disks(const char *want, const char *what) {
        g_autofree char *got = daemon_stop_listing();
        check(strcmp(got, want) == 0, "%s: the daemon has \"%s\"%s%s%s", what, want,
              strcmp(got, want) ? " (has: \"" : "", strcmp(got, want) ? got : "", strcmp(got, want) ? "\")" : "");
}

/* Whether the daemon said anything about disk (a line "<disk>: ...") after mark. */
static bool said_about(size_t mark, const char *disk) {
        g_autofree char *prefix = g_strdup_printf("%s: ", disk);
        return log_has_line(mark, prefix, NULL);
}

/*
 * Coldplug: enumeration of the testbed at start. Whole disks only (a partition is not
 * listed), a disk without medium (size 0) is not managed, the multipath roles: dm-3 the map
 * (dm/uuid mpath-...), sdb its leg through holders/dm-3, sdc a leg through udev's database
 * (DM_MULTIPATH_DEVICE_PATH=1, which multipath-tools' rules write before any map holds the
 * path), each leg with the leg policy (elevator none: the map schedules).
 */
static void case_coldplug(void) {
        g_autofree char *sda = mock_disk_add(t.bed, "sda", 0, false, 4, 2097152);
        g_autofree char *sda1 = mock_partition_add(t.bed, sda, "sda1", 1);
        g_autofree char *sdb = mock_disk_add(t.bed, "sdb", 16, false, 2, 2097152);
        g_autofree char *sdc = mock_disk_add(t.bed, "sdc", 32, false, 2, 2097152);
        g_autofree char *dm3 = mock_disk_add(t.bed, "dm-3", 48, false, 1, 2097152);
        g_autofree char *sdd = mock_disk_add(t.bed, "sdd", 64, true, 1, 0);
        mock_disk_set_mpath_map(t.bed, dm3, "3600140512345678", "mpatha");
        mock_disk_add_holder(t.bed, sdb, "dm-3");
        mock_udev_db_set(t.bed, 32, "DM_MULTIPATH_DEVICE_PATH", "1", "ID_SERIAL", "3600140587654321", NULL);

        daemon_start();
        check(log_has_line(0, "Watching block devices (kernel source", NULL), "no run/udev/control: the kernel source is watched");
        check(log_has_line(0, "blkmqd ", " started: 4 disk(s)"), "coldplug: 4 disks (sda sdb sdc dm-3)");
        expect_class(0, "sda", "nr_hw_queues=4 rotational=0", "unknown", "coldplug: facts from mq/ and queue/");
        expect_line(0, "dm-3: multipath=map (dm/uuid mpath-3600140512345678, dm/name mpatha)", NULL, "coldplug: the map");
        expect_class(0, "sdb", NULL, "multipath-leg", "coldplug: leg through holders/");
        expect_line(0, "sdb: multipath=leg (holders/dm-3 dm/uuid mpath-3600140512345678", NULL, "coldplug: leg of dm-3");
        expect_class(0, "sdc", NULL, "multipath-leg", "coldplug: leg through udev's database");
        expect_line(0, "sdc: multipath=leg (udev DM_MULTIPATH_DEVICE_PATH=1 (run/udev/data/b120:32))", NULL,
                    "coldplug: leg by DM_MULTIPATH_DEVICE_PATH=1");
        expect_line(0, "sdc: class=multipath-leg elevator=mq-deadline wanted=none", "-> elevator=none (rule elevator-multipath-leg)",
                    "coldplug: the leg's own policy");
        check(!said_about(0, "sda1"), "coldplug: nothing about the partition sda1");
        check(log_has_line(0, "sdd: No medium", NULL) && !log_has_line(0, "sdd: nr_hw_queues=", NULL),
              "coldplug: sdd without medium not evaluated");
        expect_disks("dm-3 sda sdb sdc", "coldplug");
        (void) sda1;
        (void) sdd;
}

/*
 * Uevents after start, on the source the testbed says (run/udev/control: udev, else kernel):
 * add, a partition's add, change re-reading sysfs and udev's database, change without add
 * (a medium appears), remove, remove before add, remove+add in one burst, add twice.
 */
static void case_events(bool udev_source) {
        if (udev_source) {
                /* hostfs_udevd_running() of a --root tree: the control socket's file exists */
                g_autofree char *dir = g_build_filename(t.root, "run", "udev", NULL);
                g_autofree char *ctl = g_build_filename(dir, "control", NULL);
                if (g_mkdir_with_parents(dir, 0755) < 0 || !g_file_set_contents(ctl, "", 0, NULL))
                        die("cannot make %s", ctl);
        }
        g_autofree char *sdz = mock_disk_add(t.bed, "sdz", 400, false, 1, 2097152);
        daemon_start();
        check(log_has_line(0, udev_source ? "Watching block devices (udev source)" : "Watching block devices (kernel source", NULL),
              "the %s source is watched", udev_source ? "udev" : "kernel");
        size_t mark = log_mark();
        if (udev_source) {
                /* udev source: coldplug takes only disks udev has initialized (its database
                 * entry exists); sdz has none, neither in the testbed (umockdev >= 0.17.18 reads
                 * /run/udev/data there) nor on the machine (major 120 is for local use), so it
                 * waits for udev's add event */
                check(log_has_line(0, "sdz: Not initialized by udev yet, waiting for its add event", NULL) &&
                      !log_has_line(0, "sdz: nr_hw_queues=", NULL), "udev source: coldplug leaves the uninitialized sdz to its add event");
                /* a reload gathers again the disks not listed too (a Devices= may name them now),
                 * but not one that waits for udev: it stays udev's add event's */
                size_t hup = log_mark();
                if (kill(t.pid, SIGHUP) < 0)
                        die("kill: %m");
                expect_line(hup, "Configuration reloaded", NULL, "SIGHUP before sdz's add");
                /* the reload's re-evaluation runs right after that line, on the one loop thread:
                 * once a second reload has said the same, the first one's is done */
                size_t hup2 = log_mark();
                if (kill(t.pid, SIGHUP) < 0)
                        die("kill: %m");
                expect_line(hup2, "Configuration reloaded", NULL, "a second SIGHUP");
                check(!log_has_line(hup, "sdz: Evaluating", NULL) && !log_has_line(hup, "sdz: nr_hw_queues=", NULL),
                      "udev source: a reload leaves the uninitialized sdz to its add event too");
                mock_udev_db_set(t.bed, 400, "ID_SERIAL", "sdz-serial", NULL);
                uevent(sdz, "add");
                expect_line(mark, "sdz: Evaluating (facts gathered, new disk)", NULL, "udev source: sdz taken with udev's add");
                mark = log_mark();
        } else
                check(log_has_line(0, "sdz: nr_hw_queues=1 ", NULL), "kernel source: coldplug takes sdz (its decisions)");

        /* add: the disk appears with its facts */
        g_autofree char *sde = mock_disk_add(t.bed, "sde", 64, false, 2, 2097152);
        expect_line(mark, "sde: Evaluating (facts gathered, new disk)", NULL, "add: sde is a new disk");
        expect_class(mark, "sde", "nr_hw_queues=2 rotational=0", NULL, "add: facts from its mq/ and queue/");

        /* a partition's add is no disk: sdf, added after it, is evaluated; the partition never */
        mark = log_mark();
        g_autofree char *sde1 = mock_partition_add(t.bed, sde, "sde1", 65);
        g_autofree char *sdf = mock_disk_add(t.bed, "sdf", 80, true, 1, 2097152);
        expect_class(mark, "sdf", "nr_hw_queues=1 rotational=1", "single-queue-rotational", "add: second disk");
        check(!said_about(0, "sde1"), "add: nothing about the partition sde1 (its uevent came before sdf's)");

        /* change: facts read again (mq/ grew, as after blk_mq_update_nr_hw_queues()) */
        mark = log_mark();
        mock_disk_set_hw_queues(t.bed, sde, 4);
        uevent(sde, "change");
        expect_class(mark, "sde", "nr_hw_queues=4", NULL, "change: nr_hw_queues read again");

        /* change: udev's database read again: multipath-tools claims sdf (its rules set
         * DM_MULTIPATH_DEVICE_PATH=1, udev sends change) -> a leg with the leg policy */
        mark = log_mark();
        mock_udev_db_set(t.bed, 80, "DM_MULTIPATH_DEVICE_PATH", "1", NULL);
        uevent(sdf, "change");
        expect_class(mark, "sdf", NULL, "multipath-leg", "change: DM_MULTIPATH_DEVICE_PATH=1 in udev's database");
        expect_line(mark, "sdf: class=multipath-leg elevator=mq-deadline wanted=none", "-> elevator=none (rule elevator-multipath-leg)",
                    "change: the leg's own policy");
        /* and released (the path dropped from multipath): a plain disk again */
        mark = log_mark();
        mock_udev_db_set(t.bed, 80, NULL);
        uevent(sdf, "change");
        expect_class(mark, "sdf", NULL, "single-queue-rotational", "change: without DM_MULTIPATH_DEVICE_PATH no longer a leg");

        /* change without add: sdg comes without medium (its add is not managed), then gets one
         * (loop attach, media change: the kernel says change) */
        mark = log_mark();
        g_autofree char *sdg = mock_disk_add(t.bed, "sdg", 96, false, 1, 0);
        expect_line(mark, "sdg: No medium (size 0), not listed", NULL, "add without medium");
        mark = log_mark();
        set_attr(sdg, "size", "4096\n");
        uevent(sdg, "change");
        expect_line(mark, "sdg: Evaluating (facts gathered, new disk)", NULL, "change without add: sdg taken as a new disk");

        /* remove: the kernel's remove uevent (sysfs still there when it is sent), then sysfs goes */
        mark = log_mark();
        uevent(sde, "remove");
        umockdev_testbed_remove_device(t.bed, sde);
        expect_line(mark, "sde: Disk removed", NULL, "remove: sde gone");

        /* remove before add: a remove for a disk never seen, then its add */
        mark = log_mark();
        {
                g_autofree char *dir = g_build_filename(t.root, "sys/devices/virtual/block/sdi", NULL);
                g_autofree char *uev = g_build_filename(dir, "uevent", NULL);
                g_autofree char *subsystem = g_build_filename(dir, "subsystem", NULL);
                if (g_mkdir_with_parents(dir, 0755) < 0 || symlink("../../../../class/block", subsystem) < 0 ||
                    !g_file_set_contents(uev, "DEVTYPE=disk\nMAJOR=120\nMINOR=128\nDEVNAME=sdi\n", -1, NULL))
                        die("cannot make %s", uev);
                uevent("/sys/devices/virtual/block/sdi", "remove");
                (void) unlink(uev);
                (void) unlink(subsystem);
                (void) rmdir(dir);
        }
        g_autofree char *sdi = mock_disk_add(t.bed, "sdi", 128, false, 2, 2097152);
        expect_line(mark, "sdi: Evaluating (facts gathered, new disk)", NULL, "remove before add: the add that follows is taken");
        check(!log_has_line(mark, "sdi: Disk removed", NULL), "remove before add: no removal of a disk never had");

        /* remove, remove, add in one burst (a re-plug, its remove seen twice): the events after
         * the first (all of them, if sdi's quiet window is still open) are merged into one
         * trailing action (lib/debounce.h), the last one's: the disk is there in the end, with
         * the facts of the new device. (Either way the first merged event is a remove: a
         * trailing action that is not the last event's shows.) */
        mark = log_mark();
        mock_disk_set_hw_queues(t.bed, sdi, 3);
        uevent(sdi, "remove");
        uevent(sdi, "remove");
        uevent(sdi, "add");
        expect_class(mark, "sdi", "nr_hw_queues=3", NULL, "remove, remove, add burst: the new device's facts");

        /* add twice: one disk, and a change after it still reaches it */
        mark = log_mark();
        uevent(sdf, "add");
        uevent(sdf, "add");
        set_attr(sdf, "queue/rotational", "0\n");
        uevent(sdf, "change");
        expect_class(mark, "sdf", "rotational=0", "single-queue-fast", "add twice, then change: facts re-read");

        /* a kernel name with '/' (cciss/c0d0, sysfs block/cciss!c0d0): libudev's sysname says
         * "cciss/c0d0", the daemon's disk is the sysfs name, added and removed by its uevents */
        mark = log_mark();
        g_autofree char *cciss = mock_disk_add(t.bed, "cciss!c0d0", 160, true, 1, 2097152);
        expect_class(mark, "cciss!c0d0", "nr_hw_queues=1 rotational=1", "single-queue-rotational", "add: cciss!c0d0 by its sysfs name");
        mark = log_mark();
        uevent(cciss, "remove");
        umockdev_testbed_remove_device(t.bed, cciss);
        expect_line(mark, "cciss!c0d0: Disk removed", NULL, "remove: cciss!c0d0 by its sysfs name");

        expect_disks("sdf sdg sdi sdz", "in the end");
        (void) sde1;
}

/*
 * A dm-multipath map made and removed while the daemon runs. The kernel sends uevents for the
 * map only: dm-3 is added without a table (size 0: not managed), its table load links
 * slaves/sdb, slaves/sdc and their holders/dm-3 (bd_link_disk_holder(), block/holder.c, no
 * uevent for the legs) and sends "change" for dm-3; sdb and sdc become legs all the same
 * (their facts gathered again with the map's, manager/pipeline.c). At removal the table goes
 * first (holders/ links gone), then dm-3's "remove": the legs are tuned as themselves again.
 */
static void case_map(void) {
        g_autofree char *sdb = mock_disk_add(t.bed, "sdb", 16, false, 1, 2097152);
        g_autofree char *sdc = mock_disk_add(t.bed, "sdc", 32, false, 1, 2097152);
        daemon_start();
        expect_class(0, "sdb", NULL, "single-queue-fast", "before the map: sdb");
        expect_class(0, "sdc", NULL, "single-queue-fast", "before the map: sdc");

        size_t mark = log_mark();
        g_autofree char *dm3 = mock_disk_add(t.bed, "dm-3", 48, false, 1, 0);
        expect_line(mark, "dm-3: No medium (size 0), not listed", NULL, "map created without a table");

        mark = log_mark();
        mock_disk_set_mpath_map(t.bed, dm3, "3600140512345678", "mpatha");
        mock_disk_add_slave(t.bed, dm3, "sdb");
        mock_disk_add_slave(t.bed, dm3, "sdc");
        mock_disk_add_holder(t.bed, sdb, "dm-3");
        mock_disk_add_holder(t.bed, sdc, "dm-3");
        set_attr(dm3, "size", "2097152\n");
        uevent(dm3, "change");
        expect_line(mark, "dm-3: multipath=map (dm/uuid mpath-3600140512345678, dm/name mpatha)", NULL, "table loaded: the map");
        expect_class(mark, "sdb", NULL, "multipath-leg", "table loaded, no uevent for sdb: a leg");
        expect_class(mark, "sdc", NULL, "multipath-leg", "table loaded, no uevent for sdc: a leg");
        expect_line(mark, "sdb: class=multipath-leg elevator=mq-deadline wanted=none", "-> elevator=none (rule elevator-multipath-leg)",
                    "the leg's own policy");

        mark = log_mark();
        mock_disk_unlink(t.bed, sdb, "holders", "dm-3");
        mock_disk_unlink(t.bed, sdc, "holders", "dm-3");
        uevent(dm3, "remove");
        umockdev_testbed_remove_device(t.bed, dm3);
        expect_line(mark, "dm-3: Disk removed", NULL, "map removed");
        expect_class(mark, "sdb", NULL, "single-queue-fast", "map removed, no uevent for sdb: tuned as itself");
        expect_class(mark, "sdc", NULL, "single-queue-fast", "map removed, no uevent for sdc: tuned as itself");
        expect_disks("sdb sdc", "in the end");
}

int main(int argc, char **argv) {
        if (argc != 3) {
                fprintf(stderr, "usage: %s BLKMQD coldplug|events-kernel|events-udev\n", argv[0]);
                return EXIT_FAILURE;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        t.exe = argv[1];
        /* libudev checks that /sys is a sysfs mount; the testbed's is a plain directory */
        setenv("SYSTEMD_DEVICE_VERIFY_SYSFS", "0", 1);
        t.bed = umockdev_testbed_new();
        /* after the testbed: the preload redirects /sys once $UMOCKDEV_DIR is set */
        if (!umockdev_in_mock_environment()) {
                printf("1..0 # SKIP not under umockdev's preload (run through umockdev-wrapper)\n");
                g_clear_object(&t.bed);
                return EXIT_SUCCESS;
        }
        t.root = umockdev_testbed_get_root_dir(t.bed);
        t.tmp = g_dir_make_tmp("blkmqd-umockdev.XXXXXX", NULL);
        if (!t.tmp)
                die("mkdtemp: %m");
        /* a machine has /run from boot on (hostfs opens it once, at start); udev/data below it
         * may come later, as udevd's database does */
        g_autofree char *run = g_build_filename(t.root, "run", NULL);
        if (g_mkdir_with_parents(run, 0755) < 0)
                die("mkdir %s: %m", run);

        if (strcmp(argv[2], "coldplug") == 0)
                case_coldplug();
        else if (strcmp(argv[2], "events-kernel") == 0)
                case_events(false);
        else if (strcmp(argv[2], "events-udev") == 0)
                case_events(true);
        else if (strcmp(argv[2], "map") == 0)
                case_map();
        else
                die("unknown case %s", argv[2]);

        if (t.failures || getenv("BLKMQD_TEST_SHOW_LOG"))
                show_log();
        cleanup();
        printf("# %s: %u failure(s) in %u checks\n", argv[2], t.failures, t.checks);
        if (t.checks == 0) {            /* a case that checked nothing proves nothing */
                printf("not ok 1 - %s ran no check\n", argv[2]);
                t.checks = t.failures = 1;
        }
        printf("1..%u\n", t.checks);
        return t.failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
