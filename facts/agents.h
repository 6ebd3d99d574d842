/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * agents: other tools configured to write what blkmqd writes (issue 13 item 13). At start
 * blkmqd reads, through hostfs, the udev rules files (udev(7): /etc/udev/rules.d,
 * /run/udev/rules.d, /usr/lib/udev/rules.d, /lib/udev/rules.d; a name in an earlier
 * directory hides the same name in a later one; an empty file or a link to /dev/null masks
 * it) and tuned's active profile (/etc/tuned/active_profile; profiles in /etc/tuned/NAME,
 * /etc/tuned/profiles/NAME, /usr/lib/tuned/NAME, /usr/lib/tuned/profiles/NAME, with their
 * include= parents), and whether irqbalance runs (its control socket
 * /run/irqbalance/irqbalance<PID>.sock names a live process), and warns once per place that sets a queue scheduler, nr_requests,
 * rq_affinity or an IRQ's affinity, naming file:line. Such a tool rewrites blkmqd's value on
 * its next event: a write war (see Reassert=).
 *
 * Parsing is conservative: only what clearly assigns one of those attributes is reported.
 *   udev: ATTR{queue/scheduler}, ATTR{queue/nr_requests}, ATTR{queue/rq_affinity} assigned
 *         (= or :=), any assigned ATTR{...smp_affinity...}, and RUN/PROGRAM values naming
 *         one of those files; continuation lines ("\" at the end) are joined, comments skipped.
 *   tuned: [disk] (or type=disk) elevator=; [sysfs] (or type=sysfs) keys naming one of those
 *         files; [scheduler] (or type=scheduler) isolated_cores= or default_irq_smp_affinity=
 *         (tuned moves IRQ affinities for both).
 */

#include <errno.h>

#include "hostfs.h"
#include "policy.h"

/* One place another tool sets what blkmqd writes. line: 1-based (a continued udev rule: its first line). */
typedef void (*agent_hit_t)(void *userdata, unsigned line, Knob knob, const char *what);

/* Scan the text of one udev rules file. Returns the number of hits (>= 0). */
int agents_scan_udev_rules(const char *text, agent_hit_t hit, void *userdata);

/*
 * Scan the text of one tuned.conf. Returns the number of hits (>= 0); *ret_include (may be
 * NULL) gets the [main] include= value (newly allocated, NULL when none).
 */
int agents_scan_tuned(const char *text, agent_hit_t hit, void *userdata, char **ret_include);

/*
 * Read the udev rules and tuned's profile below h's root and log one warning per hit
 * (at most AGENTS_WARN_MAX, then one line with the rest's count). tuned's profile counts only
 * while tuned runs (/run/tuned/tuned.pid names a live process). Returns the number of hits.
 */
#define AGENTS_WARN_MAX 32
int agents_warn(HostFs *h);
