/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for policies/iosched.c: the tunable table against the kernel's store functions
 * (block/bfq-iosched.c, block/mq-deadline.c, block/kyber-iosched.c: the kernel clamps to
 * [min, max], blkmqd refuses outside with ERANGE), the value grammar, names, and the known
 * issues by kernel release.
 */
#include <errno.h>
#include <limits.h>

#include "iosched.h"
#include "macro.h"
#include "policy.h"
#include "strv.h"
#include "tap.h"
#include "test-plan.h"

static void t(int line, IoschedTunable k, const char *input, int rc, const char *want) {
        char *out = (char *) "untouched";
        int r = iosched_tunable_validate(k, input, strlen(input), &out);
        tap_checks++;
        if (r != rc) {
                TAP_FAIL("line %d: %s.%s \"%s\": rc %d, expected %d", line, iosched_tunable_info(k)->elevator,
                         iosched_tunable_info(k)->name, input, r, rc);
                if (r == 0)
                        free(out);
                return;
        }
        tap_checks++;
        if (r < 0) {
                if (!out || strcmp(out, "untouched") != 0)
                        TAP_FAIL("line %d: output changed on error", line);
                return;
        }
        if (want ? !out || strcmp(out, want) != 0 : out != NULL)
                TAP_FAIL("line %d: \"%s\" -> \"%s\", expected \"%s\"", line, input, strna(out), strna(want));
        free(out);
}
#define T(k, in, rc, want) t(__LINE__, k, in, rc, want)

