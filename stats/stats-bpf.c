/* SPDX-License-Identifier: GPL-2.0-or-later */

#include "config.h"

/* A config.h of the configuration-file module (manager/conf.h) must not shadow meson's config.h here. */
#ifndef HAVE_BPF
#error "HAVE_BPF undefined: \"config.h\" did not resolve to meson's generated config.h"
#endif

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "macro.h"
#include "stats-bpf.h"

static StatsBpfLogFunc log_func = NULL;
static void *log_userdata = NULL;

#if HAVE_BPF

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "hctx-stats.h"
#include "hctx-stats.skel.h"

#define TRACED_RUN_FUNC "blk_mq_sched_dispatch_requests"

struct StatsBpf {
        struct hctx_stats *skel;
        int map_fd;
        /* service times (the measured speed) */
        bool has_service;           /* the programs loaded */
        bool service_on;            /* ... and are attached */
        char *service_reason;       /* NULL iff has_service */
        struct ring_buffer *rb;
        StatsBpfServiceFunc on_disk;
        void *on_disk_userdata;
        int n_cpus;                 /* libbpf_num_possible_cpus(): per-CPU value count */
        bool has_runs;
        const char *runs_attach;    /* "fentry", "kprobe"; NULL iff !has_runs */
        char *runs_reason;          /* NULL iff has_runs */
        /* blkmqd_stats_bpf_snapshot(): the whole map, summed over CPUs, sorted by key */
        bool snap_valid;
        size_t n_snap, snap_alloc;
        struct hctx_stats_key *snap_keys;
        HctxBpfCounters *snap_values;
};

DEFINE_TRIVIAL_CLEANUP_FUNC(struct btf *, btf__free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct hctx_stats *, hctx_stats__destroy);

static void log_debug(const char *fmt, ...) _printf_(1, 2);
static void log_debug(const char *fmt, ...) {
        _cleanup_free_ char *m = NULL;
        va_list ap;

        if (!log_func)
                return;
        va_start(ap, fmt);
        if (vasprintf(&m, fmt, ap) < 0)
                m = NULL;
        va_end(ap);
        if (m)
                log_func(m, log_userdata);
}

static int on_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap) {
        _cleanup_free_ char *m = NULL;
        size_t n;

        if (!log_func)
                return 0;
        if (vasprintf(&m, fmt, ap) < 0)
                return 0;
        n = strlen(m);
        while (n > 0 && m[n - 1] == '\n')
                m[--n] = 0;
        /* libbpf's WARN/INFO/DEBUG all become debug messages of ours: see stats-bpf.h */
        log_func(m, log_userdata);
        return 0;
}

void blkmqd_stats_bpf_set_log_func(StatsBpfLogFunc func, void *userdata) {
        log_func = func;
        log_userdata = userdata;
        libbpf_set_print(on_libbpf_print);
}

static int devnum_to_kdev(dev_t devnum, uint32_t *ret) {
        unsigned ma = major(devnum), mi = minor(devnum);

        if (ma >= (1U << (32 - HCTX_STATS_MINORBITS)) || mi > HCTX_STATS_MINORMASK)
                return -EINVAL;
        *ret = (ma << HCTX_STATS_MINORBITS) | mi;
        return 0;
}

/*
 * block_rq_issue: TP_PROTO(struct request *rq) since a54895fa (v5.11-rc1), (q, rq) before.
 * The BTF typedef btf_trace_<tp> is "void (*)(void *__data, <TP_PROTO args>)", so two params mean
 * the single-argument form. Absent typedef: assume the current form; attach will tell.
 */
static bool rq_issue_single_arg(const struct btf *vmlinux) {
        const struct btf_type *t;
        int id;

        id = btf__find_by_name_kind(vmlinux, "btf_trace_block_rq_issue", BTF_KIND_TYPEDEF);
        if (id < 0)
                return true;
        t = btf__type_by_id(vmlinux, id);
        while (t && (btf_is_typedef(t) || btf_is_ptr(t)))
                t = btf__type_by_id(vmlinux, t->type);
        if (!t || !btf_is_func_proto(t))
                return true;
        return btf_vlen(t) != 3;
}

