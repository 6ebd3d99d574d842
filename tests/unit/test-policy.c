/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for policies/: classification, the elevator plan, explanation lines. */
#include <errno.h>

#include "cross-disk.h"
#include "facts.h"
#include "macro.h"
#include "parse.h"
#include "policy.h"
#include "strv.h"
#include "tap.h"
#include "test-plan.h"

typedef struct Disk {
        const char *name;
        bool has_mq;
        size_t n_hctx;
        Tristate rotational;
        Tristate shared_tags;
        const char *scheduler;          /* queue/scheduler content */
        const char *transport, *driver;
        bool stacked;
        Zoned zoned;
        const char *kernel;             /* kernel release; NULL = "6.1.0-28-amd64" */
        Multipath multipath;
        const char *loadable, *builtin; /* one elevator each from modules.dep / modules.builtin */
        int rotation_rate;              /* VPD page B1h; 0 = as the flag says (7200 or 1), -1 = no page */
} Disk;

static DiskFacts *make(const Disk *d) {
        DiskFacts *f = disk_facts_new(d->name);
        if (!f)
                abort();
        f->has_mq = d->has_mq;
        f->n_hctx = d->n_hctx;
        f->hctx = calloc(d->n_hctx ?: 1, sizeof(HctxFacts));
        for (size_t i = 0; i < d->n_hctx; i++)
                f->hctx[i] = (HctxFacts) { .index = i, .nr_tags = 64, .nr_reserved_tags = 0,
                                           .shared_tags = d->shared_tags };
        f->rotational = d->rotational;
        if (d->rotational == TRISTATE_UNKNOWN)
                disk_facts_set_unknown(f, FACT_ROTATIONAL, "block/%s/queue/rotational: attribute not present", d->name);
        f->shared_tags = d->shared_tags;
        if (d->shared_tags == TRISTATE_UNKNOWN)
                disk_facts_set_unknown(f, FACT_SHARED_TAGS, "debugfs not mounted");
        if (d->scheduler) {
                if (parse_scheduler(d->scheduler, &f->elevators, &f->elevator, &f->elevator_configurable) < 0)
                        abort();
        } else {
                disk_facts_set_unknown(f, FACT_ELEVATOR, "block/%s/queue/scheduler: attribute not present", d->name);
                disk_facts_set_unknown(f, FACT_ELEVATORS, "block/%s/queue/scheduler: attribute not present", d->name);
        }
        f->transport = d->transport ? strdup(d->transport) : NULL;
        /* a SCSI disk that reports its rotation rate, so the flag is trusted (policies/speed.c),
         * unless the case says otherwise */
        if (d->rotation_rate < 0)
                disk_facts_set_unknown(f, FACT_MEDIUM_ROTATION, "block/%s/device/vpd_pgb1 absent", d->name);
        else
                f->rotation_rate = d->rotation_rate ?: d->rotational == TRISTATE_YES ? 7200 : 1;
        f->driver = d->driver ? strdup(d->driver) : NULL;
        f->stacked = d->stacked;
        f->zoned = d->zoned;
        f->kernel_release = strdup(d->kernel ?: "6.1.0-28-amd64");
        f->multipath = d->multipath;
        if (d->multipath != MULTIPATH_NONE) {
                f->multipath_of = strdup("dm-3");
                f->multipath_source = strdup("holders/dm-3 dm/uuid mpath-3600508b4000156d700012000000b0000");
        }
        if (d->loadable && strv_extend(&f->elevators_loadable, d->loadable) < 0)
                abort();
        if (d->builtin && strv_extend(&f->elevators_builtin, d->builtin) < 0)
                abort();
        return f;
}

static PolicyConfig config;


/* Evaluate with the shipped defaults; check class, manage and the planned elevator (NULL = none). */
static void eval(const Disk *d, const PolicyOverrides *o, DiskClass cls, bool manage, const char *elevator, Plan *ret) {
        _cleanup_(disk_facts_freep) DiskFacts *f = make(d);
        Plan p = {};

        int r = policy_evaluate(f, NULL, &config, o, &p);
        CHECK_INT(r, 0);
        if (p.class != cls)
                TAP_FAIL("%s: class %s, expected %s", d->name, disk_class_to_string(p.class), disk_class_to_string(cls));
        tap_checks++;
        if (p.manage != manage)
                TAP_FAIL("%s: manage %d, expected %d", d->name, p.manage, manage);
        tap_checks++;
        if (elevator)
                CHECK_STR(p.elevator, elevator);
        else if (p.elevator)
                TAP_FAIL("%s: plan elevator %s, expected none", d->name, p.elevator);
        tap_checks++;
        /* never an elevator the device cannot take (listed, built in or loadable) */
        if (p.elevator && disk_facts_elevator_source(f, p.elevator) == ELEVATOR_UNAVAILABLE)
                TAP_FAIL("%s: plan elevator %s is not offered", d->name, p.elevator);
        /* the explanation always starts with the classification line */
        CHECK(p.n_entries >= 1);
        CHECK(p.n_entries >= 1 && startswith(p.entries[0].text, d->name));
        test_check_plan_entries(d->name, &p);
        if (ret)
                *ret = p;
        else
                plan_done(&p);
}

/*
 * Explanation line i. Line 0 is the classification; the elevator decision is the first
 * entry that decides the elevator (or leaves the whole disk alone): asked for as line 1,
 * it is searched by its fields, so lines of other knobs around it do not matter.
 */
static const char *line(const Plan *p, size_t i) {
        if (i == 1)
                PLAN_FOREACH_ENTRY(e, p)
                        if (e != p->entries &&
                            (((e->knobs & KNOB_BIT(KNOB_ELEVATOR)) && e->outcome != PLAN_OUTCOME_NOTE) ||
                             (e->knobs == 0 && e->outcome == PLAN_OUTCOME_LEFT_ALONE)))
                                return e->text;
        return i < p->n_entries ? p->entries[i].text : "(missing line)";
}

/* Some explanation line contains needle. */
static bool plan_has(const Plan *p, const char *needle) {
        PLAN_FOREACH_ENTRY(l, p)
                if (strstr(l->text, needle))
                        return true;
        return false;
}

static void test_class_boundaries(void) {
        const char *sched = "[none] mq-deadline kyber bfq";
        struct {
                size_t n_hctx;
                Tristate rot, shared;
                DiskClass cls;
        } t[] = {
                { 1, TRISTATE_YES, TRISTATE_NO, DISK_CLASS_SINGLE_QUEUE_ROTATIONAL },
                { 1, TRISTATE_YES, TRISTATE_UNKNOWN, DISK_CLASS_SINGLE_QUEUE_ROTATIONAL },
                { 1, TRISTATE_YES, TRISTATE_YES, DISK_CLASS_MANY_HCTX_SLOW },   /* shared tags alone */
                { 2, TRISTATE_YES, TRISTATE_NO, DISK_CLASS_MANY_HCTX_SLOW },    /* the 1 -> 2 boundary */
                { 2, TRISTATE_YES, TRISTATE_UNKNOWN, DISK_CLASS_MANY_HCTX_SLOW },
                { 64, TRISTATE_YES, TRISTATE_YES, DISK_CLASS_MANY_HCTX_SLOW },
                { 1, TRISTATE_NO, TRISTATE_NO, DISK_CLASS_SINGLE_QUEUE_FAST },
                { 1, TRISTATE_NO, TRISTATE_UNKNOWN, DISK_CLASS_SINGLE_QUEUE_FAST },
                { 2, TRISTATE_NO, TRISTATE_NO, DISK_CLASS_FAST_MULTIQUEUE },
                { 1, TRISTATE_NO, TRISTATE_YES, DISK_CLASS_SHARED_TAGS },
                { 64, TRISTATE_NO, TRISTATE_YES, DISK_CLASS_SHARED_TAGS },      /* shared beats many hctx */
                { 0, TRISTATE_NO, TRISTATE_NO, DISK_CLASS_UNKNOWN },            /* mq/ without hctx */
                { 4, TRISTATE_UNKNOWN, TRISTATE_NO, DISK_CLASS_UNKNOWN },
                { 4, TRISTATE_UNKNOWN, TRISTATE_YES, DISK_CLASS_UNKNOWN },
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                Disk d = { .name = "sdb", .has_mq = true, .n_hctx = t[i].n_hctx, .rotational = t[i].rot,
                           .shared_tags = t[i].shared, .scheduler = sched, .transport = "scsi", .driver = "sd" };
                _cleanup_(disk_facts_freep) DiskFacts *f = make(&d);
                _cleanup_free_ char *reason = NULL;
                DiskClass c = policy_classify(f, &reason);
                if (c != t[i].cls)
                        TAP_FAIL("case %zu (nr_hw_queues=%zu rotational=%s shared_tags=%s): %s, expected %s", i,
                                 t[i].n_hctx, tristate_to_string(t[i].rot), tristate_to_string(t[i].shared),
                                 disk_class_to_string(c), disk_class_to_string(t[i].cls));
                tap_checks++;
                CHECK(reason && strstr(reason, disk_class_to_string(t[i].cls)));
                CHECK_INT(policy_classify(f, NULL), t[i].cls);
        }

        /* rule order: no mq beats stacked, stacked beats unknown rotational */
        Disk nomq_loop = { .name = "loop0", .has_mq = false, .rotational = TRISTATE_NO, .stacked = true, .scheduler = "none" };
        _cleanup_(disk_facts_freep) DiskFacts *a = make(&nomq_loop);
        CHECK_INT(policy_classify(a, NULL), DISK_CLASS_NO_MQ);
        Disk loop_unknown = { .name = "loop0", .has_mq = true, .n_hctx = 1, .rotational = TRISTATE_UNKNOWN, .stacked = true,
                              .scheduler = sched };
        _cleanup_(disk_facts_freep) DiskFacts *b = make(&loop_unknown);
        CHECK_INT(policy_classify(b, NULL), DISK_CLASS_STACKED);
}