int main(void) {
        /* names: every table entry found by elevator + name and by the dotted form */
        for (IoschedTunable k = 0; k < _IOSCHED_TUNABLE_MAX; k++) {
                const IoschedTunableInfo *i = iosched_tunable_info(k);
                char dotted[128];
                CHECK(i && i->elevator && i->name && i->source);
                CHECK_INT(iosched_tunable_find(i->elevator, i->name), k);
                snprintf(dotted, sizeof(dotted), "%s.%s", i->elevator, i->name);
                CHECK_INT(iosched_tunable_from_dotted(dotted), k);
        }
        CHECK_INT(iosched_tunable_find("bfq", "read_expire"), _IOSCHED_TUNABLE_INVALID);
        CHECK_INT(iosched_tunable_find("cfq", "slice_idle"), _IOSCHED_TUNABLE_INVALID);
        CHECK_INT(iosched_tunable_from_dotted("mq-deadline.fifo_batch"), IOSCHED_DEADLINE_FIFO_BATCH);
        CHECK_INT(iosched_tunable_from_dotted("mq-deadline"), _IOSCHED_TUNABLE_INVALID);
        CHECK_INT(iosched_tunable_from_dotted(".slice_idle"), _IOSCHED_TUNABLE_INVALID);
        CHECK_INT(iosched_tunable_from_dotted("bfq.slice_idle.x"), _IOSCHED_TUNABLE_INVALID);
        CHECK_INT(iosched_tunable_from_dotted("bf.slice_idle"), _IOSCHED_TUNABLE_INVALID);
        CHECK(iosched_elevator_known("kyber") && iosched_elevator_known("mq-deadline") && !iosched_elevator_known("none"));

        /* the kernel's ranges (the store functions clamp to these) */
        T(IOSCHED_BFQ_SLICE_IDLE, "0", 0, "0");
        T(IOSCHED_BFQ_SLICE_IDLE, "0\n", 0, "0");
        T(IOSCHED_BFQ_SLICE_IDLE, "2147483647", 0, "2147483647");
        T(IOSCHED_BFQ_SLICE_IDLE, "2147483648", -ERANGE, NULL);
        T(IOSCHED_BFQ_SLICE_IDLE, "-1", -ERANGE, NULL);
        T(IOSCHED_BFQ_SLICE_IDLE_US, "4294967295", 0, "4294967295");
        T(IOSCHED_BFQ_SLICE_IDLE_US, "4294967296", -ERANGE, NULL);
        T(IOSCHED_BFQ_FIFO_EXPIRE_SYNC, "0", -ERANGE, NULL);            /* min 1: 0 would be clamped to 1 */
        T(IOSCHED_BFQ_FIFO_EXPIRE_SYNC, "1", 0, "1");
        T(IOSCHED_BFQ_BACK_SEEK_PENALTY, "0", -ERANGE, NULL);
        T(IOSCHED_BFQ_TIMEOUT_SYNC, "0", -ERANGE, NULL);
        T(IOSCHED_BFQ_MAX_BUDGET, "0", 0, "0");                         /* 0 = automatic */
        T(IOSCHED_BFQ_LOW_LATENCY, "1", 0, "1");
        T(IOSCHED_BFQ_LOW_LATENCY, "2", -ERANGE, NULL);                 /* the kernel would store 1 */
        T(IOSCHED_BFQ_STRICT_GUARANTEES, "01", 0, "1");
        T(IOSCHED_DEADLINE_FRONT_MERGES, "2", -ERANGE, NULL);
        T(IOSCHED_DEADLINE_WRITES_STARVED, "-2147483648", 0, "-2147483648");
        T(IOSCHED_DEADLINE_WRITES_STARVED, "-2147483649", -ERANGE, NULL);
        T(IOSCHED_DEADLINE_WRITES_STARVED, "-0", 0, "0");
        T(IOSCHED_DEADLINE_WRITES_STARVED, "-", -EINVAL, NULL);
        T(IOSCHED_DEADLINE_ASYNC_DEPTH, "0", -ERANGE, NULL);
        T(IOSCHED_DEADLINE_FIFO_BATCH, "0", 0, "0");
        T(IOSCHED_DEADLINE_FIFO_BATCH, "16", 0, "16");
        T(IOSCHED_DEADLINE_READ_EXPIRE, "-1", -ERANGE, NULL);
        T(IOSCHED_KYBER_READ_LAT_NSEC, "18446744073709551615", 0, "18446744073709551615");
        T(IOSCHED_KYBER_READ_LAT_NSEC, "18446744073709551616", -ERANGE, NULL);
        T(IOSCHED_KYBER_WRITE_LAT_NSEC, "0", 0, "0");
        T(IOSCHED_KYBER_WRITE_LAT_NSEC, "-1", -ERANGE, NULL);

        /* grammar: decimal only, one newline, "auto" clears */
        T(IOSCHED_BFQ_SLICE_IDLE, "auto", 0, NULL);
        T(IOSCHED_BFQ_SLICE_IDLE, "auto\n", 0, NULL);
        T(IOSCHED_BFQ_SLICE_IDLE, "007", 0, "7");
        T(IOSCHED_BFQ_SLICE_IDLE, "", -EINVAL, NULL);
        T(IOSCHED_BFQ_SLICE_IDLE, "\n", -EINVAL, NULL);
        T(IOSCHED_BFQ_SLICE_IDLE, "0x8", -EINVAL, NULL);
        T(IOSCHED_BFQ_SLICE_IDLE, "+8", -EINVAL, NULL);
        T(IOSCHED_BFQ_SLICE_IDLE, " 8", -EINVAL, NULL);
        T(IOSCHED_BFQ_SLICE_IDLE, "8 ", -EINVAL, NULL);
        T(IOSCHED_BFQ_SLICE_IDLE, "8\n\n", -EINVAL, NULL);
        T(IOSCHED_BFQ_SLICE_IDLE, "1.5", -EINVAL, NULL);
        T(IOSCHED_BFQ_SLICE_IDLE, "AUTO", -EINVAL, NULL);
        T(IOSCHED_BFQ_SLICE_IDLE, "99999999999999999999999", -ERANGE, NULL);
        {
                char *out = (char *) "untouched";
                CHECK_INT(iosched_tunable_validate(IOSCHED_BFQ_SLICE_IDLE, "8\0009", 3, &out), -EINVAL);
                CHECK_INT(iosched_tunable_validate(_IOSCHED_TUNABLE_MAX, "8", 1, &out), -EINVAL);
        }
        char *e = iosched_tunable_expected(IOSCHED_BFQ_SLICE_IDLE);
        CHECK(e && strstr(e, "0 to 2147483647") && strstr(e, "bfq_slice_idle_store()") && strstr(e, "auto"));
        free(e);

        /* known issues: bfq waker detection on 5.16 (stable backport), 5.17, 5.18; not 5.15, 5.19, 6.x */
        const char *rule = NULL;
        CHECK(iosched_known_issue("bfq", "5.17.0-1-amd64", &rule) && rule && streq(rule, "known-issue-bfq-waker"));
        CHECK(iosched_known_issue("bfq", "5.18.0-rc3", NULL));
        const char *s16 = iosched_known_issue("bfq", "5.16.20", NULL);
        CHECK(s16 && strstr(s16, "c65e6fd460b4") && strstr(s16, "5.16 stable"));
        const char *s17 = iosched_known_issue("bfq", "5.17.3", NULL);
        CHECK(s17 && strstr(s17, "f950667356ce") && strstr(s17, "c5ac56bb6110") && strstr(s17, "5.19"));
        CHECK(!iosched_known_issue("bfq", "5.15.0-91-generic", NULL));
        CHECK(!iosched_known_issue("bfq", "5.19.0", NULL));
        CHECK(!iosched_known_issue("bfq", "6.1.0-57-amd64", NULL));
        CHECK(!iosched_known_issue("bfq", "4.17.0", NULL));
        CHECK(!iosched_known_issue("mq-deadline", "5.17.0", NULL));
        CHECK(!iosched_known_issue("bfq", NULL, NULL));
        CHECK(!iosched_known_issue("bfq", "garbage", NULL));

        /* explain names it for a bfq disk on 5.17, not on 6.1 */
        DiskFacts *f = disk_facts_new("sdx");
        PolicyConfig cfg = {};
        Plan p = {};
        CHECK(f && test_policy_config_init(&cfg, false, "*") >= 0);
        f->has_mq = true;
        f->rotational = TRISTATE_YES;
        f->n_hctx = 1;
        f->hctx = calloc(1, sizeof(HctxFacts));
        f->hctx[0] = (HctxFacts) { .nr_tags = 64, .nr_reserved_tags = 0, .irq = -1 };
        f->shared_tags = TRISTATE_NO;
        f->elevator = strdup("bfq");
        f->elevator_configurable = true;
        CHECK(strv_extend(&f->elevators, "mq-deadline") >= 0 && strv_extend(&f->elevators, "bfq") >= 0 &&
              strv_extend(&f->elevators, "none") >= 0);
        f->kernel_release = strdup("5.17.15");
        CHECK_INT(policy_evaluate(f, NULL, &cfg, NULL, &p), 0);
        bool found = false;
        PLAN_FOREACH_ENTRY(l, &p)
                found = found || (strstr(l->text, "sdx: elevator=bfq kernel=5.17.15 -> known issue: bfq waker") &&
                                  strstr(l->text, "(rule known-issue-bfq-waker)"));
        CHECK(found);
        plan_done(&p);
        free(f->kernel_release);
        f->kernel_release = strdup("6.1.0-57-amd64");
        CHECK_INT(policy_evaluate(f, NULL, &cfg, NULL, &p), 0);
        PLAN_FOREACH_ENTRY(l, &p)
                CHECK(!strstr(l->text, "known issue"));
        plan_done(&p);

        /* policy: the tunables of the elevator the disk will run */
        f->n_iosched = 3;
        f->iosched = calloc(3, sizeof(IoschedValue));
        f->iosched[0] = (IoschedValue) { .name = strdup("low_latency"), .value = strdup("1"), .writable = true };
        f->iosched[1] = (IoschedValue) { .name = strdup("slice_idle"), .value = strdup("8"), .writable = true };
        f->iosched[2] = (IoschedValue) { .name = strdup("slice_idle_us"), .value = strdup("8000"), .writable = true };
        f->iosched_elevator = strdup("bfq");
        cfg.classes[DISK_CLASS_SINGLE_QUEUE_ROTATIONAL].iosched[IOSCHED_BFQ_SLICE_IDLE] = strdup("0");
        cfg.classes[DISK_CLASS_SINGLE_QUEUE_ROTATIONAL].iosched[IOSCHED_DEADLINE_FIFO_BATCH] = strdup("32");
        CHECK_INT(policy_evaluate(f, NULL, &cfg, NULL, &p), 0);
        CHECK(p.iosched[IOSCHED_BFQ_SLICE_IDLE] && streq(p.iosched[IOSCHED_BFQ_SLICE_IDLE], "0"));
        CHECK(!p.iosched[IOSCHED_DEADLINE_FIFO_BATCH]);          /* mq-deadline does not run */
        found = false;
        PLAN_FOREACH_ENTRY(l, &p)
                found = found || streq(l->text, "sdx: elevator=bfq bfq.slice_idle=8 config [Class:single-queue-rotational] "
                                       "IoSched.bfq.slice_idle=0 -> bfq.slice_idle=0 (rule iosched)");
        CHECK(found);
        PLAN_FOREACH_ENTRY(l, &p)
                CHECK(!strstr(l->text, "fifo_batch"));               /* a class default for another elevator is not noise */
        plan_done(&p);

        /* an override wins over the class; one for another elevator waits (explained); a file this
         * kernel's bfq lacks is left out; slice_idle and slice_idle_us: the latter wins */
        PolicyOverrides o = {};
        CHECK_INT(policy_overrides_set_iosched(&o, IOSCHED_BFQ_SLICE_IDLE, "4"), 0);
        CHECK_INT(policy_overrides_set_iosched(&o, IOSCHED_KYBER_READ_LAT_NSEC, "1000"), 0);
        CHECK_INT(policy_overrides_set_iosched(&o, IOSCHED_BFQ_MAX_BUDGET, "100"), 0);
        CHECK_INT(policy_evaluate(f, NULL, &cfg, &o, &p), 0);
        CHECK(p.iosched[IOSCHED_BFQ_SLICE_IDLE] && streq(p.iosched[IOSCHED_BFQ_SLICE_IDLE], "4"));
        CHECK(!p.iosched[IOSCHED_KYBER_READ_LAT_NSEC]);
        CHECK(!p.iosched[IOSCHED_BFQ_MAX_BUDGET]);
        bool waits = false, missing = false;
        PLAN_FOREACH_ENTRY(l, &p) {
                waits = waits || (strstr(l->text, "policy/iosched/kyber/read_lat_nsec=1000 elevator=bfq -> kyber.read_lat_nsec waits") &&
                                  strstr(l->text, "(rule iosched-elevator)"));
                missing = missing || (strstr(l->text, "bfq.max_budget left alone: this kernel's bfq has no queue/iosched/max_budget") &&
                                      strstr(l->text, "(rule iosched-missing)"));
        }
        CHECK(waits && missing);
        plan_done(&p);
        CHECK_INT(policy_overrides_set_iosched(&o, IOSCHED_BFQ_SLICE_IDLE_US, "500"), 0);
        CHECK_INT(policy_evaluate(f, NULL, &cfg, &o, &p), 0);
        CHECK(!p.iosched[IOSCHED_BFQ_SLICE_IDLE]);
        CHECK(p.iosched[IOSCHED_BFQ_SLICE_IDLE_US] && streq(p.iosched[IOSCHED_BFQ_SLICE_IDLE_US], "500"));
        found = false;
        bool planned = false;
        PLAN_FOREACH_ENTRY(l, &p) {
                found = found || (strstr(l->text, "policy/iosched/bfq/slice_idle=4 bfq.slice_idle_us=500 -> bfq.slice_idle left alone") &&
                                  strstr(l->text, "(rule iosched-conflict)"));
                /* one line for slice_idle, the conflict's: no "-> bfq.slice_idle=4" planned before it */
                planned = planned || strstr(l->text, "-> bfq.slice_idle=4");
        }
        CHECK(found);
        CHECK(!planned);
        plan_done(&p);
        policy_overrides_done(&o);

        /* the pair: one variable, each the other's alias, in the other's unit */
        CHECK_INT(iosched_tunable_alias(IOSCHED_BFQ_SLICE_IDLE), IOSCHED_BFQ_SLICE_IDLE_US);
        CHECK_INT(iosched_tunable_alias(IOSCHED_BFQ_SLICE_IDLE_US), IOSCHED_BFQ_SLICE_IDLE);
        CHECK_INT(iosched_tunable_alias(IOSCHED_BFQ_TIMEOUT_SYNC), _IOSCHED_TUNABLE_INVALID);
        char *conv = NULL;
        CHECK_INT(iosched_alias_value(IOSCHED_BFQ_SLICE_IDLE, "8", &conv), 0);
        CHECK(conv && streq(conv, "8000"));
        conv = mfree_str(conv);
        CHECK_INT(iosched_alias_value(IOSCHED_BFQ_SLICE_IDLE_US, "8500", &conv), 0);
        CHECK(conv && streq(conv, "8"));
        conv = mfree_str(conv);
        CHECK_INT(iosched_alias_value(IOSCHED_BFQ_MAX_BUDGET, "8", &conv), -EINVAL);
        CHECK_INT(iosched_alias_value(IOSCHED_BFQ_SLICE_IDLE, "x", &conv), -EINVAL);
        CHECK_INT(iosched_alias_value(IOSCHED_BFQ_SLICE_IDLE, "18446744073709551615", &conv), -ERANGE);
        CHECK(!conv);

        /* a switch blkmqd plans: the new elevator's tunables, written after it */
        cfg.classes[DISK_CLASS_SINGLE_QUEUE_ROTATIONAL].elevators = strv_free(cfg.classes[DISK_CLASS_SINGLE_QUEUE_ROTATIONAL].elevators);
        CHECK_INT(strv_extend(&cfg.classes[DISK_CLASS_SINGLE_QUEUE_ROTATIONAL].elevators, "mq-deadline"), 0);
        CHECK_INT(policy_evaluate(f, NULL, &cfg, NULL, &p), 0);
        CHECK(p.elevator && streq(p.elevator, "mq-deadline"));
        CHECK(p.iosched[IOSCHED_DEADLINE_FIFO_BATCH] && streq(p.iosched[IOSCHED_DEADLINE_FIFO_BATCH], "32"));
        CHECK(!p.iosched[IOSCHED_BFQ_SLICE_IDLE]);
        found = false;
        PLAN_FOREACH_ENTRY(l, &p)
                found = found || (strstr(l->text, "elevator=mq-deadline (planned) mq-deadline.fifo_batch=default") &&
                                  strstr(l->text, "written after the switch"));
        CHECK(found);
        plan_done(&p);

        /* an unmanaged disk (policy/enabled 0) wants nothing */
        o = (PolicyOverrides) { .disabled = true };
        CHECK_INT(policy_evaluate(f, NULL, &cfg, &o, &p), 0);
        for (IoschedTunable k = 0; k < _IOSCHED_TUNABLE_MAX; k++)
                CHECK(!p.iosched[k]);
        plan_done(&p);

        /* policy/iosched/ writes: the disk must be able to run the elevator, and the running
         * elevator must have the file */
        char *v = NULL;
        CHECK_INT(iosched_override_validate(IOSCHED_BFQ_SLICE_IDLE, "0", 1, f, &v), 0);
        CHECK(v && streq(v, "0"));
        free(v);
        v = (char *) "untouched";
        CHECK_INT(iosched_override_validate(IOSCHED_BFQ_MAX_BUDGET, "0", 1, f, &v), -EINVAL);  /* bfq runs, no such file */
        CHECK_INT(iosched_override_validate(IOSCHED_KYBER_READ_LAT_NSEC, "5", 1, f, &v), -EINVAL); /* kyber not offered */
        CHECK_INT(iosched_override_validate(IOSCHED_DEADLINE_FIFO_BATCH, "-1", 2, f, &v), -ERANGE);
        CHECK(streq(v, "untouched"));
        CHECK_INT(iosched_override_validate(IOSCHED_KYBER_READ_LAT_NSEC, "auto", 4, f, &v), 0);  /* auto always */
        CHECK(v == NULL);
        CHECK_INT(iosched_override_validate(IOSCHED_DEADLINE_FIFO_BATCH, "8", 1, f, &v), 0);   /* mq-deadline offered, not running */
        free(v);

        policy_config_done(&cfg);
        disk_facts_free(f);
        return tap_finish("iosched");
}
