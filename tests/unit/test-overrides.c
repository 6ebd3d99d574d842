/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for policy_override_validate() (what users write into policy/<knob>) and the
 * module-parameter policy (policies/module-params.c): every knob, the edges the kernel and
 * defines (block/blk-sysfs.c queue_requests_store() and queue_rq_affinity_store(), lib/bitmap.c
 * bitmap_parselist() for cpulists),
 * normalised results, and the host_tagset_enable / [Module:] wishes.
 */
#include <errno.h>

#include "facts.h"
#include "macro.h"
#include "parse.h"
#include "policy.h"
#include "strv.h"
#include "tap.h"
#include "test-plan.h"

/* A SCSI disk: scheduler text as the kernel prints it, one hctx with nr_tags/reserved. */
static DiskFacts *make_disk(const char *scheduler, int64_t nr_tags, int64_t reserved) {
        DiskFacts *f = disk_facts_new("sdb");
        if (!f)
                abort();
        f->has_mq = true;
        f->n_hctx = 1;
        f->hctx = calloc(1, sizeof(HctxFacts));
        f->hctx[0] = (HctxFacts) { .index = 0, .nr_tags = nr_tags, .nr_reserved_tags = reserved,
                                   .shared_tags = TRISTATE_NO, .irq = -1 };
        f->rotational = TRISTATE_YES;
        if (parse_scheduler(scheduler, &f->elevators, &f->elevator, &f->elevator_configurable) < 0)
                abort();
        return f;
}

static CpuSet online;   /* "0-1": this machine */

/* Validate input (len bytes; -1 = strlen) and compare the result: rc, and the normalised value (NULL = auto). */
static void t(int line, int k, const DiskFacts *f, const char *input, ssize_t len, int rc, const char *want) {
        _cleanup_free_ char *v = NULL;
        size_t l = len < 0 ? strlen(input) : (size_t) len;
        char *out = (char *) "untouched";
        int r = policy_override_validate(k, input, l, f, &online, &out);
        tap_checks++;
        if (r != rc) {
                TAP_FAIL("line %d: knob %s input \"%.*s\" (%zu bytes): rc %d (%s), expected %d (%s)", line,
                         strna(policy_file_to_string(k)), (int) MIN(l, (size_t) 40), input, l,
                         r, strerror(-r), rc, strerror(-rc));
                if (r == 0)
                        free(out);
                return;
        }
        if (r < 0) {
                tap_checks++;
                if (!out || strcmp(out, "untouched") != 0)
                        TAP_FAIL("line %d: on error the output was changed", line);
                return;
        }
        v = out;
        tap_checks++;
        if (want == NULL ? v != NULL : (!v || strcmp(v, want) != 0))
                TAP_FAIL("line %d: knob %s input \"%.*s\": got \"%s\", expected \"%s\"", line,
                         strna(policy_file_to_string(k)), (int) MIN(l, (size_t) 40), input,
                         v ?: "(auto)", want ?: "(auto)");
}
#define T(k, f, input, rc, want) t(__LINE__, k, f, input, -1, rc, want)
#define TL(k, f, input, len, rc, want) t(__LINE__, k, f, input, len, rc, want)

static void test_common(void) {
        _cleanup_(disk_facts_freep) DiskFacts *f = make_disk("[mq-deadline] kyber bfq none\n", 64, 0);

        /* every knob: auto (with or without newline) clears; "" / "\n" / embedded NUL / blanks refused */
        for (Knob k = 0; k < _KNOB_MAX; k++) {
                T(k, f, "auto", 0, NULL);
                T(k, f, "auto\n", 0, NULL);
                T(k, f, "", -EINVAL, NULL);
                T(k, f, "\n", -EINVAL, NULL);
                T(k, f, "\n\n", -EINVAL, NULL);
                T(k, f, "auto\nauto", -EINVAL, NULL);
                T(k, f, "auto\n\n", -EINVAL, NULL);
                T(k, f, " auto", -EINVAL, NULL);
                T(k, f, "auto ", -EINVAL, NULL);
                T(k, f, "\tauto", -EINVAL, NULL);
                T(k, f, "AUTO", -EINVAL, NULL);
                TL(k, f, "auto\0junk", 9, -EINVAL, NULL);
                TL(k, f, "\0", 1, -EINVAL, NULL);
        }
        /* enabled: 0, 1 or "auto" like every policy file (issue 13 item 7: blkmqctl reset
         * wrote auto to every file and enabled refused it) */
        T(POLICY_FILE_ENABLED, f, "auto", 0, NULL);
        T(POLICY_FILE_ENABLED, f, "auto\n", 0, NULL);
        T(POLICY_FILE_ENABLED, f, "AUTO", -EINVAL, NULL);
        T(POLICY_FILE_ENABLED, f, "auto\nauto", -EINVAL, NULL);
        T(POLICY_FILE_ENABLED, f, "0", 0, "0");
        T(POLICY_FILE_ENABLED, f, "1\n", 0, "1");
        /* one errno rule for every numeric file: a number out of range (negative too) is
         * ERANGE, what is no number EINVAL */
        T(POLICY_FILE_ENABLED, f, "2", -ERANGE, NULL);
        T(POLICY_FILE_ENABLED, f, "yes", -EINVAL, NULL);
        T(POLICY_FILE_ENABLED, f, "01", 0, "1");        /* normalised, like rq_affinity's "02" */
        T(POLICY_FILE_ENABLED, f, "-1", -ERANGE, NULL);
        T(POLICY_FILE_ENABLED, f, "0x1", -EINVAL, NULL);
        T(POLICY_FILE_ENABLED, f, "", -EINVAL, NULL);
        /* a knob that does not exist */
        T((Knob) 17, f, "1", -EINVAL, NULL);
        T(_KNOB_INVALID, f, "1", -EINVAL, NULL);

        /* size limit: 4096 bytes is the most a policy file takes (a page, like sysfs) */
        char big[4100];
        memset(big, 'a', sizeof(big));
        TL(KNOB_ELEVATOR, f, big, 4097, -EINVAL, NULL);
        TL(KNOB_RQ_AFFINITY, f, big, 4097, -EINVAL, NULL);
        /* 4095 zeros and a "1": a valid number inside the limit */
        memset(big, '0', 4095);
        big[4095] = '1';
        TL(KNOB_RQ_AFFINITY, f, big, 4096, 0, "1");
        big[4096] = '\n';
        TL(KNOB_RQ_AFFINITY, f, big, 4097, -EINVAL, NULL);      /* 4097 bytes even with the newline */
}

