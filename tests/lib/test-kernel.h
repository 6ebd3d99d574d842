/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The kernel's reaction to what blkmqd writes, put into a fixture copy (header only, like
 * test-util.h), for the tests that follow a decision through its effect:
 *
 *   test_kernel_hook        a hostfs write hook: a queue/scheduler write moves the brackets,
 *                           re-derives queue/nr_requests and leaves queue/iosched/ with the new
 *                           elevator's defaults (test_reset_tunables_at())
 *   test_reboot(root, m, reg)  the reboot blkmqd.conf asked for: each pending-reboot parameter's
 *                           value in /sys/module, proc/stat btime after the file, and
 *                           host_tagset_enable=0 giving each disk of that driver one hctx
 *                           (test_one_hctx())
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "memstream.h"
#include "modules.h"
#include "parse.h"
#include "registry.h"
#include "tap.h"
#include "test-util.h"

/* ---- the kernel's side of an elevator switch ------------------------------------------------ */

typedef struct TestDefault {
        const char *elevator, *name, *value;    /* value NULL: 3/4 of nr_requests (mq-deadline async_depth) */
} TestDefault;

/* What queue/iosched/ holds right after a switch: each elevator's init_sched defaults
 * (block/mq-deadline.c dd_init_sched(), dd_depth_updated(); block/kyber-iosched.c
 * kyber_queue_data_alloc(); block/bfq-iosched.c bfq_init_queue()). */
static const TestDefault test_iosched_defaults[] = {
        { "mq-deadline", "read_expire",        "500" },
        { "mq-deadline", "write_expire",       "5000" },
        { "mq-deadline", "writes_starved",     "2" },
        { "mq-deadline", "front_merges",       "1" },
        { "mq-deadline", "fifo_batch",         "16" },
        { "mq-deadline", "async_depth",        NULL },
        { "mq-deadline", "prio_aging_expire",  "10000" },
        { "kyber",       "read_lat_nsec",      "2000000" },
        { "kyber",       "write_lat_nsec",     "10000000" },
        { "bfq",         "back_seek_max",      "16384" },
        { "bfq",         "back_seek_penalty",  "2" },
        { "bfq",         "fifo_expire_async",  "250" },
        { "bfq",         "fifo_expire_sync",   "125" },
        { "bfq",         "low_latency",        "1" },
        { "bfq",         "max_budget",         "0" },
        { "bfq",         "slice_idle",         "8" },
        { "bfq",         "slice_idle_us",      "8000" },
        { "bfq",         "strict_guarantees",  "0" },
        { "bfq",         "timeout_sync",       "125" },
};

static inline int test_read_at(int dirfd, const char *path, char *buf, size_t size) {
        int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, size - 1);
        close(fd);
        if (n < 0)
                return -EIO;
        buf[n] = 0;
        return 0;
}

/* queue/iosched/ of dir ("block/<disk>") as the kernel leaves it after switching to elevator. */
static inline void test_reset_tunables_at(int dirfd, const char *dir, const char *elevator) {
        char path[PATH_MAX], nr[32] = "";
        snprintf(path, sizeof(path), "%s/queue/iosched", dir);
        int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) {
                DIR *dp = fdopendir(fd);
                struct dirent *de;
                while (dp && (de = readdir(dp)))
                        if (de->d_name[0] != '.')
                                (void) unlinkat(fd, de->d_name, 0);
                if (dp)
                        closedir(dp);
                else
                        close(fd);
        }
        if (streq(elevator, "none")) {
                (void) unlinkat(dirfd, path, AT_REMOVEDIR);
                return;
        }
        (void) mkdirat(dirfd, path, 0755);
        snprintf(path, sizeof(path), "%s/queue/nr_requests", dir);
        (void) test_read_at(dirfd, path, nr, sizeof(nr));
        for (size_t i = 0; i < ELEMENTSOF(test_iosched_defaults); i++) {
                char value[32];
                if (!streq(test_iosched_defaults[i].elevator, elevator))
                        continue;
                if (test_iosched_defaults[i].value)
                        snprintf(value, sizeof(value), "%s\n", test_iosched_defaults[i].value);
                else
                        snprintf(value, sizeof(value), "%ld\n", MAX(1L, 3 * strtol(nr, NULL, 10) / 4));
                snprintf(path, sizeof(path), "%s/queue/iosched/%s", dir, test_iosched_defaults[i].name);
                int f = openat(dirfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (f >= 0) {
                        ssize_t n = write(f, value, strlen(value));
                        (void) n;
                        close(f);
                }
        }
}

/* A write to queue/scheduler as the kernel takes it: the brackets, nr_requests, the tunables. */
static inline int test_kernel_hook(void *userdata, HostFsKind kind, int dirfd, const char *path, const char *value) {
        static const char sched[] = "/queue/scheduler";
        size_t l = strlen(path);
        if (kind != HOSTFS_SYSFS || l <= strlen(sched) || !streq(path + l - strlen(sched), sched))
                return 0;
        char before[512] = "";
        (void) test_read_at(dirfd, path, before, sizeof(before));
        int r = test_emulate_scheduler_at(dirfd, path, value, NULL, /* reset_nr_requests = */ true);
        if (r <= 0)
                return r;
        _cleanup_free_ char *dir = strndup(path, l - strlen(sched)), *want = strndup(value, strcspn(value, "\n"));
        char after[512] = "";
        (void) test_read_at(dirfd, path, after, sizeof(after));
        if (dir && want && !streq(before, after))       /* a switch, not the same elevator again */
                test_reset_tunables_at(dirfd, dir, want);
        return r;
}