static int errno_from_load(int r) {
        /* The verifier/kernel's ways of saying "not supported here" */
        if (r == -EINVAL || r == -ENOSYS || r == -524 /* ENOTSUPP, kernel-internal */)
                return -EOPNOTSUPP;
        if (r == -EACCES)
                return -EPERM;
        return r;
}

/*
 * Open the skeleton, choose which run program may load (none, fentry or kprobe) and whether the
 * service-time programs do (with their maps), load it.
 * @run_prog: 0 none, 1 fentry, 2 kprobe.
 */
static int open_and_load(bool single_arg, int run_prog, bool svc, struct hctx_stats **ret) {
        _cleanup_(hctx_stats__destroyp) struct hctx_stats *skel = NULL;
        int r;

        skel = hctx_stats__open();
        if (!skel)
                return -errno;

        skel->rodata->rq_issue_single_arg = single_arg;
        (void) bpf_program__set_autoload(skel->progs.on_dispatch_fentry, run_prog == 1);
        (void) bpf_program__set_autoload(skel->progs.on_dispatch_kprobe, run_prog == 2);
        (void) bpf_program__set_autoload(skel->progs.on_svc_issue, svc);
        (void) bpf_program__set_autoload(skel->progs.on_svc_complete, svc);
        (void) bpf_map__set_autocreate(skel->maps.svc_start, svc);
        (void) bpf_map__set_autocreate(skel->maps.svc_hist, svc);
        (void) bpf_map__set_autocreate(skel->maps.svc_events, svc);
        (void) bpf_map__set_autocreate(skel->maps.svc_watch, svc);

        r = hctx_stats__load(skel);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(skel);
        return 0;
}

/*
 * Attach the queue-run counter prog through via ("fentry", "kprobe"): s counts runs, or *why
 * (replaced) says "<via>: attach failed: <error>", enoent_hint added for ENOENT.
 */
static void attach_runs(StatsBpf *s, struct bpf_program *prog, struct bpf_link **link, const char *via,
                        const char *enoent_hint, char **why) {
        *link = bpf_program__attach(prog);
        if (*link) {
                s->has_runs = true;
                s->runs_attach = via;
                return;
        }
        int r = -errno;
        free(*why);
        if (asprintf(why, "%s: attach failed: %s%s", via, strerror(-r), r == -ENOENT ? enoent_hint : "") < 0)
                *why = NULL;
}

static int on_ring_event(void *ctx, void *data, size_t size) {
        StatsBpf *s = ctx;
        uint32_t kdev;
        if (size < sizeof(kdev) || !s->on_disk)
                return 0;
        memcpy(&kdev, data, sizeof(kdev));
        s->on_disk(makedev(kdev >> HCTX_STATS_MINORBITS, kdev & HCTX_STATS_MINORMASK), s->on_disk_userdata);
        return 0;
}