static void test_elevator(void) {
        _cleanup_(disk_facts_freep) DiskFacts *f = make_disk("[mq-deadline] kyber bfq none\n", 64, 0);
        _cleanup_(disk_facts_freep) DiskFacts *fixed = make_disk("none\n", 64, 0);  /* not configurable */
        _cleanup_(disk_facts_freep) DiskFacts *nvme = make_disk("[none] mq-deadline\n", 1023, 0);

        T(KNOB_ELEVATOR, f, "bfq", 0, "bfq");
        T(KNOB_ELEVATOR, f, "bfq\n", 0, "bfq");
        T(KNOB_ELEVATOR, f, "none", 0, "none");
        T(KNOB_ELEVATOR, f, "mq-deadline", 0, "mq-deadline");       /* the current one is fine */
        T(KNOB_ELEVATOR, f, "kyber\n", 0, "kyber");
        T(KNOB_ELEVATOR, f, "cfq", -EINVAL, NULL);                   /* gone since 5.0 */
        T(KNOB_ELEVATOR, f, "deadline", -EINVAL, NULL);
        T(KNOB_ELEVATOR, f, "noop", -EINVAL, NULL);
        T(KNOB_ELEVATOR, f, "BFQ", -EINVAL, NULL);
        T(KNOB_ELEVATOR, f, "[bfq]", -EINVAL, NULL);
        T(KNOB_ELEVATOR, f, "bf", -EINVAL, NULL);
        T(KNOB_ELEVATOR, f, "bfqq", -EINVAL, NULL);
        T(KNOB_ELEVATOR, f, "bfq kyber", -EINVAL, NULL);
        T(KNOB_ELEVATOR, f, "bfq\nkyber", -EINVAL, NULL);
        TL(KNOB_ELEVATOR, f, "bfq\0junk", 8, -EINVAL, NULL);
        TL(KNOB_ELEVATOR, f, "bfq\0", 4, -EINVAL, NULL);
        T(KNOB_ELEVATOR, fixed, "none", -EINVAL, NULL);              /* the kernel cannot switch it */
        T(KNOB_ELEVATOR, fixed, "auto", 0, NULL);
        T(KNOB_ELEVATOR, nvme, "bfq", -EINVAL, NULL);                /* not offered by this queue */
        T(KNOB_ELEVATOR, nvme, "mq-deadline", 0, "mq-deadline");
}

