/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * /metrics (and the metrics file manager/textfile.c writes for node_exporter's textfile
 * collector): Prometheus text exposition format 0.0.4.
 * One HELP/TYPE block per family; counters end in _total. A value the kernel cannot
 * give is left out (Prometheus' way of saying "no data"), never exported as 0.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "config.h"
#include "log.h"
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

/* A counter or gauge value, without printf (a scrape of 64 disks writes ~1,000 of them). */
static void put_u64(FILE *f, uint64_t v) {
        char buf[24], *p = buf + sizeof(buf);
        do
                *--p = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        fwrite(p, 1, buf + sizeof(buf) - p, f);
}

/*
 * The live series (a line per hctx and counter, per disk and stat field: ~1,000 lines for 64
 * disks) are assembled in a buffer of this function's own and handed to stdio in large
 * chunks: the memory stream's per-call path (_IO_default_xsputn, byte by byte for short
 * strings) was the largest part of the renderer's CPU. Bytes and their order are exactly those
 * of the stdio calls it replaces; out_flush() before anything else writes to f.
 */
typedef struct Out {
        FILE *f;
        size_t n;
        char buf[8192];
} Out;

static void out_flush(Out *o) {
        if (o->n > 0)
                fwrite(o->buf, 1, o->n, o->f);
        o->n = 0;
}

static void out_mem(Out *o, const char *s, size_t n) {
        if (n > sizeof(o->buf) - o->n) {
                out_flush(o);
                if (n > sizeof(o->buf)) {
                        fwrite(s, 1, n, o->f);
                        return;
                }
        }
        memcpy(o->buf + o->n, s, n);
        o->n += n;
}

static void out_str(Out *o, const char *s) {
        out_mem(o, s, strlen(s));
}

static void out_char(Out *o, char c) {
        if (o->n >= sizeof(o->buf))
                out_flush(o);
        o->buf[o->n++] = c;
}

/* As put_u64(). */
static void out_u64(Out *o, uint64_t v) {
        char buf[24], *p = buf + sizeof(buf);
        do
                *--p = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        out_mem(o, p, buf + sizeof(buf) - p);
}

/* As put_label(f, name, value, false). */
static void out_label(Out *o, const char *name, const char *value) {
        out_char(o, ',');
        out_str(o, name);
        out_mem(o, "=\"", 2);
        for (const char *c = value ?: ""; *c; ) {
                size_t plain = strcspn(c, "\\\"\n");
                out_mem(o, c, plain);
                c += plain;
                if (!*c)
                        break;
                out_str(o, *c == '\n' ? "\\n" : *c == '"' ? "\\\"" : "\\\\");
                c++;
        }
        out_char(o, '"');
}

/*
 * The per-disk part of /metrics that only changes when blkmqd's view of the disk does: its
 * lines in blkmqd_disk_info, blkmqd_applied, blkmqd_applied_iosched and the four fact gauges, and its escaped
 * device="<name>" label for the live series. Kept between scrapes (MetricsCache) with the
 * inputs it was rendered from (DiskBlockKey), compared at every scrape: a block is
 * re-rendered when any input differs. The block is rendered from the key alone, so an input
 * that is not in the key cannot reach the text, and a cached block cannot go stale. (There is
 * no single counter to trust instead: Device.generation moves on a re-gather only, while
 * applied states, the plan and the facts an apply or a verify reads back change in place.)
 */
typedef enum DiskFamily {
        DISK_FAMILY_INFO,
        DISK_FAMILY_APPLIED,
        DISK_FAMILY_APPLIED_IOSCHED,
        DISK_FAMILY_NR_HW_QUEUES,
        DISK_FAMILY_ROTATIONAL,
        DISK_FAMILY_RQ_AFFINITY,
        DISK_FAMILY_NR_REQUESTS,
        _DISK_FAMILY_MAX,
} DiskFamily;

static const struct {
        const char *name, *help;
        Fact fact;              /* the gauges' fact */
} disk_family_table[_DISK_FAMILY_MAX] = {
        [DISK_FAMILY_INFO]         = { "blkmqd_disk_info", "one per disk: class, elevator, driver" },
        [DISK_FAMILY_APPLIED]      = { "blkmqd_applied", "one per disk and knob: the state of what blkmqd applied" },
        [DISK_FAMILY_APPLIED_IOSCHED] = { "blkmqd_applied_iosched", "one per disk and elevator tunable blkmqd wrote, wants or "
                                          "recorded (applied/iosched): its state" },
        [DISK_FAMILY_NR_HW_QUEUES] = { "blkmqd_disk_nr_hw_queues", "hardware queues (hctx)", FACT_NR_HW_QUEUES },
        [DISK_FAMILY_ROTATIONAL]   = { "blkmqd_disk_rotational", "1 for a rotating disk", FACT_ROTATIONAL },
        [DISK_FAMILY_RQ_AFFINITY]  = { "blkmqd_disk_rq_affinity", "queue/rq_affinity", FACT_RQ_AFFINITY },
        [DISK_FAMILY_NR_REQUESTS]  = { "blkmqd_disk_nr_requests", "queue/nr_requests", FACT_NR_REQUESTS },
};

#define FIRST_GAUGE DISK_FAMILY_NR_HW_QUEUES

typedef struct DiskBlockKey {
        bool facts;                     /* the disk has facts (else only its applied lines) */
        DiskClass class;
        char *elevator, *driver, *transport;    /* copies ("" for none) */
        ApplyState applied[_KNOB_MAX];
        signed char iosched[_IOSCHED_TUNABLE_MAX];      /* the ApplyState applied/iosched shows; -1: not shown */
        int64_t gauge[_DISK_FAMILY_MAX - FIRST_GAUGE];  /* -1: not exported (unknown or negative) */
} DiskBlockKey;

typedef struct DiskBlock {
        char *name;
        DiskBlockKey key;
        char *text;                     /* the lines of every DiskFamily, one after the other */
        size_t off[_DISK_FAMILY_MAX + 1];       /* family k is text[off[k]..off[k+1]) */
        char *label;                    /* device="<escaped name>" */
        size_t label_len;
} DiskBlock;

struct MetricsCache {
        DiskBlock *blocks;              /* the disks of the last scrape, in registry order */
        size_t n;
        uint64_t rendered, reused;      /* blocks rendered anew / taken from the cache, ever */
};

static void disk_block_done(DiskBlock *b) {
        free(b->name);
        free(b->key.elevator);
        free(b->key.driver);
        free(b->key.transport);
        free(b->text);
        free(b->label);
        *b = (DiskBlock) {};
}

int metrics_cache_new(MetricsCache **ret) {
        assert(ret);
        MetricsCache *c = calloc(1, sizeof(MetricsCache));
        if (!c)
                return -ENOMEM;
        *ret = c;
        return 0;
}

MetricsCache *metrics_cache_free(MetricsCache *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n; i++)
                disk_block_done(&c->blocks[i]);
        free(c->blocks);
        free(c);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(MetricsCache *, metrics_cache_free);

void metrics_cache_counts(const MetricsCache *c, uint64_t *ret_rendered, uint64_t *ret_reused) {
        assert(ret_rendered);
        assert(ret_reused);
        *ret_rendered = c ? c->rendered : 0;
        *ret_reused = c ? c->reused : 0;
}

/* The key of d as it is now; strings point into d (disk_block_key_same() compares, the copy
 * is made only when the block is rendered again). */
static void disk_block_key(const Device *d, DiskBlockKey *ret) {
        const DiskFacts *x = d->facts;
        *ret = (DiskBlockKey) { .facts = x, .class = d->plan.class };
        for (Knob k = 0; k < _KNOB_MAX; k++)
                ret->applied[k] = d->applied[k].state;
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++) {
                IoschedShown shown = applied_iosched_shown(d, t);
                ret->iosched[t] = shown == IOSCHED_SHOWN_NOT ? -1 :
                                  shown == IOSCHED_SHOWN_WAITS ? APPLY_UNMANAGED : (signed char) d->iosched[t].state;
        }
        for (DiskFamily g = FIRST_GAUGE; g < _DISK_FAMILY_MAX; g++) {
                Fact fact = disk_family_table[g].fact;
                int64_t v = -1;
                if (x && disk_facts_known(x, fact))
                        switch (fact) {
                        case FACT_NR_HW_QUEUES: v = x->n_hctx; break;
                        case FACT_ROTATIONAL:   v = x->rotational; break;
                        case FACT_RQ_AFFINITY:  v = x->rq_affinity; break;
                        case FACT_NR_REQUESTS:  v = x->nr_requests; break;
                        default:                break;
                        }
                ret->gauge[g - FIRST_GAUGE] = v < 0 ? -1 : v;
        }
        if (x) {
                ret->elevator = (char *) (x->elevator ?: "");
                ret->driver = (char *) (x->driver ?: "");
                ret->transport = (char *) (x->transport ?: "");
        }
}

