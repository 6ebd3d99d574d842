/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Statistics the tree reads on demand (FuseFsContext callbacks): per-hctx counters and rates,
 * block/<disk>/stat, host_busy, BLOCK softirqs, BPF misses. Read when a file is opened, never
 * sampled in the background (stats.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "blkstat.h"
#include "interrupts.h"
#include "macro.h"
#include "manager-internal.h"

/* The parsed /proc/interrupts, re-read at most every 100 ms (a metrics scrape reads it once). */
static const ProcInterrupts *manager_interrupts(Manager *m) {
        uint64_t now = stats_now_usec();
        if (m->interrupts_usec && now - m->interrupts_usec < 100000)
                return &m->interrupts;
        _cleanup_free_ char *text = NULL;
        proc_interrupts_done(&m->interrupts);
        m->interrupts_usec = 0;
        if (hostfs_read_kept(m->hostfs, HOSTFS_PROCFS, "interrupts", 0, &text) < 0 ||
            proc_interrupts_parse(text, &m->interrupts) < 0)
                return NULL;
        m->interrupts_usec = now;
        return &m->interrupts;
}

int manager_load_hctx_details(void *userdata, const char *device) {
        Manager *m = userdata;
        Device *d = registry_get(&m->registry, device);
        if (!d || !d->facts)
                return -ENOENT;
        return device_gather_hctx_details(m->hostfs, d->facts, &d->policy_history);
}

int manager_read_hctx(void *userdata, const char *device, size_t pos, unsigned flags, HctxReading *ret) {
        Manager *m = userdata;
        Device *d = registry_get(&m->registry, device);
        int r;

        if (!d || !d->facts || pos >= d->facts->n_hctx)
                return -ENOENT;
        r = device_gather_hctx_details(m->hostfs, d->facts, &d->policy_history);        /* cpu_list, queue vector */
        if (r < 0)
                return r;
        device_stats_fit_hctx(&d->stats, d->facts->n_hctx);

        /* /proc/interrupts is parsed only for an hctx that has a queue vector to look up
         * (not for loop, zram, dm ...: stats_read_hctx() does not look then) */
        const HctxFacts *x = &d->facts->hctx[pos];
        bool vector = x->irq >= 0 && (size_t) x->irq < d->facts->n_irqs;
        HctxReading rd = {};
        r = stats_read_hctx(m->stats, d->facts, pos, device_stats_hctx_files(&d->stats, pos), flags, apply_busy(d),
                            (flags & STATS_READ_IRQ_COUNT) && vector ? manager_interrupts(m) : NULL, &rd.stats);
        if (r < 0)
                return r;
        StatSample *ring = device_stats_hctx_ring(&d->stats, pos);
        if (ring && !(flags & STATS_READ_NO_RATES)) {
                StatSample cur;
                uint32_t counters = 0;
                for (StatId i = 0; i < _STAT_MAX; i++)
                        if (stat_id_is_counter(i))
                                counters |= UINT32_C(1) << i;
                hctx_stats_to_sample(&rd.stats, &cur);
                stats_rates(ring, &cur, _STAT_MAX, counters, m->rate_window_usec, &rd.rates);
        }
        *ret = rd;
        return 0;
}

int manager_read_disk_stat(void *userdata, const char *device, unsigned flags, DiskStat *ret, StatRates *ret_rates) {
        Manager *m = userdata;
        const char *text;
        Device *d = registry_get(&m->registry, device);
        DiskStat st;

        if (!d)
                return -ENOENT;
        /* through the disk's handles: a metrics scrape neither formats nor looks up the path */
        int r = hostfs_read_kept_at(m->hostfs, &d->stats.stat_file, HOSTFS_SYSFS, 0, &text, "block/%s/stat", d->name);
        if (r < 0)
                return r;
        r = disk_stat_parse(text, &st);
        if (r < 0)
                return r;
        st.has_inflight = false;
        if (!(flags & STATS_READ_NO_INFLIGHT))
                st.has_inflight = hostfs_read_kept_at(m->hostfs, &d->stats.inflight_file, HOSTFS_SYSFS, 0, &text,
                                                      "block/%s/inflight", d->name) >= 0 &&
                                  disk_inflight_parse(text, &st.inflight_read, &st.inflight_write) >= 0;
        if (flags & STATS_READ_NO_RATES) {
                *ret = st;
                return 0;
        }

        StatSample cur = { .usec = stats_now_usec() };
        uint32_t counters = 0;
        for (unsigned i = 0; i < st.n; i++) {
                cur.v[i] = st.v[i];
                cur.valid |= UINT32_C(1) << i;
                if (i != DISK_STAT_IN_FLIGHT)
                        counters |= UINT32_C(1) << i;
        }
        StatSample *disk_ring = device_stats_disk_ring(&d->stats);
        if (!disk_ring)
                return -ENOMEM;
        stats_rates(disk_ring, &cur, st.n, counters, m->rate_window_usec, ret_rates);
        *ret = st;
        return 0;
}

int manager_read_host_busy(void *userdata, const char *host, uint64_t *ret) {
        Manager *m = userdata;
        char path[128];
        snprintf(path, sizeof(path), "class/scsi_host/%s/host_busy", host);
        return hostfs_read_u64(m->hostfs, HOSTFS_SYSFS, path, ret);
}

int manager_read_block_softirqs(void *userdata, uint64_t *counts, size_t max, size_t *ret_n) {
        Manager *m = userdata;
        _cleanup_free_ char *text = NULL;
        int r = hostfs_read_kept(m->hostfs, HOSTFS_PROCFS, "softirqs", 0, &text);
        if (r < 0)
                return r;
        return proc_softirqs_block_parse(text, counts, max, ret_n);
}

void manager_scrape(void *userdata, bool begin) {
        stats_scrape(((Manager *) userdata)->stats, begin);
}

int manager_read_bpf_missed(void *userdata, StatsBpfMissed *ret) {
        Manager *m = userdata;
        return stats_bpf_missed(m->stats, ret);
}

const char *manager_kernel_release(void *userdata) {
        Manager *m = userdata;
        return m->kernel_release;
}

const char *manager_stats_providers(void *userdata) {
        Manager *m = userdata;
        return stats_providers(m->stats);
}