int blkmqd_stats_bpf_new(StatsBpf **ret) {
        _cleanup_(btf__freep) struct btf *vmlinux = NULL;
        _cleanup_(hctx_stats__destroyp) struct hctx_stats *skel = NULL;
        _cleanup_free_ char *fentry_why = NULL, *kprobe_why = NULL;
        _cleanup_(blkmqd_stats_bpf_freep) StatsBpf *s = NULL;
        _cleanup_free_ char *svc_why = NULL;
        bool single_arg, have_func, fentry_ok, svc;
        int r, run_prog;

        if (!ret)
                return -EINVAL;

        libbpf_set_print(on_libbpf_print);

        vmlinux = btf__load_vmlinux_btf();
        if (!vmlinux) {
                r = -errno;
                log_debug("stats-bpf: no kernel BTF (%s), cannot relocate CO-RE program",
                          strerror(-r));
                return -ENOENT;
        }

        single_arg = rq_issue_single_arg(vmlinux);
        have_func = btf__find_by_name_kind(vmlinux, TRACED_RUN_FUNC, BTF_KIND_FUNC) > 0;
        /* 1: supported; 0: not; <0: could not tell (e.g. EPERM) -> try and see */
        fentry_ok = have_func && libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_TRACING, NULL) != 0;

        if (!have_func) {
                run_prog = 0;
                fentry_why = strdup("fentry/kprobe: " TRACED_RUN_FUNC
                                    " not in kernel BTF (inlined or renamed)");
        } else if (fentry_ok)
                run_prog = 1;
        else {
                run_prog = 2;
                fentry_why = strdup("fentry: BPF tracing programs not supported");
        }
        log_debug("stats-bpf: block_rq_issue %s, run counter via %s", single_arg ? "(rq)" : "(q, rq)",
                  run_prog == 1 ? "fentry" : run_prog == 2 ? "kprobe" : "nothing");
        /* 1: supported; 0: not (< 5.8); < 0: could not tell -> try and see */
        svc = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) != 0;
        if (!svc)
                svc_why = strdup("the kernel has no BPF ring buffers (Linux 5.8+)");

        r = open_and_load(single_arg, run_prog, svc, &skel);
        if (r < 0 && svc) {
                /* Maybe only the service-time programs failed: retry without them. */
                if (asprintf(&svc_why, "loading the service-time programs failed: %s", strerror(-r)) < 0)
                        svc_why = NULL;
                log_debug("stats-bpf: load with the service-time programs failed (%s), retrying without", strerror(-r));
                svc = false;
                r = open_and_load(single_arg, run_prog, svc, &skel);
        }
        if (r < 0 && run_prog != 0) {
                /* Maybe only the optional program failed: retry without it. */
                if (run_prog == 1) {
                        free(fentry_why);
                        if (asprintf(&fentry_why, "fentry: load failed: %s", strerror(-r)) < 0)
                                fentry_why = NULL;
                } else if (asprintf(&kprobe_why, "kprobe: load failed: %s", strerror(-r)) < 0)
                        kprobe_why = NULL;
                log_debug("stats-bpf: load with run program failed (%s), retrying without",
                          strerror(-r));
                run_prog = 0;
                r = open_and_load(single_arg, run_prog, svc, &skel);
        }
        if (r < 0) {
                log_debug("stats-bpf: loading hctx-stats failed: %s", strerror(-r));
                return errno_from_load(r);
        }

        skel->links.on_block_rq_issue = bpf_program__attach(skel->progs.on_block_rq_issue);
        if (!skel->links.on_block_rq_issue) {
                r = -errno;
                log_debug("stats-bpf: attaching raw_tp/block_rq_issue failed: %s", strerror(-r));
                return errno_from_load(r);
        }
        skel->links.on_block_rq_complete = bpf_program__attach(skel->progs.on_block_rq_complete);
        if (!skel->links.on_block_rq_complete) {
                r = -errno;
                log_debug("stats-bpf: attaching raw_tp/block_rq_complete failed: %s", strerror(-r));
                return errno_from_load(r);
        }

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;

        if (run_prog == 1)
                attach_runs(s, skel->progs.on_dispatch_fentry, &skel->links.on_dispatch_fentry, "fentry", "", &fentry_why);
        else if (run_prog == 2)
                attach_runs(s, skel->progs.on_dispatch_kprobe, &skel->links.on_dispatch_kprobe, "kprobe",
                            " (no kprobe PMU nor kprobe_events: kernel without CONFIG_KPROBES?)", &kprobe_why);

        if (!s->has_runs) {
                if (asprintf(&s->runs_reason,
                             "no BPF attach point for " TRACED_RUN_FUNC " on this kernel (%s%s%s)",
                             fentry_why ?: "", fentry_why && kprobe_why ? "; " : "",
                             kprobe_why ?: "") < 0)
                        return -ENOMEM;
                log_debug("stats-bpf: runs unavailable: %s", s->runs_reason);
        }

        s->has_service = svc;
        s->service_reason = TAKE_PTR(svc_why);
        s->map_fd = bpf_map__fd(skel->maps.hctx_stats);
        s->n_cpus = libbpf_num_possible_cpus();
        if (s->n_cpus <= 0)
                return s->n_cpus < 0 ? s->n_cpus : -EIO;
        s->skel = TAKE_PTR(skel);
        if (s->has_service) {
                r = blkmqd_stats_bpf_service_enable(s, true);
                if (r >= 0) {
                        s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.svc_events), on_ring_event, s, NULL);
                        if (!s->rb)
                                r = -errno;
                }
                if (r < 0) {
                        (void) blkmqd_stats_bpf_service_enable(s, false);
                        s->has_service = false;
                        if (asprintf(&s->service_reason, "attaching the service-time programs failed: %s", strerror(-r)) < 0)
                                return -ENOMEM;
                }
        }
        if (!s->has_service && !s->service_reason && !(s->service_reason = strdup("not loaded")))
                return -ENOMEM;

        log_debug("stats-bpf: attached (%d possible CPUs, runs %s%s)", s->n_cpus,
                  s->has_runs ? "counted through " : "not counted", s->runs_attach ?: "");
        *ret = TAKE_PTR(s);
        return 0;
}

