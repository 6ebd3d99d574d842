/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"
#include "kernel.h"
#include "macro.h"
#include "memstream.h"
#include "strv.h"

/* "CONFIG_<name>=y" in a config file's text: true; "# CONFIG_<name> is not set" or absent: false. */
static bool config_has(const char *config, const char *name) {
        char want[128];
        snprintf(want, sizeof(want), "\nCONFIG_%s=y", name);
        const char *p = strstr(config, want);
        return p && (p[strlen(want)] == '\n' || p[strlen(want)] == 0);
}

/* A CPU list file of sysfs ("1-3\n", "\n", "(null)\n" when the mask was never allocated). -errno of the read. */
static int read_cpu_file(HostFs *h, const char *path, CpuSet *ret) {
        _cleanup_free_ char *s = NULL;
        int r = hostfs_read(h, HOSTFS_SYSFS, path, &s);
        if (r < 0)
                return r;
        strip_newline(s);
        if (streq(s, "(null)"))
                s[0] = 0;
        return cpuset_parse(s, ret);
}

static int cpuset_merge(CpuSet *into, const CpuSet *from) {
        for (unsigned w = 0; w < from->n_words; w++)
                for (unsigned b = 0; b < 64; b++)
                        if ((from->bits[w] & (UINT64_C(1) << b)) && cpuset_add(into, w * 64 + b) < 0)
                                return -ENOMEM;
        return 0;
}

static int gather_preempt_rt(HostFs *h, const KernelBoot *b, const char *config, const char *config_file, KernelConfigFacts *k,
                             char **ret_unknown) {
        _cleanup_free_ char *rt = NULL, *version = NULL;

        int r = hostfs_read(h, HOSTFS_SYSFS, "kernel/realtime", &rt);
        if (r == -ENOMEM)
                return r;
        if (r >= 0 && streq(strip_newline(rt), "1")) {
                k->preempt_rt = TRISTATE_YES;
                return free_and_strdup(&k->preempt_rt_source, "read from /sys/kernel/realtime");
        }
        r = b->version ? 0 : b->version_error;
        if (b->version && !(version = strdup(b->version)))
                return -ENOMEM;
        if (r >= 0 && strstr(version, "PREEMPT_RT")) {
                k->preempt_rt = TRISTATE_YES;
                return free_and_strdup(&k->preempt_rt_source, "PREEMPT_RT in /proc/sys/kernel/version");
        }
        if (config) {
                k->preempt_rt = config_has(config, "PREEMPT_RT") ? TRISTATE_YES : TRISTATE_NO;
                return free_and_asprintf(&k->preempt_rt_source, "%s %s", config_file,
                                         k->preempt_rt ? "CONFIG_PREEMPT_RT=y" : "without CONFIG_PREEMPT_RT");
        }
        if (r >= 0) {
                k->preempt_rt = TRISTATE_NO;
                strip_newline(version);
                return free_and_asprintf(&k->preempt_rt_source, "no PREEMPT_RT in /proc/sys/kernel/version \"%s\", no /sys/kernel/realtime",
                                         version);
        }
        return free_and_asprintf(ret_unknown, "nothing readable: /proc/sys/kernel/version (%s), no /sys/kernel/realtime, no %s",
                                 strerror(-r), config_file);
}

static int gather_irq_threads(const KernelCmdline *cl, bool cmdline_read, const char *config, const char *config_file,
                              KernelConfigFacts *k, const char *rt_unknown, char **ret_unknown) {
        if (k->preempt_rt == TRISTATE_YES) {
                k->irq_threads_forced = TRISTATE_YES;
                return free_and_asprintf(&k->irq_threads_source, "PREEMPT_RT kernel (%s): force_irqthreads() is always true",
                                         k->preempt_rt_source);
        }
        if (!cmdline_read)
                return free_and_strdup(ret_unknown, "threadirqs unknown: /proc/cmdline unreadable");
        const KernelCmdlineParam *p = kernel_cmdline_find(cl, NULL, "threadirqs");
        if (p) {
                if (config && !config_has(config, "IRQ_FORCED_THREADING")) {
                        k->irq_threads_forced = TRISTATE_NO;
                        return free_and_asprintf(&k->irq_threads_source, "threadirqs on the kernel command line is ignored: %s "
                                                 "has no CONFIG_IRQ_FORCED_THREADING", config_file);
                }
                k->irq_threads_forced = TRISTATE_YES;
                return free_and_asprintf(&k->irq_threads_source, "threadirqs on the kernel command line (/proc/cmdline)%s",
                                         config ? "" : "; CONFIG_IRQ_FORCED_THREADING assumed (x86, arm64, powerpc, s390 select it)");
        }
        if (k->preempt_rt == TRISTATE_UNKNOWN)
                return free_and_asprintf(ret_unknown, "no threadirqs on the kernel command line, PREEMPT_RT unknown (%s)",
                                         strna(rt_unknown));
        k->irq_threads_forced = TRISTATE_NO;
        return free_and_strdup(&k->irq_threads_source, "no threadirqs on the kernel command line, not PREEMPT_RT");
}

