/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * agents: the admin's other tools that set what blkmqd writes, found below the root through
 * hostfs and described as Sources (policies/owners.h), which the policy reads to decide whose
 * value each knob is. Read at start and at every reload:
 *
 *   udev rules   /etc/udev/rules.d, /run/udev/rules.d, /usr/local/lib/udev/rules.d (the admin's),
 *                /usr/lib/udev/rules.d, /lib/udev/rules.d (the distribution's); udev(7): files of all sorted
 *                by name, a name in an earlier directory hides it in a later one, an empty
 *                file or a link to /dev/null masks it.
 *   tuned        the active profile (/etc/tuned/active_profile, while tuned runs:
 *                /run/tuned/tuned.pid names a live process) and its include= parents; profiles
 *                in /etc/tuned[/profiles]/NAME before /usr/lib/tuned[/profiles]/NAME (tuned
 *                2.20 consts.py LOAD_DIRECTORIES: the later directory wins). /etc/tuned/
 *                profile_mode "manual" (tuned-adm profile) is the admin's choice; "auto"
 *                (tuned-adm recommend, the package's first start) is a distribution default.
 *                `tuned-adm off` empties active_profile (controller.py disable()).
 *   cmdline      /proc/cmdline: elevator= and <module>.<param>= (lib/cmdline.h)
 *   modprobe.d   /etc/modprobe.d, /run/modprobe.d, /usr/local/lib/modprobe.d (the admin's),
 *                /usr/lib/modprobe.d, /lib/modprobe.d (the distribution's), *.conf sorted by name like udev rules
 *                (modprobe.d(5)); "options <module> <param>=<value>" lines. blkmqd's own
 *                /etc/modprobe.d/zz-blkmqd.conf is not counted while it is in blkmqd's form.
 *   .link files  /etc/systemd/network, /run/systemd/network, /usr/local/lib/systemd/network (the
 *                admin's), /usr/lib/systemd/network, /lib/systemd/network (the distribution's), sorted by name like udev rules;
 *                only the first file whose [Match] fits a NIC is applied to it (systemd
 *                src/udev/net/link-config.c link_get_config(), 252 and later).
 *   irqbalance   running (/run/irqbalance/irqbalance<PID>.sock names a live process, irqbalance.c
 *                SOCKET_TMPFS), and its environment file (/etc/default/irqbalance on Debian,
 *                /etc/sysconfig/irqbalance elsewhere): IRQBALANCE_ARGS= --banirq=/-i,
 *                --policyscript=/-l, IRQBALANCE_ONESHOT=.
 *
 * What counts (conservative: only what clearly sets one of blkmqd's knobs):
 *   udev   assigned (=, :=) ATTR{queue/scheduler|nr_requests|rq_affinity}, ATTR{queue/iosched/<t>},
 *          ATTR{queues/tx-<n>/xps_cpus}, any ATTR{...smp_affinity...}; RUN/PROGRAM naming one of those
 *          files, or "ethtool -L/--set-channels" (a NIC's channels). Matches evaluated: KERNEL==/!=,
 *          SUBSYSTEM==, ATTR{queue/rotational}==; ACTION and DEVTYPE are ignored; any other match
 *          (ATTRS{model}==, ENV{ID_...}==) is recorded as not evaluated. Continued lines are joined.
 *   tuned  [disk] (type=disk) elevator= with devices=; [sysfs] keys naming those files
 *          (/sys/block/<glob>/queue/..., /sys/class/net/<glob>/queues/tx-<n>/xps_cpus,
 *          /proc/irq/...); [scheduler] isolated_cores=, default_irq_smp_affinity= (every IRQ:
 *          plugin_scheduler.py _set_all_irq_affinity()); [net] channels= with devices=.
 *   .link  IRQAffinityPolicy= (the NIC's IRQs; systemd-udevd 252 does not know the key and
 *          ignores it), CombinedChannels=, RxChannels=, TxChannels=, OtherChannels=; [Match]
 *          OriginalName= and Driver= evaluated, other match keys recorded as not evaluated.
 */

#include <errno.h>

#include "hostfs.h"
#include "policy.h"

/* The file a scan reads: how the admin knows it and whose choice its settings are. */
typedef struct AgentFile {
        const char *file;       /* "/etc/udev/rules.d/60-x.rules" */
        const char *label;      /* "udev rule", "tuned profile \"x\"" */
        bool admin;
        unsigned group;         /* .link files: position in udevd's order */
} AgentFile;

/* Scan the text of one udev rules file into s. Returns the number of sources added, or -ENOMEM. */
int agents_scan_udev_rules(const char *text, const AgentFile *af, Sources *s);

/*
 * Scan the text of one tuned.conf into s. Returns the number of sources added or -ENOMEM;
 * *ret_include (may be NULL) gets the [main] include= value (newly allocated, NULL when none).
 */
int agents_scan_tuned(const char *text, const AgentFile *af, Sources *s, char **ret_include);

/* Scan one .link file: one source per setting, or one SOURCE_SETS_NOTHING (its match still
 * hides later files). Returns the number added or -ENOMEM. */
int agents_scan_link(const char *text, const AgentFile *af, Sources *s);

/* One modprobe.d file: a source per "options <module> <param>=<value>" (module names with
 * dashes as underscores, as kmod normalises them). Returns the number added or -ENOMEM. */
int agents_scan_modprobe(const char *text, const AgentFile *af, Sources *s);

/* The kernel command line: elevator= and every <module>.<param>=. Returns the number added or -ENOMEM. */
int agents_scan_cmdline(const char *text, Sources *s);

/* irqbalance's environment file (shell variable assignments). 0 or -ENOMEM. */
int agents_scan_irqbalance(const char *text, const char *file, IrqbalanceFacts *ib);

/* Everything below h's root into *ret (which must be empty). 0 or -ENOMEM. */
int agents_gather(HostFs *h, Sources *ret);

/*
 * One journal warning per source of s (at most AGENTS_WARN_MAX, then one line with the rest's
 * count), saying whose choice it is and what blkmqd does (deferred or corrected under
 * DeferTo=), and one for a running irqbalance. previous: the sources warned about before (the
 * last start or reload), NULL none: a place warned about then, unchanged (the same file, line,
 * setting and owner) under the same DeferTo=, is not warned about again (a reload repeats no
 * line). Returns the number of warnings due (also those past AGENTS_WARN_MAX).
 */
#define AGENTS_WARN_MAX 32
int agents_warn(const Sources *s, DeferTo defer_to, const Sources *previous, DeferTo previous_defer_to);
