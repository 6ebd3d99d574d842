/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * What blkmqd itself did before an evaluation: an input of the policy of its own, beside the
 * facts (which are only what the kernel shows now) and not a fact (DESIGN: decisions are fixed
 * points of their own effect). A rule whose cause blkmqd's own change removes decides from the
 * state before that change, so a wish that took effect stays wanted until the config or a
 * restore says otherwise, and explain says which value is blkmqd's.
 *
 * Plain data, owned by the caller: the manager fills it before each evaluation from what apply
 * recorded (apply/apply.h apply_history(), the disk's part) and from what blkmqd's modprobe.d
 * gave this boot (apply/modules.h modules_history(), the modules' part); the fixture tests the
 * same way, the unit tests by hand. policy_evaluate() takes NULL for "blkmqd did nothing" (a
 * first start), the same as POLICY_HISTORY_INIT.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ModuleWish;

/* A queue vector whose affinity blkmqd wrote, as apply recorded it. */
typedef struct IrqHistory {
        unsigned irq;                   /* the IRQ number (IrqFacts.irq) */
        /* its /proc/irq/N/smp_affinity_list before blkmqd's first write (the recorded original,
         * as read: a cpulist); never NULL. Owned. */
        char *affinity_before;
} IrqHistory;

typedef struct PolicyHistory {
        /* ---- the disk's part: apply_history() from the disk's Applied records ---- */

        /* The elevator (queue/scheduler) before blkmqd's first switch: the recorded original;
         * NULL when blkmqd has not switched it. The elevator policy decides from it, so a
         * decision does not change because blkmqd carried it out, and "auto" means what blkmqd
         * would do had it never written (the original comes back when the class keeps it);
         * explain shows both. Owned. */
        char *elevator_before;
        /* Someone else switched the elevator over blkmqd's and blkmqd leaves it (applied/elevator
         * "changed externally" and Reassert=no). The plan keeps blkmqd's wish (apply compares it
         * with what it wrote), but what depends on the running elevator (nr_requests, the
         * tunables) is planned for the one that runs, and explain says so
         * (policy_target_elevator()). */
        bool elevator_held;
        /* The elevator blkmqd's last switch found not registered (EINVAL while queue/scheduler
         * did not list it: its module did not load, apply/apply.c elevator_not_loaded(),
         * Device.elevator_unloaded) while that switch's state is an error; NULL otherwise.
         * explain says so (rule elevator-not-loaded), and the elevator's tunables wait for it.
         * Owned. */
        char *elevator_unloaded;
        /* With elevator_unloaded: the failed attempts so far (the retry level) and the delay
         * before the next one, seconds (the retry backoff); 0 without. */
        unsigned elevator_load_attempts, elevator_retry_sec;
        /* queue/rq_affinity and queue/nr_requests before blkmqd's first write (the recorded
         * originals, as numbers); -1 when blkmqd has not written it or the original is not a
         * number. explain says "kept" only for a value blkmqd did not write, and says what
         * comes back when a write is undone. */
        int rq_affinity_before;
        int64_t nr_requests_before;
        /* The number of queue vectors whose affinity blkmqd wrote and can put back (an original
         * recorded, and not another tool's value since); 0 when none. */
        size_t irq_written;
        /* The vectors blkmqd wrote with their recorded originals, in apply's order (n_irqs
         * entries; an IRQ may repeat, the first one counts: policy_history_irq_before()).
         * disk_facts_map_irqs() matches a vector to its hctx by its affinity before, so the map
         * does not change because blkmqd moved the vector. Owned. */
        IrqHistory *irqs;
        size_t n_irqs;

        /* ---- the modules' part: modules_history() ---- */

        /* The options of blkmqd's own /etc/modprobe.d/zz-blkmqd.conf as this boot's modules read
         * them (the file predates the boot and is blkmqd's; apply/modules.c keeps them). Not owned. */
        const struct ModuleWish *boot_modules;
        size_t n_boot_modules;
} PolicyHistory;

/* Nothing done: no switch, no write, no module option (the -1s are "not written"). */
#define POLICY_HISTORY_INIT ((PolicyHistory) { .rq_affinity_before = -1, .nr_requests_before = -1 })

/* Free what h owns (elevator_before, elevator_unloaded, irqs) and set it to POLICY_HISTORY_INIT;
 * boot_modules is not owned and is cleared. NULL is fine. Pure. */
void policy_history_done(PolicyHistory *h);

/* The affinity vector irq had before blkmqd's first write of it (h->irqs), NULL when blkmqd did
 * not write it or h is NULL. Pure. */
const char *policy_history_irq_before(const PolicyHistory *h, unsigned irq);

/* h, or the static POLICY_HISTORY_INIT when h is NULL: never NULL. Pure. */
const PolicyHistory *policy_history_or_none(const PolicyHistory *h);