/* One more source of isolated CPUs: its CPUs and its label, kept in k (the set is merged by the caller). */
static int isolated_source_add(KernelConfigFacts *k, const CpuSet *cpus, const char *label) {
        IsolatedSource *n = realloc(k->isolated_sources, (k->n_isolated_sources + 1) * sizeof(IsolatedSource));
        if (!n)
                return -ENOMEM;
        k->isolated_sources = n;
        IsolatedSource *src = &n[k->n_isolated_sources];
        *src = (IsolatedSource) { .label = strdup(label) };
        if (!src->label || cpuset_copy(cpus, &src->cpus) < 0) {
                free(src->label);
                return -ENOMEM;
        }
        k->n_isolated_sources++;
        return 0;
}

/* The walk's bounds: a partition sits a few levels down (a slice, a service or a container's
 * cgroup); a tree deeper or larger than this is not read in full, and the set is unknown. */
#define CGROUP_WALK_MAX_DEPTH 8
#define CGROUP_WALK_MAX_CGROUPS 2048

typedef struct CgroupWalk {
        KernelConfigFacts *k;
        FILE *out;              /* the fact's source text */
        size_t *contributed;
        size_t visited;
        CpuSet found;           /* CPUs of the isolated partitions found */
        char *error;            /* why the walk could not finish (the unknown reason) */
} CgroupWalk;

/*
 * The child cgroups of sysfs dir ("fs/cgroup/..."), depth levels below /sys/fs/cgroup: those
 * whose cpuset.cpus.partition reads "isolated" (kernel/cgroup/cpuset.c sched_partition_show():
 * "root", "member", "isolated", an invalid one "isolated invalid (<why>)" since 7476a636d310,
 * 6.1) give their cpuset.cpus.effective. A child without cpuset.cpus.partition has no cpuset
 * controller (cgroup.subtree_control of its parent lacks it), nor do its descendants: not
 * entered. 0, -ENOMEM, or 1 with w->error set when the walk stopped.
 */
