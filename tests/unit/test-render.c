/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for fuse-fs renderers: applied/<knob>, plan/<knob>, class, explain, facts, hctx. */
#include <errno.h>

#include "config.h"

#include "facts.h"
#include "macro.h"
#include "node.h"
#include "registry.h"
#include "render.h"
#include "strv.h"
#include "tap.h"

static void check_applied(ApplyState st, const char *original, const char *value, const char *message, const char *expected) {
        Applied a = { .state = st, .original = (char *) original, .value = (char *) value, .message = (char *) message };
        _cleanup_free_ char *s = NULL;
        CHECK_INT(render_applied(&a, &s), 0);
        CHECK_STR(s, expected);
}

static void test_render_applied(void) {
        check_applied(APPLY_UNMANAGED, NULL, NULL, NULL, "unmanaged\n");
        check_applied(APPLY_KEPT, NULL, "mq-deadline", NULL, "kept: mq-deadline\n");
        /* what blkmqd did last, when it has something to say (issue 13: restores, resets) */
        check_applied(APPLY_UNMANAGED, "256", NULL, "reset by the kernel from 256 to 128",
                      "unmanaged: reset by the kernel from 256 to 128\n");
        check_applied(APPLY_KEPT, NULL, "mq-deadline", "put back: the value before blkmqd changed it",
                      "kept: mq-deadline (put back: the value before blkmqd changed it)\n");
        check_applied(APPLY_OK, "mq-deadline", "none", NULL, "ok: none (was mq-deadline)\n");
        check_applied(APPLY_DRY_RUN, NULL, "none", "would write none (now mq-deadline)",
                      "dry-run: would write none (now mq-deadline)\n");
        check_applied(APPLY_ERROR, "none", "bfq", "EBUSY writing bfq to queue/scheduler",
                      "error: EBUSY writing bfq to queue/scheduler\n");
        check_applied(APPLY_UNSUPPORTED, "none", "bfq", "EINVAL writing bfq to queue/scheduler, read back none",
                      "unsupported: EINVAL writing bfq to queue/scheduler, read back none\n");
        /* changed externally: the state word first, whatever the message (issue 26 item 4:
         * irq_affinity's counts read "4 vector(s): ..." and blkmqctl status saw no state) */
        check_applied(APPLY_EXTERNAL, NULL, "bfq", "changed externally to none (blkmqd wrote bfq; ...)",
                      "changed externally to none (blkmqd wrote bfq; ...)\n");
        check_applied(APPLY_EXTERNAL, NULL, "hctx", "4 vector(s): 3 placed, 0 already placed, 1 changed externally",
                      "changed externally: 4 vector(s): 3 placed, 0 already placed, 1 changed externally\n");
        /* missing strings never crash nor print "(null)" */
        check_applied(APPLY_OK, NULL, NULL, NULL, "ok: n/a\n");
        check_applied(APPLY_ERROR, NULL, NULL, NULL, "error: n/a\n");

        CHECK_STR(apply_state_to_string(APPLY_DRY_RUN), "dry-run");
        CHECK_NULL(apply_state_to_string(_APPLY_STATE_MAX));
        CHECK_STR(knob_to_string(KNOB_ELEVATOR), "elevator");
        CHECK_INT(knob_from_string("elevator"), KNOB_ELEVATOR);
        CHECK_INT(knob_from_string("scheduler"), _KNOB_INVALID);
}

static int render_version(void *userdata, NodeType type, char **ret) {
        *ret = strdup(type == NODE_VERSION ? "blkmqd test\n" : "other\n");
        return *ret ? 0 : -ENOMEM;
}

static void check_node(const FuseFsContext *ctx, NodeType type, const char *device, int arg, int arg2, int ret, const char *expected) {
        Node n = { .type = type, .device = (char *) device, .arg = arg, .arg2 = arg2 };
        _cleanup_free_ char *s = NULL;
        int r = render_node(ctx, &n, &s);
        if (r != ret)
                TAP_FAIL("render_node(type %d, %s, %d, %d) = %d, expected %d", type, strna(device), arg, arg2, r, ret);
        tap_checks++;
        if (r >= 0 && expected)
                CHECK_STR(s, expected);
}