static void test_seed_setups(void) {
        Plan p;

        /* 1. megaraid_sas: 64 hctx, rotational, TAG_HCTX_SHARED, kernel default mq-deadline */
        Disk mega = { .name = "sda", .has_mq = true, .n_hctx = 64, .rotational = TRISTATE_YES,
                      .shared_tags = TRISTATE_YES, .scheduler = "[mq-deadline] kyber bfq none\n",
                      .transport = "scsi", .driver = "megaraid_sas" };
        eval(&mega, NULL, DISK_CLASS_MANY_HCTX_SLOW, true, "mq-deadline", &p);
        CHECK_STR(line(&p, 0), "sda: nr_hw_queues=64 rotational=1 shared_tags=1 stacked=0 transport=scsi driver=megaraid_sas"
                               " -> class many-hctx-slow (rule many-hctx-slow)");
        CHECK_STR(line(&p, 1), "sda: class=many-hctx-slow elevator=mq-deadline wanted=mq-deadline"
                               " -> elevator=mq-deadline, kept (rule elevator-many-hctx-slow)");
        plan_done(&p);

        /* ... the same disk after someone set none (Ubuntu-style rule): mq-deadline comes back */
        mega.scheduler = "[none] mq-deadline kyber bfq\n";
        eval(&mega, NULL, DISK_CLASS_MANY_HCTX_SLOW, true, "mq-deadline", NULL);
        /* ... under bfq (Fedora's 60-block-scheduler.rules sets it on every sd*): never kept,
         * mq-deadline instead, and explain names the evidence */
        mega.scheduler = "mq-deadline kyber [bfq] none\n";
        eval(&mega, NULL, DISK_CLASS_MANY_HCTX_SLOW, true, "mq-deadline", &p);
        CHECK_STR(line(&p, 1), "sda: class=many-hctx-slow elevator=bfq wanted=mq-deadline available=mq-deadline,kyber,bfq,none"
                               " -> elevator=mq-deadline (rule elevator-many-hctx-slow)");
        /* (line 1 of the plan is the speed line: policies/speed.c) */
        CHECK(startswith(line(&p, 3), "sda: class=many-hctx-slow elevator=bfq -> not wanted here: BFQ on a many-hctx host tagset:"));
        CHECK(strstr(line(&p, 3), "b6e68ee82585") && strstr(line(&p, 3), "5.12-5.18") && strstr(line(&p, 3), "(rule elevator-evidence)"));
        plan_done(&p);
        /* ... none current, bfq offered, mq-deadline not offered: bfq is never picked, left alone */
        mega.scheduler = "[none] kyber bfq\n";
        eval(&mega, NULL, DISK_CLASS_MANY_HCTX_SLOW, true, NULL, &p);
        CHECK_STR(line(&p, 1), "sda: class=many-hctx-slow elevator=none wanted=mq-deadline available=none,kyber,bfq"
                               " -> elevator left alone, none of the wanted elevators is offered (rule elevator-many-hctx-slow)");
        CHECK(plan_has(&p, "sda: class=many-hctx-slow offered=bfq -> not chosen: BFQ on a many-hctx host tagset"));
        CHECK(plan_has(&p, "sda: class=many-hctx-slow elevator=none -> not wanted here: a seeking disk loses sorting and merging"));
        plan_done(&p);
        /* ... an explicit override may still choose bfq */
        {
                _cleanup_(policy_overrides_done) PolicyOverrides o = {};
                CHECK_INT(policy_overrides_set(&o, KNOB_ELEVATOR, "bfq"), 0);
                eval(&mega, &o, DISK_CLASS_MANY_HCTX_SLOW, true, "bfq", NULL);
        }
        /* ... and so may a [Class:] list that names it (config is explicit) */
        {
                PolicyConfig saved = config;
                char *bfq[] = { (char *) "bfq", NULL };
                config.classes[DISK_CLASS_MANY_HCTX_SLOW].elevators = bfq;
                eval(&mega, NULL, DISK_CLASS_MANY_HCTX_SLOW, true, "bfq", NULL);
                config = saved;
        }

        /* 2. null_blk, 128 queues, non-rotational, under mq-deadline: fast-multiqueue, none */
        Disk nullb = { .name = "nullb0", .has_mq = true, .n_hctx = 128, .rotational = TRISTATE_NO,
                       .shared_tags = TRISTATE_NO, .scheduler = "none [mq-deadline] kyber bfq \n",
                       .transport = NULL, .driver = NULL };
        eval(&nullb, NULL, DISK_CLASS_FAST_MULTIQUEUE, true, "none", &p);
        CHECK_STR(line(&p, 0), "nullb0: nr_hw_queues=128 rotational=0 shared_tags=0 stacked=0 transport=unknown driver=unknown"
                               " -> class fast-multiqueue (rule fast-multiqueue)");
        CHECK_STR(line(&p, 1), "nullb0: class=fast-multiqueue elevator=mq-deadline wanted=none,kyber"
                               " available=none,mq-deadline,kyber,bfq -> elevator=none (rule elevator-fast-multiqueue)");
        CHECK_STR(line(&p, 3), "nullb0: class=fast-multiqueue elevator=mq-deadline -> not wanted here: a single-queue"
                               " elevator serialises every hctx on one lock (QUEUE_FLAG_SQ_SCHED, 4d337cebcb1c) (rule elevator-evidence)");
        plan_done(&p);
        /* kyber is acceptable for fast-multiqueue: kept */
        nullb.scheduler = "none mq-deadline [kyber] bfq";
        eval(&nullb, NULL, DISK_CLASS_FAST_MULTIQUEUE, true, "kyber", NULL);

        /* 3. one-hctx HDD (AHCI) someone set to none: mq-deadline */
        Disk hdd = { .name = "sdc", .has_mq = true, .n_hctx = 1, .rotational = TRISTATE_YES,
                     .shared_tags = TRISTATE_NO, .scheduler = "[none] mq-deadline kyber bfq",
                     .transport = "scsi", .driver = "ahci" };
        eval(&hdd, NULL, DISK_CLASS_SINGLE_QUEUE_ROTATIONAL, true, "mq-deadline", &p);
        CHECK_STR(line(&p, 1), "sdc: class=single-queue-rotational elevator=none wanted=mq-deadline,bfq"
                               " available=none,mq-deadline,kyber,bfq -> elevator=mq-deadline (rule elevator-single-queue-rotational)");
        plan_done(&p);

        /* 4. NVMe offering only [none] (no elevator modules): none, kept */
        Disk nvme = { .name = "nvme0n1", .has_mq = true, .n_hctx = 8, .rotational = TRISTATE_NO,
                      .shared_tags = TRISTATE_NO, .scheduler = "[none]\n", .transport = "nvme", .driver = "nvme" };
        eval(&nvme, NULL, DISK_CLASS_FAST_MULTIQUEUE, true, "none", &p);
        CHECK_STR(line(&p, 1), "nvme0n1: class=fast-multiqueue elevator=none wanted=none,kyber -> elevator=none, kept"
                               " (rule elevator-fast-multiqueue)");
        plan_done(&p);

        /* 5. loop: a virtual device, listed with its class and not written by default; opted in
         * ([Manager] VirtualDevices=manage) it is stacked, and under mq-deadline it gets none */
        Disk loop = { .name = "loop5", .has_mq = true, .n_hctx = 1, .rotational = TRISTATE_YES,
                      .shared_tags = TRISTATE_NO, .scheduler = "none [mq-deadline] kyber bfq",
                      .transport = "loop", .driver = "loop", .stacked = true };
        eval(&loop, NULL, DISK_CLASS_STACKED, false, NULL, &p);
        CHECK_STR(line(&p, 1), "loop5: driver=loop -> a virtual device: a file or another block device behind it "
                               "(drivers/block/loop.c); listed, not written: its queue settings say nothing about any "
                               "hardware ([Manager] VirtualDevices=manage, a [Device:] section with Enabled=yes or "
                               "policy/enabled 1 opts it in) (rule virtual-device)");
        CHECK(!plan_has(&p, "rule elevator-stacked"));
        plan_done(&p);
        config.manage_virtual = true;
        eval(&loop, NULL, DISK_CLASS_STACKED, true, "none", &p);
        CHECK_STR(line(&p, 0), "loop5: nr_hw_queues=1 rotational=1 shared_tags=0 stacked=1 transport=loop driver=loop"
                               " -> class stacked (rule stacked)");
        CHECK_STR(line(&p, 1), "loop5: class=stacked elevator=mq-deadline wanted=none available=none,mq-deadline,kyber,bfq"
                               " -> elevator=none (rule elevator-stacked)");
        CHECK(plan_has(&p, "loop5: driver=loop -> a virtual device: a file or another block device behind it "
                           "(drivers/block/loop.c); tuned as its class, opted in by [Manager] VirtualDevices=manage (rule virtual-device)"));
        plan_done(&p);
        config.manage_virtual = false;

        /* 6. no blk-mq queue (zram): never written, and a virtual device */
        Disk zram = { .name = "zram0", .has_mq = false, .rotational = TRISTATE_NO, .shared_tags = TRISTATE_UNKNOWN,
                      .scheduler = "none\n", .transport = "zram", .driver = "zram" };
        eval(&zram, NULL, DISK_CLASS_NO_MQ, false, NULL, &p);
        CHECK_INT(p.n_entries, 2);
        CHECK_STR(line(&p, 0), "zram0: mq=0 -> class no-mq, never written (rule no-mq)");
        CHECK_STR(p.entries[1].text, "zram0: driver=zram -> a virtual device: compressed RAM (drivers/block/zram/zram_drv.c) (rule virtual-device)");
        plan_done(&p);

        /* 7. rotational unknown: left alone, with the reason */
        Disk unk = { .name = "sdd", .has_mq = true, .n_hctx = 4, .rotational = TRISTATE_UNKNOWN,
                     .shared_tags = TRISTATE_NO, .scheduler = "[none] mq-deadline", .transport = "scsi", .driver = "sd" };
        eval(&unk, NULL, DISK_CLASS_UNKNOWN, false, NULL, &p);
        CHECK_INT(p.n_entries, 3);      /* the class, the speed (rotational unreadable), left alone */
        CHECK_STR(line(&p, 1), "sdd: rotational=block/sdd/queue/rotational: attribute not present nr_hw_queues=4"
                               " -> left alone, facts incomplete (rule unknown)");
        plan_done(&p);

        /* 8. a queue that cannot take an elevator ("none" without brackets) */
        Disk nosched = { .name = "sde", .has_mq = true, .n_hctx = 1, .rotational = TRISTATE_YES,
                         .shared_tags = TRISTATE_NO, .scheduler = "none\n", .transport = "scsi", .driver = "sd" };
        eval(&nosched, NULL, DISK_CLASS_SINGLE_QUEUE_ROTATIONAL, true, NULL, &p);
        CHECK(strstr(line(&p, 1), "(rule elevator-not-configurable)") != NULL);
        plan_done(&p);
        /* ... or whose scheduler file is missing */
        nosched.scheduler = NULL;
        eval(&nosched, NULL, DISK_CLASS_SINGLE_QUEUE_ROTATIONAL, true, NULL, &p);
        CHECK(strstr(line(&p, 1), "attribute not present) -> elevator left alone (rule elevator-not-configurable)") != NULL);
        plan_done(&p);

        /* 9. classes whose policy is "keep": plan = current, nothing to write */
        Disk ssd_shared = { .name = "sdf", .has_mq = true, .n_hctx = 16, .rotational = TRISTATE_NO,
                            .shared_tags = TRISTATE_YES, .scheduler = "[mq-deadline] kyber bfq none",
                            .transport = "scsi", .driver = "megaraid_sas" };
        eval(&ssd_shared, NULL, DISK_CLASS_SHARED_TAGS, true, "mq-deadline", &p);
        CHECK_STR(line(&p, 1), "sdf: class=shared-tags elevator=mq-deadline wanted=mq-deadline,none,kyber"
                               " -> elevator=mq-deadline, kept (rule elevator-shared-tags)");
        plan_done(&p);
        /* shared-tags: none and kyber are kept, bfq (host-tagset stalls) is replaced */
        ssd_shared.scheduler = "mq-deadline kyber bfq [none]";
        eval(&ssd_shared, NULL, DISK_CLASS_SHARED_TAGS, true, "none", NULL);
        ssd_shared.scheduler = "mq-deadline [kyber] bfq none";
        eval(&ssd_shared, NULL, DISK_CLASS_SHARED_TAGS, true, "kyber", NULL);
        ssd_shared.scheduler = "mq-deadline kyber [bfq] none";
        eval(&ssd_shared, NULL, DISK_CLASS_SHARED_TAGS, true, "mq-deadline", &p);
        CHECK(plan_has(&p, "sdf: class=shared-tags elevator=bfq -> not wanted here: BFQ on a many-hctx host tagset"));
        plan_done(&p);
        Disk vda = { .name = "vda", .has_mq = true, .n_hctx = 1, .rotational = TRISTATE_NO,
                     .shared_tags = TRISTATE_NO, .scheduler = "none [mq-deadline] kyber bfq ",
                     .transport = "virtio", .driver = "virtio_blk" };
        eval(&vda, NULL, DISK_CLASS_SINGLE_QUEUE_FAST, true, "mq-deadline", NULL);
}