static int cgroup_walk(HostFs *h, CgroupWalk *w, const char *dir, unsigned depth) {
        _cleanup_strv_free_ char **children = NULL;
        char path[PATH_MAX];

        int r = hostfs_list_dirs(h, HOSTFS_SYSFS, dir, &children);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return free_and_asprintf(&w->error, "cannot read /sys/%s: %s", dir, strerror(-r)) < 0 ? -ENOMEM : 1;
        STRV_FOREACH(c, children) {
                _cleanup_free_ char *prs = NULL, *sub = NULL;
                if (asprintf(&sub, "%s/%s", dir, *c) < 0)
                        return -ENOMEM;
                snprintf(path, sizeof(path), "%s/cpuset.cpus.partition", sub);
                r = hostfs_read(h, HOSTFS_SYSFS, path, &prs);
                if (r == -ENOMEM)
                        return r;
                if (r == -ENOENT)
                        continue;               /* no cpuset here, none below */
                if (r < 0)
                        return free_and_asprintf(&w->error, "cannot read /sys/%s: %s", path, strerror(-r)) < 0 ? -ENOMEM : 1;
                if (++w->visited > CGROUP_WALK_MAX_CGROUPS)
                        return free_and_asprintf(&w->error, "more than %u cgroups with a cpuset under /sys/fs/cgroup, not all read",
                                                 CGROUP_WALK_MAX_CGROUPS) < 0 ? -ENOMEM : 1;
                if (streq(strip_newline(prs), "isolated")) {
                        _cleanup_(cpuset_done) CpuSet eff = {};
                        char label[PATH_MAX + 64];
                        snprintf(path, sizeof(path), "%s/cpuset.cpus.effective", sub);
                        r = read_cpu_file(h, path, &eff);
                        if (r == -ENOMEM)
                                return r;
                        if (r < 0)
                                return free_and_asprintf(&w->error, "cannot read /sys/%s: %s", path, strerror(-r)) < 0 ? -ENOMEM : 1;
                        snprintf(label, sizeof(label), "cgroup /sys/%s: isolated partition", sub);
                        _cleanup_free_ char *l = cpuset_format(&eff);
                        if (!l || cpuset_merge(&w->found, &eff) < 0 || isolated_source_add(w->k, &eff, label) < 0)
                                return -ENOMEM;
                        fprintf(w->out, "%s%s, cpuset.cpus.effective %s", (*w->contributed)++ ? "; " : "", label, l);
                }
                if (depth + 1 >= CGROUP_WALK_MAX_DEPTH) {
                        _cleanup_strv_free_ char **below = NULL;
                        /* deeper cgroups with a cpuset: not read */
                        if (hostfs_list_dirs(h, HOSTFS_SYSFS, sub, &below) >= 0 && below && *below)
                                return free_and_asprintf(&w->error, "cgroups deeper than %u levels under /sys/fs/cgroup (/sys/%s), "
                                                         "not all read", CGROUP_WALK_MAX_DEPTH, sub) < 0 ? -ENOMEM : 1;
                        continue;
                }
                r = cgroup_walk(h, w, sub, depth + 1);
                if (r != 0)
                        return r;
        }
        return 0;
}

/*
 * cgroup v2 isolated partitions. /sys/fs/cgroup/cpuset.cpus.isolated (the root cgroup only)
 * lists their CPUs since "cgroup/cpuset: Expose cpuset.cpus.isolated" (877c737db935, 6.8):
 * read, and the cgroups walked only to name them. Before it (Debian's 6.1, whose partitions
 * may be "isolated" since f28e22441f35, 6.1) the walk is the only source, its errors make the
 * set unknown (*ret_error). No cgroup v2 at /sys/fs/cgroup (no cgroup.controllers there): no
 * partitions. 1 when read (known), 0 when there is no cgroup v2, -ENOMEM.
 */
static int gather_cgroup_partitions(HostFs *h, KernelConfigFacts *k, CpuSet *all, FILE *out, size_t *contributed,
                                    char **ret_error) {
        _cleanup_(cpuset_done) CpuSet listed = {};
        _cleanup_free_ char *subtree = NULL;
        CgroupWalk w = { .k = k, .out = out, .contributed = contributed };
        int r = read_cpu_file(h, "fs/cgroup/cpuset.cpus.isolated", &listed);
        if (r == -ENOMEM)
                return r;
        if (r >= 0) {
                if (cpuset_count(&listed) == 0)
                        return 1;
                /* the cgroups that hold them, for their names (errors only leave them unnamed) */
                _cleanup_(memstream_done) MemStream m = {};
                size_t named = 0;
                FILE *names = memstream_open(&m);
                if (!names)
                        return -ENOMEM;
                w.out = names;
                w.contributed = &named;
                r = cgroup_walk(h, &w, "fs/cgroup", 0);
                free(w.error);
                if (r < 0) {
                        cpuset_done(&w.found);
                        return r;
                }
                _cleanup_free_ char *l = cpuset_format(&listed), *named_text = NULL;
                if (!l || memstream_close(&m, &named_text) < 0 || cpuset_merge(all, &listed) < 0) {
                        cpuset_done(&w.found);
                        return -ENOMEM;
                }
                /* CPUs listed that no cgroup found names (a walk stopped, a partition made meanwhile) */
                _cleanup_(cpuset_done) CpuSet rest = {};
                for (unsigned cpu = 0; cpu < listed.n_words * 64; cpu++)
                        if (cpuset_isset(&listed, cpu) && !cpuset_isset(&w.found, cpu) && cpuset_add(&rest, cpu) < 0) {
                                cpuset_done(&w.found);
                                return -ENOMEM;
                        }
                cpuset_done(&w.found);
                if (cpuset_count(&rest) > 0 && isolated_source_add(k, &rest, "listed in /sys/fs/cgroup/cpuset.cpus.isolated") < 0)
                        return -ENOMEM;
                fprintf(out, "%scgroup v2 isolated partitions (/sys/fs/cgroup/cpuset.cpus.isolated): %s%s%s%s", (*contributed)++ ? "; " : "",
                        l, named ? " (" : "", named ? named_text : "", named ? ")" : "");
                return 1;
        }
        if (!hostfs_exists(h, HOSTFS_SYSFS, "fs/cgroup/cgroup.controllers"))
                return 0;
        /* no cpuset in the root's subtree_control: no child has one, no partition anywhere */
        r = hostfs_read(h, HOSTFS_SYSFS, "fs/cgroup/cgroup.subtree_control", &subtree);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return free_and_asprintf(ret_error, "cannot read /sys/fs/cgroup/cgroup.subtree_control: %s", strerror(-r)) < 0 ? -ENOMEM : 1;
        bool cpuset = false;
        for (const char *p = subtree; (p = strstr(p, "cpuset")); p += 6)
                cpuset = cpuset || ((p == subtree || p[-1] == ' ') && (p[6] == 0 || p[6] == ' ' || p[6] == '\n'));
        if (!cpuset)
                return 1;
        r = cgroup_walk(h, &w, "fs/cgroup", 0);
        if (r >= 0 && cpuset_merge(all, &w.found) < 0)
                r = -ENOMEM;
        cpuset_done(&w.found);
        if (r < 0) {
                free(w.error);
                return r;
        }
        *ret_error = w.error;
        return 1;
}