static void test_rq_affinity(void) {
        _cleanup_(disk_facts_freep) DiskFacts *f = make_disk("[mq-deadline] kyber bfq none\n", 64, 0);

        T(KNOB_RQ_AFFINITY, f, "0", 0, "0");
        T(KNOB_RQ_AFFINITY, f, "1", 0, "1");
        T(KNOB_RQ_AFFINITY, f, "2", 0, "2");
        T(KNOB_RQ_AFFINITY, f, "2\n", 0, "2");
        /* the kernel silently accepts other numbers; blkmqd must not (queue_rq_affinity_store()) */
        T(KNOB_RQ_AFFINITY, f, "3", -ERANGE, NULL);
        T(KNOB_RQ_AFFINITY, f, "-1", -ERANGE, NULL);
        T(KNOB_RQ_AFFINITY, f, "100", -ERANGE, NULL);
        T(KNOB_RQ_AFFINITY, f, "2147483647", -ERANGE, NULL);
        T(KNOB_RQ_AFFINITY, f, "-2147483648", -ERANGE, NULL);
        T(KNOB_RQ_AFFINITY, f, "2147483648", -ERANGE, NULL);       /* does not fit an int */
        T(KNOB_RQ_AFFINITY, f, "99999999999999999999999", -ERANGE, NULL);
        T(KNOB_RQ_AFFINITY, f, "0x2", -EINVAL, NULL);
        T(KNOB_RQ_AFFINITY, f, "+1", -EINVAL, NULL);
        T(KNOB_RQ_AFFINITY, f, "1.0", -EINVAL, NULL);
        T(KNOB_RQ_AFFINITY, f, "1e0", -EINVAL, NULL);
        T(KNOB_RQ_AFFINITY, f, "two", -EINVAL, NULL);
        T(KNOB_RQ_AFFINITY, f, " 1", -EINVAL, NULL);
        T(KNOB_RQ_AFFINITY, f, "1 ", -EINVAL, NULL);
        T(KNOB_RQ_AFFINITY, f, "-", -EINVAL, NULL);
        T(KNOB_RQ_AFFINITY, f, "hctx", -EINVAL, NULL);
        /* accepted numbers are stored normalised (policy.h: "0" | "1" | "2") */
        T(KNOB_RQ_AFFINITY, f, "02", 0, "2");
        T(KNOB_RQ_AFFINITY, f, "-0", 0, "0");
}

static void test_nr_requests(void) {
        /* with an elevator: BLKDEV_MIN_RQ (4) .. MAX_SCHED_RQ (2048) */
        _cleanup_(disk_facts_freep) DiskFacts *f = make_disk("[mq-deadline] kyber bfq none\n", 64, 0);
        /* without one: .. the tag set depth (nr_tags) */
        _cleanup_(disk_facts_freep) DiskFacts *none = make_disk("[none] mq-deadline\n", 64, 0);
        /* reserved tags: the value must be above them (blk-sysfs.c queue_requests_store) */
        _cleanup_(disk_facts_freep) DiskFacts *res = make_disk("[none] mq-deadline\n", 64, 7);

        T(KNOB_NR_REQUESTS, f, "0", -ERANGE, NULL);
        T(KNOB_NR_REQUESTS, f, "1", -ERANGE, NULL);
        T(KNOB_NR_REQUESTS, f, "3", -ERANGE, NULL);
        T(KNOB_NR_REQUESTS, f, "4", 0, "4");
        T(KNOB_NR_REQUESTS, f, "64", 0, "64");
        T(KNOB_NR_REQUESTS, f, "65", 0, "65");          /* above nr_tags is fine under an elevator */
        T(KNOB_NR_REQUESTS, f, "2048", 0, "2048");
        T(KNOB_NR_REQUESTS, f, "2048\n", 0, "2048");
        T(KNOB_NR_REQUESTS, f, "2049", -ERANGE, NULL);
        T(KNOB_NR_REQUESTS, f, "4294967296", -ERANGE, NULL);
        T(KNOB_NR_REQUESTS, f, "18446744073709551615", -ERANGE, NULL);
        T(KNOB_NR_REQUESTS, f, "18446744073709551616", -ERANGE, NULL);  /* 2^64 */
        T(KNOB_NR_REQUESTS, f, "0256", 0, "256");       /* normalised */
        T(KNOB_NR_REQUESTS, f, "-5", -ERANGE, NULL);      /* a number out of range, like rq_affinity "-1" */
        T(KNOB_NR_REQUESTS, f, "-4", -ERANGE, NULL);
        T(KNOB_NR_REQUESTS, f, "-", -EINVAL, NULL);
        T(KNOB_NR_REQUESTS, f, "-x", -EINVAL, NULL);
        T(KNOB_NR_REQUESTS, f, "0x40", -EINVAL, NULL);
        T(KNOB_NR_REQUESTS, f, "64k", -EINVAL, NULL);
        T(KNOB_NR_REQUESTS, f, "max", -EINVAL, NULL);

        T(KNOB_NR_REQUESTS, none, "64", 0, "64");
        T(KNOB_NR_REQUESTS, none, "65", -ERANGE, NULL);
        T(KNOB_NR_REQUESTS, none, "4", 0, "4");
        T(KNOB_NR_REQUESTS, none, "3", -ERANGE, NULL);

        T(KNOB_NR_REQUESTS, res, "7", -ERANGE, NULL);
        T(KNOB_NR_REQUESTS, res, "8", 0, "8");
}