static void test_many_hctx_slow_never_unlisted(void) {
        /* wanted mq-deadline: a device not offering it is left alone */
        static const struct {
                const char *sched, *plan;
        } t[] = {
                { "[none]", NULL },
                { "[none] kyber", NULL },
                { "none [kyber]", NULL },
                { "[none] bfq", NULL },         /* bfq is never picked for many-hctx-slow */
                { "[bfq] none", NULL },         /* ... nor kept; none is not wanted either */
                { "[bfq] none mq-deadline", "mq-deadline" },
                { "[kyber] bfq mq-deadline", "mq-deadline" },
                { "[none] mq-deadline kyber bfq", "mq-deadline" },
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                Disk d = { .name = "sdg", .has_mq = true, .n_hctx = 32, .rotational = TRISTATE_YES,
                           .shared_tags = TRISTATE_YES, .scheduler = t[i].sched, .transport = "scsi", .driver = "mpt3sas" };
                Plan p;
                eval(&d, NULL, DISK_CLASS_MANY_HCTX_SLOW, true, t[i].plan, &p);
                if (!t[i].plan)
                        CHECK(strstr(line(&p, 1), "-> elevator left alone, none of the wanted elevators is offered") &&
                              strstr(line(&p, 1), "(rule elevator-many-hctx-slow)"));
                plan_done(&p);
        }

        /* exhaustively: every class input x every scheduler list: the plan is NULL or offered */
        static const char *scheds[] = {
                "[none]", "none", "[none] kyber", "[none] bfq", "[mq-deadline] none", "none [kyber] bfq",
                "[none] mq-deadline kyber bfq", "[bfq]",
        };
        Tristate tri[] = { TRISTATE_NO, TRISTATE_YES, TRISTATE_UNKNOWN };
        for (size_t s = 0; s < ELEMENTSOF(scheds); s++)
                for (size_t n = 0; n <= 3; n++)
                        for (size_t r = 0; r < 3; r++)
                                for (size_t sh = 0; sh < 3; sh++)
                                        for (int st = 0; st <= 1; st++) {
                                                Disk d = { .name = "sdz", .has_mq = n > 0 || st, .n_hctx = n,
                                                           .rotational = tri[r], .shared_tags = tri[sh],
                                                           .scheduler = scheds[s], .stacked = st };
                                                _cleanup_(disk_facts_freep) DiskFacts *f = make(&d);
                                                _cleanup_(plan_done) Plan p = {};
                                                CHECK_INT(policy_evaluate(f, NULL, &config, NULL, &p), 0);
                                                if (p.elevator && !strv_contains(f->elevators, p.elevator))
                                                        TAP_FAIL("sched \"%s\" class %s: plan %s not offered", scheds[s],
                                                                 disk_class_to_string(p.class), p.elevator);
                                                tap_checks++;
                                                /* unknown and no-mq are never managed and never get a wish */
                                                if ((p.class == DISK_CLASS_UNKNOWN || p.class == DISK_CLASS_NO_MQ) &&
                                                    (p.manage || p.elevator))
                                                        TAP_FAIL("sched \"%s\" class %s: managed", scheds[s],
                                                                 disk_class_to_string(p.class));
                                                tap_checks++;
                                        }
}