StatsBpf *blkmqd_stats_bpf_free(StatsBpf *s) {
        if (!s)
                return NULL;
        ring_buffer__free(s->rb);
        hctx_stats__destroy(s->skel);
        free(s->runs_reason);
        free(s->service_reason);
        free(s->snap_keys);
        free(s->snap_values);
        free(s);
        return NULL;
}

static int key_compare(const void *a, const void *b) {
        const struct hctx_stats_key *x = a, *y = b;
        if (x->kdev != y->kdev)
                return x->kdev < y->kdev ? -1 : 1;
        return x->hctx < y->hctx ? -1 : x->hctx > y->hctx;
}

typedef struct SnapEntry {
        struct hctx_stats_key key;
        HctxBpfCounters c;
} SnapEntry;

static int snap_entry_compare(const void *a, const void *b) {
        return key_compare(&((const SnapEntry *) a)->key, &((const SnapEntry *) b)->key);
}

int blkmqd_stats_bpf_snapshot(StatsBpf *s) {
        enum { CHUNK = 256 };
        _cleanup_free_ struct hctx_stats_key *keys = NULL;
        _cleanup_free_ struct hctx_stats_value *values = NULL;
        _cleanup_free_ SnapEntry *e = NULL;
        size_t n = 0, alloc = 0;
        uint32_t in = 0, out = 0;
        bool first = true;

        if (!s)
                return -EINVAL;
        s->snap_valid = false;
        keys = calloc(CHUNK, sizeof(*keys));
        values = calloc((size_t) CHUNK * s->n_cpus, sizeof(*values));
        if (!keys || !values)
                return -ENOMEM;
        for (;;) {
                uint32_t count = CHUNK;
                int r = bpf_map_lookup_batch(s->map_fd, first ? NULL : &in, &out, keys, values, &count, NULL);
                int error = r < 0 ? errno : 0;
                if (r < 0 && error != ENOENT)
                        return -error;  /* EINVAL/ENOTSUPP: no batch ops (< 5.6): reads go per element */
                if (n + count > alloc) {
                        size_t na = MAX(alloc * 2, n + count + CHUNK);
                        SnapEntry *ne = realloc(e, na * sizeof(*e));
                        if (!ne)
                                return -ENOMEM;
                        e = ne;
                        alloc = na;
                }
                for (uint32_t i = 0; i < count; i++) {
                        HctxBpfCounters c = {};
                        for (int k = 0; k < s->n_cpus; k++) {
                                const struct hctx_stats_value *v = &values[(size_t) i * s->n_cpus + k];
                                c.dispatched += v->dispatched;
                                c.completed_local += v->completed_local;
                                c.completed_remote += v->completed_remote;
                                c.runs += v->runs;
                        }
                        e[n++] = (SnapEntry) { .key = keys[i], .c = c };
                }
                if (error == ENOENT)
                        break;          /* the last chunk */
                in = out;
                first = false;
        }
        if (n > 1)
                qsort(e, n, sizeof(*e), snap_entry_compare);
        if (n > s->snap_alloc) {
                struct hctx_stats_key *nk = realloc(s->snap_keys, n * sizeof(*nk));
                if (nk)
                        s->snap_keys = nk;
                HctxBpfCounters *nv = nk ? realloc(s->snap_values, n * sizeof(*nv)) : NULL;
                if (nv)
                        s->snap_values = nv;
                if (!nk || !nv)
                        return -ENOMEM;
                s->snap_alloc = n;
        }
        for (size_t i = 0; i < n; i++) {
                s->snap_keys[i] = e[i].key;
                s->snap_values[i] = e[i].c;
        }
        s->n_snap = n;
        s->snap_valid = true;
        return 0;
}