static void test_irq_affinity(void) {
        _cleanup_(disk_facts_freep) DiskFacts *f = make_disk("[mq-deadline] kyber bfq none\n", 64, 0);

        T(KNOB_IRQ_AFFINITY, f, "hctx", 0, "hctx");
        T(KNOB_IRQ_AFFINITY, f, "hctx\n", 0, "hctx");
        T(KNOB_IRQ_AFFINITY, f, "0", 0, "0");
        T(KNOB_IRQ_AFFINITY, f, "1\n", 0, "1");
        T(KNOB_IRQ_AFFINITY, f, "0-1", 0, "0-1");
        T(KNOB_IRQ_AFFINITY, f, "1,0", 0, "0-1");       /* normalised kernel cpulist */
        T(KNOB_IRQ_AFFINITY, f, "0,1", 0, "0-1");
        T(KNOB_IRQ_AFFINITY, f, "0-0", 0, "0");
        T(KNOB_IRQ_AFFINITY, f, "2", -ERANGE, NULL);            /* offline: out of range */
        T(KNOB_IRQ_AFFINITY, f, "0-2", -ERANGE, NULL);
        T(KNOB_IRQ_AFFINITY, f, "4095", -ERANGE, NULL);
        T(KNOB_IRQ_AFFINITY, f, "1-0", -EINVAL, NULL);          /* descending */
        T(KNOB_IRQ_AFFINITY, f, "0, 1", -EINVAL, NULL);         /* blanks are refused in policy files */
        T(KNOB_IRQ_AFFINITY, f, "8192", -ERANGE, NULL);         /* beyond NR_CPUS */
        T(KNOB_IRQ_AFFINITY, f, ",", -EINVAL, NULL);
        T(KNOB_IRQ_AFFINITY, f, "-", -EINVAL, NULL);
        T(KNOB_IRQ_AFFINITY, f, "a", -EINVAL, NULL);
        T(KNOB_IRQ_AFFINITY, f, "0x3", -EINVAL, NULL);
        T(KNOB_IRQ_AFFINITY, f, "ff", -EINVAL, NULL);           /* a mask, not a list */
        T(KNOB_IRQ_AFFINITY, f, "HCTX", -EINVAL, NULL);

        /* online unknown (NULL): any syntactically valid list passes */
        char *v = NULL;
        CHECK_INT(policy_override_validate(KNOB_IRQ_AFFINITY, "3,5-6", 5, f, NULL, &v), 0);
        CHECK_STR(v, "3,5-6");
        free(v);
        /* offline CPU in the middle of the online set ("0,2-3": CPU1 offline) */
        _cleanup_(cpuset_done) CpuSet holes = {};
        CHECK_INT(cpuset_parse("0,2-3", &holes), 0);
        v = NULL;
        CHECK_INT(policy_override_validate(KNOB_IRQ_AFFINITY, "1", 1, f, &holes, &v), -ERANGE);
        CHECK_NULL(v);
        CHECK_INT(policy_override_validate(KNOB_IRQ_AFFINITY, "2-3,0", 5, f, &holes, &v), 0);
        CHECK_STR(v, "0,2-3");
        free(v);
}

/* ---- module-parameter policy --------------------------------------------------------------- */

static DiskFacts *make_hba_disk(const char *driver, const char *release, const char *param_value, bool have_param,
                                Tristate rotational, size_t n_hctx) {
        DiskFacts *f = make_disk("[mq-deadline] kyber bfq none\n", 4096, 0);
        free(f->hctx);
        f->n_hctx = n_hctx;
        f->hctx = calloc(n_hctx, sizeof(HctxFacts));
        for (size_t i = 0; i < n_hctx; i++)
                f->hctx[i] = (HctxFacts) { .index = i, .nr_tags = 4096, .shared_tags = TRISTATE_YES, .irq = -1 };
        f->rotational = rotational;
        f->shared_tags = TRISTATE_YES;
        f->driver = strdup(driver);
        f->transport = strdup("scsi");
        f->kernel_release = strdup(release);
        if (have_param) {
                f->modparams = calloc(1, sizeof(ModuleParamFacts));
                f->modparams[0] = (ModuleParamFacts) { .module = strdup(driver), .param = strdup("host_tagset_enable"),
                                                       .value = param_value ? strdup(param_value) : NULL };
                f->n_modparams = 1;
        }
        return f;
}

static bool explain_has(const Plan *p, const char *needle) {
        PLAN_FOREACH_ENTRY(l, p)
                if (strstr(l->text, needle))
                        return true;
        return false;
}

static void check_wish(int line, const Plan *p, const char *module, const char *param, const char *value, bool load_time_only) {
        tap_checks++;
        for (size_t i = 0; i < p->n_modules; i++)
                if (streq(p->modules[i].module, module) && streq(p->modules[i].param, param)) {
                        if (!streq(p->modules[i].value, value))
                                TAP_FAIL("line %d: %s.%s=%s, expected %s", line, module, param, p->modules[i].value, value);
                        if (p->modules[i].load_time_only != load_time_only)
                                TAP_FAIL("line %d: %s.%s load_time_only=%d", line, module, param, p->modules[i].load_time_only);
                        if (!p->modules[i].takes_effect || !*p->modules[i].takes_effect)
                                TAP_FAIL("line %d: %s.%s without takes_effect", line, module, param);
                        return;
                }
        TAP_FAIL("line %d: no wish %s.%s=%s (%zu wishes)", line, module, param, value, p->n_modules);
}