/* Item 2: zoned disks keep mq-deadline before zone write plugging (6.10, dd291d77cc90). */
static void test_zoned(void) {
        Plan p;
        _cleanup_(policy_overrides_done) PolicyOverrides o = {};

        /* ZNS NVMe, 4 hctx (vm-6.1-nvme-4q with queue/zoned host-managed): fast-multiqueue wants none */
        Disk zns = { .name = "nvme0n1", .has_mq = true, .n_hctx = 4, .rotational = TRISTATE_NO,
                     .shared_tags = TRISTATE_NO, .scheduler = "[mq-deadline] none", .transport = "nvme", .driver = "nvme",
                     .zoned = ZONED_HOST_MANAGED };
        eval(&zns, NULL, DISK_CLASS_FAST_MULTIQUEUE, true, "mq-deadline", &p);
        CHECK(plan_has(&p, "nvme0n1: zoned=host-managed kernel=6.1.0-28-amd64 elevator=mq-deadline -> elevator=mq-deadline, kept: "
                           "kernel before zone write plugging (6.10, dd291d77cc90)"));
        CHECK(plan_has(&p, "nvme0n1: zoned=host-managed kernel=6.1.0-28-amd64 -> zoned writes need mq-deadline"));
        plan_done(&p);
        /* mq-deadline blkmqd switched to is not "kept" */
        {
                _cleanup_(disk_facts_freep) DiskFacts *f = make(&zns);
                PolicyHistory h = POLICY_HISTORY_INIT;      /* the strings are not owned */
                h.elevator_before = (char *) "none";
                CHECK_INT(policy_evaluate(f, &h, &config, NULL, &p), 0);
                CHECK(plan_has(&p, "nvme0n1: zoned=host-managed kernel=6.1.0-28-amd64 elevator=mq-deadline (none before blkmqd "
                                   "switched it) -> elevator=mq-deadline: kernel before zone write plugging"));
                CHECK(!plan_has(&p, "kept"));
                plan_done(&p);
        }
        /* host-aware exposed as zoned: the same (the kernel requires ELEVATOR_F_ZBD_SEQ_WRITE for both) */
        zns.zoned = ZONED_HOST_AWARE;
        eval(&zns, NULL, DISK_CLASS_FAST_MULTIQUEUE, true, "mq-deadline", NULL);
        /* an override of none is not applied */
        CHECK_INT(policy_overrides_set(&o, KNOB_ELEVATOR, "none"), 0);
        zns.zoned = ZONED_HOST_MANAGED;
        eval(&zns, &o, DISK_CLASS_FAST_MULTIQUEUE, true, "mq-deadline", &p);
        CHECK(plan_has(&p, "nvme0n1: policy/elevator=none zoned=host-managed kernel=6.1.0-28-amd64 -> override not applied"));
        plan_done(&p);
        /* someone set none: mq-deadline is put back */
        zns.scheduler = "mq-deadline [none]";
        eval(&zns, NULL, DISK_CLASS_FAST_MULTIQUEUE, true, "mq-deadline", NULL);
        /* mq-deadline not loaded yet but a module: loaded on the write */
        zns.scheduler = "[none]";
        zns.loadable = "mq-deadline";
        eval(&zns, NULL, DISK_CLASS_FAST_MULTIQUEUE, true, "mq-deadline", &p);
        CHECK(plan_has(&p, "nvme0n1: elevator=mq-deadline not listed in queue/scheduler -> available: loadable module"));
        plan_done(&p);
        /* ... and not available at all: left alone, said why */
        zns.loadable = NULL;
        eval(&zns, NULL, DISK_CLASS_FAST_MULTIQUEUE, true, NULL, &p);
        CHECK(plan_has(&p, "-> elevator left alone: mq-deadline is needed"));
        plan_done(&p);
        /* a zoned rotational SMR disk on many hctx: the zoned rule wins over the class too */
        Disk smr = { .name = "sdb", .has_mq = true, .n_hctx = 8, .rotational = TRISTATE_YES,
                     .shared_tags = TRISTATE_NO, .scheduler = "[mq-deadline] none", .transport = "scsi", .driver = "mpt3sas",
                     .zoned = ZONED_HOST_MANAGED, .kernel = "5.15.0-100-generic" };
        eval(&smr, NULL, DISK_CLASS_MANY_HCTX_SLOW, true, "mq-deadline", NULL);
        /* release unknown: protected; release 6.10 and later: zoned disks are ordinary */
        zns.scheduler = "[mq-deadline] none";
        zns.kernel = "garbage";
        eval(&zns, NULL, DISK_CLASS_FAST_MULTIQUEUE, true, "mq-deadline", NULL);
        zns.kernel = "6.10.0";
        eval(&zns, NULL, DISK_CLASS_FAST_MULTIQUEUE, true, "none", &p);
        CHECK(plan_has(&p, "nvme0n1: zoned=host-managed kernel=6.10.0 -> zone write plugging (6.10, dd291d77cc90) orders zoned writes"));
        plan_done(&p);
        zns.kernel = "6.9.12";          /* 6.9 < 6.10: numeric, not textual */
        eval(&zns, NULL, DISK_CLASS_FAST_MULTIQUEUE, true, "mq-deadline", NULL);
        /* the hidden multipath path device of a ZNS namespace */
        Disk path = zns;
        path.name = "nvme0c0n1";
        path.multipath = MULTIPATH_NVME_PATH;
        path.kernel = NULL;
        eval(&path, NULL, DISK_CLASS_FAST_MULTIQUEUE, true, "mq-deadline", &p);
        CHECK(plan_has(&p, "nvme0c0n1: multipath=nvme-path"));
        CHECK(plan_has(&p, "(rule elevator-zoned)"));
        plan_done(&p);

        /* policy/elevator validation: only mq-deadline or auto on such a disk */
        _cleanup_(disk_facts_freep) DiskFacts *f = make(&zns);
        free(f->kernel_release);
        f->kernel_release = strdup("6.1.0");
        _cleanup_free_ char *v = NULL, *exp = NULL;
        CHECK_INT(policy_override_validate(KNOB_ELEVATOR, "none", 4, f, NULL, &v), -EINVAL);
        CHECK_INT(policy_override_validate(KNOB_ELEVATOR, "mq-deadline", 11, f, NULL, &v), 0);
        CHECK_STR(v, "mq-deadline");
        exp = policy_override_expected(KNOB_ELEVATOR, f, NULL);
        CHECK(exp && strstr(exp, "\"mq-deadline\", \"keep\" or \"auto\": zoned=host-managed"));
}

/* Item 3: an elevator is available when listed, built in or loadable. */
static void test_loadable(void) {
        Plan p;
        /* config Elevator=bfq on a disk offering "[mq-deadline] none", bfq.ko in modules.dep */
        Disk d = { .name = "sdc", .has_mq = true, .n_hctx = 1, .rotational = TRISTATE_YES,
                   .shared_tags = TRISTATE_NO, .scheduler = "[mq-deadline] none", .transport = "scsi", .driver = "ahci",
                   .loadable = "bfq" };
        _cleanup_(policy_overrides_done) PolicyOverrides o = {};
        CHECK_INT(policy_overrides_set(&o, KNOB_ELEVATOR, "bfq"), 0);
        o.origin[KNOB_ELEVATOR] = "config [Device:hdd]";
        eval(&d, &o, DISK_CLASS_SINGLE_QUEUE_ROTATIONAL, true, "bfq", &p);
        CHECK(plan_has(&p, "sdc: config [Device:hdd] elevator=bfq elevator=mq-deadline -> elevator=bfq (rule config)"));
        CHECK(plan_has(&p, "sdc: elevator=bfq not listed in queue/scheduler -> available: loadable module (modules.dep)"));
        plan_done(&p);
        /* not loadable: refused as before */
        d.loadable = NULL;
        eval(&d, &o, DISK_CLASS_SINGLE_QUEUE_ROTATIONAL, true, NULL, &p);
        CHECK(plan_has(&p, "override not offered by the device"));
        plan_done(&p);
        /* built in (not listed) counts too */
        d.builtin = "bfq";
        eval(&d, &o, DISK_CLASS_SINGLE_QUEUE_ROTATIONAL, true, "bfq", &p);
        CHECK(plan_has(&p, "-> available: built in (modules.builtin)"));
        plan_done(&p);
        /* the class list reaches for a loadable one: mq-deadline as a module on a disk showing [none] only */
        Disk h = { .name = "sdd", .has_mq = true, .n_hctx = 1, .rotational = TRISTATE_YES, .shared_tags = TRISTATE_NO,
                   .scheduler = "[none]", .loadable = "mq-deadline" };
        eval(&h, NULL, DISK_CLASS_SINGLE_QUEUE_ROTATIONAL, true, "mq-deadline", &p);
        CHECK(plan_has(&p, "available=none,mq-deadline(module) -> elevator=mq-deadline (rule elevator-single-queue-rotational)"));
        plan_done(&p);

        /* policy/elevator=bfq: accepted when loadable, EINVAL when not */
        d.builtin = NULL;
        d.loadable = "bfq";
        _cleanup_(disk_facts_freep) DiskFacts *f = make(&d);
        _cleanup_free_ char *v = NULL, *exp = NULL;
        CHECK_INT(policy_override_validate(KNOB_ELEVATOR, "bfq\n", 4, f, NULL, &v), 0);
        CHECK_STR(v, "bfq");
        CHECK_INT(policy_override_validate(KNOB_ELEVATOR, "kyber", 5, f, NULL, &v), -EINVAL);
        exp = policy_override_expected(KNOB_ELEVATOR, f, NULL);
        CHECK_STR(exp, "one of the elevators the device offers (mq-deadline none bfq(module, loaded on the write)), \"keep\", or \"auto\"");
}