static bool disk_block_key_same(const DiskBlockKey *a, const DiskBlockKey *b) {
        return a->facts == b->facts && a->class == b->class &&
               memcmp(a->applied, b->applied, sizeof(a->applied)) == 0 &&
               memcmp(a->iosched, b->iosched, sizeof(a->iosched)) == 0 &&
               memcmp(a->gauge, b->gauge, sizeof(a->gauge)) == 0 &&
               streq_ptr(a->elevator, b->elevator) && streq_ptr(a->driver, b->driver) &&
               streq_ptr(a->transport, b->transport);
}

/* Render b's lines from b->name and b->key only. Returns 0 or -ENOMEM. */
static int disk_block_render(DiskBlock *b) {
        const DiskBlockKey *k = &b->key;
        char *text = NULL, *label = NULL;
        size_t size = 0, label_size = 0;
        FILE *f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        __fsetlocking(f, FSETLOCKING_BYCALLER);

        b->off[DISK_FAMILY_INFO] = 0;
        if (k->facts) {
                fputs("blkmqd_disk_info{", f);
                put_label(f, "device", b->name, true);
                put_label(f, "class", disk_class_to_string(k->class), false);
                put_label(f, "elevator", k->elevator, false);
                put_label(f, "driver", k->driver, false);
                put_label(f, "transport", k->transport, false);
                fputs("} 1\n", f);
        }
        fflush(f);
        b->off[DISK_FAMILY_APPLIED] = size;
        for (Knob i = 0; i < _KNOB_MAX; i++) {
                fputs("blkmqd_applied{", f);
                put_label(f, "device", b->name, true);
                put_label(f, "knob", knob_to_string(i), false);
                put_label(f, "state", apply_state_to_string(k->applied[i]), false);
                fputs("} 1\n", f);
        }
        fflush(f);
        b->off[DISK_FAMILY_APPLIED_IOSCHED] = size;
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++) {
                const IoschedTunableInfo *i = iosched_tunable_info(t);
                if (k->iosched[t] < 0)
                        continue;
                fputs("blkmqd_applied_iosched{", f);
                put_label(f, "device", b->name, true);
                put_label(f, "elevator", i->elevator, false);
                put_label(f, "tunable", i->name, false);
                put_label(f, "state", apply_state_to_string((ApplyState) k->iosched[t]), false);
                fputs("} 1\n", f);
        }
        for (DiskFamily g = FIRST_GAUGE; g < _DISK_FAMILY_MAX; g++) {
                fflush(f);
                b->off[g] = size;
                if (k->gauge[g - FIRST_GAUGE] < 0)
                        continue;
                fputs(disk_family_table[g].name, f);
                fputc('{', f);
                put_label(f, "device", b->name, true);
                fputs("} ", f);
                put_u64(f, (uint64_t) k->gauge[g - FIRST_GAUGE]);
                fputc('\n', f);
        }
        if (fclose(f) != 0) {
                free(text);
                return -ENOMEM;
        }
        b->off[_DISK_FAMILY_MAX] = size;

        f = open_memstream(&label, &label_size);
        if (!f) {
                free(text);
                return -ENOMEM;
        }
        put_label(f, "device", b->name, true);
        if (fclose(f) != 0) {
                free(text);
                free(label);
                return -ENOMEM;
        }
        free(b->text);
        free(b->label);
        b->text = text;
        b->label = label;
        b->label_len = label_size;
        return 0;
}