static void dump_explain(const Plan *p) {
        PLAN_FOREACH_ENTRY(l, p)
                fprintf(stderr, "     | %s\n", l->text);
}

static void test_module_params(void) {
        PolicyConfig c = {};
        CHECK_INT(test_policy_config_init(&c, false, "*"), 0);

        /* megaraid_sas, 64 hctx HDD on 5.10 (no sq-elevator fix) -> host_tagset_enable=0 */
        {
                _cleanup_(disk_facts_freep) DiskFacts *f = make_hba_disk("megaraid_sas", "5.10.0-28-amd64", "1", true, TRISTATE_YES, 64);
                _cleanup_(plan_done) Plan p = {};
                CHECK_INT(policy_evaluate(f, NULL, &c, NULL, &p), 0);
                CHECK_INT(p.class, DISK_CLASS_MANY_HCTX_SLOW);
                CHECK_INT(p.n_modules, 1);
                check_wish(__LINE__, &p, "megaraid_sas", "host_tagset_enable", "0", true);
                CHECK(explain_has(&p, "megaraid_sas.host_tagset_enable=0") && explain_has(&p, "(rule module-host-tagset)"));
                CHECK(explain_has(&p, "kernel=5.10"));
                if (tap_failed)
                        dump_explain(&p);
        }
        /* same for mpt3sas on 5.11 */
        {
                _cleanup_(disk_facts_freep) DiskFacts *f = make_hba_disk("mpt3sas", "5.11.22", "1", true, TRISTATE_YES, 8);
                _cleanup_(plan_done) Plan p = {};
                CHECK_INT(policy_evaluate(f, NULL, &c, NULL, &p), 0);
                check_wish(__LINE__, &p, "mpt3sas", "host_tagset_enable", "0", true);
        }
        /* 5.12 and 6.1 have the fix: nothing proposed by default, the reason is explained */
        const char *fixed[] = { "5.12.0", "6.1.0-28-amd64", "6.18.44-fc-v782" };
        for (size_t i = 0; i < ELEMENTSOF(fixed); i++) {
                _cleanup_(disk_facts_freep) DiskFacts *f = make_hba_disk("megaraid_sas", fixed[i], "1", true, TRISTATE_YES, 64);
                _cleanup_(plan_done) Plan p = {};
                CHECK_INT(policy_evaluate(f, NULL, &c, NULL, &p), 0);
                CHECK_INT(p.n_modules, 0);
                CHECK(explain_has(&p, "single-queue elevator fix"));
        }
        /* ... unless the config says HostTagset=disable */
        c.classes[DISK_CLASS_MANY_HCTX_SLOW].host_tagset = HOST_TAGSET_DISABLE;
        {
                _cleanup_(disk_facts_freep) DiskFacts *f = make_hba_disk("megaraid_sas", "6.1.0-28-amd64", "1", true, TRISTATE_YES, 64);
                _cleanup_(plan_done) Plan p = {};
                CHECK_INT(policy_evaluate(f, NULL, &c, NULL, &p), 0);
                CHECK_INT(p.n_modules, 1);
                check_wish(__LINE__, &p, "megaraid_sas", "host_tagset_enable", "0", true);
        }
        /* HostTagset=keep: never, even on 5.10 */
        c.classes[DISK_CLASS_MANY_HCTX_SLOW].host_tagset = HOST_TAGSET_KEEP;
        {
                _cleanup_(disk_facts_freep) DiskFacts *f = make_hba_disk("megaraid_sas", "5.10.0-28-amd64", "1", true, TRISTATE_YES, 64);
                _cleanup_(plan_done) Plan p = {};
                CHECK_INT(policy_evaluate(f, NULL, &c, NULL, &p), 0);
                CHECK_INT(p.n_modules, 0);
                CHECK(explain_has(&p, "HostTagset=keep"));
        }
        c.classes[DISK_CLASS_MANY_HCTX_SLOW].host_tagset = HOST_TAGSET_AUTO;
        /* the parameter does not exist in this kernel (5.10-rc7 revert, or an old module): no wish, explained */
        for (int have = 0; have <= 1; have++) {
                _cleanup_(disk_facts_freep) DiskFacts *f = make_hba_disk("megaraid_sas", "5.10.0-28-amd64", NULL, have, TRISTATE_YES, 64);
                _cleanup_(plan_done) Plan p = {};
                CHECK_INT(policy_evaluate(f, NULL, &c, NULL, &p), 0);
                CHECK_INT(p.n_modules, 0);
                CHECK(explain_has(&p, "no such parameter"));
        }
        /* not many-hctx-slow (the SSD on the same HBA: shared-tags) -> no wish */
        {
                _cleanup_(disk_facts_freep) DiskFacts *f = make_hba_disk("megaraid_sas", "5.10.0-28-amd64", "1", true, TRISTATE_NO, 64);
                _cleanup_(plan_done) Plan p = {};
                CHECK_INT(policy_evaluate(f, NULL, &c, NULL, &p), 0);
                CHECK_INT(p.class, DISK_CLASS_SHARED_TAGS);
                CHECK_INT(p.n_modules, 0);
        }
        /* another driver (smartpqi has no such parameter; always host-wide) -> no wish */
        {
                _cleanup_(disk_facts_freep) DiskFacts *f = make_hba_disk("smartpqi", "5.10.0-28-amd64", "1", true, TRISTATE_YES, 64);
                _cleanup_(plan_done) Plan p = {};
                CHECK_INT(policy_evaluate(f, NULL, &c, NULL, &p), 0);
                CHECK_INT(p.n_modules, 0);
        }
        /* policy/enabled=0: a disk left alone wants nothing */
        {
                _cleanup_(disk_facts_freep) DiskFacts *f = make_hba_disk("megaraid_sas", "5.10.0-28-amd64", "1", true, TRISTATE_YES, 64);
                _cleanup_(plan_done) Plan p = {};
                PolicyOverrides o = { .disabled = true };
                CHECK_INT(policy_evaluate(f, NULL, &c, &o, &p), 0);
                CHECK(!p.manage);
                CHECK_INT(p.n_modules, 0);
        }

        /* [Module:virtio_blk] num_request_queues=1 -> a runtime-writable wish for virtio_blk disks only */
        CHECK_INT(module_wishes_add(&c.module_params, &c.n_module_params, "virtio_blk", "num_request_queues", "1"), 0);
        {
                _cleanup_(disk_facts_freep) DiskFacts *f = make_disk("[mq-deadline] kyber bfq none\n", 128, 0);
                f->driver = strdup("virtio_blk");
                f->transport = strdup("virtio");
                f->shared_tags = TRISTATE_NO;
                _cleanup_(plan_done) Plan p = {};
                CHECK_INT(policy_evaluate(f, NULL, &c, NULL, &p), 0);
                CHECK_INT(p.n_modules, 1);
                check_wish(__LINE__, &p, "virtio_blk", "num_request_queues", "1", false);
                CHECK(explain_has(&p, "config [Module:virtio_blk] num_request_queues=1"));
                CHECK(p.n_modules == 1 && p.modules[0].takes_effect && strstr(p.modules[0].takes_effect, "probe"));
        }
        {
                _cleanup_(disk_facts_freep) DiskFacts *f = make_hba_disk("megaraid_sas", "6.1.0-28-amd64", "1", true, TRISTATE_YES, 64);
                _cleanup_(plan_done) Plan p = {};
                CHECK_INT(policy_evaluate(f, NULL, &c, NULL, &p), 0);
                CHECK_INT(p.n_modules, 0);
        }
        policy_config_done(&c);

        /* the table: load-time-only (0444) vs runtime-writable (0644), as each driver's module_param() declares */
        const KnownModuleParam *k;
        CHECK((k = known_module_param("megaraid_sas", "host_tagset_enable")) && k->load_time_only);
        CHECK((k = known_module_param("mpt3sas", "host_tagset_enable")) && k->load_time_only);
        CHECK((k = known_module_param("nvme", "write_queues")) && !k->load_time_only);
        CHECK((k = known_module_param("nvme", "poll_queues")) && !k->load_time_only);
        CHECK((k = known_module_param("virtio_blk", "num_request_queues")) && !k->load_time_only);
        CHECK_NULL(known_module_param("virtio_blk", "host_tagset_enable"));
        CHECK_NULL(known_module_param("nvme", "io_queue_depth"));
        CHECK_NULL(known_module_param("megaraid_sas", "poll_queues"));
        for (k = known_module_params; k->module; k++)
                CHECK(k->takes_effect && *k->takes_effect);
}

