/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for policies/facts.c: fact names, rendering, unknown reasons, kernel release. */
#include <errno.h>

#include "facts.h"
#include "macro.h"
#include "strv.h"
#include "tap.h"

static void check_render(const DiskFacts *f, Fact fact, const char *expected) {
        _cleanup_free_ char *s = NULL;
        int r = disk_facts_render(f, fact, &s);
        CHECK_INT(r, 0);
        if (r >= 0 && strcmp(s, expected) != 0)
                TAP_FAIL("render %s: got \"%s\", expected \"%s\"", fact_to_string(fact), s, expected);
        tap_checks++;
}

static void test_names(void) {
        static const char *expected[_FACT_MAX] = {
                "devnum", "size", "nr_hw_queues", "rotational", "elevator", "elevators", "rq_affinity",
                "nr_requests", "queue_depth", "driver", "transport", "scsi_host", "host_nr_hw_queues",
                "host_can_queue", "shared_tags", "sq_sched", "irq_vectors", "numa_node", "kernel_release",
                "stacked", "identity", "zoned", "elevators_loadable", "multipath", "virtual", "medium_rotation",
                "rotational_hint", "speed", "speed_source", "driver_module", "preempt_rt", "irq_threads_forced",
                "isolated_cpus", "transport_device",
        };
        for (Fact f = 0; f < _FACT_MAX; f++) {
                CHECK_STR(fact_to_string(f), expected[f]);      /* the README's file names */
                CHECK_INT(fact_from_string(expected[f]), f);
        }
        CHECK_NULL(fact_to_string(_FACT_MAX));
        CHECK_NULL(fact_to_string(-1));
        CHECK_INT(fact_from_string("nr_hw_queue"), _FACT_INVALID);
        CHECK_STR(tristate_to_string(TRISTATE_YES), "1");
        CHECK_STR(tristate_to_string(TRISTATE_NO), "0");
        CHECK_STR(tristate_to_string(TRISTATE_UNKNOWN), "unknown");
}

static void test_new_is_unknown_not_zero(void) {
        _cleanup_(disk_facts_freep) DiskFacts *f = disk_facts_new("sda");
        CHECK(f != NULL);
        CHECK_STR(f->name, "sda");
        CHECK_INT(f->rotational, TRISTATE_UNKNOWN);
        CHECK_INT(f->shared_tags, TRISTATE_UNKNOWN);
        CHECK_INT(f->sq_sched, TRISTATE_UNKNOWN);
        CHECK_INT(f->rq_affinity, -1);
        CHECK_INT(f->nr_requests, -1);
        CHECK_INT(f->queue_depth, -1);
        CHECK_INT(f->host_nr_hw_queues, -1);
        CHECK_INT(f->host_can_queue, -1);
        CHECK_INT(f->numa_node, -1);
        check_render(f, FACT_ROTATIONAL, "unknown\n");
}

