/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The measured speed (policies/speed.h): samples of each disk's own I/O, fed into its
 * SpeedState. Where the BPF provider times requests (stats/stats-bpf.h), a disk's histogram
 * is read when the provider's ring buffer says it grew (every 256 requests, at most once a
 * second per disk), and once more SPEED_TAIL_USEC after the last such event (what a burst did
 * after its last event); nothing while no disk does I/O. Without BPF, /sys/block/<disk>/stat is read
 * at the periodic verify (VerifySec=), which wakes up anyway. A class change by measurement is
 * logged (one line) and the disk evaluated and applied again; new evidence without a change
 * only renews explain.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "log.h"
#include "macro.h"
#include "manager-internal.h"
#include "parse.h"
#include "strv.h"

#define BLKMQD_MESSAGE_SPEED "b6d0a1fe3c1f4a0e9c1d5e2f7a8b9c01"

/* The one sample after a disk's last event: longer than the provider's gap between two events
 * of a disk (SVC_EVENT_GAP_NS, 1 s), so a disk still busy sends its own first. */
#define SPEED_TAIL_USEC (UINT64_C(1500) * 1000)

static bool service_measured(Manager *m) {
        return m->config.policy.speed.measure && blkmqd_stats_bpf_has_service(stats_bpf(m->stats));
}

/* What measures the disks now, for facts/speed_source (static). */
static const char *speed_source(Manager *m) {
        static char buf[512];
        if (!m->config.policy.speed.measure)
                return "not measured: [Speed] Measure=no (the rotational flag alone decides, as far as it is trusted)";
        if (service_measured(m))
                return "service time: BPF, block_rq_issue -> block_rq_complete of reads and writes up to 64 KiB "
                       "(stats/bpf/hctx-stats.bpf.c)";
        StatsBpf *b = stats_bpf(m->stats);
        snprintf(buf, sizeof(buf), "%s: block/<disk>/stat io_ticks per completed read and write, sampled at the periodic "
                 "verify (BPF service times unavailable: %s)",
                 m->config.verify_usec > 0 ? "busy per I/O" : "not measured (VerifySec=0: nothing samples the stat)",
                 b ? strna(blkmqd_stats_bpf_service_unavailable_reason(b)) : stats_bpf_unavailable(m->stats));
        return buf;
}

void manager_speed_render(Manager *m, Device *d) {
        char buf[SPEED_TEXT_MAX];
        const SpeedConfig *c = &m->config.policy.speed;
        const char *t = c->measure ? speed_state_format(&d->speed, c, buf, sizeof(buf)) :
                        "not measured ([Speed] Measure=no)";
        const char *source = speed_source(m);
        bool changed = !streq_ptr(d->speed_text, t) || !streq_ptr(d->speed_source, source);
        if (!streq_ptr(d->speed_text, t) && free_and_strdup(&d->speed_text, t) < 0)
                log_device_debug(d->name, "No memory for facts/speed, ignoring");
        d->speed_source = source;
        /* facts/ is served from the page cache: at most once a second per disk doing I/O (the
         * BPF events), once a verify without BPF */
        if (changed && m->fuse)
                fuse_fs_invalidate_disk(m->fuse, d->name);
}

/* The disk's counters now: 0, or -errno (-ENOENT: nothing measured yet, a zero sample). */
static int take_sample(Manager *m, Device *d, SpeedSample *ret) {
        struct timespec wall;
        clock_gettime(CLOCK_REALTIME, &wall);
        SpeedSample x = { .usec = stats_now_usec(), .wall_sec = (uint64_t) wall.tv_sec };
        int r;

        if (!d->facts || d->facts->unknown[FACT_DEVNUM])
                return -ENODEV;
        if (service_measured(m)) {
                x.signal = SPEED_SIGNAL_SERVICE_TIME;
                r = blkmqd_stats_bpf_read_service(stats_bpf(m->stats), makedev(d->facts->major, d->facts->minor), &x.hist);
                if (r < 0 && r != -ENOENT)
                        return r;
        } else {
                DiskStat st;
                x.signal = SPEED_SIGNAL_BUSY_PER_IO;
                r = manager_read_disk_stat(m, d->name, STATS_READ_NO_INFLIGHT | STATS_READ_NO_RATES, &st, NULL);
                if (r < 0)
                        return r;
                x.ios = st.v[DISK_STAT_READ_IOS] + st.v[DISK_STAT_WRITE_IOS];
                x.busy_ms = st.v[DISK_STAT_IO_TICKS];
        }
        *ret = x;
        return 0;
}