static void test_render_tree(void) {
        Registry reg = {};
        Device *d = NULL;
        FuseFsContext ctx = { .registry = &reg, .render_control = render_version };

        CHECK_INT(registry_add(&reg, "sdb", &d), 1);
        Device *again = NULL;
        CHECK_INT(registry_add(&reg, "sdb", &again), 0);
        CHECK(again == d);

        /* a device without facts yet is not shown */
        check_node(&ctx, NODE_CLASS, "sdb", 0, 0, -ENOENT, NULL);

        DiskFacts *f = d->facts = disk_facts_new("sdb");
        f->has_mq = true;
        f->n_hctx = 2;
        f->hctx = calloc(2, sizeof(HctxFacts));
        f->hctx[0] = (HctxFacts) { .index = 0, .nr_tags = 1024, .nr_reserved_tags = 1, .shared_tags = TRISTATE_YES };
        cpuset_parse("0, 1, 2, 3", &f->hctx[0].cpus);
        f->hctx[0].cpu_list = cpuset_format(&f->hctx[0].cpus);
        f->hctx[1] = (HctxFacts) { .index = 2, .nr_tags = -1, .nr_reserved_tags = -1, .shared_tags = TRISTATE_UNKNOWN,
                                   .type = _HCTX_TYPE_INVALID, .irq = -1 };
        f->hctx_type_unknown = strdup("debugfs not mounted at /sys/kernel/debug (hctxN/type is shown only there)");
        f->rotational = TRISTATE_YES;
        disk_facts_set_unknown(f, FACT_SHARED_TAGS, "debugfs block/sdb/hctxN/flags unreadable");

        d->plan.class = DISK_CLASS_MANY_HCTX_SLOW;
        d->plan.manage = true;
        d->plan.elevator = strdup("mq-deadline");
        plan_explain(&d->plan, "sdb", 0, PLAN_OUTCOME_NOTE, NULL, "first");
        plan_explain(&d->plan, "sdb", 0, PLAN_OUTCOME_NOTE, NULL, "second");
        d->applied[KNOB_ELEVATOR] = (Applied) { .state = APPLY_OK, .original = strdup("none"), .value = strdup("mq-deadline") };

        check_node(&ctx, NODE_VERSION, NULL, 0, 0, 0, "blkmqd test\n");
        check_node(&ctx, NODE_CLASS, "sdb", 0, 0, 0, "many-hctx-slow\n");
        check_node(&ctx, NODE_EXPLAIN, "sdb", 0, 0, 0, "sdb: first\nsdb: second\n");
        check_node(&ctx, NODE_FACT, "sdb", FACT_NR_HW_QUEUES, 0, 0, "2\n");
        check_node(&ctx, NODE_FACT, "sdb", FACT_ROTATIONAL, 0, 0, "1\n");
        check_node(&ctx, NODE_PLAN_KNOB, "sdb", KNOB_ELEVATOR, 0, 0, "mq-deadline\n");
        check_node(&ctx, NODE_APPLIED_KNOB, "sdb", KNOB_ELEVATOR, 0, 0, "ok: mq-deadline (was none)\n");
        check_node(&ctx, NODE_APPLIED_KNOB, "sdb", _KNOB_MAX, 0, -ENOENT, NULL);
        check_node(&ctx, NODE_HCTX_ATTR, "sdb", 0, HCTX_ATTR_CPU_LIST, 0, "0-3\n");
        check_node(&ctx, NODE_HCTX_ATTR, "sdb", 0, HCTX_ATTR_NR_TAGS, 0, "1024\n");
        check_node(&ctx, NODE_HCTX_ATTR, "sdb", 0, HCTX_ATTR_NR_RESERVED_TAGS, 0, "1\n");
        check_node(&ctx, NODE_HCTX_ATTR, "sdb", 0, HCTX_ATTR_SHARED_TAGS, 0, "1\n");
        /* arg is the position, not the hctx number (hctx 2 sits at position 1) */
        check_node(&ctx, NODE_HCTX_ATTR, "sdb", 1, HCTX_ATTR_CPU_LIST, 0, "unknown: mq/2/cpu_list not readable\n");
        check_node(&ctx, NODE_HCTX_ATTR, "sdb", 1, HCTX_ATTR_NR_TAGS, 0, "unknown: nr_tags not readable\n");
        check_node(&ctx, NODE_HCTX_ATTR, "sdb", 1, HCTX_ATTR_SHARED_TAGS, 0,
                   "unknown: debugfs block/sdb/hctxN/flags unreadable\n");
        /* the map type: "default" (a zero HctxFacts), unknown with the disk's reason, "poll" */
        check_node(&ctx, NODE_HCTX_ATTR, "sdb", 0, HCTX_ATTR_TYPE, 0, "default\n");
        check_node(&ctx, NODE_HCTX_ATTR, "sdb", 1, HCTX_ATTR_TYPE, 0,
                   "unknown: debugfs not mounted at /sys/kernel/debug (hctxN/type is shown only there)\n");
        f->hctx[1].type = HCTX_TYPE_POLL;
        check_node(&ctx, NODE_HCTX_ATTR, "sdb", 1, HCTX_ATTR_TYPE, 0, "poll\n");
        check_node(&ctx, NODE_HCTX_ATTR, "sdb", 1, HCTX_ATTR_IRQ, 0, "none: poll queue (completions are polled, no interrupt)\n");
        check_node(&ctx, NODE_HCTX_ATTR, "sdb", 1, HCTX_ATTR_IRQ_MANAGED, 0,
                   "none: poll queue (completions are polled, no interrupt)\n");
        size_t maps[_HCTX_TYPE_MAX];
        CHECK_INT(disk_facts_hctx_maps(f, maps), 0);
        CHECK_INT(maps[HCTX_TYPE_DEFAULT], 1);
        CHECK_INT(maps[HCTX_TYPE_READ], 0);
        CHECK_INT(maps[HCTX_TYPE_POLL], 1);
        f->hctx[1].type = _HCTX_TYPE_INVALID;
        CHECK_INT(disk_facts_hctx_maps(f, maps), -ENODATA);
        CHECK_STR(hctx_type_to_string(HCTX_TYPE_READ), "read");
        CHECK_INT(hctx_type_from_string("poll"), HCTX_TYPE_POLL);
        CHECK_INT(hctx_type_from_string("Default"), _HCTX_TYPE_INVALID);
        check_node(&ctx, NODE_HCTX_ATTR, "sdb", 2, HCTX_ATTR_NR_TAGS, -ENOENT, NULL);
        check_node(&ctx, NODE_HCTX_ATTR, "sdb", -1, HCTX_ATTR_NR_TAGS, -ENOENT, NULL);
        check_node(&ctx, NODE_HCTX_ATTR, "sdb", 0, _HCTX_ATTR_MAX, -ENOENT, NULL);
        check_node(&ctx, NODE_DEVICE, "sdb", 0, 0, -EISDIR, NULL);
        check_node(&ctx, NODE_HCTX_N, "sdb", 0, 0, -EISDIR, NULL);
        check_node(&ctx, NODE_ROOT, NULL, 0, 0, -EISDIR, NULL);
        check_node(&ctx, NODE_CLASS, "sdx", 0, 0, -ENOENT, NULL);

        /* not managed: the plan says "keep" whatever the elevator field holds */
        d->plan.manage = false;
        check_node(&ctx, NODE_PLAN_KNOB, "sdb", KNOB_ELEVATOR, 0, 0, "keep\n");
        d->plan.manage = true;
        d->plan.elevator = mfree_str(d->plan.elevator);
        check_node(&ctx, NODE_PLAN_KNOB, "sdb", KNOB_ELEVATOR, 0, 0, "keep\n");

        CHECK_STR(hctx_attr_to_string(HCTX_ATTR_NR_RESERVED_TAGS), "nr_reserved_tags");
        CHECK_NULL(hctx_attr_to_string(_HCTX_ATTR_MAX));

        /* removal: gone for new renders */
        CHECK_INT(registry_remove(&reg, "sdb"), 0);
        CHECK_INT(registry_remove(&reg, "sdb"), -ENOENT);
        check_node(&ctx, NODE_CLASS, "sdb", 0, 0, -ENOENT, NULL);
        registry_done(&reg);
}