/* Item 4: dm-multipath legs and request-based maps. */
static void test_multipath(void) {
        Plan p;
        /* the leg sda of dm-3 under mq-deadline: none (as distributions do), not mq-deadline */
        Disk leg = { .name = "sda", .has_mq = true, .n_hctx = 1, .rotational = TRISTATE_YES, .shared_tags = TRISTATE_NO,
                     .scheduler = "[mq-deadline] kyber bfq none", .transport = "scsi", .driver = "qla2xxx",
                     .multipath = MULTIPATH_LEG };
        eval(&leg, NULL, DISK_CLASS_MULTIPATH_LEG, true, "none", &p);
        CHECK(plan_has(&p, "sda: multipath=leg (holders/dm-3 dm/uuid mpath-"));
        CHECK(plan_has(&p, "(rule multipath-leg)"));
        CHECK(plan_has(&p, "sda: class=multipath-leg elevator=mq-deadline wanted=none"));
        plan_done(&p);
        /* a leg already at none (distribution rule): kept, nothing written */
        leg.scheduler = "mq-deadline kyber bfq [none]";
        eval(&leg, NULL, DISK_CLASS_MULTIPATH_LEG, true, "none", NULL);
        /* a many-hctx leg behind megaraid_sas is still a leg */
        leg.n_hctx = 64;
        leg.shared_tags = TRISTATE_YES;
        eval(&leg, NULL, DISK_CLASS_MULTIPATH_LEG, true, "none", NULL);
        /* a leg of a bio-based map: bios pass its elevator, tuned as itself */
        leg.multipath = MULTIPATH_LEG_BIO;
        leg.scheduler = "mq-deadline kyber bfq [none]";
        eval(&leg, NULL, DISK_CLASS_MANY_HCTX_SLOW, true, "mq-deadline", &p);
        CHECK(plan_has(&p, "(rule multipath-leg-bio)"));
        plan_done(&p);
        /* the request-based map dm-3: not forced to none as "stacked", tuned by its own queue */
        Disk map = { .name = "dm-3", .has_mq = true, .n_hctx = 1, .rotational = TRISTATE_YES, .shared_tags = TRISTATE_NO,
                     .scheduler = "[mq-deadline] kyber bfq none", .transport = "dm", .driver = "device-mapper",
                     .stacked = true, .multipath = MULTIPATH_MAP };
        eval(&map, NULL, DISK_CLASS_SINGLE_QUEUE_ROTATIONAL, true, "mq-deadline", &p);
        CHECK(plan_has(&p, "dm-3: multipath=map"));
        CHECK(plan_has(&p, "(rule multipath-map)"));
        plan_done(&p);
        map.rotational = TRISTATE_NO;
        eval(&map, NULL, DISK_CLASS_SINGLE_QUEUE_FAST, true, "mq-deadline", NULL);
        /* any other request-based dm map and loop stay stacked */
        map.multipath = MULTIPATH_NONE;
        eval(&map, NULL, DISK_CLASS_STACKED, true, "none", NULL);
        /* bio-based stacks (md, dm-linear): no blk-mq queue, never written */
        Disk md = { .name = "md0", .has_mq = false, .rotational = TRISTATE_YES, .shared_tags = TRISTATE_UNKNOWN,
                    .scheduler = "none", .transport = "md", .driver = "md", .stacked = true };
        eval(&md, NULL, DISK_CLASS_NO_MQ, false, NULL, NULL);
        /* legacy names: known, with the blk-mq name to use */
        const char *instead = NULL;
        CHECK(elevator_name_is_legacy("cfq", &instead) && streq_ptr(instead, "bfq"));
        CHECK(elevator_name_is_legacy("noop", &instead) && streq_ptr(instead, "none"));
        CHECK(elevator_name_is_legacy("deadline", NULL));
        CHECK(!elevator_name_is_legacy("mq-deadline", NULL) && !elevator_name_is_legacy("bfq", NULL) &&
              !elevator_name_is_legacy("none", NULL) && !elevator_name_is_legacy(NULL, NULL));
        /* [Class:multipath-leg] is a class of its own in config */
        CHECK_INT(disk_class_from_string("multipath-leg"), DISK_CLASS_MULTIPATH_LEG);
}

static void test_overrides(void) {
        Disk d = { .name = "sdh", .has_mq = true, .n_hctx = 8, .rotational = TRISTATE_YES,
                   .shared_tags = TRISTATE_NO, .scheduler = "[none] mq-deadline kyber\n",
                   .transport = "scsi", .driver = "sd" };
        Plan p;

        /* an override the device does not list: left alone (not the class default either) */
        PolicyOverrides bfq = { .elevator = (char *) "bfq" };
        eval(&d, &bfq, DISK_CLASS_MANY_HCTX_SLOW, true, NULL, &p);
        CHECK_STR(line(&p, 1), "sdh: policy/elevator=bfq available=none,mq-deadline,kyber -> elevator left alone,"
                               " override not offered by the device (rule override)");
        plan_done(&p);

        /* an override it lists wins over the class policy */
        PolicyOverrides kyber = { .elevator = (char *) "kyber" };
        eval(&d, &kyber, DISK_CLASS_MANY_HCTX_SLOW, true, "kyber", &p);
        CHECK_STR(line(&p, 1), "sdh: policy/elevator=kyber elevator=none -> elevator=kyber (rule override)");
        plan_done(&p);
        PolicyOverrides none = { .elevator = (char *) "none" };
        eval(&d, &none, DISK_CLASS_MANY_HCTX_SLOW, true, "none", &p);
        CHECK_STR(line(&p, 1), "sdh: policy/elevator=none elevator=none -> elevator=none, kept (rule override)");
        plan_done(&p);

        /* disabled: not managed, no elevator */
        PolicyOverrides off = { .disabled = true };
        eval(&d, &off, DISK_CLASS_MANY_HCTX_SLOW, false, NULL, &p);
        CHECK_STR(line(&p, 1), "sdh: policy/enabled=0 -> left alone (rule override)");
        plan_done(&p);

        /* overrides never make an unknown disk managed */
        Disk unk = d;
        unk.rotational = TRISTATE_UNKNOWN;
        eval(&unk, &kyber, DISK_CLASS_UNKNOWN, false, NULL, NULL);
}

/* The explain line about irq_affinity, or NULL. */
static const char *irq_line(const Plan *p) {
        PLAN_FOREACH_ENTRY(l, p)
                if (strstr(l->text, "irq_affinity"))
                        return l->text;
        return NULL;
}

/* n_managed managed and n_unmanaged unmanaged queue vectors on d (4 hctx, many-hctx-slow). */
static DiskFacts *with_vectors(const Disk *d, size_t n_unmanaged, size_t n_managed) {
        DiskFacts *f = make(d);
        f->irqs = calloc(n_unmanaged + n_managed, sizeof(IrqFacts));
        for (size_t i = 0; i < n_unmanaged + n_managed; i++)
                f->irqs[f->n_irqs++] = (IrqFacts) { .irq = 40 + i, .name = strdup("megasas0-msix"), .queue = true,
                                                    .hctx = -1, .managed = i < n_unmanaged ? TRISTATE_NO : TRISTATE_YES };
        return f;
}

