/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * /metrics and /prometheus/blkmqd.prom: Prometheus text exposition format 0.0.4.
 * One HELP/TYPE block per family; counters end in _total. A value the kernel cannot
 * give is left out (Prometheus' way of saying "no data"), never exported as 0.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "macro.h"
#include "render.h"

/* Label value escaping: backslash, double quote and newline (exposition format). */
static void put_label(FILE *f, const char *name, const char *value, bool first) {
        if (!first)
                fputc(',', f);
        fputs(name, f);
        fputs("=\"", f);
        for (const char *c = value ?: ""; *c; ) {
                size_t plain = strcspn(c, "\\\"\n");       /* copy runs, escape the rest */
                fwrite(c, 1, plain, f);
                c += plain;
                if (!*c)
                        break;
                fputs(*c == '\n' ? "\\n" : *c == '"' ? "\\\"" : "\\\\", f);
                c++;
        }
        fputc('"', f);
}

static void family(FILE *f, const char *name, const char *type, const char *help) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

typedef struct DiskReadings {
        const Device *d;
        HctxReading *hctx;
        bool *ok;
} DiskReadings;

static void hctx_family(FILE *f, DiskReadings *dr, size_t n, StatId id) {
        char name[96];
        bool counter = stat_id_is_counter(id), any = false;

        if (id == STAT_COMPLETED_REMOTE)
                return;         /* folded into blkmqd_hctx_completed_total{locality=} */
        if (id == STAT_COMPLETED_LOCAL)
                snprintf(name, sizeof(name), "blkmqd_hctx_completed_total");
        else
                snprintf(name, sizeof(name), "blkmqd_hctx_%s%s", stat_id_to_string(id), counter ? "_total" : "");

        for (size_t i = 0; i < n; i++)
                for (size_t h = 0; h < dr[i].d->facts->n_hctx; h++) {
                        const HctxStats *s = &dr[i].hctx[h].stats;
                        if (!dr[i].ok[h])
                                continue;
                        for (int k = 0; k < (id == STAT_COMPLETED_LOCAL ? 2 : 1); k++) {
                                const StatValue *v = &s->v[k ? STAT_COMPLETED_REMOTE : id];
                                if (!v->valid)
                                        continue;
                                if (!any) {
                                        family(f, name, counter ? "counter" : "gauge",
                                               id == STAT_COMPLETED_LOCAL ? "requests completed, by CPU locality relative to the submitter" :
                                               stat_id_help(id));
                                        any = true;
                                }
                                char hctx[16];
                                snprintf(hctx, sizeof(hctx), "%u", dr[i].d->facts->hctx[h].index);
                                fputs(name, f);
                                fputc('{', f);
                                put_label(f, "disk", dr[i].d->name, true);
                                put_label(f, "hctx", hctx, false);
                                if (id == STAT_COMPLETED_LOCAL)
                                        put_label(f, "locality", k ? "remote" : "local", false);
                                put_label(f, "source", v->source, false);
                                fprintf(f, "} %" PRIu64 "\n", v->value);
                        }
                }
}

static void disk_gauge(FILE *f, const Registry *reg, const char *name, const char *help, Fact fact) {
        bool any = false;
        for (size_t i = 0; i < reg->n_devices; i++) {
                const DiskFacts *x = reg->devices[i]->facts;
                int64_t v;
                if (!x || !disk_facts_known(x, fact))
                        continue;
                switch (fact) {
                case FACT_NR_HW_QUEUES: v = x->n_hctx; break;
                case FACT_ROTATIONAL:   v = x->rotational; break;
                case FACT_RQ_AFFINITY:  v = x->rq_affinity; break;
                case FACT_NR_REQUESTS:  v = x->nr_requests; break;
                case FACT_SIZE:         v = x->size_bytes; break;
                default:                continue;
                }
                if (v < 0)
                        continue;
                if (!any) {
                        family(f, name, "gauge", help);
                        any = true;
                }
                fprintf(f, "%s{", name);
                put_label(f, "disk", x->name, true);
                fprintf(f, "} %" PRIi64 "\n", v);
        }
}

static void disk_stats(FILE *f, const FuseFsContext *ctx) {
        static const struct {
                DiskStatField field;
                const char *name, *help;
        } m[] = {
                { DISK_STAT_READ_IOS,      "blkmqd_disk_reads_completed_total",  "reads completed (block/<disk>/stat)" },
                { DISK_STAT_WRITE_IOS,     "blkmqd_disk_writes_completed_total", "writes completed (block/<disk>/stat)" },
                { DISK_STAT_READ_SECTORS,  "blkmqd_disk_read_sectors_total",     "512-byte sectors read" },
                { DISK_STAT_WRITE_SECTORS, "blkmqd_disk_written_sectors_total",  "512-byte sectors written" },
                { DISK_STAT_IO_TICKS,      "blkmqd_disk_io_time_seconds_total",  "seconds spent doing I/O (io_ticks)" },
                { DISK_STAT_IN_FLIGHT,     "blkmqd_disk_in_flight",              "requests in flight" },
        };
        size_t n = ctx->registry->n_devices;
        DiskStat *st = calloc(n ?: 1, sizeof(DiskStat));
        bool *ok = calloc(n ?: 1, sizeof(bool));

        if (!st || !ok)
                goto finish;
        for (size_t i = 0; i < n; i++) {
                StatRates rates;
                ok[i] = ctx->registry->devices[i]->facts &&
                        ctx->read_disk_stat(ctx->userdata, ctx->registry->devices[i]->name, &st[i], &rates) >= 0;
        }
        for (size_t k = 0; k < ELEMENTSOF(m); k++) {
                bool any = false;
                for (size_t i = 0; i < n; i++) {
                        if (!ok[i] || m[k].field >= st[i].n)
                                continue;
                        if (!any) {
                                family(f, m[k].name, m[k].field == DISK_STAT_IN_FLIGHT ? "gauge" : "counter", m[k].help);
                                any = true;
                        }
                        fprintf(f, "%s{", m[k].name);
                        put_label(f, "disk", ctx->registry->devices[i]->name, true);
                        if (m[k].field == DISK_STAT_IO_TICKS)   /* ms -> s */
                                fprintf(f, "} %" PRIu64 ".%03" PRIu64 "\n", st[i].v[m[k].field] / 1000, st[i].v[m[k].field] % 1000);
                        else
                                fprintf(f, "} %" PRIu64 "\n", st[i].v[m[k].field]);
                }
        }
finish:
        free(st);
        free(ok);
}

/* Events the BPF counters lack (stats-bpf.h StatsBpfMissed); left out when the provider is not
 * loaded, and the recursion series when the kernel does not count them (before 5.12). */
static void bpf_missed_family(const FuseFsContext *ctx, FILE *f) {
        StatsBpfMissed m;

        if (!ctx->read_bpf_missed || ctx->read_bpf_missed(ctx->userdata, &m) < 0)
                return;
        family(f, "blkmqd_bpf_missed_events_total", "counter",
               "block-layer events the BPF counters lack, all disks, since attach: the kernel skipped "
               "the program (reason=recursion) or the per-hctx map was full (reason=map_full)");
        if (m.recursion_known)
                fprintf(f, "blkmqd_bpf_missed_events_total{event=\"dispatched\",reason=\"recursion\"} %" PRIu64 "\n"
                        "blkmqd_bpf_missed_events_total{event=\"completed\",reason=\"recursion\"} %" PRIu64 "\n",
                        m.issue_recursion, m.complete_recursion);
        fprintf(f, "blkmqd_bpf_missed_events_total{event=\"any\",reason=\"map_full\"} %" PRIu64 "\n", m.map_full);
}

int render_metrics(const FuseFsContext *ctx, char **ret) {
        const Registry *reg = ctx->registry;
        DiskReadings *dr = calloc(reg->n_devices ?: 1, sizeof(DiskReadings));
        char *buf = NULL;
        size_t size = 0, n = 0;
        int r = -ENOMEM;

        if (!dr)
                return -ENOMEM;
        FILE *f = open_memstream(&buf, &size);
        if (!f)
                goto finish;

        family(f, "blkmqd_info", "gauge", "blkmqd version, kernel and statistics providers");
        fputs("blkmqd_info{", f);
        put_label(f, "version", BLKMQD_VERSION, true);
        put_label(f, "kernel", ctx->kernel_release ? ctx->kernel_release(ctx->userdata) : NULL, false);
        put_label(f, "providers", ctx->providers ? ctx->providers(ctx->userdata) : NULL, false);
        fputs("} 1\n", f);
        bpf_missed_family(ctx, f);

        family(f, "blkmqd_disk_info", "gauge", "one per disk: class, elevator, driver");
        for (size_t i = 0; i < reg->n_devices; i++) {
                const Device *d = reg->devices[i];
                if (!d->facts)
                        continue;
                fputs("blkmqd_disk_info{", f);
                put_label(f, "disk", d->name, true);
                put_label(f, "class", disk_class_to_string(d->plan.class), false);
                put_label(f, "elevator", d->facts->elevator ?: "", false);
                put_label(f, "driver", d->facts->driver ?: "", false);
                put_label(f, "transport", d->facts->transport ?: "", false);
                fputs("} 1\n", f);
        }

        family(f, "blkmqd_applied", "gauge", "one per disk and knob: the state of what blkmqd applied");
        for (size_t i = 0; i < reg->n_devices; i++)
                for (Knob k = 0; k < _KNOB_MAX; k++) {
                        fputs("blkmqd_applied{", f);
                        put_label(f, "disk", reg->devices[i]->name, true);
                        put_label(f, "knob", knob_to_string(k), false);
                        put_label(f, "state", apply_state_to_string(reg->devices[i]->applied[k].state), false);
                        fputs("} 1\n", f);
                }

        disk_gauge(f, reg, "blkmqd_disk_nr_hw_queues", "hardware queues (hctx)", FACT_NR_HW_QUEUES);
        disk_gauge(f, reg, "blkmqd_disk_rotational", "1 for a rotating disk", FACT_ROTATIONAL);
        disk_gauge(f, reg, "blkmqd_disk_rq_affinity", "queue/rq_affinity", FACT_RQ_AFFINITY);
        disk_gauge(f, reg, "blkmqd_disk_nr_requests", "queue/nr_requests", FACT_NR_REQUESTS);
        disk_stats(f, ctx);

        /* per hctx: read each once (BPF counters: one copy of the map), then one family per counter */
        if (ctx->scrape)
                ctx->scrape(ctx->userdata, true);
        for (size_t i = 0; i < reg->n_devices; i++) {
                const Device *d = reg->devices[i];
                if (!d->facts || d->facts->n_hctx == 0)
                        continue;
                dr[n].d = d;
                dr[n].hctx = calloc(d->facts->n_hctx, sizeof(HctxReading));
                dr[n].ok = calloc(d->facts->n_hctx, sizeof(bool));
                if (!dr[n].hctx || !dr[n].ok) {
                        n++;
                        fclose(f);
                        if (ctx->scrape)
                                ctx->scrape(ctx->userdata, false);
                        goto finish;
                }
                for (size_t h = 0; h < d->facts->n_hctx; h++)
                        dr[n].ok[h] = ctx->read_hctx(ctx->userdata, d->name, h, true, &dr[n].hctx[h]) >= 0;
                n++;
        }
        if (ctx->scrape)
                ctx->scrape(ctx->userdata, false);
        for (StatId id = 0; id < _STAT_MAX; id++)
                hctx_family(f, dr, n, id);

        uint64_t *sirq = calloc(8192, sizeof(uint64_t));
        size_t n_sirq = 0;
        if (sirq && ctx->read_block_softirqs && ctx->read_block_softirqs(ctx->userdata, sirq, 8192, &n_sirq) >= 0) {
                family(f, "blkmqd_block_softirqs_total", "counter",
                       "BLOCK softirqs per CPU (/proc/softirqs): local completions on single-queue devices and remote (IPI) completions");
                for (size_t i = 0; i < MIN(n_sirq, (size_t) 8192); i++)
                        fprintf(f, "blkmqd_block_softirqs_total{cpu=\"%zu\"} %" PRIu64 "\n", i, sirq[i]);
        }
        free(sirq);

        render_net_metrics(f, reg, family, put_label);

        bool any = false;
        for (size_t i = 0; ctx->modules && i < ctx->modules->n_params; i++) {
                const ModuleParam *p = &ctx->modules->params[i];
                if (!any) {
                        family(f, "blkmqd_module_param", "gauge", "module parameters blkmqd wants, with their state");
                        any = true;
                }
                fputs("blkmqd_module_param{", f);
                put_label(f, "module", p->module, true);
                put_label(f, "param", p->param, false);
                put_label(f, "current", p->current ?: "", false);
                put_label(f, "wanted", p->wanted ?: "", false);
                put_label(f, "state", module_param_state_to_string(p->state), false);
                fputs("} 1\n", f);
        }

        r = fclose(f) == 0 ? 0 : -ENOMEM;
finish:
        for (size_t i = 0; i < n; i++) {
                for (size_t h = 0; dr[i].hctx && h < dr[i].d->facts->n_hctx; h++)
                        hctx_reading_done(&dr[i].hctx[h]);
                free(dr[i].hctx);
                free(dr[i].ok);
        }
        free(dr);
        if (r < 0) {
                free(buf);
                return r;
        }
        *ret = buf;
        return 0;
}