/* The block of d, from old (the last scrape's blocks, taken from) or rendered anew into *b. */
static int disk_block_get(MetricsCache *c, DiskBlock *old, size_t n_old, size_t *hint, const Device *d, DiskBlock *b) {
        DiskBlockKey key;
        DiskBlock *o = NULL;
        int r;

        /* the registry is sorted and rarely changes: the next old block is almost always d's */
        if (*hint < n_old && old[*hint].name && streq(old[*hint].name, d->name))
                o = &old[*hint];
        for (size_t j = 0; !o && j < n_old; j++)
                if (old[j].name && streq(old[j].name, d->name))
                        o = &old[j];
        if (o) {
                *hint = o - old + 1;
                *b = *o;
                *o = (DiskBlock) {};
        } else if (!(b->name = strdup(d->name)))
                return -ENOMEM;

        disk_block_key(d, &key);
        if (b->text && disk_block_key_same(&b->key, &key)) {
                c->reused++;
                return 0;
        }
        char *e = key.facts ? strdup(key.elevator) : NULL, *dr = key.facts ? strdup(key.driver) : NULL,
             *t = key.facts ? strdup(key.transport) : NULL;
        if (key.facts && (!e || !dr || !t)) {
                free(e);
                free(dr);
                free(t);
                disk_block_done(b);
                return -ENOMEM;
        }
        free(b->key.elevator);
        free(b->key.driver);
        free(b->key.transport);
        b->key = key;
        b->key.elevator = e;
        b->key.driver = dr;
        b->key.transport = t;
        r = disk_block_render(b);
        if (r < 0) {
                disk_block_done(b);
                return r;
        }
        c->rendered++;
        return 0;
}