static void test_irq_managed_per_hctx(void) {
        Disk d = { .name = "sdm", .has_mq = true, .n_hctx = 4, .rotational = TRISTATE_YES,
                   .shared_tags = TRISTATE_YES, .scheduler = "[mq-deadline] none\n",
                   .transport = "scsi", .driver = "megaraid_sas" };
        Plan p = {};

        /* megaraid_sas-like: one unmanaged low-latency pre-vector, one managed vector per hctx */
        _cleanup_(disk_facts_freep) DiskFacts *a = with_vectors(&d, 1, 4);
        CHECK(irq_affinity_hctx_all_managed(a));
        CHECK(!irq_affinity_needs_map(a));
        CHECK_INT(policy_evaluate(a, NULL, &config, NULL, &p), 0);
        CHECK_NULL(p.irq_affinity);
        CHECK_STR(irq_line(&p), "sdm: queue vectors=5 managed=4 hctx=4 -> irq_affinity left alone: every hctx has its own"
                                " kernel-managed vector, the other 1 serve no hctx (rule irq-affinity-managed)");
        plan_done(&p);

        /* fewer managed vectors than hctx: an unmanaged one may serve an hctx, the map is needed */
        _cleanup_(disk_facts_freep) DiskFacts *b = with_vectors(&d, 2, 3);
        CHECK(!irq_affinity_hctx_all_managed(b));
        CHECK(irq_affinity_needs_map(b));

        /* nothing unmanaged: no map needed, and the plain "managed by kernel" rule */
        _cleanup_(disk_facts_freep) DiskFacts *c = with_vectors(&d, 0, 4);
        CHECK(!irq_affinity_needs_map(c));
        CHECK_INT(policy_evaluate(c, NULL, &config, NULL, &p), 0);
        CHECK(irq_line(&p) && strstr(irq_line(&p), "(rule irq-affinity-managed)"));
        plan_done(&p);

        /* managed state not known (kernel < 6.12, no debugfs): the map is needed */
        c->irqs[0].managed = TRISTATE_UNKNOWN;
        CHECK(irq_affinity_needs_map(c));

        /* a class that keeps IRQs says so, and names the setting */
        Disk one = d;
        one.n_hctx = 1;
        one.shared_tags = TRISTATE_NO;
        _cleanup_(disk_facts_freep) DiskFacts *k = with_vectors(&one, 1, 0);
        CHECK_INT(policy_evaluate(k, NULL, &config, NULL, &p), 0);
        CHECK_STR(irq_line(&p), "sdm: class=single-queue-rotational queue vectors=1 -> irq_affinity left alone: the class does not "
                                "place IRQs (IrqAffinity=keep for [Class:single-queue-rotational]) (rule irq-affinity-single-queue-rotational)");
        plan_done(&p);
        /* after an irq_affinity override taken back, blkmqd puts its placement back: no "left alone" */
        PolicyHistory placed = POLICY_HISTORY_INIT;
        placed.irq_written = 1;
        CHECK_INT(policy_evaluate(k, &placed, &config, NULL, &p), 0);
        CHECK_STR(irq_line(&p), "sdm: class=single-queue-rotational queue vectors=1 (1 placed by blkmqd) -> no wish, blkmqd's "
                                "write undone: irq_affinity before blkmqd restored (IrqAffinity=keep for [Class:single-queue-rotational]) "
                                "(rule irq-affinity-single-queue-rotational)");
        CHECK(!p.irq_affinity);
        plan_done(&p);

        /* no hctx: never "all managed" */
        Disk none = d;
        none.n_hctx = 0;
        _cleanup_(disk_facts_freep) DiskFacts *e = with_vectors(&none, 0, 2);
        CHECK(!irq_affinity_hctx_all_managed(e));
}

static void test_class_strings(void) {
        for (DiskClass c = 0; c < _DISK_CLASS_MAX; c++) {
                CHECK(disk_class_to_string(c) != NULL);
                CHECK_INT(disk_class_from_string(disk_class_to_string(c)), c);
        }
        CHECK_STR(disk_class_to_string(DISK_CLASS_MANY_HCTX_SLOW), "many-hctx-slow");
        CHECK_STR(disk_class_to_string(DISK_CLASS_SINGLE_QUEUE_ROTATIONAL), "single-queue-rotational");
        CHECK_STR(disk_class_to_string(DISK_CLASS_NO_MQ), "no-mq");
        CHECK_NULL(disk_class_to_string(_DISK_CLASS_MAX));
        CHECK_NULL(disk_class_to_string(-1));
        CHECK_INT(disk_class_from_string("fast"), _DISK_CLASS_INVALID);
}

static void test_defaults(void) {
        _cleanup_free_ char *a = strv_join(config.classes[DISK_CLASS_MANY_HCTX_SLOW].elevators, ",");
        _cleanup_free_ char *b = strv_join(config.classes[DISK_CLASS_FAST_MULTIQUEUE].elevators, ",");
        _cleanup_free_ char *c = strv_join(config.classes[DISK_CLASS_STACKED].elevators, ",");
        _cleanup_free_ char *d = strv_join(config.classes[DISK_CLASS_SHARED_TAGS].elevators, ",");
        _cleanup_free_ char *e = strv_join(config.classes[DISK_CLASS_SINGLE_QUEUE_ROTATIONAL].elevators, ",");
        CHECK_STR(a, "mq-deadline");
        CHECK_STR(b, "none,kyber");
        CHECK_STR(c, "none");
        CHECK_STR(d, "mq-deadline,none,kyber");
        CHECK_STR(e, "mq-deadline,bfq");
        /* no class's default list may contain bfq where a host tagset or many hctx is possible */
        CHECK(!strv_contains(config.classes[DISK_CLASS_MANY_HCTX_SLOW].elevators, "bfq"));
        CHECK(!strv_contains(config.classes[DISK_CLASS_SHARED_TAGS].elevators, "bfq"));
        /* every elevator a class leaves out on purpose has evidence, and none that it wants does */
        for (DiskClass k = 0; k < _DISK_CLASS_MAX; k++)
                STRV_FOREACH(w, config.classes[k].elevators)
                        CHECK_NULL(policy_elevator_evidence(k, *w));
        CHECK(policy_elevator_evidence(DISK_CLASS_MANY_HCTX_SLOW, "bfq") != NULL);
        CHECK(policy_elevator_evidence(DISK_CLASS_SHARED_TAGS, "bfq") != NULL);
        CHECK(policy_elevator_evidence(DISK_CLASS_FAST_MULTIQUEUE, "mq-deadline") != NULL);
        CHECK(policy_elevator_evidence(DISK_CLASS_STACKED, "mq-deadline") != NULL);
        CHECK_NULL(config.classes[DISK_CLASS_SINGLE_QUEUE_FAST].elevators);
        CHECK_NULL(config.classes[DISK_CLASS_NO_MQ].elevators);
        CHECK_NULL(config.classes[DISK_CLASS_UNKNOWN].elevators);
}

/*
 * Issue 13: the elevator is decided from the one blkmqd found (PolicyHistory.elevator_before) and explain
 * shows both; the nr_requests reset of an elevator switch is explained and an override capped
 * to what the new elevator takes; an admin's enabled=1 wins over a config Enabled=no.
 */