static void test_render(void) {
        _cleanup_(disk_facts_freep) DiskFacts *f = disk_facts_new("sda");
        f->major = 8;
        f->minor = 16;
        f->size_bytes = UINT64_C(4000787030016);
        f->has_mq = true;
        f->n_hctx = 3;
        f->hctx = calloc(3, sizeof(HctxFacts));
        f->rotational = TRISTATE_YES;
        f->elevator = strdup("mq-deadline");
        strv_extend(&f->elevators, "mq-deadline");
        strv_extend(&f->elevators, "kyber");
        strv_extend(&f->elevators, "none");
        f->rq_affinity = 2;
        f->nr_requests = 256;
        f->queue_depth = 254;
        f->driver = strdup("megaraid_sas");
        f->transport = strdup("scsi");
        f->scsi_host = strdup("host0");
        f->host_nr_hw_queues = 64;
        f->host_can_queue = 4077;
        f->shared_tags = TRISTATE_YES;
        f->sq_sched = TRISTATE_NO;
        f->irqs = calloc(3, sizeof(IrqFacts));
        f->irqs[0].irq = 24;
        f->irqs[1].irq = 25;
        f->irqs[2].irq = 130;
        f->n_irqs = 3;
        for (size_t i = 0; i < 3; i++)
                f->irqs[i].queue = true;
        f->numa_node = 1;
        f->kernel_release = strdup("6.1.0-28-amd64");

        check_render(f, FACT_DEVNUM, "8:16\n");
        check_render(f, FACT_SIZE, "4000787030016\n");
        check_render(f, FACT_NR_HW_QUEUES, "3\n");
        check_render(f, FACT_ROTATIONAL, "1\n");
        check_render(f, FACT_ELEVATOR, "mq-deadline\n");
        check_render(f, FACT_ELEVATORS, "mq-deadline kyber none\n");
        check_render(f, FACT_RQ_AFFINITY, "2\n");
        check_render(f, FACT_NR_REQUESTS, "256\n");
        check_render(f, FACT_QUEUE_DEPTH, "254\n");
        check_render(f, FACT_DRIVER, "megaraid_sas\n");
        check_render(f, FACT_TRANSPORT, "scsi\n");
        check_render(f, FACT_SCSI_HOST, "host0\n");
        check_render(f, FACT_HOST_NR_HW_QUEUES, "64\n");
        check_render(f, FACT_HOST_CAN_QUEUE, "4077\n");
        check_render(f, FACT_SHARED_TAGS, "1\n");
        check_render(f, FACT_SQ_SCHED, "0\n");
        check_render(f, FACT_IRQ_VECTORS, "24 25 130\n");
        check_render(f, FACT_NUMA_NODE, "1\n");
        check_render(f, FACT_KERNEL_RELEASE, "6.1.0-28-amd64\n");
        check_render(f, FACT_STACKED, "0\n");

        /* unknown wins over whatever the typed field holds, and says why */
        CHECK_INT(disk_facts_set_unknown(f, FACT_SHARED_TAGS, "debugfs not mounted at %s", "/sys/kernel/debug"), 0);
        CHECK(!disk_facts_known(f, FACT_SHARED_TAGS));
        check_render(f, FACT_SHARED_TAGS, "unknown: debugfs not mounted at /sys/kernel/debug\n");
        /* a later reason replaces the earlier one */
        CHECK_INT(disk_facts_set_unknown(f, FACT_SHARED_TAGS, "no blk-mq queue"), 0);
        check_render(f, FACT_SHARED_TAGS, "unknown: no blk-mq queue\n");
        CHECK_INT(disk_facts_set_unknown(f, FACT_QUEUE_DEPTH, "no device/queue_depth (not a SCSI device)"), 0);
        check_render(f, FACT_QUEUE_DEPTH, "unknown: no device/queue_depth (not a SCSI device)\n");
        CHECK(disk_facts_known(f, FACT_DEVNUM));

        /* vectors that serve no request queue say so (virtio-blk vda: "35 36" read as two
         * queue vectors where 35 is virtio1-config); queue vectors stay bare numbers */
        f->irqs[0].name = strdup("virtio1-config");
        f->irqs[0].queue = false;
        f->irqs[2].queue = false;       /* no handler: name unknown */
        check_render(f, FACT_IRQ_VECTORS, "24(virtio1-config:not-queue) 25 130(unused:not-queue)\n");
        f->irqs[0].queue = true;
        /* one IRQ, no trailing blank */
        f->n_irqs = 1;
        check_render(f, FACT_IRQ_VECTORS, "24\n");
        /* stacked, numa none */
        f->stacked = true;
        f->numa_node = -1;
        check_render(f, FACT_STACKED, "1\n");
        check_render(f, FACT_NUMA_NODE, "-1\n");

        _cleanup_free_ char *s = NULL;
        CHECK_INT(disk_facts_render(f, _FACT_MAX, &s), -EINVAL);
        CHECK_INT(disk_facts_render(f, -1, &s), -EINVAL);

        /* every fact ends in exactly one newline */
        for (Fact x = 0; x < _FACT_MAX; x++) {
                _cleanup_free_ char *t = NULL;
                CHECK_INT(disk_facts_render(f, x, &t), 0);
                size_t l = t ? strlen(t) : 0;
                CHECK(l >= 1 && t[l - 1] == '\n' && (l == 1 || t[l - 2] != '\n'));
        }
}

