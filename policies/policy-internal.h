/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Shared between the policy areas (one file per knob); not a public interface. */

#include "policy.h"


/* A rule named after a class: "<prefix>-<class>" ("elevator-fast-multiqueue"), in a compound literal. */
#define RULE_OF_CLASS(prefix, cls) rule_of_class_buf(prefix, cls, (char[96]) {}, 96)
static inline const char *rule_of_class_buf(const char *prefix, const char *cls, char *buf, size_t size);

/* "config" for a value from the config file, "override" for the admin's policy/<knob> (the rule's name). */
#define RULE_OF_ORIGIN(o, k) ((o)->origin[k] ? "config" : "override")

/* Where plan p keeps the wanted value of knob k (plan_get() reads it), NULL for no knob. */
char **plan_knob_slot(Plan *p, Knob k);

/* In every area function below, h is what blkmqd did (policies/history.h), never NULL
 * (policy_history_or_none()). */

/* Elevator area (policies/elevator.c): sets plan->elevator and explains. 0 or -ENOMEM. */
int policy_elevator(const DiskFacts *f, const PolicyHistory *h, const ClassPolicy *cp, const PolicyOverrides *o, Plan *plan);

/* The elevator the disk will run after this plan: the planned one, or the running one when
 * there is none planned or someone else's switch holds it (PolicyHistory.elevator_held). */
static inline const char *policy_target_elevator(const DiskFacts *f, const PolicyHistory *h, const Plan *plan) {
        return h->elevator_held || !plan->elevator ? f->elevator : plan->elevator;
}

/* rq_affinity (policies/rq-affinity.c), nr_requests and irq_affinity (policies/irq-affinity.c). 0 or -ENOMEM. */
int policy_rq_affinity(const DiskFacts *f, const PolicyHistory *h, const ClassPolicy *cp, const PolicyOverrides *o, Plan *plan);
int policy_nr_requests(const DiskFacts *f, const PolicyHistory *h, const PolicyOverrides *o, Plan *plan);

/* What queue/nr_requests accepts under elevator (block/blk-sysfs.c queue_requests_store()):
 * at least BLKDEV_MIN_RQ and more than the reserved tags; at most MAX_SCHED_RQ (2048) with
 * an elevator, the tag set depth (hctx 0 nr_tags) with none. */
void nr_requests_limits(const DiskFacts *f, const char *elevator, uint64_t *ret_min, uint64_t *ret_max);
int policy_irq_affinity(const DiskFacts *f, const PolicyHistory *h, const ClassPolicy *cp, const PolicyOverrides *o, Plan *plan);

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "policy/<knob>" for an admin override, else "config [Device:<name>] <knob>". */
static inline const char *override_label_buf(const PolicyOverrides *o, Knob k, char *buf, size_t size) {
        if (o->origin[k])
                snprintf(buf, size, "%s %s", o->origin[k], knob_to_string(k));
        else
                snprintf(buf, size, "policy/%s", knob_to_string(k));
        return buf;
}
#define override_label(o, k) override_label_buf(o, k, (char[160]) {}, 160)

/* The override of k is "keep": blkmqd leaves the knob to the disk (and to other tools), whatever
 * the class wants; a value blkmqd wrote is put back. Every knob file takes it. */
static inline bool override_keeps(const PolicyOverrides *o, Knob k) {
        const char *v = policy_overrides_get(o, k);
        return v && streq(v, "keep");
}

/*
 * For a knob left alone because it does not apply to the disk (no queue vectors, vectors the
 * kernel manages, not a network disk): "; <label>=<value> has nothing to act on" for each knob
 * of knobs (KNOB_BIT mask) that has an override in o (NULL: none), so explain says why an
 * accepted override changes nothing; "" when none has. Written into buf (truncated to size).
 */
const char *overrides_idle_note(const PolicyOverrides *o, unsigned knobs, char *buf, size_t size);

static inline const char *rule_of_class_buf(const char *prefix, const char *cls, char *buf, size_t size) {
        snprintf(buf, size, "%s-%s", prefix, cls);
        return buf;
}

/* Network alignment (policies/net-align.c): plan->net_alignment, explain, and with plan->manage
 * the nic_irq_affinity/xps/nr_io_queues wishes. np NULL: the defaults. 0 or -ENOMEM. */
int policy_net(const DiskFacts *f, const NetPolicy *np, const PolicyOverrides *o, Plan *plan);

/* Elevator tunables (policies/iosched.c): plan->iosched for the elevator the disk will run. 0 or -ENOMEM. */
int policy_iosched(const DiskFacts *f, const PolicyHistory *h, const ClassPolicy *cp, const PolicyOverrides *o, Plan *plan);

/* Remove plan->modules[i] (its strings freed, the rest moved down). Pure. */
static inline void plan_module_drop(Plan *plan, size_t i) {
        ModuleWish *w = &plan->modules[i];
        free(w->module);
        free(w->param);
        free(w->value);
        free(w->owner);
        memmove(w, w + 1, (plan->n_modules - i - 1) * sizeof(*w));
        plan->n_modules--;
}

/* Module parameters (policies/module-params.c). 0 or -ENOMEM. */
int policy_module_params(const DiskFacts *f, const PolicyConfig *config, const ClassPolicy *cp,
                         const PolicyHistory *history, Plan *plan);

/* ---- the rotational hint's table (policies/defaults.c rotational_trust[], policies/speed.c) ---- */

#include "speed.h"

#define CHANNEL(c) (1u << (c))

typedef enum TrustRate {
        RATE_ANY,
        RATE_REPORTED,          /* VPD page B1h rotation rate 1 (non-rotating) or 0x401-0xfffe rpm */
        RATE_NOT_REPORTED,      /* anything else: no page, 0, a reserved value */
} TrustRate;

typedef struct TrustRow {
        const char *row;        /* the row's name (RotationalHint.row) */
        const char *driver;     /* the driver fact, exactly; NULL: any */
        const char *transport;  /* the transport fact, exactly; NULL: any */
        unsigned channels;      /* CHANNEL() bits of the SCSI channel; 0: any */
        TrustRate rate;
        HintTrust trust;
        const char *why;        /* the reason and its source */
} TrustRow;

extern const TrustRow rotational_trust[];
extern const size_t n_rotational_trust;