static void test_state_after_writes(void) {
        Disk sq = { .name = "vda", .has_mq = true, .n_hctx = 1, .rotational = TRISTATE_NO,
                    .shared_tags = TRISTATE_NO, .scheduler = "[none] mq-deadline kyber bfq\n",
                    .transport = "virtio", .driver = "virtio_blk" };
        Plan p = {};

        /* single-queue-fast keeps what it finds: with blkmqd's none over the disk's
         * mq-deadline, "keep" means mq-deadline (an override that went back to auto) */
        {
                _cleanup_(disk_facts_freep) DiskFacts *f = make(&sq);
                PolicyHistory h = POLICY_HISTORY_INIT;      /* the strings are not owned */
                h.elevator_before = (char *) "mq-deadline";
                f->nr_requests = 64;
                CHECK_INT(policy_evaluate(f, &h, &config, NULL, &p), 0);
                CHECK_INT(p.class, DISK_CLASS_SINGLE_QUEUE_FAST);
                CHECK_STR(p.elevator, "mq-deadline");
                CHECK_STR(line(&p, 1), "vda: class=single-queue-fast elevator=none (mq-deadline before blkmqd switched it) -> "
                                       "elevator=mq-deadline, restored: any elevator is fine for this class (rule elevator-single-queue-fast)");
                CHECK(!plan_has(&p, "kept"));
                /* the planned switch back resets nr_requests: said */
                CHECK(plan_has(&p, "vda: nr_requests=64 elevator none -> mq-deadline: the switch resets nr_requests to mq-deadline's default"));
                plan_done(&p);
        }
        /* "kept" only for a value blkmqd did not write (issue: `set vda elevator bfq` explained
         * "elevator=bfq, kept" while applied/ said "ok: bfq (was mq-deadline)"; the reset said
         * "kept" for the mq-deadline it put back; the same for rq_affinity and nr_requests) */
        {
                Disk b = sq;
                b.scheduler = "none mq-deadline kyber [bfq]\n";
                _cleanup_(disk_facts_freep) DiskFacts *f = make(&b);
                PolicyHistory h = POLICY_HISTORY_INIT;      /* the strings are not owned */
                h.elevator_before = (char *) "mq-deadline";
                PolicyOverrides o = { .elevator = (char *) "bfq" };
                CHECK_INT(policy_evaluate(f, &h, &config, &o, &p), 0);
                CHECK_STR(p.elevator, "bfq");
                CHECK_STR(line(&p, 1), "vda: policy/elevator=bfq elevator=bfq (mq-deadline before blkmqd switched it) -> elevator=bfq (rule override)");
                CHECK(!plan_has(&p, "kept"));
                plan_done(&p);
                /* the same override on a disk that had bfq: kept */
                h.elevator_before = NULL;
                CHECK_INT(policy_evaluate(f, &h, &config, &o, &p), 0);
                CHECK_STR(line(&p, 1), "vda: policy/elevator=bfq elevator=bfq -> elevator=bfq, kept (rule override)");
                plan_done(&p);
                /* the reset: the class keeps what blkmqd found, which is put back */
                h.elevator_before = (char *) "mq-deadline";
                CHECK_INT(policy_evaluate(f, &h, &config, NULL, &p), 0);
                CHECK_STR(p.elevator, "mq-deadline");
                CHECK(plan_has(&p, "vda: class=single-queue-fast elevator=bfq (mq-deadline before blkmqd switched it) -> "
                                   "elevator=mq-deadline, restored: "));
                CHECK(!plan_has(&p, "kept"));
                plan_done(&p);
        }
        {
                /* rq_affinity: a class value blkmqd wrote is no "kept"; an override taken back is undone */
                PolicyConfig c = {};
                CHECK_INT(test_policy_config_init(&c, false, "*"), 0);
                _cleanup_(disk_facts_freep) DiskFacts *f = make(&sq);
                f->rq_affinity = 2;
                PolicyHistory h = POLICY_HISTORY_INIT;      /* the strings are not owned */
                h.rq_affinity_before = 1;
                c.classes[DISK_CLASS_SINGLE_QUEUE_FAST].rq_affinity = 2;
                CHECK_INT(policy_evaluate(f, &h, &c, NULL, &p), 0);
                CHECK(plan_has(&p, "vda: class=single-queue-fast rq_affinity=2 (1 before blkmqd wrote it) -> rq_affinity=2 "
                                   "(rule rq-affinity-single-queue-fast)"));
                CHECK(!plan_has(&p, "rq_affinity=2, kept"));
                plan_done(&p);
                c.classes[DISK_CLASS_SINGLE_QUEUE_FAST].rq_affinity = -1;
                CHECK_INT(policy_evaluate(f, &h, &c, NULL, &p), 0);
                CHECK(plan_has(&p, "vda: class=single-queue-fast rq_affinity=2 (1 before blkmqd wrote it) -> no wish, blkmqd's write "
                                   "undone: rq_affinity=1 restored"));
                plan_done(&p);
                /* nr_requests written for an override taken back */
                f->nr_requests = 32;
                h.nr_requests_before = 64;
                CHECK_INT(policy_evaluate(f, &h, &c, NULL, &p), 0);
                CHECK(plan_has(&p, "vda: nr_requests=32 (64 before blkmqd wrote it) -> no wish, blkmqd's write undone: "
                                   "nr_requests=64 restored"));
                CHECK(!plan_has(&p, "nr_requests left alone"));
                CHECK(!p.nr_requests);
                plan_done(&p);
                policy_config_done(&c);
        }
        /* a class decision blkmqd carried out stays the decision: stacked wants none, it has it */
        {
                Disk lo = { .name = "loop0", .has_mq = true, .n_hctx = 1, .rotational = TRISTATE_YES,
                            .shared_tags = TRISTATE_NO, .scheduler = "[none] mq-deadline kyber bfq\n",
                            .transport = "loop", .driver = "loop", .stacked = true };
                _cleanup_(disk_facts_freep) DiskFacts *f = make(&lo);
                PolicyHistory h = POLICY_HISTORY_INIT;      /* the strings are not owned */
                h.elevator_before = (char *) "mq-deadline";
                f->nr_requests = 64;
                config.manage_virtual = true;
                CHECK_INT(policy_evaluate(f, &h, &config, NULL, &p), 0);
                config.manage_virtual = false;
                CHECK_STR(p.elevator, "none");
                CHECK_STR(line(&p, 1), "loop0: class=stacked elevator=none (mq-deadline before blkmqd switched it) wanted=none "
                                       "available=none,mq-deadline,kyber,bfq -> elevator=none (rule elevator-stacked)");
                CHECK(plan_has(&p, "loop0: nr_requests=64: reset by the kernel when blkmqd switched the elevator mq-deadline -> none"));
                plan_done(&p);
        }
        /* evidence lines name the elevator found and the one the kernel has */
        {
                Disk hba = { .name = "sda", .has_mq = true, .n_hctx = 64, .rotational = TRISTATE_YES,
                             .shared_tags = TRISTATE_YES, .scheduler = "[mq-deadline] kyber bfq none\n",
                             .transport = "scsi", .driver = "megaraid_sas" };
                _cleanup_(disk_facts_freep) DiskFacts *f = make(&hba);
                PolicyHistory h = POLICY_HISTORY_INIT;      /* the strings are not owned */
                h.elevator_before = (char *) "bfq";
                CHECK_INT(policy_evaluate(f, &h, &config, NULL, &p), 0);
                CHECK_STR(p.elevator, "mq-deadline");
                CHECK(plan_has(&p, "sda: class=many-hctx-slow elevator=mq-deadline (bfq before blkmqd switched it) -> bfq not wanted here: "));
                CHECK(!plan_has(&p, "elevator=bfq ->"));
                plan_done(&p);
        }
        /* an nr_requests override above what none takes: capped, after the switch */
        {
                Disk dl = sq;
                dl.scheduler = "none [mq-deadline] kyber bfq\n";
                _cleanup_(disk_facts_freep) DiskFacts *f = make(&dl);
                f->nr_requests = 256;
                PolicyOverrides o = { .elevator = (char *) "none", .nr_requests = (char *) "1024" };
                CHECK_INT(policy_evaluate(f, NULL, &config, &o, &p), 0);
                CHECK_STR(p.elevator, "none");
                CHECK_STR(p.nr_requests, "64");         /* make(): nr_tags 64 */
                CHECK(plan_has(&p, "vda: policy/nr_requests=1024 nr_requests=256 -> nr_requests=64, capped: the kernel takes "
                                   "4..64 with elevator none, written after the elevator switch mq-deadline -> none (which resets it) (rule override)"));
                plan_done(&p);
                /* under an elevator the same override is taken as it is */
                PolicyOverrides o2 = { .nr_requests = (char *) "1024" };
                CHECK_INT(policy_evaluate(f, NULL, &config, &o2, &p), 0);
                CHECK_STR(p.nr_requests, "1024");
                plan_done(&p);
        }
        /* policy/enabled: an admin's 1 wins over a config Enabled=no; "auto" leaves it to the config */
        {
                PolicyConfig c = {};
                CHECK_INT(test_policy_config_init(&c, false, "*"), 0);
                c.rules = calloc(1, sizeof(DeviceRule));
                c.n_rules = 1;
                c.rules[0] = (DeviceRule) { .name = strdup("all"), .match_hwq_min = -1, .match_hwq_max = -1,
                                            .match_rotational = TRISTATE_UNKNOWN, .has_enabled = true };
                c.rules[0].settings.disabled = true;
                _cleanup_(disk_facts_freep) DiskFacts *f = make(&sq);
                PolicyOverrides automatic = {}, on = { .enabled_set = true }, off = { .enabled_set = true, .disabled = true };
                CHECK_INT(policy_evaluate(f, NULL, &c, &automatic, &p), 0);
                CHECK(!p.manage);
                plan_done(&p);
                CHECK_INT(policy_evaluate(f, NULL, &c, &on, &p), 0);
                CHECK(p.manage);
                plan_done(&p);
                CHECK_INT(policy_evaluate(f, NULL, &c, &off, &p), 0);
                CHECK(!p.manage);
                plan_done(&p);
                policy_config_done(&c);
        }
}

/*
 * Virtual devices (policies/defaults.c virtual_drivers[]): every driver of the table is listed
 * with its class and not written by default; [Manager] VirtualDevices=manage, a matching
 * [Device:] Enabled=yes or policy/enabled 1 opts one in; Enabled=no / policy/enabled 0 still
 * win; drivers of hardware are untouched by any of it.
 */