static int gather_isolated(HostFs *h, const KernelCmdline *cl, bool cmdline_read, KernelConfigFacts *k, char **ret_unknown) {
        static const struct {
                const char *path, *label, *source;
        } files[] = {
                { "devices/system/cpu/isolated",  "isolated CPUs in /sys/devices/system/cpu/isolated:",  "listed in /sys/devices/system/cpu/isolated" },
                { "devices/system/cpu/nohz_full", "nohz_full CPUs in /sys/devices/system/cpu/nohz_full:", "listed in /sys/devices/system/cpu/nohz_full" },
        };
        _cleanup_(memstream_done) MemStream m = {};
        _cleanup_(cpuset_done) CpuSet all = {};
        _cleanup_free_ char *cgroup_error = NULL;
        size_t known = 0, contributed = 0;
        FILE *out = memstream_open(&m);
        if (!out)
                return -ENOMEM;

        if (cmdline_read) {
                known++;
                static const char * const params[] = { "isolcpus", "nohz_full" };
                for (size_t i = 0; i < ELEMENTSOF(params); i++) {
                        const KernelCmdlineParam *p = kernel_cmdline_find(cl, NULL, params[i]);
                        if (!p || !p->value)
                                continue;
                        _cleanup_(cpuset_done) CpuSet s = {};
                        bool managed = false;
                        int r = i == 0 ? kernel_isolcpus_parse(p->value, &s, &managed) : cpuset_parse(p->value, &s);
                        if (r == -ENOMEM)
                                return r;
                        if (r < 0) {
                                fprintf(out, "%s%s=%s not read (no flags and CPU list blkmqd reads)", contributed++ ? "; " : "",
                                        params[i], p->value);
                                continue;
                        }
                        k->isolated_managed_irq = k->isolated_managed_irq || managed;
                        char label[512];
                        snprintf(label, sizeof(label), "%s=%s (/proc/cmdline)", params[i], p->value);
                        if (cpuset_merge(&all, &s) < 0 || (cpuset_count(&s) > 0 && isolated_source_add(k, &s, label) < 0))
                                return -ENOMEM;
                        fprintf(out, "%s%s", contributed++ ? "; " : "", label);
                }
        }
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                _cleanup_(cpuset_done) CpuSet s = {};
                int r = read_cpu_file(h, files[i].path, &s);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        continue;
                known++;
                if (cpuset_count(&s) == 0)
                        continue;
                _cleanup_free_ char *l = cpuset_format(&s);
                if (!l || cpuset_merge(&all, &s) < 0 || isolated_source_add(k, &s, files[i].source) < 0)
                        return -ENOMEM;
                fprintf(out, "%s%s %s", contributed++ ? "; " : "", files[i].label, l);
        }
        int r = gather_cgroup_partitions(h, k, &all, out, &contributed, &cgroup_error);
        if (r < 0)
                return r;
        known += r > 0 && !cgroup_error;
        if (known == 0 && !cgroup_error)
                return free_and_strdup(ret_unknown, "unreadable: /proc/cmdline and /sys/devices/system/cpu/{isolated,nohz_full}");
        if (contributed == 0)
                fprintf(out, "no isolcpus= or nohz_full= on the kernel command line, no isolated CPU in sysfs%s",
                        r > 0 && !cgroup_error ? ", no isolated cgroup v2 partition" : "");
        /* what could be read is kept (and kept free of device interrupts) also when a part
         * could not: the fact says unknown with both */
        k->isolated_known = true;
        k->isolated = all;
        all = (CpuSet) {};
        k->isolated_list = cpuset_format(&k->isolated);
        if (!k->isolated_list)
                return -ENOMEM;
        r = memstream_close(&m, &k->isolated_source);
        if (r < 0 || !cgroup_error)
                return r;
        return free_and_asprintf(ret_unknown, "cgroup v2 cpuset partitions: %s; isolated as far as read: %s (%s)",
                                 cgroup_error, isempty(k->isolated_list) ? "none" : k->isolated_list, k->isolated_source);
}