/* ---- the reboot blkmqd.conf asked for -------------------------------------------------------- */

static inline void test_rm_rf(const char *root, const char *rel) {
        char p[2 * PATH_MAX];
        snprintf(p, sizeof(p), "%s/%s", root, rel);
        char *argv[] = { (char *) "rm", (char *) "-rf", p, NULL };
        if (strstr(rel, "..") || test_run(argv) < 0)
                TAP_FAIL("rm -rf %s", p);
}

/* The disk's layout with one hctx: mq/0 with every CPU of its hctx, debugfs hctx0 without
 * TAG_HCTX_SHARED, its SCSI host's nr_hw_queues 1 (the driver's layout with host_tagset_enable=0). */
static inline void test_one_hctx(const char *root, const DiskFacts *f) {
        _cleanup_(cpuset_done) CpuSet all = {};
        char rel[PATH_MAX];

        for (size_t i = 0; i < f->n_hctx; i++) {
                snprintf(rel, sizeof(rel), "sys/block/%s/mq/%zu/cpu_list", f->name, i);
                _cleanup_free_ char *text = test_read_file_at(root, rel);
                _cleanup_(cpuset_done) CpuSet s = {};
                if (text && cpuset_parse(strip_newline(text), &s) >= 0)
                        for (unsigned c = 0; c < BLKMQD_CPUS_MAX; c++)
                                if (cpuset_isset(&s, c))
                                        (void) cpuset_add(&all, c);
        }
        for (size_t i = 1; i < f->n_hctx; i++) {
                snprintf(rel, sizeof(rel), "sys/block/%s/mq/%zu", f->name, i);
                test_rm_rf(root, rel);
                snprintf(rel, sizeof(rel), "sys/kernel/debug/block/%s/hctx%zu", f->name, i);
                test_rm_rf(root, rel);
        }
        _cleanup_(memstream_done) MemStream ms = {};
        FILE *o = memstream_open(&ms);
        if (!o)
                return;
        bool first = true;
        for (unsigned c = 0; c < BLKMQD_CPUS_MAX; c++)
                if (cpuset_isset(&all, c)) {
                        fprintf(o, "%s%u", first ? "" : ", ", c);
                        first = false;
                }
        fputc('\n', o);
        _cleanup_free_ char *list = memstream_close_text(&ms);
        snprintf(rel, sizeof(rel), "sys/block/%s/mq/0/cpu_list", f->name);
        if (list)
                test_put(root, rel, list);
        snprintf(rel, sizeof(rel), "sys/kernel/debug/block/%s/hctx0/flags", f->name);
        _cleanup_free_ char *flags = test_read_file_at(root, rel);
        if (flags) {
                char *t;
                while ((t = strstr(flags, "|TAG_HCTX_SHARED")) || (t = strstr(flags, "TAG_HCTX_SHARED|")))
                        memmove(t, t + 16, strlen(t + 16) + 1);
                test_put(root, rel, flags);
        }
        if (f->scsi_host) {
                snprintf(rel, sizeof(rel), "sys/class/scsi_host/%s/nr_hw_queues", f->scsi_host);
                _cleanup_free_ char *have = test_read_file_at(root, rel);
                if (have)
                        test_put(root, rel, "1\n");
        }
}

/* The reboot: returns the number of load-time parameters it made take effect. */
static inline size_t test_reboot(const char *root, const Modules *mods, const Registry *reg) {
        size_t n = 0;
        for (size_t i = 0; i < mods->n_params; i++) {
                const ModuleParam *p = &mods->params[i];
                char rel[PATH_MAX], value[256];
                if (p->state != MODPARAM_PENDING_REBOOT)
                        continue;
                snprintf(rel, sizeof(rel), "sys/module/%s/parameters/%s", p->module, p->param);
                snprintf(value, sizeof(value), "%s\n", p->wanted);
                test_put(root, rel, value);
                n++;
                if (!streq(p->param, "host_tagset_enable") || !streq(p->wanted, "0"))
                        continue;
                for (size_t k = 0; k < reg->n_devices; k++) {
                        const DiskFacts *f = reg->devices[k]->facts;
                        if (f && streq_ptr(f->driver, p->module) && f->n_hctx > 1)
                                test_one_hctx(root, f);
                }
        }
        if (n > 0) {
                /* booted after blkmqd.conf was written: its mtime is older than btime */
                _cleanup_free_ char *stat = test_read_file_at(root, "proc/stat");
                _cleanup_(memstream_done) MemStream ms = {};
                FILE *o = memstream_open(&ms);
                if (!o)
                        return n;
                if (!stat || !startswith(stat, "cpu"))
                        fputs("cpu  1 2 3 4\n", o);     /* proc(5): btime follows the cpu lines */
                for (char *l = stat, *e; l && *l; l = e ? e + 1 : NULL) {
                        e = strchr(l, '\n');
                        if (e)
                                *e = 0;
                        if (!startswith(l, "btime "))
                                fprintf(o, "%s\n", l);
                        if (!e)
                                break;
                }
                fprintf(o, "btime %lld\n", (long long) time(NULL) + 3600);
                _cleanup_free_ char *text = memstream_close_text(&ms);
                if (text)
                        test_put(root, "proc/stat", text);
        }
        return n;
}