void manager_speed_sample(Manager *m, Device *d) {
        assert(m);
        SpeedSample x;
        const SpeedConfig *c = &m->config.policy.speed;
        bool had = d->speed.have_evidence;
        uint64_t at = d->speed.evidence.at_usec;

        if (!c->measure)
                return;
        int r = take_sample(m, d, &x);
        if (r < 0) {
                log_device_debug(d->name, "Cannot sample the disk's speed, ignoring: %s", strerror(-r));
                return;
        }
        MeasuredSpeed was = d->speed.measured;
        uint64_t seen = d->speed.seen;
        r = speed_feed(&d->speed, c, &x);
        if (r < 0) {
                log_device_warning_errno(d->name, r, "Cannot keep the disk's service-time histograms, not measuring it now: %m");
                return;
        }
        log_device_debug(d->name, "Speed sample (%s): %" PRIu64 " I/O(s) more, %" PRIu64 " measured", speed_signal_to_string(x.signal),
                         d->speed.seen - seen, d->speed.seen);
        manager_speed_render(m, d);
        if (r > 0) {
                char fast[32], slow[32], text[SPEED_TEXT_MAX], f_speed[48];
                DiskClass before = d->plan.class;
                snprintf(f_speed, sizeof(f_speed), "BLKMQD_SPEED=%s", measured_speed_to_string(d->speed.measured));
                const char *fields[] = { f_speed, NULL };
                snprintf(text, sizeof(text), "%s", d->speed_text);
                manager_persist_measured(m, d);         /* a restart in this boot keeps it */
                manager_evaluate(m, d, false);
                if (!(d = registry_get(&m->registry, d->name)) || !d->facts)
                        return;
                log_device_full(LOG_INFO, 0, d->name, BLKMQD_MESSAGE_SPEED, fields,
                                "Measured %s (was %s): %s (fast <= %s, slow >= %s) -> class %s%s%s", 
                                measured_speed_to_string(d->speed.measured), measured_speed_to_string(was), text,
                                speed_format_usec((double) c->fast_usec, fast, sizeof(fast)),
                                speed_format_usec((double) c->slow_usec, slow, sizeof(slow)),
                                disk_class_to_string(d->plan.class), before != d->plan.class ? ", was " : " (unchanged)",
                                before != d->plan.class ? disk_class_to_string(before) : "");
                return;
        }
        if (d->speed.have_evidence && (!had || d->speed.evidence.at_usec != at))
                manager_refresh(m, d, false, true);     /* explain names the new evidence */
}

void manager_speed_watch(Manager *m, Device *d) {
        assert(m);
        speed_state_reset(&d->speed);
        StatsBpf *b = stats_bpf(m->stats);
        if (b && d->facts && !d->facts->unknown[FACT_DEVNUM]) {
                int r = blkmqd_stats_bpf_service_watch(b, makedev(d->facts->major, d->facts->minor), true);
                if (r < 0 && r != -EOPNOTSUPP)
                        log_device_debug(d->name, "Cannot time the disk's requests, ignoring: %s", strerror(-r));
        }
        manager_speed_sample(m, d);                     /* the baseline */
        manager_speed_render(m, d);
}