static void test_virtual_devices(void) {
        static const struct {
                const char *name, *driver, *transport, *scheduler;
                bool has_mq, stacked;
                DiskClass cls;
                const char *elevator;   /* planned when opted in */
        } rows[] = {
                { "loop3",  "loop",       "loop",     "none [mq-deadline] kyber bfq", true,  true,  DISK_CLASS_STACKED,           "none" },
                { "nullb0", "null_blk",   "null_blk", "[mq-deadline] none",           true,  false, DISK_CLASS_FAST_MULTIQUEUE,   "none" },
                { "sdq",    "scsi_debug", "scsi",     "[none] mq-deadline",           true,  false, DISK_CLASS_FAST_MULTIQUEUE,   "none" },
                { "ublkb0", "ublk",       "ublk",     "[mq-deadline] none",           true,  false, DISK_CLASS_FAST_MULTIQUEUE,   "none" },
                { "ram0",   "brd",        "brd",      "none",                         false, false, DISK_CLASS_NO_MQ,             NULL },
                { "zram1",  "zram",       "zram",     "none",                         false, false, DISK_CLASS_NO_MQ,             NULL },
        };
        Plan p;

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                Disk d = { .name = rows[i].name, .has_mq = rows[i].has_mq, .n_hctx = rows[i].has_mq ? 4 : 0,
                           .rotational = TRISTATE_NO, .shared_tags = rows[i].has_mq ? TRISTATE_NO : TRISTATE_UNKNOWN,
                           .scheduler = rows[i].scheduler, .transport = rows[i].transport,
                           .driver = rows[i].driver, .stacked = rows[i].stacked };
                if (rows[i].stacked)
                        d.n_hctx = 1;
                CHECK_INT_CASE(!!(policy_virtual_driver(rows[i].driver) != NULL), 1, "%s", rows[i].name);
                eval(&d, NULL, rows[i].cls, false, NULL, &p);
                CHECK_INT_CASE(!!(plan_has(&p, "-> a virtual device: ")), 1, "%s", rows[i].name);
                CHECK_INT_CASE(!!(!rows[i].has_mq || plan_has(&p, "listed, not written")), 1, "%s", rows[i].name);
                plan_done(&p);

                config.manage_virtual = true;
                eval(&d, NULL, rows[i].cls, rows[i].has_mq, rows[i].elevator, &p);
                CHECK_INT_CASE(!!(!rows[i].has_mq || plan_has(&p, "opted in by [Manager] VirtualDevices=manage")), 1, "%s", rows[i].name);
                plan_done(&p);
                PolicyOverrides off = { .disabled = true, .enabled_set = true };
                eval(&d, &off, rows[i].cls, false, NULL, &p);         /* policy/enabled 0 still wins */
                plan_done(&p);
                config.manage_virtual = false;

                PolicyOverrides on = { .enabled_set = true };         /* policy/enabled 1 */
                eval(&d, &on, rows[i].cls, rows[i].has_mq, rows[i].elevator, &p);
                CHECK_INT_CASE(!!(!rows[i].has_mq || plan_has(&p, "opted in by policy/enabled=1")), 1, "%s", rows[i].name);
                plan_done(&p);
        }

        /* a [Device:] section with Enabled=yes opts in what it matches, Enabled=no does not */
        Disk nb = { .name = "nullb1", .has_mq = true, .n_hctx = 4, .rotational = TRISTATE_NO,
                    .shared_tags = TRISTATE_NO, .scheduler = "[mq-deadline] none", .transport = "null_blk",
                    .driver = "null_blk" };
        PolicyConfig c = {};
        CHECK_INT(test_policy_config_init(&c, false, "*"), 0);
        c.rules = calloc(1, sizeof(DeviceRule));
        c.n_rules = 1;
        c.rules[0] = (DeviceRule) { .name = strdup("nb"), .label = strdup("config [Device:nb]"),
                                    .match_driver = strdup("null_blk"), .match_hwq_min = -1, .match_hwq_max = -1,
                                    .match_rotational = TRISTATE_UNKNOWN, .has_enabled = true };
        c.rules[0].settings.origin[POLICY_FILE_ENABLED] = c.rules[0].label;
        _cleanup_(disk_facts_freep) DiskFacts *f = make(&nb);
        CHECK_INT(policy_evaluate(f, NULL, &c, NULL, &p), 0);
        CHECK(p.manage);
        CHECK_STR(p.elevator, "none");
        CHECK(plan_has(&p, "nullb1: driver=null_blk -> a virtual device: no storage at all, requests complete without data "
                           "(drivers/block/null_blk/main.c); tuned as its class, opted in by config [Device:nb] Enabled=yes (rule virtual-device)"));
        plan_done(&p);
        c.rules[0].settings.disabled = true;
        c.manage_virtual = true;
        CHECK_INT(policy_evaluate(f, NULL, &c, NULL, &p), 0);
        CHECK(!p.manage);
        CHECK(plan_has(&p, "nullb1: config [Device:nb] Enabled=no -> left alone (rule config)"));
        plan_done(&p);
        policy_config_done(&c);

        /* hardware drivers are not in the table */
        static const char * const hardware[] = { "virtio_blk", "nvme", "sd", "megaraid_sas", "nbd", "device-mapper", "md" };
        for (size_t i = 0; i < ELEMENTSOF(hardware); i++)
                CHECK_INT_CASE(!!(policy_virtual_driver(hardware[i]) == NULL), 1, "%s", hardware[i]);
        CHECK(policy_virtual_driver(NULL) == NULL);

        /* facts/virtual: 1, 0, or unknown with the driver's reason */
        _cleanup_(disk_facts_freep) DiskFacts *v = make(&nb);
        _cleanup_free_ char *one = NULL, *zero = NULL, *unk = NULL;
        CHECK_INT(disk_facts_render(v, FACT_VIRTUAL, &one), 0);
        CHECK_STR(one, "1\n");
        free_and_strdup(&v->driver, "virtio_blk");
        CHECK_INT(disk_facts_render(v, FACT_VIRTUAL, &zero), 0);
        CHECK_STR(zero, "0\n");
        disk_facts_set_unknown(v, FACT_DRIVER, "virtual device without a parent device");
        CHECK_INT(disk_facts_render(v, FACT_VIRTUAL, &unk), 0);
        CHECK_STR(unk, "unknown: driver unknown (virtual device without a parent device)\n");
}

/* policy_modules_merge(): one entry per (module, param) in the order first wanted; a value two
 * disks disagree on is a conflict (the first disk's stays); a wish to write wins over deferred
 * ones, which merge to the last of them with its owner. */
static void test_modules_merge(void) {
        DiskFacts fa = { .name = (char *) "sda", .root_disk = true }, fb = { .name = (char *) "sdb" },
                  fc = { .name = (char *) "sdc" };
        Plan pa = {}, pb = {}, pc = {};
        CHECK_INT(module_wishes_add(&pa.modules, &pa.n_modules, "megaraid_sas", "host_tagset_enable", "0"), 0);
        CHECK_INT(module_wishes_add(&pb.modules, &pb.n_modules, "megaraid_sas", "host_tagset_enable", "1"), 0);
        CHECK_INT(module_wishes_add(&pb.modules_deferred, &pb.n_modules_deferred, "nvme", "poll_queues", "0"), 0);
        CHECK_INT(module_wishes_add(&pc.modules_deferred, &pc.n_modules_deferred, "nvme", "poll_queues", "2"), 0);
        CHECK_INT(module_wishes_add(&pc.modules_deferred, &pc.n_modules_deferred, "megaraid_sas", "host_tagset_enable", "0"), 0);
        if (pc.modules_deferred)
                pc.modules_deferred[0].owner = strdup("/etc/modprobe.d/nvme.conf");
        PolicyPeer peers[] = { { "sda", &fa, &pa }, { "sdb", &fb, &pb }, { "sdc", &fc, &pc } };
        ModuleMerged *m = NULL;
        size_t n = 0;
        CHECK_INT(policy_modules_merge(peers, ELEMENTSOF(peers), &m, &n), 0);
        CHECK_INT(n, 2);
        if (n == 2) {
                CHECK_STR(m[0].module, "megaraid_sas");
                CHECK_STR(m[0].wanted, "0");            /* the first disk's */
                CHECK_STR(m[0].wanted_by, "sda sdb");   /* sdc's deferred wish does not join a written one */
                CHECK(m[0].conflict);
                CHECK(m[0].root_disk);
                CHECK(!m[0].deferred);
                CHECK_STR(m[1].module, "nvme");
                CHECK_STR(m[1].wanted, "2");            /* deferred only: the last of them */
                CHECK_STR(m[1].wanted_by, "sdb sdc");
                CHECK_STR(m[1].owner, "/etc/modprobe.d/nvme.conf");
                CHECK(m[1].deferred && !m[1].conflict && !m[1].root_disk);
        }
        module_merged_free(m, n);
        CHECK_INT(policy_modules_merge(peers, 0, &m, &n), 0);
        CHECK_INT(n, 0);
        module_merged_free(m, n);
        plan_done(&pa);
        plan_done(&pb);
        plan_done(&pc);
}

int main(void) {
        /* the flag of every hand-made disk is taken as it is; test_speed_*() use their own config */
        if (test_policy_config_init(&config, false, "*") < 0)
                return 1;
        test_class_strings();
        test_defaults();
        test_class_boundaries();
        test_seed_setups();
        test_many_hctx_slow_never_unlisted();
        test_overrides();
        test_irq_managed_per_hctx();
        test_zoned();
        test_loadable();
        test_multipath();
        test_state_after_writes();
        test_virtual_devices();
        test_modules_merge();
        policy_config_done(&config);
        return tap_finish("test-policy");
}