static void test_registry_sorted(void) {
        Registry reg = {};
        Device *d;
        const char *names[] = { "sdb", "nvme0n10", "sda", "nvme0n2", "loop5" };
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                CHECK_INT(registry_add(&reg, names[i], &d), 1);
        CHECK_INT(reg.n_devices, 5);
        const char *sorted[] = { "loop5", "nvme0n2", "nvme0n10", "sda", "sdb" };
        for (size_t i = 0; i < reg.n_devices && i < 5; i++)
                CHECK_STR(reg.devices[i]->name, sorted[i]);
        CHECK(registry_get(&reg, "nvme0n10") == reg.devices[2]);
        CHECK_NULL(registry_get(&reg, "nvme0n1"));
        registry_done(&reg);
}

static const char *kernel_with_specials(void *userdata) {
        return "6.1\"x\\y\nz";
}

/* Label values are escaped as the exposition format wants: \\, \" and \n. */
static void test_metrics_label_escaping(void) {
        Registry reg = {};
        FuseFsContext ctx = { .registry = &reg, .kernel_release = kernel_with_specials };
        _cleanup_free_ char *s = NULL;
        CHECK_INT(render_metrics(&ctx, &s), 0);
        CHECK(s && strstr(s, "blkmqd_info{version=\"" BLKMQD_VERSION "\",kernel=\"6.1\\\"x\\\\y\\nz\",providers=\"\"} 1\n"));
        registry_done(&reg);
}

