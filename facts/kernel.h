/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The running kernel's boot-time configuration that changes what a knob means
 * (KernelConfigFacts, policies/facts.h), gathered through hostfs:
 *
 *   procfs  cmdline (threadirqs, isolcpus=, nohz_full=; lib/cmdline.h), sys/kernel/version
 *           ("PREEMPT_RT" in UTS_VERSION, scripts/mkcompile_h)
 *   sysfs   kernel/realtime (CONFIG_PREEMPT_RT: "1"), devices/system/cpu/isolated,
 *           devices/system/cpu/nohz_full (drivers/base/cpu.c), fs/cgroup/cpuset.cpus.isolated
 *           (cgroup v2 isolated partitions, kernel/cgroup/cpuset.c, 877c737db935, 6.8), before
 *           it fs/cgroup/<...>/cpuset.cpus.partition "isolated" and cpuset.cpus.effective of
 *           each cgroup (a bounded walk, facts/kernel.c gather_cgroup_partitions())
 *   boot    config-<release>: CONFIG_PREEMPT_RT, CONFIG_IRQ_FORCED_THREADING (Debian, Fedora and
 *           SUSE install it; /proc/config.gz needs CONFIG_IKCONFIG_PROC, which they leave off)
 */

#include "cmdline.h"
#include "facts.h"
#include "hostfs.h"

/* Index of the unknown reasons kernel_config_gather() fills. */
enum {
        KERNEL_UNKNOWN_PREEMPT_RT,
        KERNEL_UNKNOWN_IRQ_THREADS,
        KERNEL_UNKNOWN_ISOLATED,
        _KERNEL_UNKNOWN_MAX,
};

/*
 * What the running kernel was booted with and built as, fixed until the next boot: the
 * command line (parsed) and UTS_VERSION. The manager reads it once at start
 * (MachineCache.boot, facts/device.h) instead of at every uevent.
 */
typedef struct KernelBoot {
        bool cmdline_read;              /* false: proc/cmdline unreadable */
        KernelCmdline cmdline;
        char *version;                  /* proc/sys/kernel/version, NULL: unreadable */
        int version_error;              /* its read's -errno (0 when read) */
} KernelBoot;

/* Read proc/cmdline and proc/sys/kernel/version into *ret. Returns 0 or -ENOMEM. */
int kernel_boot_read(HostFs *h, KernelBoot *ret);
void kernel_boot_done(KernelBoot *b);

/*
 * Read the facts below h's root for kernel release (NULL: unknown) into *ret (which must be
 * empty), the command line and version from boot (NULL: read them now); ret_unknown[i] gets a
 * newly allocated reason for each part that cannot be read (NULL: known). Returns 0 or
 * -ENOMEM (nothing allocated then).
 */
int kernel_config_gather(HostFs *h, const char *release, const KernelBoot *boot, KernelConfigFacts *ret,
                         char *ret_unknown[_KERNEL_UNKNOWN_MAX]);
