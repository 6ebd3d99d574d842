/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"
#include "kernel.h"
#include "macro.h"
#include "memstream.h"

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

static int gather_preempt_rt(HostFs *h, const char *config, const char *config_file, KernelConfigFacts *k, char **ret_unknown) {
        _cleanup_free_ char *rt = NULL, *version = NULL;

        int r = hostfs_read(h, HOSTFS_SYSFS, "kernel/realtime", &rt);
        if (r == -ENOMEM)
                return r;
        if (r >= 0 && streq(strip_newline(rt), "1")) {
                k->preempt_rt = TRISTATE_YES;
                return free_and_strdup(&k->preempt_rt_source, "read from /sys/kernel/realtime");
        }
        r = hostfs_read(h, HOSTFS_PROCFS, "sys/kernel/version", &version);
        if (r == -ENOMEM)
                return r;
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

static int gather_isolated(HostFs *h, const KernelCmdline *cl, bool cmdline_read, KernelConfigFacts *k, char **ret_unknown) {
        static const struct {
                const char *path, *label;
        } files[] = {
                { "devices/system/cpu/isolated",   "isolated CPUs in /sys/devices/system/cpu/isolated:" },
                { "devices/system/cpu/nohz_full",  "nohz_full CPUs in /sys/devices/system/cpu/nohz_full:" },
                { "fs/cgroup/cpuset.cpus.isolated", "cgroup v2 isolated partitions (/sys/fs/cgroup/cpuset.cpus.isolated):" },
        };
        _cleanup_(memstream_done) MemStream m = {};
        _cleanup_(cpuset_done) CpuSet all = {};
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
                        if (cpuset_merge(&all, &s) < 0)
                                return -ENOMEM;
                        fprintf(out, "%s%s=%s (/proc/cmdline)", contributed++ ? "; " : "", params[i], p->value);
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
                if (!l || cpuset_merge(&all, &s) < 0)
                        return -ENOMEM;
                fprintf(out, "%s%s %s", contributed++ ? "; " : "", files[i].label, l);
        }
        if (known == 0)
                return free_and_strdup(ret_unknown, "unreadable: /proc/cmdline and /sys/devices/system/cpu/{isolated,nohz_full}");
        if (contributed == 0)
                fputs("no isolcpus= or nohz_full= on the kernel command line, no isolated CPU in sysfs", out);
        k->isolated_known = true;
        k->isolated = all;
        all = (CpuSet) {};
        k->isolated_list = cpuset_format(&k->isolated);
        if (!k->isolated_list)
                return -ENOMEM;
        return memstream_close(&m, &k->isolated_source);
}

int kernel_config_gather(HostFs *h, const char *release, KernelConfigFacts *ret, char *ret_unknown[_KERNEL_UNKNOWN_MAX]) {
        _cleanup_(kernel_config_facts_done) KernelConfigFacts k = {};
        _cleanup_(kernel_cmdline_done) KernelCmdline cl = {};
        _cleanup_free_ char *cmdline = NULL, *config = NULL;
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
        r = hostfs_read(h, HOSTFS_PROCFS, "cmdline", &cmdline);
        if (r == -ENOMEM || (r >= 0 && kernel_cmdline_parse(cmdline, &cl) < 0))
                return -ENOMEM;
        bool cmdline_read = r >= 0;

        r = gather_preempt_rt(h, config, config_file, &k, &unknown[KERNEL_UNKNOWN_PREEMPT_RT]);
        if (r >= 0)
                r = gather_irq_threads(&cl, cmdline_read, config, config_file, &k, unknown[KERNEL_UNKNOWN_PREEMPT_RT],
                                       &unknown[KERNEL_UNKNOWN_IRQ_THREADS]);
        if (r >= 0)
                r = gather_isolated(h, &cl, cmdline_read, &k, &unknown[KERNEL_UNKNOWN_ISOLATED]);
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