static int fake_disk_stat(void *userdata, const char *device, unsigned flags, DiskStat *ret, StatRates *ret_rates) {
        *ret = (DiskStat) { .n = 17 };
        for (unsigned i = 0; i < ret->n; i++)
                ret->v[i] = 1000 * (device[2] - 'a') + i;
        ret->v[DISK_STAT_IO_TICKS] = 12045;     /* 12.045 s */
        return 0;
}

static Device *metrics_disk(Registry *reg, const char *name, const char *elevator) {
        Device *d = NULL;
        CHECK_INT(registry_add(reg, name, &d), 1);
        DiskFacts *f = d->facts = disk_facts_new(name);
        f->elevator = strdup(elevator);
        f->driver = strdup("sd");
        f->transport = strdup("");
        f->n_hctx = 0;
        f->rotational = TRISTATE_YES;
        f->rq_affinity = 1;
        f->nr_requests = 64;
        d->plan.class = DISK_CLASS_SINGLE_QUEUE_ROTATIONAL;
        d->applied[KNOB_ELEVATOR].state = APPLY_KEPT;
        return d;
}

/* The cached render, checked against a render without a cache (every block anew): equal, and
 * of the blocks, rendered ones number want_rendered. Returns the cached render. */
static char *metrics_both(FuseFsContext *ctx, MetricsCache *c, uint64_t want_rendered) {
        FuseFsContext fresh = *ctx;
        char *s = NULL, *t = NULL;
        uint64_t r0, u0, r1, u1;

        metrics_cache_counts(c, &r0, &u0);
        fresh.metrics_cache = NULL;
        ctx->metrics_cache = c;
        CHECK_INT(render_metrics(ctx, &s), 0);
        CHECK_INT(render_metrics(&fresh, &t), 0);
        CHECK_STR(s, t);
        metrics_cache_counts(c, &r1, &u1);
        CHECK_INT(r1 - r0, want_rendered);
        CHECK_INT(u1 - u0, ctx->registry->n_devices - want_rendered);
        free(t);
        return s;
}

/*
 * /metrics keeps each disk's event-driven lines between scrapes (MetricsCache): a block is
 * reused while nothing it shows changed and rendered again as soon as anything did, also
 * a change in place (the same string buffer, the same DiskFacts) and a disk replaced or gone.
 * A stale block fails the comparison with the render without a cache.
 */