/* Blocks for every disk of reg, in its order, into c (the blocks of disks gone are freed). */
static int metrics_cache_sync(MetricsCache *c, const Registry *reg) {
        DiskBlock *blocks = calloc(reg->n_devices ?: 1, sizeof(DiskBlock));
        size_t hint = 0;
        int r = 0;

        if (!blocks)
                return -ENOMEM;
        for (size_t i = 0; i < reg->n_devices && r >= 0; i++)
                r = disk_block_get(c, c->blocks, c->n, &hint, reg->devices[i], &blocks[i]);
        for (size_t j = 0; j < c->n; j++)
                disk_block_done(&c->blocks[j]);
        free(c->blocks);
        c->blocks = blocks;
        c->n = r < 0 ? 0 : reg->n_devices;
        if (r < 0) {
                for (size_t i = 0; i < reg->n_devices; i++)
                        disk_block_done(&blocks[i]);
        }
        return r;
}

static void disk_families(FILE *f, const MetricsCache *c, DiskFamily k) {
        bool any = false;
        for (size_t i = 0; i < c->n; i++) {
                const DiskBlock *b = &c->blocks[i];
                size_t len = b->off[k + 1] - b->off[k];
                if (len == 0)
                        continue;
                if (!any) {
                        family(f, disk_family_table[k].name, "gauge", disk_family_table[k].help);
                        any = true;
                }
                fwrite(b->text + b->off[k], 1, len, f);
        }
        /* blkmqd_disk_info and blkmqd_applied have their HELP/TYPE even with no disk */
        if (!any && k <= DISK_FAMILY_APPLIED)
                family(f, disk_family_table[k].name, "gauge", disk_family_table[k].help);
}

typedef struct DiskReadings {
        const Device *d;
        const DiskBlock *b;
        HctxReading *hctx;
        bool *ok;
} DiskReadings;

static void hctx_family(FILE *f, Out *o, DiskReadings *dr, size_t n, StatId id) {
        char name[96];
        bool counter = stat_id_is_counter(id), any = false;

        if (id == STAT_COMPLETED_REMOTE)
                return;         /* folded into blkmqd_hctx_completed_total{locality=} */
        if (id == STAT_COMPLETED_LOCAL)
                snprintf(name, sizeof(name), "blkmqd_hctx_completed_total");
        else
                snprintf(name, sizeof(name), "blkmqd_hctx_%s%s", stat_id_to_string(id), counter ? "_total" : "");
        size_t name_len = strlen(name);

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
                                        out_flush(o);
                                        family(f, name, counter ? "counter" : "gauge",
                                               id == STAT_COMPLETED_LOCAL ? "requests completed, by CPU locality relative to the submitter" :
                                               stat_id_help(id));
                                        any = true;
                                }
                                out_mem(o, name, name_len);
                                out_char(o, '{');
                                out_mem(o, dr[i].b->label, dr[i].b->label_len);
                                out_mem(o, ",hctx=\"", 7);
                                out_u64(o, dr[i].d->facts->hctx[h].index);
                                out_char(o, '"');
                                if (id == STAT_COMPLETED_LOCAL)
                                        out_str(o, k ? ",locality=\"remote\"" : ",locality=\"local\"");
                                out_label(o, "source", v->source);
                                out_mem(o, "} ", 2);
                                out_u64(o, v->value);
                                out_char(o, '\n');
                        }
                }
        out_flush(o);
}