/* An accepted override that cannot act on this disk (no queue vectors, kernel-managed vectors,
 * not a network disk) is named in the explain line that leaves its knob alone. */
static void test_idle_overrides(void) {
        PolicyConfig c = {};
        CHECK_INT(test_policy_config_init(&c, false, "*"), 0);
        PolicyOverrides o = {};
        CHECK_INT(policy_overrides_set(&o, KNOB_IRQ_AFFINITY, "0"), 0);
        CHECK_INT(policy_overrides_set(&o, KNOB_XPS, "hctx"), 0);
        CHECK_INT(policy_overrides_set(&o, KNOB_NR_IO_QUEUES, "2"), 0);

        /* no queue vectors, a SCSI disk (not a network one) */
        {
                _cleanup_(disk_facts_freep) DiskFacts *f = make_hba_disk("megaraid_sas", "6.1.0-28-amd64", "1", true, TRISTATE_YES, 4);
                _cleanup_(plan_done) Plan p = {}, q = {};
                CHECK_INT(policy_evaluate(f, NULL, &c, &o, &p), 0);
                CHECK(explain_has(&p, "no request-queue IRQ vectors (no MSI/MSI-X vectors: legacy INTx interrupts); "
                                      "policy/irq_affinity=0 has nothing to act on (rule irq-affinity-none)"));
                CHECK(explain_has(&p, "not a network block device; policy/xps=hctx has nothing to act on; "
                                      "policy/nr_io_queues=2 has nothing to act on (rule net-align-local)"));
                CHECK(!p.irq_affinity && !p.xps && !p.nr_io_queues);
                if (tap_failed)
                        dump_explain(&p);
                /* without overrides the lines say nothing of them */
                CHECK_INT(policy_evaluate(f, NULL, &c, NULL, &q), 0);
                CHECK(explain_has(&q, "(rule irq-affinity-none)") && !explain_has(&q, "nothing to act on"));
        }
        /* "keep" asks for nothing: it is not an override with nothing to act on (a first-time
         * user read "policy/xps=keep has nothing to act on") */
        {
                PolicyOverrides k = {};
                CHECK_INT(policy_overrides_set(&k, KNOB_XPS, "keep"), 0);
                CHECK_INT(policy_overrides_set(&k, KNOB_NIC_IRQ_AFFINITY, "keep"), 0);
                CHECK_INT(policy_overrides_set(&k, KNOB_NR_IO_QUEUES, "2"), 0);
                _cleanup_(disk_facts_freep) DiskFacts *f = make_hba_disk("megaraid_sas", "6.1.0-28-amd64", "1", true, TRISTATE_YES, 4);
                _cleanup_(plan_done) Plan p = {};
                CHECK_INT(policy_evaluate(f, NULL, &c, &k, &p), 0);
                CHECK(explain_has(&p, "not a network block device; policy/nr_io_queues=2 has nothing to act on (rule net-align-local)"));
                CHECK(!explain_has(&p, "=keep has nothing to act on"));
                if (tap_failed)
                        dump_explain(&p);
                policy_overrides_done(&k);
        }
        /* every queue vector kernel-managed */
        {
                _cleanup_(disk_facts_freep) DiskFacts *f = make_hba_disk("megaraid_sas", "6.1.0-28-amd64", "1", true, TRISTATE_YES, 2);
                f->irqs = calloc(2, sizeof(IrqFacts));
                f->n_irqs = 2;
                for (int i = 0; i < 2; i++)
                        f->irqs[i] = (IrqFacts) { .irq = 40 + i, .managed = TRISTATE_YES, .queue = true, .hctx = i };
                _cleanup_(plan_done) Plan p = {};
                CHECK_INT(policy_evaluate(f, NULL, &c, &o, &p), 0);
                CHECK(explain_has(&p, "managed by kernel; policy/irq_affinity=0 has nothing to act on (rule irq-affinity-managed)"));
                CHECK(!p.irq_affinity);
                if (tap_failed)
                        dump_explain(&p);
        }
        policy_overrides_done(&o);
        policy_config_done(&c);
}

