/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for policies/speed.c: the service-time buckets (the BPF program's too), quantiles,
 * the measured state and its hysteresis, the text facts/speed shows, the rotational flag's
 * trust table, and slow or fast in the class with and without a measurement.
 */
#include <errno.h>
#include <math.h>

#include "facts.h"
#include "macro.h"
#include "parse.h"
#include "policy.h"
#include "speed.h"
#include "strv.h"
#include "tap.h"
#include "test-plan.h"

#define SEC UINT64_C(1000000)

static SpeedConfig config;

/* ---- buckets and quantiles -------------------------------------------------------------------- */

static void test_buckets(void) {
        static const struct {
                uint64_t usec;
                unsigned bucket;
        } t[] = {
                { 0, 0 }, { 1, 1 }, { 2, 5 }, { 3, 7 }, { 4, 9 }, { 5, 10 }, { 6, 11 }, { 7, 12 }, { 8, 13 },
                { 9, 13 }, { 10, 14 }, { 15, 16 }, { 16, 17 }, { 1000, 40 }, { 1023, 40 }, { 1024, 41 },
                { 1280, 42 }, { 1536, 43 }, { 1792, 44 }, { 2047, 44 },
                { (UINT64_C(1) << 30) + 1, 121 }, { (UINT64_C(1) << 31) - 1, 124 }, { UINT64_C(1) << 31, 127 },
                { UINT64_MAX, 127 },
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++)
                CHECK_INT_CASE(speed_bucket_of(t[i].usec), t[i].bucket, "%" PRIu64 " us", t[i].usec);
        /* every bucket that holds values (not 2-4, 6, 8: no integer below 4 µs lands there) starts
         * where its lower bound says, and the value below it is in an earlier bucket */
        for (unsigned i = 1; i < SPEED_BUCKETS; i++) {
                if ((i >= 2 && i <= 4) || i == 6 || i == 8 || i == 125 || i == 126)
                        continue;
                uint64_t lo = (uint64_t) ceil(speed_bucket_lower_usec(i));
                CHECK_INT_CASE(speed_bucket_of(lo), i, "lower bound of bucket %u (%" PRIu64 " us)", i, lo);
                CHECK_INT_CASE(speed_bucket_of(lo - 1) < i, 1, "below bucket %u", i);
        }

        SpeedHistogram h = {};
        CHECK(speed_histogram_quantile(&h, 0.5) == 0);
        /* 100 requests at 100 µs (bucket [96, 112)): the median is inside that bucket */
        h.buckets[speed_bucket_of(100)] = 100;
        double q = speed_histogram_quantile(&h, 0.5);
        CHECK(q >= 96 && q < 112);
        /* 99 fast and 1 slow: p50 fast, p99 at the fast bucket's top, p100 in the slow one */
        h = (SpeedHistogram) {};
        h.buckets[speed_bucket_of(80)] = 99;
        h.buckets[speed_bucket_of(12000)] = 1;
        CHECK(speed_histogram_quantile(&h, 0.5) < 96);
        CHECK(speed_histogram_quantile(&h, 1.0) >= 8192);
}

/* ---- the measured state ------------------------------------------------------------------------- */

/* A BPF sample: the cumulative histogram base plus n requests of usec each, at time t. */
static SpeedSample service(SpeedSample *cum, uint64_t t, uint64_t n, uint64_t usec) {
        cum->signal = SPEED_SIGNAL_SERVICE_TIME;
        cum->usec = t;
        cum->wall_sec = 1764633600 + t / SEC;  /* 2025-12-02 00:00:00 UTC on */
        cum->hist.count += n;
        cum->hist.sum_usec += n * usec;
        cum->hist.buckets[speed_bucket_of(usec)] += n;
        return *cum;
}

static void test_measure(void) {
        _cleanup_(speed_state_reset) SpeedState s = {};
        SpeedSample cum = {};
        char buf[256];
        SpeedSample x;

        /* the first sample is the baseline: what the disk did before blkmqd watched is not counted */
        x = service(&cum, 10 * SEC, 5000, 20000);
        CHECK_INT(speed_feed(&s, &config, &x), 0);
        CHECK_STR(speed_state_format(&s, &config, buf, sizeof(buf)), "unmeasured (0 I/Os seen, 1,024 needed)");

        /* too few I/Os: nothing said */
        x = service(&cum, 11 * SEC, 600, 80);
        CHECK_INT(speed_feed(&s, &config, &x), 0);
        CHECK_INT(s.measured, MEASURED_NONE);
        CHECK_STR(speed_state_format(&s, &config, buf, sizeof(buf)), "unmeasured (600 I/Os seen, 1,024 needed)");

        /* enough, all at 80 µs: fast at once (a first class is not held) */
        x = service(&cum, 12 * SEC, 12000, 80);
        CHECK_INT(speed_feed(&s, &config, &x), 1);
        CHECK_INT(s.measured, MEASURED_FAST);
        CHECK_INT(s.changes, 1);
        CHECK_INT(s.evidence.ios, 12600);
        CHECK_U64(s.evidence.span_usec, 2 * SEC);
        CHECK(s.evidence.p50_usec >= 80 && s.evidence.p50_usec < 96);
        CHECK(startswith(speed_state_format(&s, &config, buf, sizeof(buf)), "fast: p50 "));
        CHECK(strstr(buf, " over 12,600 I/Os in 2 s") != NULL);

        /* a window between the bounds says nothing: fast stays */
        x = service(&cum, 30 * SEC, 2000, 3000);
        CHECK_INT(speed_feed(&s, &config, &x), 0);
        CHECK_INT(s.measured, MEASURED_FAST);
        CHECK_INT(s.evidence.verdict, MEASURED_NONE);

        /* slow beyond the margin, but within MinChangeSec of the change: held, and said */
        x = service(&cum, 60 * SEC, 2000, 20000);
        CHECK_INT(speed_feed(&s, &config, &x), 0);
        CHECK_INT(s.measured, MEASURED_FAST);
        CHECK(s.held);
        CHECK(strstr(speed_state_format(&s, &config, buf, sizeof(buf)), ", held: the last window measured slow (") != NULL);

        /* slow again after MinChangeSec: the one change */
        x = service(&cum, 12 * SEC + config.min_change_usec, 2000, 20000);
        CHECK_INT(speed_feed(&s, &config, &x), 1);
        CHECK_INT(s.measured, MEASURED_SLOW);
        CHECK_INT(s.before, MEASURED_FAST);
        CHECK_INT(s.changes, 2);
        CHECK(!s.held);
        CHECK(startswith(speed_state_format(&s, &config, buf, sizeof(buf)), "slow: p50 "));

        /* the counters begin anew (the disk was forgotten and seen again): a new baseline, no window */
        SpeedSample fresh = {};
        x = service(&fresh, 1000 * SEC, 10, 20000);
        CHECK_INT(speed_feed(&s, &config, &x), 0);
        CHECK_INT(s.window_ios, 0);
        CHECK_INT(s.measured, MEASURED_SLOW);

        /* the stat signal: busy time per I/O */
        _cleanup_(speed_state_reset) SpeedState st = {};
        SpeedSample a = { .signal = SPEED_SIGNAL_BUSY_PER_IO, .usec = 1 * SEC, .ios = 100, .busy_ms = 50 };
        SpeedSample b = { .signal = SPEED_SIGNAL_BUSY_PER_IO, .usec = 9 * SEC, .ios = 1304, .busy_ms = 8050 };
        CHECK_INT(speed_feed(&st, &config, &a), 0);
        CHECK_INT(speed_feed(&st, &config, &b), 1);
        CHECK_INT(st.measured, MEASURED_SLOW);                 /* 8000 ms / 1204 I/Os = 6.6 ms */
        CHECK_STR(speed_state_format(&st, &config, buf, sizeof(buf)), "slow: 6.6 ms busy per I/O over 1,204 I/Os in 8 s");

        /* a window between the bounds as the first one: unmeasured, and says where it is */
        _cleanup_(speed_state_reset) SpeedState mid = {};
        SpeedSample c0 = {};
        x = service(&c0, 1 * SEC, 1, 1);
        speed_feed(&mid, &config, &x);
        x = service(&c0, 5 * SEC, 4096, 3100);
        CHECK_INT(speed_feed(&mid, &config, &x), 0);
        CHECK_INT(mid.measured, MEASURED_NONE);
        CHECK(startswith(speed_state_format(&mid, &config, buf, sizeof(buf)), "unmeasured: p50 "));
        CHECK(strstr(buf, " is between fast (<= 2.0 ms) and slow (>= 5.0 ms) (4,096 I/Os in 4 s)") != NULL);
}

/*
 * What the state directory stores (speed_state_to_kv()) and a restart takes back
 * (speed_state_from_kv()): the class, its last change and the evidence; the hysteresis counts
 * from the stored change (a restart is no free class change); a time after now is another
 * boot's; a value that does not parse changes nothing.
 */
static void test_stored(void) {
        _cleanup_(speed_state_reset) SpeedState s = {}, r = {};
        SpeedSample cum = {};
        char buf[SPEED_TEXT_MAX];
        _cleanup_strv_free_ char **kv = NULL;
        SpeedSample x = service(&cum, 10 * SEC, 0, 1);

        CHECK_INT(speed_state_to_kv(&s, &kv), 0);
        CHECK(kv == NULL);                              /* nothing measured: no file */
        speed_feed(&s, &config, &x);
        x = service(&cum, 12 * SEC, 2000, 20000);
        CHECK_INT(speed_feed(&s, &config, &x), 1);
        CHECK_INT(speed_state_to_kv(&s, &kv), 0);
        CHECK(kv && streq(kv[0], "speed") && streq(kv[1], "slow"));

        /* a restart 30 s later: its own baseline first, then the stored class */
        SpeedSample c2 = {};
        x = service(&c2, 42 * SEC, 77, 80);
        speed_feed(&r, &config, &x);
        CHECK_INT(speed_state_from_kv(&r, kv, 42 * SEC, SPEED_RESTORED_RESTART), 1);
        CHECK_INT(r.measured, MEASURED_SLOW);
        CHECK_INT(r.before, MEASURED_NONE);
        CHECK_INT(r.changes, 1);
        CHECK_U64(r.changed_usec, 12 * SEC);
        CHECK_U64(r.changed_wall_sec, s.changed_wall_sec);
        CHECK_U64(r.evidence.ios, 2000);
        CHECK(fabs(r.evidence.p50_usec - s.evidence.p50_usec) < 0.001);
        CHECK(r.have_base && r.hists && r.hists->base.count == 77);  /* the restart's baseline stays */
        CHECK(!r.held);
        CHECK_STR(speed_state_format(&r, &config, buf, sizeof(buf)),
                  "slow: p50 18 ms, p99 20 ms over 2,000 I/Os in 2 s, measured before the restart at 2025-12-02 00:00:12 UTC");

        /* fast within MinChangeSec of the stored change: held, as without the restart */
        x = service(&c2, 60 * SEC, 2000, 80);
        CHECK_INT(speed_feed(&r, &config, &x), 0);
        CHECK_INT(r.measured, MEASURED_SLOW);
        CHECK(r.held);
        CHECK_INT(r.restored, SPEED_RESTORED_NO);      /* this run's window now */
        CHECK(strstr(speed_state_format(&r, &config, buf, sizeof(buf)), "measured before") == NULL);
        /* the held window stored and taken back: still held, and said to be stored */
        _cleanup_strv_free_ char **held = NULL;
        CHECK_INT(speed_state_to_kv(&r, &held), 0);
        _cleanup_(speed_state_reset) SpeedState h = {};
        CHECK_INT(speed_state_from_kv(&h, held, 70 * SEC, SPEED_RESTORED_RESTART), 1);
        CHECK(h.held);
        CHECK(startswith(speed_state_format(&h, &config, buf, sizeof(buf)), "slow, held: the last window measured fast ("));
        CHECK(strstr(buf, ", measured before the restart at 2025-12-02 00:01:00 UTC), and a change waits") != NULL);
        /* ... and the change comes MinChangeSec after the stored one, not after the restart */
        SpeedSample c3 = {};
        x = service(&c3, 70 * SEC, 0, 1);
        speed_feed(&h, &config, &x);
        x = service(&c3, 12 * SEC + config.min_change_usec - SEC, 2000, 80);
        CHECK_INT(speed_feed(&h, &config, &x), 0);
        x = service(&c3, 12 * SEC + config.min_change_usec, 2000, 80);
        CHECK_INT(speed_feed(&h, &config, &x), 1);
        CHECK_INT(h.measured, MEASURED_FAST);
        CHECK_INT(h.changes, 2);

        /* stored times after now: the clock started again, another boot; s unchanged */
        _cleanup_(speed_state_reset) SpeedState o = {};
        CHECK_INT(speed_state_from_kv(&o, kv, 5 * SEC, SPEED_RESTORED_RESTART), -ESTALE);
        CHECK_INT(o.measured, MEASURED_NONE);
        /* a value that does not parse, a class unknown, no evidence: nothing taken */
        for (size_t i = 0; kv[i]; i += 2) {
                _cleanup_strv_free_ char **bad = strv_copy(kv);
                CHECK(bad != NULL);
                free(bad[i + 1]);
                bad[i + 1] = strdup(streq(kv[i], "at_wall") ? "-1" : "x1");
                CHECK_INT_CASE(speed_state_from_kv(&o, bad, 100 * SEC, SPEED_RESTORED_RESTART), -EINVAL, "%s=%s", kv[i], bad[i + 1]);
                CHECK_INT_CASE(o.measured, MEASURED_NONE, "%s", kv[i]);
        }
        char *only[] = { (char *) "speed", (char *) "fast", (char *) "before", (char *) "unmeasured", (char *) "changes",
                         (char *) "1", (char *) "changed_usec", (char *) "1", (char *) "changed_wall", (char *) "1", NULL };
        CHECK_INT(speed_state_from_kv(&o, only, 100 * SEC, SPEED_RESTORED_RESTART), -EINVAL);
        char *none[] = { (char *) "boot", (char *) "b", NULL };
        CHECK_INT(speed_state_from_kv(&o, none, 100 * SEC, SPEED_RESTORED_RESTART), 0);
}

/*
 * The hysteresis: windows of a load around the bounds (every 10 s for two hours, the value
 * walking between 1 ms and 7 ms and jumping back and forth) give at most one class change per
 * MinChangeSec, and a value between the bounds never changes the class.
 */
static void test_hysteresis(void) {
        _cleanup_(speed_state_reset) SpeedState s = {};
        SpeedSample cum = {};
        SpeedSample x = service(&cum, 0, 0, 1);
        speed_feed(&s, &config, &x);
        uint64_t last_change = 0;
        unsigned changes = 0, held = 0;
        MeasuredSpeed prev = MEASURED_NONE;

        for (unsigned i = 1; i <= 720; i++) {
                /* 1.0, 7.0, 1.9, 5.1, 3.0, 2.1, 4.9 ms, ... : beyond both bounds, inside the band, on its edges */
                static const uint64_t walk[] = { 1000, 7000, 1900, 5100, 3000, 2100, 4900, 1500, 6000 };
                uint64_t usec = walk[i % ELEMENTSOF(walk)];
                uint64_t t = (uint64_t) i * 10 * SEC;
                x = service(&cum, t, 1100, usec);
                int r = speed_feed(&s, &config, &x);
                if (r > 0) {
                        changes++;
                        if (changes > 1)
                                CHECK_INT_CASE(t - last_change >= config.min_change_usec, 1,
                                               "change %u at %" PRIu64 " s, %" PRIu64 " s after the last", changes, t / SEC,
                                               (t - last_change) / SEC);
                        last_change = t;
                        CHECK_INT_CASE(s.measured != prev, 1, "a change changes the class (window %u)", i);
                        CHECK_INT_CASE(s.evidence.verdict, s.measured, "the change follows the window (window %u)", i);
                }
                held += s.held;
                /* a window between the bounds never changes the class */
                if (s.evidence.verdict == MEASURED_NONE)
                        CHECK_INT_CASE(s.measured, prev, "window %u between the bounds", i);
                prev = s.measured;
        }
        /* 7,200 s at one change per 600 s at the most: 12, and the first at once */
        CHECK(changes >= 2 && changes <= 1 + 7200 / (config.min_change_usec / SEC));
        CHECK(held > 0);
        printf("# hysteresis: %u class changes, %u windows held, over 720 windows of a load swinging 1-7 ms\n", changes, held);

        /* with MinChangeSec=0 only the margin holds: a value between the bounds still changes nothing */
        SpeedConfig c = config;
        c.min_change_usec = 0;
        _cleanup_(speed_state_reset) SpeedState z = {};
        SpeedSample zc = {};
        x = service(&zc, 0, 0, 1);
        speed_feed(&z, &c, &x);
        /* (a p50 is known within its bucket, a factor of 1.25: band values off the bounds by more) */
        static const uint64_t band[] = { 1000, 2600, 3900, 2600, 3300 };
        for (unsigned i = 0; i < ELEMENTSOF(band); i++) {
                x = service(&zc, (i + 1) * SEC, 2000, band[i]);
                speed_feed(&z, &c, &x);
        }
        CHECK_INT(z.measured, MEASURED_FAST);
        CHECK_INT(z.changes, 1);
}

/* WindowSec=: a window that has its I/Os but not its time waits for more samples. */
static void test_window(void) {
        SpeedConfig c = config;
        c.window_usec = 10 * SEC;
        _cleanup_(speed_state_reset) SpeedState s = {};
        SpeedSample cum = {};
        SpeedSample x = service(&cum, 100 * SEC, 0, 1);
        speed_feed(&s, &c, &x);
        x = service(&cum, 101 * SEC, 5000, 90);         /* 5,000 I/Os in 1 s: not yet */
        CHECK_INT(speed_feed(&s, &c, &x), 0);
        CHECK_INT(s.measured, MEASURED_NONE);
        x = service(&cum, 109 * SEC, 3000, 90);
        CHECK_INT(speed_feed(&s, &c, &x), 0);
        x = service(&cum, 110 * SEC, 1000, 90);         /* 10 s: evaluated, all 9,000 of them */
        CHECK_INT(speed_feed(&s, &c, &x), 1);
        CHECK_INT(s.measured, MEASURED_FAST);
        CHECK_INT(s.evidence.ios, 9000);
        CHECK_U64(s.evidence.span_usec, 10 * SEC);
}

/* ---- the trust table and the class ------------------------------------------------------------- */

static DiskFacts *disk(const char *name, const char *driver, const char *transport, size_t n_hctx, Tristate rot) {
        DiskFacts *f = disk_facts_new(name);
        f->has_mq = true;
        f->n_hctx = n_hctx;
        f->hctx = calloc(n_hctx, sizeof(HctxFacts));
        for (size_t i = 0; i < n_hctx; i++)
                f->hctx[i] = (HctxFacts) { .index = i, .nr_tags = 256, .shared_tags = TRISTATE_NO, .irq = -1 };
        f->rotational = rot;
        f->shared_tags = TRISTATE_NO;
        f->driver = driver ? strdup(driver) : NULL;
        f->transport = transport ? strdup(transport) : NULL;
        disk_facts_set_unknown(f, FACT_MEDIUM_ROTATION, "not a SCSI disk");
        (void) parse_scheduler("[none] mq-deadline kyber bfq\n", &f->elevators, &f->elevator, &f->elevator_configurable);
        return f;
}

static void test_trust(void) {
        static const struct {
                const char *driver, *transport;
                int channel, rate;              /* -1: unknown */
                const char *row;
                HintTrust trust;
        } t[] = {
                { "virtio_blk", "virtio", -1, -1, "virtio_blk", HINT_UNTRUSTED },
                { "vbd", "xen", -1, -1, "xen-blkfront", HINT_UNTRUSTED },
                { "virtio_scsi", "scsi", 0, 7200, "virtio_scsi", HINT_UNTRUSTED },     /* a B1h rate does not help */
                { "storvsc", "scsi", 0, 1, "hyper-v", HINT_UNTRUSTED },
                { "vmw_pvscsi", "scsi", 0, 0, "vmware", HINT_UNTRUSTED },
                { "megaraid_sas", "scsi", 2, 7200, "raid-volume", HINT_UNTRUSTED },
                { "megaraid_sas", "scsi", 3, 1, "raid-volume", HINT_UNTRUSTED },
                { "megaraid_sas", "scsi", 0, 7200, "scsi-rotation-rate", HINT_TRUSTED },  /* a physical disk, JBOD */
                { "megaraid_sas", "scsi", 1, -1, "scsi-no-rotation-rate", HINT_UNTRUSTED },
                { "mpt3sas", "scsi", 1, 7200, "raid-volume", HINT_UNTRUSTED },
                { "mpt3sas", "scsi", 0, 7200, "scsi-rotation-rate", HINT_TRUSTED },
                { "mpt3sas", "scsi", 2, 1, "scsi-rotation-rate", HINT_TRUSTED },       /* PCIE_CHANNEL: an NVMe drive */
                { "hpsa", "scsi", 1, 1, "raid-volume", HINT_UNTRUSTED },
                { "hpsa", "scsi", 0, 15000, "scsi-rotation-rate", HINT_TRUSTED },
                { "smartpqi", "scsi", 3, 1, "raid-volume", HINT_UNTRUSTED },
                { "aacraid", "scsi", 0, 7200, "raid-volume", HINT_UNTRUSTED },
                { "iscsi_tcp", "scsi", 0, 1, "iscsi", HINT_UNTRUSTED },
                { "nbd", "nbd", -1, -1, "nbd", HINT_UNTRUSTED },
                { "uas", "usb", 0, 1, "usb", HINT_UNTRUSTED },
                { "usb-storage", "usb", 0, -1, "usb", HINT_UNTRUSTED },
                { "ahci", "scsi", 0, 7200, "scsi-rotation-rate", HINT_TRUSTED },
                { "ahci", "scsi", 0, 1, "scsi-rotation-rate", HINT_TRUSTED },
                { "ahci", "scsi", 0, 0, "scsi-no-rotation-rate", HINT_UNTRUSTED },      /* 0: not reported */
                { "ahci", "scsi", 0, 0x200, "scsi-no-rotation-rate", HINT_UNTRUSTED },  /* reserved values */
                { "ahci", "scsi", 0, -1, "scsi-no-rotation-rate", HINT_UNTRUSTED },     /* no VPD page B1h */
                { "nvme", "nvme", -1, -1, "nvme", HINT_TRUSTED },
                { "mmcblk", "mmc", -1, -1, "mmc", HINT_TRUSTED },
                { "null_blk", "null_blk", -1, -1, "null_blk", HINT_TRUSTED },
                { "scsi_debug", "scsi", 0, 1, "scsi_debug", HINT_TRUSTED },
                { "brd", "brd", -1, -1, "ram", HINT_TRUSTED },
                { "ublk", "ublk", -1, -1, "none", HINT_UNTRUSTED },
                { "device-mapper", "dm", -1, -1, "none", HINT_UNTRUSTED },
                { NULL, NULL, -1, -1, "none", HINT_UNTRUSTED },
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                _cleanup_(disk_facts_freep) DiskFacts *f = disk("sdx", t[i].driver, t[i].transport, 1, TRISTATE_YES);
                f->scsi_channel = t[i].channel;
                if (t[i].rate >= 0) {
                        f->rotation_rate = t[i].rate;
                        f->unknown[FACT_MEDIUM_ROTATION] = mfree_str(f->unknown[FACT_MEDIUM_ROTATION]);
                }
                RotationalHint h;
                policy_rotational_hint(f, &config, &h);
                if (!streq(h.row, t[i].row))
                        TAP_FAIL("case %zu (%s ch %d rate %d): row %s, expected %s", i, strna(t[i].driver), t[i].channel,
                                 t[i].rate, h.row, t[i].row);
                tap_checks++;
                CHECK_INT_CASE(h.trust, t[i].trust, "case %zu (%s)", i, strna(t[i].driver));
                CHECK_INT_CASE(h.why && strlen(h.why) > 20 && (strchr(h.why, '(') || streq(h.row, "none")), 1,
                               "case %zu: a reason with its source", i);
        }
        /* every row of the table is reached by some case above */
        const char *row, *why;
        HintTrust trust;
        for (size_t i = 0; policy_rotational_trust_row(i, &row, &trust, &why); i++) {
                bool reached = false;
                for (size_t k = 0; k < ELEMENTSOF(t); k++)
                        reached = reached || streq(t[k].row, row);
                CHECK_INT_CASE(reached, 1, "row %zu (%s) has a case", i, row);
        }
        /* unreadable flag */
        _cleanup_(disk_facts_freep) DiskFacts *u = disk("sdu", "ahci", "scsi", 1, TRISTATE_UNKNOWN);
        RotationalHint h;
        policy_rotational_hint(u, &config, &h);
        CHECK_INT(h.trust, HINT_UNREADABLE);
        /* [Speed] TrustRotational= globs win over the table, "*" also without a driver */
        SpeedConfig c = config;
        c.trust_rotational = NULL;
        CHECK_INT(strv_extend(&c.trust_rotational, "virtio_*"), 0);
        _cleanup_(disk_facts_freep) DiskFacts *v = disk("vda", "virtio_blk", "virtio", 4, TRISTATE_YES);
        policy_rotational_hint(v, &c, &h);
        CHECK(h.trust == HINT_TRUSTED && streq(h.row, "config"));
        _cleanup_(disk_facts_freep) DiskFacts *anon = disk("x", NULL, NULL, 1, TRISTATE_NO);
        policy_rotational_hint(anon, &c, &h);
        CHECK_INT(h.trust, HINT_UNTRUSTED);
        CHECK_INT(strv_extend(&c.trust_rotational, "*"), 0);
        policy_rotational_hint(anon, &c, &h);
        CHECK_INT(h.trust, HINT_TRUSTED);
        strv_free(c.trust_rotational);
}

static bool has(const Plan *p, const char *needle) {
        PLAN_FOREACH_ENTRY(e, p)
                if (strstr(e->text, needle))
                        return true;
        return false;
}

/* The measurement in the class: the case, a 4-queue virtio-blk disk that says rotational=1. */
static void test_class(void) {
        PolicyConfig pc = {};
        CHECK_INT(policy_config_init_defaults(&pc), 0);
        pc.speed.window_usec = 0;
        _cleanup_(disk_facts_freep) DiskFacts *v = disk("vda", "virtio_blk", "virtio", 4, TRISTATE_YES);
        Plan p;

        /* nothing measured: unknown, the kernel's none stays, explain says it waits */
        CHECK_INT(policy_evaluate_measured(v, NULL, &pc, NULL, NULL, &p), 0);
        CHECK_INT(p.class, DISK_CLASS_UNKNOWN);
        CHECK(!p.manage && !p.elevator);
        CHECK(has(&p, "vda: rotational=1 (untrusted: virtio_blk cannot report the medium"));
        CHECK(has(&p, "speed=unmeasured (0 I/Os seen, 1,024 needed) -> slow or fast unknown: waiting for a measurement "
                      "(rule speed-unknown)"));
        CHECK(has(&p, "vda: nr_hw_queues=4 rotational=1 speed=unknown shared_tags=0"));
        test_check_plan_entries("vda", &p);
        plan_done(&p);

        /* measured fast: fast-multiqueue, none kept; explain names the evidence, bounds and the change */
        _cleanup_(speed_state_reset) SpeedState s = {};
        SpeedSample cum = {};
        SpeedSample x = service(&cum, 1 * SEC, 0, 1);
        speed_feed(&s, &pc.speed, &x);
        x = service(&cum, 61 * SEC, 12408, 84);
        CHECK_INT(speed_feed(&s, &pc.speed, &x), 1);
        CHECK_INT(policy_evaluate_measured(v, NULL, &pc, NULL, &s, &p), 0);
        CHECK_INT(p.class, DISK_CLASS_FAST_MULTIQUEUE);
        CHECK_STR(p.elevator, "none");
        CHECK(has(&p, "vda: nr_hw_queues=4 rotational=1 speed=fast shared_tags=0"));
        CHECK(has(&p, "speed=fast: p50 "));
        CHECK(has(&p, " over 12,408 I/Os in 60 s (fast <= 2.0 ms, slow >= 5.0 ms; fast since 2025-12-02 00:01:01 UTC, "
                      "1 change) -> fast, by measurement (rule speed-measured)"));
        test_check_plan_entries("vda", &p);
        plan_done(&p);

        /* measured slow: many-hctx-slow, mq-deadline */
        _cleanup_(speed_state_reset) SpeedState slow = {};
        SpeedSample c2 = {};
        x = service(&c2, 1 * SEC, 0, 1);
        speed_feed(&slow, &pc.speed, &x);
        x = service(&c2, 9 * SEC, 1200, 40000);
        CHECK_INT(speed_feed(&slow, &pc.speed, &x), 1);
        CHECK_INT(policy_evaluate_measured(v, NULL, &pc, NULL, &slow, &p), 0);
        CHECK_INT(p.class, DISK_CLASS_MANY_HCTX_SLOW);
        CHECK_STR(p.elevator, "mq-deadline");
        plan_done(&p);

        /* a trusted flag stands against a measurement: an HDD reading sequentially measures fast */
        _cleanup_(disk_facts_freep) DiskFacts *hdd = disk("sdb", "ahci", "scsi", 1, TRISTATE_YES);
        hdd->rotation_rate = 7200;
        hdd->unknown[FACT_MEDIUM_ROTATION] = mfree_str(hdd->unknown[FACT_MEDIUM_ROTATION]);
        CHECK_INT(policy_evaluate_measured(hdd, NULL, &pc, NULL, &s, &p), 0);
        CHECK_INT(p.class, DISK_CLASS_SINGLE_QUEUE_ROTATIONAL);
        CHECK(has(&p, "-> slow: the trusted flag stands against the measurement"));
        CHECK(has(&p, "sdb: nr_hw_queues=1 rotational=1 shared_tags=0"));     /* the class line as the flag says */
        plan_done(&p);
        /* ... and idle since blkmqd started, it says so */
        CHECK_INT(policy_evaluate_measured(hdd, NULL, &pc, NULL, NULL, &p), 0);
        CHECK(has(&p, "-> slow, from the flag until a measurement exists (a disk idle since blkmqd started stays so) "
                      "(rule speed-hint)"));
        plan_done(&p);

        /* a trusted rotational=0 is fast until measured slow: a throttled cloud volume behind
         * an NVMe front end is slow by measurement (the class follows), a fast one agrees */
        _cleanup_(disk_facts_freep) DiskFacts *nv = disk("nvme0n1", "nvme", "nvme", 4, TRISTATE_NO);
        CHECK_INT(policy_evaluate_measured(nv, NULL, &pc, NULL, NULL, &p), 0);
        CHECK_INT(p.class, DISK_CLASS_FAST_MULTIQUEUE);
        CHECK(has(&p, "-> fast, from the flag until a measurement exists"));
        plan_done(&p);
        CHECK_INT(policy_evaluate_measured(nv, NULL, &pc, NULL, &slow, &p), 0);
        CHECK_INT(p.class, DISK_CLASS_MANY_HCTX_SLOW);
        CHECK_STR(p.elevator, "mq-deadline");
        CHECK(has(&p, "nvme0n1: nr_hw_queues=4 rotational=0 speed=slow shared_tags=0"));
        CHECK(has(&p, "-> slow, by measurement (a non-rotating medium is not a fast one: the measurement wins over "
                      "rotational=0) (rule speed-measured)"));
        test_check_plan_entries("nvme0n1", &p);
        plan_done(&p);
        CHECK_INT(policy_evaluate_measured(nv, NULL, &pc, NULL, &s, &p), 0);
        CHECK_INT(p.class, DISK_CLASS_FAST_MULTIQUEUE);
        CHECK(has(&p, "-> fast, and the measurement agrees (rule speed-hint)"));
        plan_done(&p);

        /* Measure=no: the measurement is not used */
        pc.speed.measure = false;
        CHECK_INT(policy_evaluate_measured(v, NULL, &pc, NULL, &s, &p), 0);
        CHECK_INT(p.class, DISK_CLASS_UNKNOWN);
        CHECK(has(&p, "speed=not measured ([Speed] Measure=no)"));
        plan_done(&p);
        policy_config_done(&pc);
}

int main(void) {
        speed_config_defaults(&config);
        config.window_usec = 0;         /* the windows below are short; test_window() checks WindowSec= */
        test_buckets();
        test_measure();
        test_stored();
        test_hysteresis();
        test_window();
        test_trust();
        test_class();
        return tap_finish("test-speed");
}