/* Live: one read of block/<disk>/stat per disk (its in_flight field; not inflight's split). */
static void disk_stats(FILE *f, Out *o, const FuseFsContext *ctx, const MetricsCache *c) {
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
        size_t n = c->n;
        DiskStat *st = calloc(n ?: 1, sizeof(DiskStat));
        bool *ok = calloc(n ?: 1, sizeof(bool));

        if (!st || !ok || !ctx->read_disk_stat)
                goto finish;
        for (size_t i = 0; i < n; i++)
                ok[i] = ctx->registry->devices[i]->facts &&
                        ctx->read_disk_stat(ctx->userdata, ctx->registry->devices[i]->name, STATS_READ_METRICS, &st[i], NULL) >= 0;
        for (size_t k = 0; k < ELEMENTSOF(m); k++) {
                bool any = false;
                for (size_t i = 0; i < n; i++) {
                        if (!ok[i] || m[k].field >= st[i].n)
                                continue;
                        if (!any) {
                                out_flush(o);
                                family(f, m[k].name, m[k].field == DISK_STAT_IN_FLIGHT ? "gauge" : "counter", m[k].help);
                                any = true;
                        }
                        uint64_t v = st[i].v[m[k].field];
                        out_str(o, m[k].name);
                        out_char(o, '{');
                        out_mem(o, c->blocks[i].label, c->blocks[i].label_len);
                        out_mem(o, "} ", 2);
                        if (m[k].field == DISK_STAT_IO_TICKS) {         /* ms -> s */
                                out_u64(o, v / 1000);
                                out_char(o, '.');
                                out_char(o, (char) ('0' + v % 1000 / 100));
                                out_char(o, (char) ('0' + v % 100 / 10));
                                out_char(o, (char) ('0' + v % 10));
                        } else
                                out_u64(o, v);
                        out_char(o, '\n');
                }
        }
        out_flush(o);
finish:
        free(st);
        free(ok);
}

/* "%.6f" of a duration in µs as seconds. */
static void put_seconds(FILE *f, double usec) {
        fprintf(f, "%.6f", usec / 1e6);
}

/*
 * The measured speed (Device.speed, policies/speed.h) and the rotational flag's trust, live:
 * what they show moves with the disks' I/O, so they are not part of the cached blocks.
 */