static void test_kernel_release(void) {
        unsigned a = 0, b = 0;
        CHECK_INT(kernel_release_parse("6.18.44-fc-v782", &a, &b), 0);
        CHECK_INT(a, 6);
        CHECK_INT(b, 18);
        CHECK_INT(kernel_release_parse("5.10.0-28-amd64", &a, &b), 0);
        CHECK_INT(a, 5);
        CHECK_INT(b, 10);
        CHECK_INT(kernel_release_parse("6.1", &a, &b), 0);
        CHECK_INT(b, 1);
        CHECK_INT(kernel_release_parse("6", &a, &b), -EINVAL);
        CHECK_INT(kernel_release_parse("", &a, &b), -EINVAL);
        CHECK_INT(kernel_release_parse("v6.1", &a, &b), -EINVAL);
        CHECK_INT(kernel_release_parse(NULL, &a, &b), -EINVAL);
        CHECK_INT(kernel_release_parse("-6.1", &a, &b), -EINVAL);     /* sscanf("%u") took a sign */
        CHECK_INT(kernel_release_parse(" 6.1", &a, &b), -EINVAL);
        CHECK_INT(kernel_release_parse("6.-1", &a, &b), -EINVAL);
        CHECK_INT(kernel_release_parse("6.", &a, &b), -EINVAL);
        CHECK_INT(kernel_release_parse("6.10.0-rc1", &a, &b), 0);
        CHECK_INT(b, 10);
        CHECK_INT(kernel_release_parse("99999999999.1", &a, &b), -EINVAL);

        /* numeric, not textual: 6.9 < 6.10 < 6.11, 5.19 < 6.0 */
        static const struct {
                const char *release;
                Tristate at_least_6_10;
        } t[] = {
                { "6.9.12-amd64", TRISTATE_NO }, { "6.10.0-rc1", TRISTATE_YES }, { "6.10", TRISTATE_YES },
                { "6.11.2", TRISTATE_YES }, { "6.1.0-28-amd64", TRISTATE_NO }, { "5.19.0", TRISTATE_NO },
                { "7.0.0", TRISTATE_YES }, { "10.2", TRISTATE_YES }, { "6.100", TRISTATE_YES },
                { "6", TRISTATE_UNKNOWN }, { "", TRISTATE_UNKNOWN }, { NULL, TRISTATE_UNKNOWN },
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++)
                if (kernel_release_at_least(t[i].release, 6, 10) != t[i].at_least_6_10)
                        TAP_FAIL("kernel_release_at_least(\"%s\", 6, 10) != %s", strna(t[i].release),
                                 tristate_to_string(t[i].at_least_6_10));
        tap_checks++;
}

static DiskFacts *zdisk(const char *sched, Zoned z, const char *release) {
        DiskFacts *f = disk_facts_new("nvme0n1");
        if (!f || parse_scheduler(sched, &f->elevators, &f->elevator, &f->elevator_configurable) < 0)
                abort();
        f->zoned = z;
        f->kernel_release = release ? strdup(release) : NULL;
        return f;
}