static int on_speed_tail(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        _cleanup_strv_free_ char **names = TAKE_PTR(m->speed_tail_disks);
        STRV_FOREACH(n, names) {
                Device *d = registry_get(&m->registry, *n);
                if (d && !m->stopping)
                        manager_speed_sample(m, d);
        }
        return 0;
}

static void on_disk_grew(dev_t devnum, void *userdata) {
        Manager *m = userdata;
        for (size_t i = 0; i < m->registry.n_devices; i++) {
                Device *d = m->registry.devices[i];
                if (!d->facts || d->facts->unknown[FACT_DEVNUM] || d->facts->major != major(devnum) ||
                    d->facts->minor != minor(devnum))
                        continue;
                if (!strv_contains(m->speed_tail_disks, d->name) && strv_extend(&m->speed_tail_disks, d->name) < 0)
                        log_device_debug(d->name, "No memory to sample the disk again later, ignoring");
                manager_speed_sample(m, d);
                /* one more sample after the last event: moved on by every event, off once it ran */
                int r = m->speed_tail ? sd_event_source_set_time_relative(m->speed_tail, SPEED_TAIL_USEC) :
                        sd_event_add_time_relative(m->event, &m->speed_tail, CLOCK_MONOTONIC, SPEED_TAIL_USEC, 0,
                                                   on_speed_tail, m);
                if (r >= 0)
                        r = sd_event_source_set_enabled(m->speed_tail, SD_EVENT_ONESHOT);
                if (r < 0)
                        log_debug_errno(r, "Cannot arm the speed tail sample, ignoring: %m");
                return;
        }
}

static int on_service_events(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        int r = blkmqd_stats_bpf_service_consume(stats_bpf(m->stats), on_disk_grew, m);
        if (r < 0)
                log_debug_errno(r, "Reading the service-time events failed, ignoring: %m");
        return 0;
}

void manager_speed_config_changed(Manager *m) {
        StatsBpf *b = stats_bpf(m->stats);
        bool measure = m->config.policy.speed.measure;
        int r;

        if (b && blkmqd_stats_bpf_service_unavailable_reason(b) == NULL) {
                if (!measure && (r = blkmqd_stats_bpf_service_enable(b, false)) < 0)
                        log_warning_errno(r, "Cannot switch the service-time programs off, ignoring: %m");
        } else if (b && measure && !blkmqd_stats_bpf_has_service(b) &&
                   (r = blkmqd_stats_bpf_service_enable(b, true)) < 0 && r != -EOPNOTSUPP)
                log_warning_errno(r, "Cannot switch the service-time programs on, ignoring: %m");

        int fd = b ? blkmqd_stats_bpf_service_fd(b) : -EOPNOTSUPP;
        if (service_measured(m) && fd >= 0 && !m->speed_events) {
                r = sd_event_add_io(m->event, &m->speed_events, fd, EPOLLIN, on_service_events, m);
                if (r < 0)
                        log_warning_errno(r, "Cannot watch the service-time events, disks are not measured: %m");
        } else if (!service_measured(m))
                m->speed_events = sd_event_source_disable_unref(m->speed_events);

        for (size_t i = 0; i < m->registry.n_devices; i++) {
                Device *d = m->registry.devices[i];
                if (!measure)
                        speed_state_reset(&d->speed);
                manager_speed_render(m, d);
        }
}

void manager_speed_verify_tick(Manager *m) {
        if (service_measured(m))
                return;                 /* the BPF events sample the disks */
        _cleanup_strv_free_ char **names = NULL;       /* a sample may evaluate a disk, and that change the registry */
        for (size_t i = 0; i < m->registry.n_devices; i++)
                if (strv_extend(&names, m->registry.devices[i]->name) < 0)
                        return;
        STRV_FOREACH(n, names) {
                Device *d = registry_get(&m->registry, *n);
                if (d && !m->stopping)
                        manager_speed_sample(m, d);
        }
}