void kernel_boot_done(KernelBoot *b) {
        kernel_cmdline_done(&b->cmdline);
        free(b->version);
        *b = (KernelBoot) {};
}

int kernel_boot_read(HostFs *h, KernelBoot *ret) {
        _cleanup_free_ char *cmdline = NULL;
        KernelBoot b = {};

        int r = hostfs_read(h, HOSTFS_PROCFS, "cmdline", &cmdline);
        if (r == -ENOMEM || (r >= 0 && kernel_cmdline_parse(cmdline, &b.cmdline) < 0))
                return -ENOMEM;
        b.cmdline_read = r >= 0;
        r = hostfs_read(h, HOSTFS_PROCFS, "sys/kernel/version", &b.version);
        if (r == -ENOMEM) {
                kernel_boot_done(&b);
                return r;
        }
        b.version_error = r < 0 ? r : 0;
        *ret = b;
        return 0;
}

int kernel_config_gather(HostFs *h, const char *release, const KernelBoot *boot, KernelConfigFacts *ret,
                         char *ret_unknown[_KERNEL_UNKNOWN_MAX]) {
        _cleanup_(kernel_config_facts_done) KernelConfigFacts k = {};
        _cleanup_(kernel_boot_done) KernelBoot read_now = {};
        _cleanup_free_ char *config = NULL;
        char *unknown[_KERNEL_UNKNOWN_MAX] = {};
        char config_file[300];
        int r;

        kernel_config_facts_done(&k);
        snprintf(config_file, sizeof(config_file), "/boot/config-%s", strna(release));
        if (release) {
                r = hostfs_read(h, HOSTFS_BOOT, config_file + strlen("/boot/"), &config);
                if (r == -ENOMEM)
                        return r;
        }
        if (!boot) {
                if (kernel_boot_read(h, &read_now) < 0)
                        return -ENOMEM;
                boot = &read_now;
        }
        const KernelCmdline *cl = &boot->cmdline;
        bool cmdline_read = boot->cmdline_read;

        r = gather_preempt_rt(h, boot, config, config_file, &k, &unknown[KERNEL_UNKNOWN_PREEMPT_RT]);
        if (r >= 0)
                r = gather_irq_threads(cl, cmdline_read, config, config_file, &k, unknown[KERNEL_UNKNOWN_PREEMPT_RT],
                                       &unknown[KERNEL_UNKNOWN_IRQ_THREADS]);
        if (r >= 0)
                r = gather_isolated(h, cl, cmdline_read, &k, &unknown[KERNEL_UNKNOWN_ISOLATED]);
        if (r < 0) {
                for (size_t i = 0; i < _KERNEL_UNKNOWN_MAX; i++)
                        free(unknown[i]);
                return r;
        }
        *ret = k;
        k = (KernelConfigFacts) {};
        memcpy(ret_unknown, unknown, sizeof(unknown));
        return 0;
}