static void test_zoned_and_sources(void) {
        const char *why = NULL;
        _cleanup_(disk_facts_freep) DiskFacts *hm = zdisk("[mq-deadline] none", ZONED_HOST_MANAGED, "6.1.0-28-amd64");
        CHECK(disk_facts_zoned_needs_deadline(hm, &why));
        CHECK(why && strstr(why, "6.10") && strstr(why, "dd291d77cc90"));
        _cleanup_(disk_facts_freep) DiskFacts *ha = zdisk("[mq-deadline] none", ZONED_HOST_AWARE, "5.10.0");
        CHECK(disk_facts_zoned_needs_deadline(ha, NULL));
        _cleanup_(disk_facts_freep) DiskFacts *new = zdisk("[mq-deadline] none", ZONED_HOST_MANAGED, "6.10.3");
        CHECK(!disk_facts_zoned_needs_deadline(new, &why));
        CHECK_NULL(why);
        _cleanup_(disk_facts_freep) DiskFacts *unk = zdisk("[mq-deadline] none", ZONED_HOST_MANAGED, NULL);
        CHECK(disk_facts_zoned_needs_deadline(unk, &why));      /* release unknown: protect */
        CHECK(why && strstr(why, "unknown"));
        _cleanup_(disk_facts_freep) DiskFacts *plain = zdisk("[none] mq-deadline", ZONED_NONE, "6.1.0");
        CHECK(!disk_facts_zoned_needs_deadline(plain, NULL));
        CHECK_INT(disk_facts_set_unknown(plain, FACT_ZONED, "no queue/zoned"), 0);
        CHECK(!disk_facts_zoned_needs_deadline(plain, NULL));

        /* listed, built in, loadable */
        CHECK_INT(strv_extend(&plain->elevators_loadable, "bfq"), 0);
        CHECK_INT(strv_extend(&plain->elevators_builtin, "kyber"), 0);
        CHECK_INT(disk_facts_elevator_source(plain, "mq-deadline"), ELEVATOR_LISTED);
        CHECK_INT(disk_facts_elevator_source(plain, "none"), ELEVATOR_LISTED);
        CHECK_INT(disk_facts_elevator_source(plain, "bfq"), ELEVATOR_LOADABLE);
        CHECK_INT(disk_facts_elevator_source(plain, "kyber"), ELEVATOR_BUILTIN);
        CHECK_INT(disk_facts_elevator_source(plain, "cfq"), ELEVATOR_UNAVAILABLE);
        CHECK_STR(elevator_source_to_string(ELEVATOR_LOADABLE), "loadable module (modules.dep): the kernel loads it on the write");
        /* rendered as a fact */
        _cleanup_free_ char *r = NULL;
        CHECK_INT(disk_facts_render(plain, FACT_ELEVATORS_LOADABLE, &r), 0);
        CHECK_STR(r, "kyber(built in) bfq(module)\n");
        /* once loaded (listed after a switch re-read the scheduler) it is no longer shown here */
        CHECK_INT(strv_extend(&plain->elevators, "bfq"), 0);
        free(r);
        r = NULL;
        CHECK_INT(disk_facts_render(plain, FACT_ELEVATORS_LOADABLE, &r), 0);
        CHECK_STR(r, "kyber(built in)\n");
        /* a zoned disk before 6.10: only mq-deadline may come from a module */
        CHECK_INT(strv_extend(&hm->elevators_loadable, "bfq"), 0);
        CHECK_INT(disk_facts_elevator_source(hm, "bfq"), ELEVATOR_UNAVAILABLE);
        _cleanup_(disk_facts_freep) DiskFacts *hm2 = zdisk("[none]", ZONED_HOST_MANAGED, "6.1.0");
        CHECK_INT(strv_extend(&hm2->elevators_loadable, "mq-deadline"), 0);
        CHECK_INT(disk_facts_elevator_source(hm2, "mq-deadline"), ELEVATOR_LOADABLE);
        /* a queue that cannot take an elevator: nothing is available */
        _cleanup_(disk_facts_freep) DiskFacts *nos = zdisk("none", ZONED_NONE, "6.1.0");
        CHECK_INT(strv_extend(&nos->elevators_loadable, "bfq"), 0);
        CHECK_INT(disk_facts_elevator_source(nos, "bfq"), ELEVATOR_UNAVAILABLE);
        _cleanup_free_ char *zr = NULL;
        CHECK_INT(disk_facts_render(hm, FACT_ZONED, &zr), 0);
        CHECK_STR(zr, "host-managed\n");
        CHECK_INT(zoned_from_string("host-aware"), ZONED_HOST_AWARE);
        CHECK_INT(zoned_from_string("drive-managed"), _ZONED_INVALID);
}

/* Vectors shared by the facts of two disks (IrqVectors): a mapping that gives what they hold
 * keeps sharing; one that changes them, or a disk's own change, copies first; the last holder
 * changes in place. */