static void test_metrics_cache(void) {
        Registry reg = {};
        MetricsCache *c = NULL;
        FuseFsContext ctx = { .registry = &reg, .read_disk_stat = fake_disk_stat };
        char *s;

        CHECK_INT(metrics_cache_new(&c), 0);
        Device *a = metrics_disk(&reg, "sda", "none"), *b = metrics_disk(&reg, "sdb", "mq-deadline");
        metrics_disk(&reg, "sdc", "bfq");

        s = metrics_both(&ctx, c, 3);
        CHECK(s && strstr(s, "blkmqd_disk_info{device=\"sdb\",class=\"single-queue-rotational\",elevator=\"mq-deadline\",driver=\"sd\",transport=\"\"} 1\n"));
        CHECK(s && strstr(s, "blkmqd_applied{device=\"sda\",knob=\"elevator\",state=\"kept\"} 1\n"));
        CHECK(s && strstr(s, "blkmqd_disk_rq_affinity{device=\"sdc\"} 1\n"));
        CHECK(s && strstr(s, "blkmqd_disk_io_time_seconds_total{device=\"sdb\"} 12.045\n"));
        CHECK(s && strstr(s, "blkmqd_disk_reads_completed_total{device=\"sdc\"} 2000\n"));
        free(s);
        s = metrics_both(&ctx, c, 0);           /* nothing changed: every block reused */
        free(s);

        /* an external elevator change read back by a verify: the same buffer, new content */
        strcpy(b->facts->elevator, "kyber");
        s = metrics_both(&ctx, c, 1);
        CHECK(s && strstr(s, "device=\"sdb\",class=\"single-queue-rotational\",elevator=\"kyber\""));
        CHECK(s && !strstr(s, "elevator=\"mq-deadline\""));
        free(s);

        /* a write's outcome, an override's new plan */
        b->applied[KNOB_ELEVATOR].state = APPLY_ERROR;
        a->plan.class = DISK_CLASS_FAST_MULTIQUEUE;
        s = metrics_both(&ctx, c, 2);
        CHECK(s && strstr(s, "blkmqd_applied{device=\"sdb\",knob=\"elevator\",state=\"error\"} 1\n"));
        CHECK(s && strstr(s, "blkmqd_disk_info{device=\"sda\",class=\"fast-multiqueue\""));
        free(s);

        /* elevator tunables (blkmqd_applied_iosched, as applied/iosched shows them): none tracked,
         * no line; a write's outcome on sdc (bfq runs), then someone else's change in place;
         * an override for an elevator that does not run waits (sda runs none) */
        s = metrics_both(&ctx, c, 0);
        CHECK(s && !strstr(s, "blkmqd_applied_iosched"));
        free(s);
        IoschedTunable idle = iosched_tunable_from_dotted("bfq.slice_idle");
        IoschedTunable fifo = iosched_tunable_from_dotted("mq-deadline.fifo_batch");
        CHECK(idle >= 0 && fifo >= 0);
        Device *cdev = registry_get(&reg, "sdc");
        cdev->iosched[idle].state = APPLY_OK;
        cdev->iosched[idle].original = strdup("8");
        s = metrics_both(&ctx, c, 1);
        CHECK(s && strstr(s, "# TYPE blkmqd_applied_iosched gauge\n"
                          "blkmqd_applied_iosched{device=\"sdc\",elevator=\"bfq\",tunable=\"slice_idle\",state=\"ok\"} 1\n"));
        free(s);
        applied_set(&cdev->iosched[idle], APPLY_EXTERNAL, 0, "changed externally to 4");
        s = metrics_both(&ctx, c, 1);
        CHECK(s && strstr(s, "blkmqd_applied_iosched{device=\"sdc\",elevator=\"bfq\",tunable=\"slice_idle\",state=\"changed externally\"} 1\n"));
        free(s);
        a->plan.manage = true;
        CHECK_INT(policy_overrides_set_iosched(&a->overrides, fifo, "32"), 0);
        s = metrics_both(&ctx, c, 1);
        CHECK(s && strstr(s, "blkmqd_applied_iosched{device=\"sda\",elevator=\"mq-deadline\",tunable=\"fifo_batch\",state=\"unmanaged\"} 1\n"));
        free(s);
        s = metrics_both(&ctx, c, 0);           /* nothing changed */
        free(s);

        /* facts gauges: a value, a fact no longer known (its line goes) */
        a->facts->rq_affinity = 2;
        CHECK_INT(disk_facts_set_unknown(b->facts, FACT_NR_REQUESTS, "test"), 0);
        s = metrics_both(&ctx, c, 2);
        CHECK(s && strstr(s, "blkmqd_disk_rq_affinity{device=\"sda\"} 2\n"));
        CHECK(s && !strstr(s, "blkmqd_disk_nr_requests{device=\"sdb\"}"));
        CHECK(s && strstr(s, "blkmqd_disk_nr_requests{device=\"sdc\"} 64\n"));
        free(s);

        /* facts gathered again (a new DiskFacts) with the same values: nothing to render */
        DiskFacts *old = a->facts;
        a->facts = disk_facts_new("sda");
        a->facts->elevator = strdup(old->elevator);
        a->facts->driver = strdup(old->driver);
        a->facts->transport = strdup(old->transport);
        a->facts->rotational = old->rotational;
        a->facts->rq_affinity = old->rq_affinity;
        a->facts->nr_requests = old->nr_requests;
        disk_facts_free(old);
        s = metrics_both(&ctx, c, 0);
        free(s);

        /* a disk without facts keeps only its applied lines; one removed, one added */
        old = a->facts;
        a->facts = NULL;
        CHECK_INT(registry_remove(&reg, "sdc"), 0);
        metrics_disk(&reg, "sdd", "none");
        s = metrics_both(&ctx, c, 2);
        CHECK(s && !strstr(s, "blkmqd_disk_info{device=\"sda\""));
        CHECK(s && strstr(s, "blkmqd_applied{device=\"sda\",knob=\"elevator\""));
        CHECK(s && !strstr(s, "device=\"sdc\""));
        CHECK(s && strstr(s, "blkmqd_disk_info{device=\"sdd\""));
        free(s);
        a->facts = old;

        /* an empty registry still has both info families' HELP/TYPE */
        Registry none = {};
        FuseFsContext empty = { .registry = &none };
        s = metrics_both(&empty, c, 0);
        CHECK(s && strstr(s, "# TYPE blkmqd_disk_info gauge\n# HELP blkmqd_applied"));
        free(s);

        metrics_cache_free(c);
        registry_done(&reg);
}

int main(void) {
        test_render_applied();
        test_metrics_label_escaping();
        test_metrics_cache();
        test_render_tree();
        test_registry_sorted();
        return tap_finish("test-render");
}