void blkmqd_stats_bpf_snapshot_drop(StatsBpf *s) {
        if (s)
                s->snap_valid = false;
}

int blkmqd_stats_bpf_read(StatsBpf *s, dev_t devnum, unsigned hctx, HctxBpfCounters *ret) {
        _cleanup_free_ struct hctx_stats_value *v = NULL;
        struct hctx_stats_key key = { .hctx = hctx };
        HctxBpfCounters c = {};
        int r;

        if (!s || !ret)
                return -EINVAL;
        r = devnum_to_kdev(devnum, &key.kdev);
        if (r < 0)
                return r;

        if (s->snap_valid) {
                const struct hctx_stats_key *k = s->n_snap ?
                        bsearch(&key, s->snap_keys, s->n_snap, sizeof(key), key_compare) : NULL;
                if (!k)
                        return -ENOENT;         /* as bpf_map_lookup_elem() for a key never seen */
                *ret = s->snap_values[k - s->snap_keys];
                return 0;
        }

        /* Per-CPU maps return one value per possible CPU, each rounded up to 8 bytes. */
        _Static_assert(sizeof(struct hctx_stats_value) % 8 == 0, "per-CPU value must be 8-aligned");
        v = calloc(s->n_cpus, sizeof(*v));
        if (!v)
                return -ENOMEM;
        r = bpf_map_lookup_elem(s->map_fd, &key, v);
        if (r < 0)
                return -errno;

        for (int i = 0; i < s->n_cpus; i++) {
                c.dispatched += v[i].dispatched;
                c.completed_local += v[i].completed_local;
                c.completed_remote += v[i].completed_remote;
                c.runs += v[i].runs;
        }
        *ret = c;
        return 0;
}

/* bpf_prog_info.recursion_misses of one program; -ENODATA when the kernel's prog_info is too old to
 * have the field (it fills only the prefix it knows and says how much in info_len). */
static int prog_recursion_misses(const struct bpf_program *prog, uint64_t *ret) {
        struct bpf_prog_info info = {};
        uint32_t len = sizeof(info);

        if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) < 0)
                return -errno;
        if (len < offsetof(struct bpf_prog_info, recursion_misses) + sizeof(info.recursion_misses))
                return -ENODATA;
        *ret = info.recursion_misses;
        return 0;
}

int blkmqd_stats_bpf_missed(StatsBpf *s, StatsBpfMissed *ret) {
        _cleanup_free_ uint64_t *full = NULL;
        StatsBpfMissed m = {};
        uint32_t slot = 0;
        int r;

        if (!s || !ret)
                return -EINVAL;

        r = prog_recursion_misses(s->skel->progs.on_block_rq_issue, &m.issue_recursion);
        if (r >= 0)
                r = prog_recursion_misses(s->skel->progs.on_block_rq_complete, &m.complete_recursion);
        if (r < 0 && r != -ENODATA)
                return r;
        m.recursion_known = r >= 0;
        if (!m.recursion_known)
                m.issue_recursion = m.complete_recursion = 0;

        full = calloc(s->n_cpus, sizeof(*full));
        if (!full)
                return -ENOMEM;
        if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.hctx_stats_map_full), &slot, full) < 0)
                return -errno;
        for (int i = 0; i < s->n_cpus; i++)
                m.map_full += full[i];

        *ret = m;
        return 0;
}

bool blkmqd_stats_bpf_has_runs(StatsBpf *s) {
        return s && s->has_runs;
}