static void speed_families(FILE *f, const FuseFsContext *ctx, const MetricsCache *c) {
        const Registry *reg = ctx->registry;
        static const struct {
                const char *name, *type, *help;
        } fam[] = {
                { "blkmqd_disk_speed", "gauge", "1 per disk: the class its own I/O measured (unmeasured, fast, slow)" },
                { "blkmqd_disk_rotational_hint", "gauge", "1 per disk: how far queue/rotational describes the medium "
                                                           "(trusted, untrusted, unreadable)" },
                { "blkmqd_disk_speed_service_seconds", "gauge", "device service time of the last measured window, by quantile" },
                { "blkmqd_disk_speed_busy_per_io_seconds", "gauge", "busy time per I/O of the last measured window (without BPF)" },
                { "blkmqd_disk_speed_window_ios", "gauge", "I/Os in the last measured window" },
                { "blkmqd_disk_speed_measured_ios_total", "counter", "I/Os measured since blkmqd watched the disk" },
                { "blkmqd_disk_speed_changes_total", "counter", "changes of the measured class" },
        };
        for (size_t k = 0; k < ELEMENTSOF(fam); k++) {
                bool any = false;
                for (size_t i = 0; i < c->n && i < reg->n_devices; i++) {
                        const Device *d = reg->devices[i];
                        const SpeedState *s = &d->speed;
                        const SpeedEvidence *e = &s->evidence;
                        const char *label = c->blocks[i].label;
                        if (!d->facts)
                                continue;
                        bool service = s->have_evidence && e->signal == SPEED_SIGNAL_SERVICE_TIME;
                        if ((k == 2 && !service) || (k == 3 && (!s->have_evidence || service)) || (k == 4 && !s->have_evidence))
                                continue;
                        if (!any) {
                                family(f, fam[k].name, fam[k].type, fam[k].help);
                                any = true;
                        }
                        switch (k) {
                        case 0:
                                fprintf(f, "%s{%s,speed=\"%s\"} 1\n", fam[k].name, label, measured_speed_to_string(s->measured));
                                break;
                        case 1: {
                                RotationalHint h = d->plan.rotational_hint;
                                if (!h.row)             /* not evaluated yet: the table alone */
                                        policy_rotational_hint(d->facts, NULL, &h);
                                fprintf(f, "%s{%s,trust=\"%s\"} 1\n", fam[k].name, label, hint_trust_to_string(h.trust));
                                break;
                        }
                        case 2:
                                fprintf(f, "%s{%s,quantile=\"0.5\"} ", fam[k].name, label);
                                put_seconds(f, e->p50_usec);
                                fprintf(f, "\n%s{%s,quantile=\"0.99\"} ", fam[k].name, label);
                                put_seconds(f, e->p99_usec);
                                fputc('\n', f);
                                break;
                        case 3:
                                fprintf(f, "%s{%s} ", fam[k].name, label);
                                put_seconds(f, e->value_usec);
                                fputc('\n', f);
                                break;
                        case 4:
                                fprintf(f, "%s{%s} %" PRIu64 "\n", fam[k].name, label, e->ios);
                                break;
                        case 5:
                                fprintf(f, "%s{%s} %" PRIu64 "\n", fam[k].name, label, s->seen);
                                break;
                        case 6:
                                fprintf(f, "%s{%s} %u\n", fam[k].name, label, s->changes);
                                break;
                        }
                }
        }
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

/* blkmqd's build, its own counters and times (DaemonCounters, apply_knob_records()). */
static void daemon_families(const FuseFsContext *ctx, FILE *f) {
        static const struct {
                KnobRecord what;
                const char *name, *help;
        } rec[] = {
                { KNOB_RECORD_WRITE,    "blkmqd_writes_total",            "values blkmqd wrote (journal MESSAGE_ID " BLKMQD_MESSAGE_WRITE ")" },
                { KNOB_RECORD_RESTORE,  "blkmqd_restores_total",          "original values blkmqd put back (MESSAGE_ID " BLKMQD_MESSAGE_RESTORE ")" },
                { KNOB_RECORD_EXTERNAL, "blkmqd_external_changes_total",  "values blkmqd wrote or kept that someone else changed "
                                                                          "(MESSAGE_ID " BLKMQD_MESSAGE_EXTERNAL_CHANGE ")" },
                { KNOB_RECORD_FAILED,   "blkmqd_write_failures_total",    "writes and restores that failed or passed their deadline "
                                                                          "(MESSAGE_ID " BLKMQD_MESSAGE_WRITE_FAILED ")" },
        };
        DaemonCounters dc = {};

        family(f, "blkmqd_build_info", "gauge", "1: blkmqd's version and the optional parts it was built with");
        fputs("blkmqd_build_info{", f);
        put_label(f, "version", BLKMQD_VERSION, true);
        put_label(f, "bpf", HAVE_BPF ? "yes" : "no", false);
        put_label(f, "libnl", HAVE_LIBNL ? "yes" : "no", false);
        fputs("} 1\n", f);
        for (size_t i = 0; i < ELEMENTSOF(rec); i++) {
                family(f, rec[i].name, "counter", rec[i].help);
                fprintf(f, "%s %" PRIu64 "\n", rec[i].name, apply_knob_records(rec[i].what));
        }
        if (!ctx->daemon_counters)
                return;
        ctx->daemon_counters(ctx->userdata, &dc);
        family(f, "blkmqd_reloads_total", "counter", "configuration reloads (SIGHUP, systemctl reload, the reload file), by result");
        fprintf(f, "blkmqd_reloads_total{result=\"success\"} %" PRIu64 "\n"
                   "blkmqd_reloads_total{result=\"failure\"} %" PRIu64 "\n", dc.reloads, dc.reload_failures);
        family(f, "blkmqd_last_reload_success", "gauge", "1 when the last configuration load succeeded, 0 when it was refused "
               "(the configuration before it stays in force)");
        fprintf(f, "blkmqd_last_reload_success %d\n", dc.last_reload_success);
        family(f, "blkmqd_last_reload_timestamp_seconds", "gauge", "when the configuration was last loaded or a reload was tried");
        fprintf(f, "blkmqd_last_reload_timestamp_seconds %" PRIi64 "\n", dc.last_reload_time);
        family(f, "blkmqd_start_time_seconds", "gauge", "when blkmqd started");
        fprintf(f, "blkmqd_start_time_seconds %" PRIi64 "\n", dc.start_time);
        if (dc.last_verify_time > 0) {
                family(f, "blkmqd_last_verify_timestamp_seconds", "gauge",
                       "when the periodic verify (VerifySec=) last read every managed disk's values back");
                fprintf(f, "blkmqd_last_verify_timestamp_seconds %" PRIi64 "\n", dc.last_verify_time);
        }
        family(f, "blkmqd_textfile_interval_seconds", "gauge", "MetricsIntervalSec=: the metrics file is written at least this "
               "often (0: only when something changed)");
        fprintf(f, "blkmqd_textfile_interval_seconds %" PRIu64 "\n", dc.metrics_interval_usec / 1000000);
}

int render_metrics(const FuseFsContext *ctx, char **ret) {
        assert(ctx);
        assert(ret);
        const Registry *reg = ctx->registry;
        _cleanup_(metrics_cache_freep) MetricsCache *own = NULL;
        MetricsCache *c = ctx->metrics_cache;
        DiskReadings *dr = NULL;
        char *buf = NULL;
        size_t size = 0, n = 0;
        int r;

        if (!c) {
                r = metrics_cache_new(&own);    /* no cache kept: every block rendered */
                if (r < 0)
                        return r;
                c = own;
        }
        r = metrics_cache_sync(c, reg);
        if (r < 0)
                return r;
        r = -ENOMEM;
        dr = calloc(reg->n_devices ?: 1, sizeof(DiskReadings));
        if (!dr)
                return -ENOMEM;
        FILE *f = open_memstream(&buf, &size);
        if (!f)
                goto finish;
        __fsetlocking(f, FSETLOCKING_BYCALLER);         /* this thread's own stream */

        family(f, "blkmqd_info", "gauge", "blkmqd version, kernel and statistics providers");
        fputs("blkmqd_info{", f);
        put_label(f, "version", BLKMQD_VERSION, true);
        put_label(f, "kernel", ctx->kernel_release ? ctx->kernel_release(ctx->userdata) : NULL, false);
        put_label(f, "providers", ctx->providers ? ctx->providers(ctx->userdata) : NULL, false);
        fputs("} 1\n", f);
        daemon_families(ctx, f);
        bpf_missed_family(ctx, f);

        for (DiskFamily k = 0; k < _DISK_FAMILY_MAX; k++)
                disk_families(f, c, k);
        Out *o = malloc(sizeof(Out));
        if (!o) {
                fclose(f);
                goto finish;
        }
        o->f = f;
        o->n = 0;
        disk_stats(f, o, ctx, c);
        speed_families(f, ctx, c);

        /* per hctx: read each once (BPF counters: one copy of the map), then one family per counter */
        if (ctx->scrape)
                ctx->scrape(ctx->userdata, true);
        for (size_t i = 0; i < reg->n_devices && ctx->read_hctx; i++) {
                const Device *d = reg->devices[i];
                if (!d->facts || d->facts->n_hctx == 0)
                        continue;
                dr[n].d = d;
                dr[n].b = &c->blocks[i];
                dr[n].hctx = calloc(d->facts->n_hctx, sizeof(HctxReading));
                dr[n].ok = calloc(d->facts->n_hctx, sizeof(bool));
                if (!dr[n].hctx || !dr[n].ok) {
                        n++;
                        free(o);
                        fclose(f);
                        if (ctx->scrape)
                                ctx->scrape(ctx->userdata, false);
                        goto finish;
                }
                for (size_t h = 0; h < d->facts->n_hctx; h++)
                        dr[n].ok[h] = ctx->read_hctx(ctx->userdata, d->name, h, STATS_READ_METRICS, &dr[n].hctx[h]) >= 0;
                n++;
        }
        if (ctx->scrape)
                ctx->scrape(ctx->userdata, false);
        for (StatId id = 0; id < _STAT_MAX; id++)
                hctx_family(f, o, dr, n, id);
        free(o);

        uint64_t *sirq = calloc(8192, sizeof(uint64_t));
        size_t n_sirq = 0;
        if (sirq && ctx->read_block_softirqs && ctx->read_block_softirqs(ctx->userdata, sirq, 8192, &n_sirq) >= 0) {
                family(f, "blkmqd_block_softirqs_total", "counter",
                       "BLOCK softirqs per CPU (/proc/softirqs): local completions on single-queue devices and remote (IPI) completions");
                for (size_t i = 0; i < MIN(n_sirq, (size_t) 8192); i++) {
                        fputs("blkmqd_block_softirqs_total{cpu=\"", f);
                        put_u64(f, i);
                        fputs("\"} ", f);
                        put_u64(f, sirq[i]);
                        fputc('\n', f);
                }
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