/* An override's explain line gives the value before blkmqd wrote it, like the class lines. */
static void test_override_before(void) {
        PolicyConfig c = {};
        CHECK_INT(test_policy_config_init(&c, false, "*"), 0);
        PolicyOverrides o = {};
        CHECK_INT(policy_overrides_set(&o, KNOB_RQ_AFFINITY, "2"), 0);
        CHECK_INT(policy_overrides_set(&o, KNOB_NR_REQUESTS, "64"), 0);
        /* mq-deadline already: no switch (after one, nr_requests is the kernel's reset, said so) */
        _cleanup_(disk_facts_freep) DiskFacts *f = make_disk("[mq-deadline] kyber bfq none\n", 128, 0);
        f->rq_affinity = 2;
        f->nr_requests = 64;
        PolicyHistory h = POLICY_HISTORY_INIT;
        h.rq_affinity_before = 1;
        h.nr_requests_before = 128;
        _cleanup_(plan_done) Plan p = {}, q = {};
        CHECK_INT(policy_evaluate(f, &h, &c, &o, &p), 0);
        CHECK(explain_has(&p, "policy/rq_affinity=2 rq_affinity=2 (1 before blkmqd wrote it) -> rq_affinity=2"));
        CHECK(explain_has(&p, "policy/nr_requests=64 nr_requests=64 (128 before blkmqd wrote it) -> nr_requests=64"));
        if (tap_failed)
                dump_explain(&p);
        /* nothing written by blkmqd: no "before" */
        h.rq_affinity_before = h.nr_requests_before = -1;
        CHECK_INT(policy_evaluate(f, &h, &c, &o, &q), 0);
        CHECK(explain_has(&q, "policy/rq_affinity=2 rq_affinity=2 -> rq_affinity=2") && !explain_has(&q, "before blkmqd wrote"));
        policy_overrides_done(&o);
        policy_config_done(&c);
}