const char *blkmqd_stats_bpf_runs_attach(StatsBpf *s) {
        return s && s->has_runs ? s->runs_attach : NULL;
}

const char *blkmqd_stats_bpf_runs_unavailable_reason(StatsBpf *s) {
        if (!s)
                return "BPF statistics not loaded";
        return s->runs_reason;
}

int blkmqd_stats_bpf_forget(StatsBpf *s, dev_t devnum) {
        _cleanup_free_ struct hctx_stats_key *keys = NULL;
        struct hctx_stats_key key, next;
        size_t n = 0, allocated = 0;
        uint32_t kdev;
        int r, removed = 0;
        bool first = true;

        if (!s)
                return -EINVAL;
        r = devnum_to_kdev(devnum, &kdev);
        if (r < 0)
                return r;
        if (s->has_service && bpf_map_delete_elem(bpf_map__fd(s->skel->maps.svc_hist), &kdev) < 0 && errno != ENOENT)
                return -errno;

        /* Collect first, delete after: deleting the cursor key would restart the walk. */
        for (;;) {
                r = bpf_map_get_next_key(s->map_fd, first ? NULL : &key, &next);
                if (r < 0) {
                        if (errno == ENOENT)
                                break;
                        return -errno;
                }
                first = false;
                key = next;
                if (key.kdev != kdev)
                        continue;
                if (n >= allocated) {
                        size_t a = allocated ? allocated * 2 : 16;
                        struct hctx_stats_key *k = reallocarray(keys, a, sizeof(*keys));
                        if (!k)
                                return -ENOMEM;
                        keys = k;
                        allocated = a;
                }
                keys[n++] = key;
                if (n > HCTX_STATS_MAX_ENTRIES)
                        break; /* cannot happen unless the map changes under us forever */
        }

        for (size_t i = 0; i < n; i++) {
                r = bpf_map_delete_elem(s->map_fd, &keys[i]);
                if (r < 0 && errno != ENOENT)
                        return -errno;
                if (r >= 0)
                        removed++;
        }
        log_debug("stats-bpf: forgot %d hctx entries of %u:%u", removed, major(devnum),
                  minor(devnum));
        return removed;
}

bool blkmqd_stats_bpf_has_service(StatsBpf *s) {
        return s && s->has_service && s->service_on;
}

const char *blkmqd_stats_bpf_service_unavailable_reason(StatsBpf *s) {
        if (!s)
                return "BPF statistics not loaded";
        if (s->has_service && !s->service_on)
                return "switched off ([Speed] Measure=no)";
        return s->service_reason;
}

int blkmqd_stats_bpf_service_enable(StatsBpf *s, bool on) {
        if (!s || !s->has_service)
                return -EOPNOTSUPP;
        struct bpf_link **issue = &s->skel->links.on_svc_issue, **complete = &s->skel->links.on_svc_complete;
        if (!on) {
                bpf_link__destroy(*issue);
                bpf_link__destroy(*complete);
                *issue = *complete = NULL;
                s->service_on = false;
                return 0;
        }
        if (!*issue && !(*issue = bpf_program__attach(s->skel->progs.on_svc_issue)))
                return -errno;
        if (!*complete && !(*complete = bpf_program__attach(s->skel->progs.on_svc_complete))) {
                int r = -errno;
                bpf_link__destroy(*issue);
                *issue = NULL;
                return r;
        }
        s->service_on = true;
        return 0;
}

int blkmqd_stats_bpf_read_service(StatsBpf *s, dev_t devnum, SpeedHistogram *ret) {
        _Static_assert(SVC_BUCKETS == SPEED_BUCKETS, "the BPF buckets are policies/speed.h's");
        struct svc_hist v;
        uint32_t kdev;
        int r;

        if (!s || !ret)
                return -EINVAL;
        if (!s->has_service)
                return -EOPNOTSUPP;
        r = devnum_to_kdev(devnum, &kdev);
        if (r < 0)
                return r;
        if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.svc_hist), &kdev, &v) < 0)
                return -errno;
        /* the buckets are added to one by one: sum them rather than trust count to match */
        SpeedHistogram h = { .sum_usec = v.sum_usec };
        for (unsigned i = 0; i < SVC_BUCKETS; i++) {
                h.buckets[i] = v.buckets[i];
                h.count += v.buckets[i];
        }
        *ret = h;
        return 0;
}