static void test_shared_irqs(void) {
        IrqVectors *v = irq_vectors_new(2);
        DiskFacts *a = disk_facts_new("sda"), *b = disk_facts_new("sdb");
        if (!v || !a || !b) {
                TAP_FAIL("out of memory");
                return;
        }
        for (unsigned i = 0; i < 2; i++) {
                v->v[v->n++] = (IrqFacts) { .irq = 40 + i, .name = strdup("megasas0-msix"), .queue = true, .hctx = i,
                                            .managed = TRISTATE_YES };
        }
        disk_facts_share_irqs(a, v);
        disk_facts_share_irqs(b, v);
        v = irq_vectors_unref(v);                       /* the batch's reference gone */
        for (DiskFacts *f = a; f; f = f == a ? b : NULL) {
                f->n_hctx = 2;
                f->hctx = calloc(2, sizeof(HctxFacts));
        }
        CHECK(a->irqs == b->irqs && a->irqs_shared && a->irqs_shared->refs == 2);
        /* hctx 0 and 1 by order, as the vectors say already: still shared */
        CHECK_INT(disk_facts_map_irqs(a, NULL), 0);
        CHECK_STR(a->irq_mapping, "order");
        CHECK(a->irqs == b->irqs && a->irqs_shared == b->irqs_shared);
        /* a poll hctx 0 on b: one hctx with a vector, two queue vectors, no cpu_list to match
         * by: none mapped, which changes both: b's own copy */
        b->hctx[0].type = HCTX_TYPE_POLL;
        CHECK_INT(disk_facts_map_irqs(b, NULL), 0);
        CHECK(b->irqs != a->irqs && !b->irqs_shared);
        CHECK_INT(a->irqs[0].hctx, 0);                  /* a's unchanged */
        CHECK_INT(a->irqs_shared->refs, 1);
        /* the last holder changes its vectors in place */
        IrqFacts *before = a->irqs;
        CHECK_INT(disk_facts_own_irqs(a), 0);
        CHECK(a->irqs == before && a->irqs_shared);
        disk_facts_free(a);
        disk_facts_free(b);
}

/* A vector blkmqd moved is matched to its hctx by its affinity before (the history), not by
 * blkmqd's placement; disk_facts_remap_irqs() maps again only when that history changes. */
static void test_map_by_history(void) {
        _cleanup_(disk_facts_freep) DiskFacts *f = disk_facts_new("nvme0n1");
        if (!f || !(f->hctx = calloc(2, sizeof(HctxFacts))) || !(f->irqs = calloc(2, sizeof(IrqFacts)))) {
                TAP_FAIL("out of memory");
                return;
        }
        f->n_hctx = f->n_irqs = 2;
        for (unsigned i = 0; i < 2; i++) {
                const char *cpus = i ? "2-3" : "0-1";
                f->hctx[i] = (HctxFacts) { .index = i, .irq = -1, .cpu_list = strdup(cpus) };
                CHECK_INT(cpuset_parse(cpus, &f->hctx[i].cpus), 0);
                /* both on CPU 0: blkmqd's placement */
                f->irqs[i] = (IrqFacts) { .irq = 25 + i, .name = strdup("nvme0q"), .queue = true, .hctx = -1,
                                          .affinity_list = strdup("0") };
                CHECK_INT(cpuset_parse("0", &f->irqs[i].affinity), 0);
        }
        f->hctx_details = true;
        /* the kernel's spread had them the other way round from the order */
        IrqHistory moved[] = { { .irq = 26, .affinity_before = (char *) "0-1" }, { .irq = 25, .affinity_before = (char *) "2-3" } };
        PolicyHistory h = POLICY_HISTORY_INIT;          /* not owned: no policy_history_done() */
        h.irqs = moved;
        h.n_irqs = 2;
        CHECK_STR(policy_history_irq_before(&h, 26), "0-1");
        CHECK_NULL(policy_history_irq_before(&h, 27));
        CHECK_NULL(policy_history_irq_before(NULL, 25));

        CHECK_INT(disk_facts_map_irqs(f, NULL), 0);     /* CPU 0 is no hctx's cpu_list: by order */
        CHECK_STR(f->irq_mapping, "order");
        CHECK_INT(disk_facts_remap_irqs(f, NULL, &h), 1);
        CHECK_STR(f->irq_mapping, "affinity");
        CHECK_INT(f->hctx[0].irq, 1);                   /* IRQ 26, the second vector, was on 0-1 */
        CHECK_INT(f->hctx[1].irq, 0);
        CHECK_INT(f->irqs[0].hctx, 1);
        CHECK_INT(disk_facts_remap_irqs(f, &h, &h), 0); /* the same history: the map stands */
        f->hctx_details = false;
        CHECK_INT(disk_facts_remap_irqs(f, &h, NULL), 0);       /* no map read yet: nothing to remap */
        CHECK_STR(f->irq_mapping, "affinity");
}

int main(void) {
        test_names();
        test_new_is_unknown_not_zero();
        test_render();
        test_kernel_release();
        test_zoned_and_sources();
        test_shared_irqs();
        test_map_by_history();
        return tap_finish("test-facts");
}