/* "keep" in every knob's policy file (and [Device:]): left to the disk whatever the class
 * wants; a value blkmqd wrote is put back (a first-time user found policy/irq_affinity refuse
 * "keep", which plan/irq_affinity shows and policy/xps takes). */
static void test_keep(void) {
        _cleanup_(disk_facts_freep) DiskFacts *f = make_disk("[none] mq-deadline kyber bfq\n", 128, 0);
        f->rq_affinity = 1;
        f->nr_requests = 128;
        f->irqs = calloc(1, sizeof(IrqFacts));
        f->n_irqs = 1;
        f->irqs[0] = (IrqFacts) { .irq = 40, .managed = TRISTATE_NO, .queue = true, .hctx = 0 };
        f->hctx[0].irq = 40;

        for (Knob k = 0; k < _KNOB_MAX; k++)
                t(__LINE__, k, f, "keep\n", -1, 0, "keep");
        t(__LINE__, POLICY_FILE_ENABLED, f, "keep", -1, -EINVAL, NULL);
        t(__LINE__, KNOB_ELEVATOR, f, "keep none", -1, -EINVAL, NULL);

        /* the class wants mq-deadline, rq_affinity 2 and the IRQs on their hctx */
        PolicyConfig c = {};
        CHECK_INT(test_policy_config_init(&c, false, "*"), 0);
        c.classes[DISK_CLASS_SINGLE_QUEUE_ROTATIONAL].rq_affinity = 2;
        c.classes[DISK_CLASS_SINGLE_QUEUE_ROTATIONAL].irq_follow_hctx = true;
        {
                _cleanup_(plan_done) Plan p = {};
                CHECK_INT(policy_evaluate(f, NULL, &c, NULL, &p), 0);
                CHECK(p.elevator && streq(p.elevator, "mq-deadline") && p.rq_affinity && p.irq_affinity);
        }
        PolicyOverrides o = {};
        for (Knob k = KNOB_ELEVATOR; k <= KNOB_IRQ_AFFINITY; k++)
                CHECK_INT(policy_overrides_set(&o, k, "keep"), 0);
        {
                _cleanup_(plan_done) Plan p = {};
                CHECK_INT(policy_evaluate(f, NULL, &c, &o, &p), 0);
                CHECK(p.elevator && streq(p.elevator, "none"));
                CHECK(!p.rq_affinity && !p.nr_requests && !p.irq_affinity);
                CHECK(explain_has(&p, "policy/elevator=keep elevator=none -> elevator=none, kept (rule override)"));
                CHECK(explain_has(&p, "policy/rq_affinity=keep rq_affinity=1 -> rq_affinity left alone (rule override)"));
                CHECK(explain_has(&p, "policy/nr_requests=keep nr_requests=128 -> nr_requests left alone (rule override)"));
                CHECK(explain_has(&p, "policy/irq_affinity=keep queue vectors=1 -> irq_affinity left alone (rule override)"));
                if (tap_failed)
                        dump_explain(&p);
        }
        /* blkmqd had switched the elevator and written rq_affinity and an IRQ: put back */
        free(f->elevator);
        f->elevator = strdup("mq-deadline");
        f->rq_affinity = 2;
        PolicyHistory h = POLICY_HISTORY_INIT;
        h.elevator_before = (char *) "none";    /* not owned: no policy_history_done() */
        h.rq_affinity_before = 1;
        h.irq_written = 1;
        {
                _cleanup_(plan_done) Plan p = {};
                CHECK_INT(policy_evaluate(f, &h, &c, &o, &p), 0);
                CHECK(p.elevator && streq(p.elevator, "none"));
                CHECK(!p.rq_affinity && !p.irq_affinity);
                CHECK(explain_has(&p, "policy/elevator=keep elevator=mq-deadline (none before blkmqd switched it) -> elevator=none, restored"));
                CHECK(explain_has(&p, "policy/rq_affinity=keep rq_affinity=2 (1 before blkmqd wrote it) -> no wish, blkmqd's write undone: "
                                      "rq_affinity=1 restored"));
                CHECK(explain_has(&p, "policy/irq_affinity=keep queue vectors=1 (1 placed by blkmqd) -> no wish, blkmqd's write undone"));
                if (tap_failed)
                        dump_explain(&p);
        }
        policy_overrides_done(&o);
        policy_config_done(&c);
}

int main(void) {
        if (cpuset_parse("0-1", &online) < 0)
                return 1;
        test_common();
        test_elevator();
        test_rq_affinity();
        test_nr_requests();
        test_irq_affinity();
        test_module_params();
        test_idle_overrides();
        test_override_before();
        test_keep();
        cpuset_done(&online);
        return tap_finish("test-overrides");
}