int blkmqd_stats_bpf_service_watch(StatsBpf *s, dev_t devnum, bool on) {
        uint32_t kdev;
        uint8_t one = 1;
        int fd, r;

        if (!s)
                return -EINVAL;
        if (!s->has_service)
                return -EOPNOTSUPP;
        r = devnum_to_kdev(devnum, &kdev);
        if (r < 0)
                return r;
        fd = bpf_map__fd(s->skel->maps.svc_watch);
        if (on)
                return bpf_map_update_elem(fd, &kdev, &one, BPF_ANY) < 0 ? -errno : 0;
        r = bpf_map_delete_elem(fd, &kdev);
        (void) bpf_map_delete_elem(bpf_map__fd(s->skel->maps.svc_hist), &kdev);
        return r < 0 && errno != ENOENT ? -errno : 0;
}

int blkmqd_stats_bpf_service_fd(StatsBpf *s) {
        if (!s || !s->rb)
                return -EOPNOTSUPP;
        return ring_buffer__epoll_fd(s->rb);
}

int blkmqd_stats_bpf_service_consume(StatsBpf *s, StatsBpfServiceFunc on_disk, void *userdata) {
        if (!s || !s->rb)
                return -EOPNOTSUPP;
        s->on_disk = on_disk;
        s->on_disk_userdata = userdata;
        int n = ring_buffer__consume(s->rb);
        s->on_disk = NULL;
        return n;
}

#else /* !HAVE_BPF */

void blkmqd_stats_bpf_set_log_func(StatsBpfLogFunc func, void *userdata) {
        log_func = func;
        log_userdata = userdata;
}

int blkmqd_stats_bpf_new(StatsBpf **ret) {
        return -EOPNOTSUPP;
}

StatsBpf *blkmqd_stats_bpf_free(StatsBpf *s) {
        return NULL;
}

int blkmqd_stats_bpf_read(StatsBpf *s, dev_t devnum, unsigned hctx, HctxBpfCounters *ret) {
        return -EOPNOTSUPP;
}

int blkmqd_stats_bpf_missed(StatsBpf *s, StatsBpfMissed *ret) {
        return -EOPNOTSUPP;
}

int blkmqd_stats_bpf_snapshot(StatsBpf *s) {
        return -EOPNOTSUPP;
}

void blkmqd_stats_bpf_snapshot_drop(StatsBpf *s) {
}

bool blkmqd_stats_bpf_has_runs(StatsBpf *s) {
        return false;
}

const char *blkmqd_stats_bpf_runs_attach(StatsBpf *s) {
        return NULL;
}

const char *blkmqd_stats_bpf_runs_unavailable_reason(StatsBpf *s) {
        return "blkmqd was built without BPF support";
}

int blkmqd_stats_bpf_forget(StatsBpf *s, dev_t devnum) {
        return -EOPNOTSUPP;
}

#endif

#if !HAVE_BPF
bool blkmqd_stats_bpf_has_service(StatsBpf *s) {
        return false;
}

const char *blkmqd_stats_bpf_service_unavailable_reason(StatsBpf *s) {
        return "blkmqd was built without BPF support";
}

int blkmqd_stats_bpf_service_enable(StatsBpf *s, bool on) {
        return -EOPNOTSUPP;
}

int blkmqd_stats_bpf_read_service(StatsBpf *s, dev_t devnum, SpeedHistogram *ret) {
        return -EOPNOTSUPP;
}

int blkmqd_stats_bpf_service_watch(StatsBpf *s, dev_t devnum, bool on) {
        return -EOPNOTSUPP;
}

int blkmqd_stats_bpf_service_fd(StatsBpf *s) {
        return -EOPNOTSUPP;
}

int blkmqd_stats_bpf_service_consume(StatsBpf *s, StatsBpfServiceFunc on_disk, void *userdata) {
        return -EOPNOTSUPP;
}
#endif
