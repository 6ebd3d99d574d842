/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "device.h"
#include "interrupts.h"
#include "kernel.h"
#include "macro.h"
#include "memstream.h"
#include "net.h"
#include "parse.h"
#include "policy.h"
#include "strv.h"

static const char *errno_reason(int r) {
        switch (-r) {
        case ENOENT:
                return "attribute not present in this kernel or for this device";
        case ENODEV:
                return "debugfs not mounted";
        case EACCES:
                return "permission denied";
        case EPERM:
                return "the kernel refuses to show it (EPERM, even to root)";
        case EINVAL:
        case ERANGE:
                return "unparsable value";
        default:
                return strerror(-r);
        }
}

/* Read block/<d>/<attr> as int64 into *v, or mark fact unknown. */
static int gather_i64(HostFs *h, DiskFacts *f, Fact fact, const char *path, int64_t *v) {
        uint64_t u;
        int r = hostfs_read_u64(h, HOSTFS_SYSFS, path, &u);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return disk_facts_set_unknown(f, fact, "%s: %s", path, errno_reason(r));
        *v = (int64_t) u;
        return 0;
}

/*
 * A shared host tagset in hctx debugfs "flags" (block/blk-mq-debugfs.c hctx_flags_show()):
 * "TAG_HCTX_SHARED". BLK_MQ_F_TAG_HCTX_SHARED (1 << 3) came in 5.10 ("blk-mq: Facilitate a
 * shared sbitmap per tagset", 32bc15afed04) without a name in hctx_flag_name[], so
 * blk_flags_show() printed its bit number: "alloc_policy=FIFO SHOULD_MERGE|TAG_QUEUE_SHARED|3"
 * until John Garry's "blk-mq-debugfs: Add decode for BLK_MQ_F_TAG_HCTX_SHARED" (02f938e9fed1,
 * 5.11-rc3; e311e2bce1aa in 5.10 stable, January 2021). The bare "3" is trusted on 5.10 and
 * 5.11 only, the releases that can print it; bit 3 is that flag there.
 */
static bool hctx_flags_shared(const char *flags, const char *release) {
        unsigned maj, min;
        if (flags_has_token(flags, "TAG_HCTX_SHARED"))
                return true;
        return kernel_release_parse(release, &maj, &min) >= 0 && maj == 5 && (min == 10 || min == 11) &&
               flags_has_token(flags, "3");
}

/*
 * The map of hctx x (policies/facts.h HctxType): debugfs hctxN/type. Before 5.0 a queue has
 * one map and no such file: "default". Unknown otherwise, the reason kept once per disk in
 * f->hctx_type_unknown. Returns 0 or -ENOMEM.
 */
static int gather_hctx_type(HostFs *h, DiskFacts *f, HctxFacts *x, bool debugfs) {
        char path[PATH_MAX];
        _cleanup_free_ char *s = NULL;
        int r = -ENODEV;

        x->type = _HCTX_TYPE_INVALID;
        snprintf(path, sizeof(path), "block/%s/hctx%u/type", f->name, x->index);
        if (debugfs && (r = hostfs_read(h, HOSTFS_DEBUGFS, path, &s)) >= 0) {
                strip_newline_inplace(s);
                x->type = hctx_type_from_string(s);
                if (x->type >= 0)
                        return 0;
        }
        if (r == -ENOMEM)
                return r;
        if (r == -ENOENT && kernel_release_at_least(f->kernel_release, 5, 0) == TRISTATE_NO) {
                x->type = HCTX_TYPE_DEFAULT;    /* one map before 5.0 */
                return 0;
        }
        if (f->hctx_type_unknown)
                return 0;
        if (!debugfs)
                return asprintf(&f->hctx_type_unknown, "debugfs not mounted at /sys/kernel/debug (hctxN/type is shown "
                                "only there)") < 0 ? -ENOMEM : 0;
        if (r >= 0)
                return asprintf(&f->hctx_type_unknown, "debugfs %s reads \"%s\", no map type this blkmqd knows", path, s) < 0 ?
                       -ENOMEM : 0;
        return asprintf(&f->hctx_type_unknown, "debugfs %s: %s", path, errno_reason(r)) < 0 ? -ENOMEM : 0;
}

/*
 * One hctx's mq/N/{cpu_list,nr_tags,nr_reserved_tags} and debugfs hctxN/{flags,type}.
 * Unreadable values stay unknown. Returns 0 or -ENOMEM.
 */
static int gather_one_hctx(HostFs *h, DiskFacts *f, HctxFacts *x, bool debugfs) {
        char path[PATH_MAX];
        _cleanup_free_ char *s = NULL, *flags = NULL;
        uint64_t u;

        snprintf(path, sizeof(path), "block/%s/mq/%u/cpu_list", f->name, x->index);
        if (hostfs_read(h, HOSTFS_SYSFS, path, &s) >= 0 && cpuset_parse(s, &x->cpus) >= 0) {
                x->cpu_list = cpuset_format(&x->cpus);
                if (!x->cpu_list)
                        return -ENOMEM;
        }
        snprintf(path, sizeof(path), "block/%s/mq/%u/nr_tags", f->name, x->index);
        if (hostfs_read_u64(h, HOSTFS_SYSFS, path, &u) >= 0 && u <= INT32_MAX)
                x->nr_tags = u;
        snprintf(path, sizeof(path), "block/%s/mq/%u/nr_reserved_tags", f->name, x->index);
        if (hostfs_read_u64(h, HOSTFS_SYSFS, path, &u) >= 0 && u <= INT32_MAX)
                x->nr_reserved_tags = u;

        snprintf(path, sizeof(path), "block/%s/hctx%u/flags", f->name, x->index);
        if (debugfs && hostfs_read(h, HOSTFS_DEBUGFS, path, &flags) >= 0)
                x->shared_tags = hctx_flags_shared(flags, f->kernel_release) ? TRISTATE_YES : TRISTATE_NO;
        return gather_hctx_type(h, f, x, debugfs);
}

/*
 * The hctx list (mq/) and the first hctx in full. Shared tags come from that first hctx:
 * BLK_MQ_F_TAG_HCTX_SHARED is a tag-set flag and every hctx of a queue copies the set's
 * flags (block/blk-mq.c blk_mq_alloc_hctx(): hctx->flags = set->flags), so all hctx agree.
 * The other hctx wait for device_gather_hctx_details().
 */
static int gather_hctx(HostFs *h, DiskFacts *f, bool debugfs) {
        _cleanup_strv_free_ char **names = NULL;
        char path[PATH_MAX];
        int r;

        snprintf(path, sizeof(path), "block/%s/mq", f->name);
        r = hostfs_list(h, HOSTFS_SYSFS, path, &names);
        if (r == -ENOENT || r == -ENOTDIR) {
                f->has_mq = false;
                f->hctx_details = true;
                return disk_facts_set_unknown(f, FACT_NR_HW_QUEUES, "no blk-mq queue (no mq/ directory)");
        }
        if (r < 0)
                return r == -ENOMEM ? r : disk_facts_set_unknown(f, FACT_NR_HW_QUEUES, "%s: %s", path, errno_reason(r));
        f->has_mq = true;

        size_t n = strv_length(names);
        f->hctx = calloc(n ?: 1, sizeof(HctxFacts));
        if (!f->hctx)
                return -ENOMEM;

        STRV_FOREACH(name, names) {
                uint64_t index;
                if (parse_u64(*name, &index) < 0 || index > UINT32_MAX)
                        continue;
                f->hctx[f->n_hctx++] = (HctxFacts) { .index = index, .nr_tags = -1, .nr_reserved_tags = -1,
                                                     .shared_tags = TRISTATE_UNKNOWN, .type = _HCTX_TYPE_INVALID,
                                                     .irq = -1 };
        }
        /* hostfs_list() sorts with strverscmp(): hctx in index order */

        if (f->n_hctx > 0) {
                r = gather_one_hctx(h, f, &f->hctx[0], debugfs);
                if (r < 0)
                        return r;
                f->shared_tags = f->hctx[0].shared_tags;
        }
        if (f->shared_tags != TRISTATE_UNKNOWN)
                return 0;
        if (!debugfs)
                return disk_facts_set_unknown(f, FACT_SHARED_TAGS,
                                              "debugfs not mounted at /sys/kernel/debug (TAG_HCTX_SHARED is shown only there)");
        if (f->n_hctx == 0)
                return disk_facts_set_unknown(f, FACT_SHARED_TAGS, "mq/ lists no hctx");
        return disk_facts_set_unknown(f, FACT_SHARED_TAGS, "debugfs block/%s/hctx%u/flags unreadable", f->name, f->hctx[0].index);
}

int device_gather_hctx_details(HostFs *h, DiskFacts *f, const PolicyHistory *history) {
        assert(f);
        if (f->hctx_details)
                return 0;
        bool debugfs = hostfs_debugfs_available(h, NULL);
        for (size_t i = 1; i < f->n_hctx; i++) {
                int r = gather_one_hctx(h, f, &f->hctx[i], debugfs);
                if (r < 0)
                        return r;
        }
        int r = disk_facts_map_irqs(f, history);
        if (r < 0)
                return r;
        f->hctx_details = true;
        return 0;
}

static int gather_queue_knobs(HostFs *h, DiskFacts *f);

static int gather_queue(HostFs *h, DiskFacts *f) {
        char path[PATH_MAX];
        _cleanup_free_ char *s = NULL;
        int r;

        snprintf(path, sizeof(path), "block/%s/queue/rotational", f->name);
        int rot;
        r = hostfs_read_int(h, HOSTFS_SYSFS, path, &rot);
        if (r >= 0 && (rot == 0 || rot == 1))
                f->rotational = rot ? TRISTATE_YES : TRISTATE_NO;
        else if ((r = disk_facts_set_unknown(f, FACT_ROTATIONAL, "%s: %s", path, errno_reason(r < 0 ? r : -ERANGE))) < 0)
                return r;

        r = gather_queue_knobs(h, f);
        if (r < 0)
                return r;

        snprintf(path, sizeof(path), "block/%s/device/queue_depth", f->name);
        if (hostfs_exists(h, HOSTFS_SYSFS, path))
                return gather_i64(h, f, FACT_QUEUE_DEPTH, path, &f->queue_depth);
        return disk_facts_set_unknown(f, FACT_QUEUE_DEPTH, "no device/queue_depth (not a SCSI device)");
}

static int iosched_value_compare(const void *a, const void *b) {
        return strcmp(((const IoschedValue *) a)->name, ((const IoschedValue *) b)->name);
}

/*
 * queue/iosched/ of the running elevator: each file's value and whether it is writable.
 * "none" (or no elevator) has no such directory. A file that cannot be read keeps its
 * errno (value NULL). Returns 0 or -ENOMEM.
 */
static int gather_iosched(HostFs *h, DiskFacts *f) {
        _cleanup_strv_free_ char **names = NULL;
        char path[PATH_MAX];
        struct stat st;
        int r;

        disk_facts_clear_iosched(f);
        snprintf(path, sizeof(path), "block/%s/queue/iosched", f->name);
        r = hostfs_list(h, HOSTFS_SYSFS, path, &names);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                if (r == -ENOENT && (!f->elevator || streq(f->elevator, "none")))
                        return 0;       /* no elevator, no tunables */
                return asprintf(&f->iosched_unknown, "%s: %s", path, errno_reason(r)) < 0 ? -ENOMEM : 0;
        }
        if (hostfs_stat(h, HOSTFS_SYSFS, path, &st) >= 0)
                f->iosched_ino = (uint64_t) st.st_ino;
        if (f->elevator && !(f->iosched_elevator = strdup(f->elevator)))
                return -ENOMEM;
        size_t n = strv_length(names);
        if (n == 0)
                return 0;
        f->iosched = calloc(n, sizeof(IoschedValue));
        if (!f->iosched)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                IoschedValue *v = &f->iosched[f->n_iosched++];
                v->name = TAKE_PTR(names[i]);
                snprintf(path, sizeof(path), "block/%s/queue/iosched/%s", f->name, v->name);
                r = hostfs_read(h, HOSTFS_SYSFS, path, &v->value);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        v->error = r;
                else
                        strip_newline(v->value);
                v->writable = hostfs_stat(h, HOSTFS_SYSFS, path, &st) >= 0 && (st.st_mode & 0222);
        }
        qsort(f->iosched, f->n_iosched, sizeof(IoschedValue), iosched_value_compare);
        return 0;
}

/* The queue attributes blkmqd writes: scheduler (elevator, elevators), rq_affinity, nr_requests;
 * and the running elevator's tunables (queue/iosched/). */
static int gather_queue_knobs(HostFs *h, DiskFacts *f) {
        char path[PATH_MAX];
        _cleanup_free_ char *s = NULL;
        int r;

        snprintf(path, sizeof(path), "block/%s/queue/scheduler", f->name);
        r = hostfs_read(h, HOSTFS_SYSFS, path, &s);
        if (r >= 0)
                r = parse_scheduler(s, &f->elevators, &f->elevator, &f->elevator_configurable);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                disk_facts_set_unknown(f, FACT_ELEVATOR, "%s: %s", path, errno_reason(r));
                disk_facts_set_unknown(f, FACT_ELEVATORS, "%s: %s", path, errno_reason(r));
        } else if (!f->elevator)
                disk_facts_set_unknown(f, FACT_ELEVATOR, "queue cannot take an elevator (scheduler reads \"%s\" without brackets)",
                                       f->elevators[0]);
        r = gather_iosched(h, f);
        if (r < 0)
                return r;

        snprintf(path, sizeof(path), "block/%s/queue/rq_affinity", f->name);
        int v;
        r = hostfs_read_int(h, HOSTFS_SYSFS, path, &v);
        if (r >= 0)
                f->rq_affinity = v;
        else
                disk_facts_set_unknown(f, FACT_RQ_AFFINITY, "%s: %s", path, errno_reason(r));

        snprintf(path, sizeof(path), "block/%s/queue/nr_requests", f->name);
        return gather_i64(h, f, FACT_NR_REQUESTS, path, &f->nr_requests);
}

static int basename_of_link(HostFs *h, const char *path, char **ret) {
        _cleanup_free_ char *target = NULL;
        int r = hostfs_readlink(h, HOSTFS_SYSFS, path, &target);
        if (r < 0)
                return r;
        const char *b = strrchr(target, '/');
        char *s = strdup(b ? b + 1 : target);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

/*
 * The transport named by the subsystem of a disk's parent device (the basename of
 * block/<d>/device/subsystem). The NVMe classes say "nvme" (drivers/nvme/host/core.c:
 * nvme_class for a controller, nvme_subsys_class for a multipath head); any other bus or
 * class is its own name ("virtio", "mmc", "scsi", "xen", "nd", ...).
 */
static const char *transport_of_subsystem(const char *subsystem) {
        if (streq(subsystem, "nvme-subsystem"))
                return "nvme";
        return subsystem;
}

/* class/scsi_host/<host>/<attr> as a number into *v (left alone on error). Returns 0 or -errno. */
static int read_host_i64(HostFs *h, const char *host, const char *attr, int64_t *v) {
        char path[PATH_MAX];
        uint64_t u;
        snprintf(path, sizeof(path), "class/scsi_host/%s/%s", host, attr);
        int r = hostfs_read_u64(h, HOSTFS_SYSFS, path, &u);
        if (r >= 0)
                *v = (int64_t) u;
        return r;
}

/* Mark fact unknown when reading host attribute attr failed with error. Returns 0 or -ENOMEM. */
static int host_attr_unknown(DiskFacts *f, Fact fact, const char *attr, int error) {
        if (error >= 0)
                return 0;
        return disk_facts_set_unknown(f, fact, "class/scsi_host/%s/%s: %s", f->scsi_host, attr, errno_reason(error));
}

/* The host's attributes, from the batch cache or read now (and cached). NULL on ENOMEM. */
static const GatherHost *scsi_host_attributes(HostFs *h, const char *host, GatherCache *cache) {
        for (size_t i = 0; i < cache->n_hosts; i++)
                if (streq(cache->hosts[i].name, host))
                        return &cache->hosts[i];

        GatherHost *n = realloc(cache->hosts, (cache->n_hosts + 1) * sizeof(GatherHost));
        if (!n)
                return NULL;
        cache->hosts = n;
        GatherHost *g = &n[cache->n_hosts];
        *g = (GatherHost) { .name = strdup(host), .nr_hw_queues = -1, .can_queue = -1 };
        if (!g->name)
                return NULL;

        char path[PATH_MAX];
        snprintf(path, sizeof(path), "class/scsi_host/%s/proc_name", host);
        g->proc_name_error = hostfs_read(h, HOSTFS_SYSFS, path, &g->proc_name);
        if (g->proc_name_error >= 0)
                strip_newline(g->proc_name);
        /* A host template without proc_name reads "(null)" (drivers/scsi/scsi_sysfs.c
         * shost_rd_attr2(proc_name, hostt->proc_name, "%s\n"): uas is one, seen on 6.1 and 6.12):
         * the driver is then the one bound to the host's parent device (the USB interface for
         * uas, drivers/usb/storage/uas.c scsi_add_host(shost, &intf->dev)). */
        if (g->proc_name_error >= 0 && (isempty(g->proc_name) || streq(g->proc_name, "(null)"))) {
                _cleanup_free_ char *hostdev = NULL, *driver = NULL;
                snprintf(path, sizeof(path), "class/scsi_host/%s/device", host);
                int r = hostfs_resolve(h, HOSTFS_SYSFS, path, &hostdev);
                char *s = r >= 0 ? strrchr(hostdev, '/') : NULL;
                if (s) {
                        *s = 0;
                        snprintf(path, sizeof(path), "%s/driver", hostdev);
                        r = basename_of_link(h, path, &driver);
                } else if (r >= 0)
                        r = -ENOENT;
                if (r == -ENOMEM) {
                        free(g->name);
                        free(g->proc_name);
                        return NULL;
                }
                free(g->proc_name);
                g->proc_name = r >= 0 ? TAKE_PTR(driver) : NULL;
                if (r < 0)
                        g->proc_name_error = r;
        }
        g->nr_hw_queues_error = read_host_i64(h, host, "nr_hw_queues", &g->nr_hw_queues);
        g->can_queue_error = read_host_i64(h, host, "can_queue", &g->can_queue);
        if (g->proc_name_error == -ENOMEM || g->nr_hw_queues_error == -ENOMEM || g->can_queue_error == -ENOMEM) {
                free(g->name);
                free(g->proc_name);
                return NULL;
        }
        cache->n_hosts++;
        return g;
}

static int gather_scsi_host(HostFs *h, DiskFacts *f, GatherCache *cache) {
        const GatherHost *g = scsi_host_attributes(h, f->scsi_host, cache);
        int r;

        if (!g)
                return -ENOMEM;
        if (g->proc_name_error >= 0 && !(f->driver = strdup(g->proc_name)))
                return -ENOMEM;
        f->host_nr_hw_queues = g->nr_hw_queues;
        f->host_can_queue = g->can_queue;
        if ((r = host_attr_unknown(f, FACT_DRIVER, "proc_name", g->proc_name_error)) < 0 ||
            (r = host_attr_unknown(f, FACT_HOST_NR_HW_QUEUES, "nr_hw_queues", g->nr_hw_queues_error)) < 0)
                return r;
        return host_attr_unknown(f, FACT_HOST_CAN_QUEUE, "can_queue", g->can_queue_error);
}

char *device_ancestor_with(HostFs *h, const char *devpath, const char *child) {
        _cleanup_free_ char *p = strdup(devpath);
        if (!p)
                return NULL;
        for (;;) {
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "%s/%s", p, child);
                if (hostfs_exists(h, HOSTFS_SYSFS, path))
                        return TAKE_PTR(p);
                char *s = strrchr(p, '/');
                if (!s || streq(p, "devices"))
                        return NULL;
                *s = 0;
        }
}

/* Non-queue vectors by name: virtio config/control/event, the NVMe admin queue (nvmeXq0). */
static bool irq_name_is_queue(const char *name) {
        static const char * const suffixes[] = { "-config", "-control", "-event", "-events" };
        size_t l = strlen(name);

        if (l == 0)
                return false;   /* no handler registered: not in use */
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                size_t k = strlen(suffixes[i]);
                if (l >= k && streq(name + l - k, suffixes[i]))
                        return false;
        }
        const char *q = startswith(name, "nvme");
        if (q) {
                q += strspn(q, "0123456789");
                if (streq(q, "q0"))
                        return false;
        }
        return true;
}

static int gather_irq_managed(HostFs *h, const char *kernel_release, IrqFacts *q, bool debugfs) {
        char path[PATH_MAX];
        unsigned maj, min;

        snprintf(path, sizeof(path), "irq/irqs/%u", q->irq);
        if (debugfs) {
                _cleanup_free_ char *s = NULL;
                if (hostfs_read(h, HOSTFS_DEBUGFS, path, &s) >= 0) {
                        q->managed = flags_has_token(s, "IRQD_AFFINITY_MANAGED") ? TRISTATE_YES : TRISTATE_NO;
                        return asprintf(&q->managed_source, "debugfs irq/irqs/%u dstate", q->irq) < 0 ? -ENOMEM : 0;
                }
        }

        /* >= 6.12 (c7718e5c76d4): smp_affinity is 0444 when user space cannot set it. */
        struct stat st;
        snprintf(path, sizeof(path), "irq/%u/smp_affinity", q->irq);
        if (kernel_release_parse(kernel_release, &maj, &min) >= 0 && (maj > 6 || (maj == 6 && min >= 12)) &&
            hostfs_stat(h, HOSTFS_PROCFS, path, &st) >= 0) {
                q->managed = (st.st_mode & 0222) ? TRISTATE_NO : TRISTATE_YES;
                return asprintf(&q->managed_source, "procfs irq/%u/smp_affinity mode %03o (kernel >= 6.12, c7718e5c76d4)",
                                q->irq, st.st_mode & 0777) < 0 ? -ENOMEM : 0;
        }
        q->managed = TRISTATE_UNKNOWN;  /* learned from the first write: EIO (<= 6.11) */
        return 0;
}

static const ProcInterrupts *cached_interrupts(HostFs *h, GatherCache *c) {
        _cleanup_free_ char *text = NULL;
        if (!c->have_interrupts && hostfs_read(h, HOSTFS_PROCFS, "interrupts", &text) >= 0)
                c->have_interrupts = proc_interrupts_parse(text, &c->interrupts) >= 0;
        return c->have_interrupts ? &c->interrupts : NULL;
}

void gather_cache_done(GatherCache *c) {
        proc_interrupts_done(&c->interrupts);
        root_mounts_done(&c->roots);
        free(c->kernel_release);
        for (size_t i = 0; i < c->n_hosts; i++) {
                free(c->hosts[i].name);
                free(c->hosts[i].proc_name);
        }
        free(c->hosts);
        for (size_t i = 0; i < c->n_functions; i++) {
                free(c->functions[i].path);
                irq_vectors_unref(c->functions[i].vectors);
        }
        free(c->functions);
        strv_free(c->elevators_builtin);
        strv_free(c->elevators_loadable);
        strv_free(c->elevators_blocked);
        free(c->proc_devices);
        kernel_config_facts_done(&c->kernel);
        for (size_t i = 0; i < ELEMENTSOF(c->kernel_unknown); i++)
                free(c->kernel_unknown[i]);
        free(c->builtin_modules);
        *c = (GatherCache) {};
}

/* Read the vectors of the PCI function at sysfs path pci into g (which has none). */
static int read_function_irqs(HostFs *h, const char *pci, const char *kernel_release, bool debugfs,
                              GatherCache *cache, GatherFunction *g) {
        _cleanup_strv_free_ char **names = NULL;
        char path[PATH_MAX];
        int r;

        g->procfs_writes = hostfs_write_count(h, HOSTFS_PROCFS);
        snprintf(path, sizeof(path), "%s/msi_irqs", pci);
        r = hostfs_list(h, HOSTFS_SYSFS, path, &names);
        if (r < 0) {
                g->error = r;
                return r == -ENOMEM ? r : 0;
        }
        g->error = 0;
        IrqVectors *v = g->vectors = irq_vectors_new(strv_length(names));
        if (!v)
                return -ENOMEM;

        const ProcInterrupts *pi = cached_interrupts(h, cache);
        STRV_FOREACH(n, names) {
                uint64_t irq;
                if (parse_u64(*n, &irq) < 0 || irq > UINT32_MAX)
                        continue;
                IrqFacts *q = &v->v[v->n++];
                *q = (IrqFacts) { .irq = irq, .hctx = -1, .managed = TRISTATE_UNKNOWN };

                const IrqLine *l = pi ? proc_interrupts_find(pi, irq) : NULL;
                q->name = strdup(l ? l->name : "");
                if (!q->name)
                        return -ENOMEM;
                q->queue = irq_name_is_queue(q->name);

                _cleanup_free_ char *aff = NULL;
                snprintf(path, sizeof(path), "irq/%u/smp_affinity_list", q->irq);
                if (hostfs_read(h, HOSTFS_PROCFS, path, &aff) >= 0 && cpuset_parse(aff, &q->affinity) >= 0 &&
                    !(q->affinity_list = cpuset_format(&q->affinity)))
                        return -ENOMEM;

                r = gather_irq_managed(h, kernel_release, q, debugfs);
                if (r < 0)
                        return r;
        }
        return 0;
}

/*
 * The vectors of the PCI function at pci: from the batch cache unless blkmqd wrote to
 * procfs since they were read (an IRQ affinity write of an earlier disk on the same
 * function), else read now. NULL on ENOMEM.
 */
static const GatherFunction *function_irqs(HostFs *h, const char *pci, const char *kernel_release, bool debugfs,
                                           GatherCache *cache) {
        GatherFunction *g = NULL;
        for (size_t i = 0; i < cache->n_functions && !g; i++)
                if (streq(cache->functions[i].path, pci))
                        g = &cache->functions[i];
        if (g && g->procfs_writes == hostfs_write_count(h, HOSTFS_PROCFS))
                return g;

        if (g)
                g->vectors = irq_vectors_unref(g->vectors);    /* disks gathered before keep theirs */
        else {
                GatherFunction *n = realloc(cache->functions, (cache->n_functions + 1) * sizeof(GatherFunction));
                if (!n)
                        return NULL;
                cache->functions = n;
                g = &n[cache->n_functions];
                *g = (GatherFunction) { .path = strdup(pci) };
                if (!g->path)
                        return NULL;
                cache->n_functions++;
        }
        return read_function_irqs(h, pci, kernel_release, debugfs, cache, g) < 0 ? NULL : g;
}

static int gather_irqs(HostFs *h, DiskFacts *f, const char *devpath, bool debugfs, GatherCache *cache) {
        _cleanup_free_ char *pci = devpath ? device_ancestor_with(h, devpath, "msi_irqs") : NULL;

        if (!pci)
                return disk_facts_set_unknown(f, FACT_IRQ_VECTORS, "no PCI function with MSI vectors above the device");

        const GatherFunction *g = function_irqs(h, pci, f->kernel_release, debugfs, cache);
        if (!g)
                return -ENOMEM;
        if (g->error < 0)
                return disk_facts_set_unknown(f, FACT_IRQ_VECTORS, "%s/msi_irqs: %s", pci, errno_reason(g->error));

        disk_facts_share_irqs(f, g->vectors);   /* read only: disk_facts_own_irqs() before a change */
        return 0;
}

int device_function_irqs(HostFs *h, const char *devpath, const char *kernel_release, bool debugfs,
                         GatherCache *cache, const IrqFacts **ret, size_t *ret_n, char **ret_pci) {
        _cleanup_free_ char *pci = devpath ? device_ancestor_with(h, devpath, "msi_irqs") : NULL;
        if (!pci)
                return -ENOENT;
        const GatherFunction *g = function_irqs(h, pci, kernel_release, debugfs, cache);
        if (!g)
                return -ENOMEM;
        if (g->error < 0)
                return g->error;
        *ret = g->vectors->v;
        *ret_n = g->vectors->n;
        if (ret_pci)
                *ret_pci = TAKE_PTR(pci);
        return 0;
}

static int gather_numa(HostFs *h, DiskFacts *f, const char *devpath) {
        _cleanup_free_ char *dir = devpath ? device_ancestor_with(h, devpath, "numa_node") : NULL;
        char path[PATH_MAX];
        int v, r;

        if (!dir)
                return disk_facts_set_unknown(f, FACT_NUMA_NODE, "no numa_node attribute above the device");
        snprintf(path, sizeof(path), "%s/numa_node", dir);
        r = hostfs_read_int(h, HOSTFS_SYSFS, path, &v);
        if (r < 0)
                return disk_facts_set_unknown(f, FACT_NUMA_NODE, "%s: %s", path, errno_reason(r));
        f->numa_node = v;
        return 0;
}

/*
 * Block drivers whose disks have no parent device (they live in /sys/devices/virtual/block),
 * by the name their major has in /proc/devices, else by the disk name they give. The driver
 * fact is what policies/defaults.c virtual_drivers[] and MatchDriver= see.
 */
static const struct {
        const char *major_name;         /* register_blkdev() name; NULL: no major of its own */
        const char *prefix;             /* the disk names the driver gives */
        const char *driver;
} parentless_drivers[] = {
        { "ramdisk", "ram",   "brd" },          /* drivers/block/brd.c: RAMDISK_MAJOR, "ram%d" */
        { "zram",    "zram",  "zram" },         /* drivers/block/zram/zram_drv.c: "zram%d" */
        { "nullb",   "nullb", "null_blk" },     /* drivers/block/null_blk/main.c: "nullb%d"; configfs
                                                 * devices take their directory's name: major only */
        { NULL,      "ublkb", "ublk" },         /* drivers/block/ublk_drv.c: "ublkb%d", dynamic devt (blkext) */
        { "nbd",     "nbd",   "nbd" },          /* drivers/block/nbd.c: NBD_MAJOR "nbd", "nbd%d" (a network
                                                 * disk, not a virtual one: policies/defaults.c) */
};

/* The driver of a disk without a parent device, from the cache's /proc/devices (read once) or
 * its name; NULL when neither says. */
static const char *parentless_driver(HostFs *h, const DiskFacts *f, GatherCache *cache) {
        if (!cache->have_proc_devices) {
                cache->have_proc_devices = true;
                if (hostfs_read(h, HOSTFS_PROCFS, "devices", &cache->proc_devices) < 0)
                        cache->proc_devices = NULL;
        }
        char major_name[64];
        int r = disk_facts_known(f, FACT_DEVNUM) ?
                proc_devices_block_name(cache->proc_devices, f->major, major_name, sizeof(major_name)) : -ENOENT;
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(parentless_drivers); i++)
                if (streq_ptr(parentless_drivers[i].major_name, major_name))
                        return parentless_drivers[i].driver;
        if (r >= 0 && !streq(major_name, "blkext"))
                return NULL;            /* another driver's major: the name says nothing then */
        for (size_t i = 0; i < ELEMENTSOF(parentless_drivers); i++)
                if (startswith(f->name, parentless_drivers[i].prefix))
                        return parentless_drivers[i].driver;
        return NULL;
}

/*
 * The SCSI disk's MEDIUM ROTATION RATE (VPD page B1h, bytes 4-5 big endian, SBC-4 "Block
 * Device Characteristics"), which sd reads to set queue/rotational (drivers/scsi/sd.c
 * sd_read_block_characteristics(): non-rotational only for rate 1). The SCSI midlayer shows
 * the cached page as device/vpd_pgb1 (drivers/scsi/scsi_sysfs.c, 5.19+: "scsi: core: Add
 * vpd_pgb0/b1/b2 attributes"); absent when the device has no such page or the kernel is older.
 */
static int gather_rotation_rate(HostFs *h, DiskFacts *f) {
        uint8_t page[64];
        size_t n = 0;
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "block/%s/device/vpd_pgb1", f->name);
        int r = hostfs_read_bytes(h, HOSTFS_SYSFS, path, page, sizeof(page), &n);
        if (r < 0)
                return disk_facts_set_unknown(f, FACT_MEDIUM_ROTATION, r == -ENOENT ?
                                              "%s absent: no VPD page B1h (the device has none, or the kernel is before 5.19)" :
                                              "%s: %s", path, errno_reason(r));
        if (n < 6 || page[1] != 0xb1)
                return disk_facts_set_unknown(f, FACT_MEDIUM_ROTATION, "%s: not a VPD page B1h (%zu bytes, page code 0x%02x)",
                                              path, n, n > 1 ? page[1] : 0);
        f->rotation_rate = (page[4] << 8) | page[5];
        return 0;
}

/* H:C:T:L of the SCSI device at devpath (its directory's name, drivers/scsi/scsi_sysfs.c
 * scsi_sysfs_device_initialize(): "%d:%d:%llu:%llu"): the channel, -1 when not such a name. */
static int scsi_channel_of(const char *devpath) {
        const char *b = devpath ? strrchr(devpath, '/') : NULL;
        unsigned host, channel, target, lun;
        char c;
        if (!b || sscanf(b + 1, "%u:%u:%u:%u%c", &host, &channel, &target, &lun, &c) != 4)
                return -1;
        return (int) channel;
}

static int gather_transport(HostFs *h, DiskFacts *f, GatherCache *cache, char **ret_devpath) {
        char path[PATH_MAX];
        _cleanup_free_ char *devpath = NULL;
        int r;

        static const struct {
                const char *dir, *transport, *driver;
        } stacked[] = {
                { "loop", "loop", "loop" },
                { "dm", "dm", "device-mapper" },
                { "md", "md", "md" },
        };
        for (size_t i = 0; i < ELEMENTSOF(stacked); i++) {
                snprintf(path, sizeof(path), "block/%s/%s", f->name, stacked[i].dir);
                if (hostfs_exists(h, HOSTFS_SYSFS, path)) {
                        f->stacked = true;
                        disk_facts_set_unknown(f, FACT_SCSI_HOST, "not a SCSI device");
                        disk_facts_set_unknown(f, FACT_MEDIUM_ROTATION, "not a SCSI disk (VPD pages are SCSI's)");
                        disk_facts_set_unknown(f, FACT_HOST_NR_HW_QUEUES, "not a SCSI device");
                        disk_facts_set_unknown(f, FACT_HOST_CAN_QUEUE, "not a SCSI device");
                        if (free_and_strdup(&f->transport, stacked[i].transport) < 0 ||
                            free_and_strdup(&f->driver, stacked[i].driver) < 0)
                                return -ENOMEM;
                        *ret_devpath = NULL;
                        return 0;
                }
        }

        snprintf(path, sizeof(path), "block/%s/device", f->name);
        r = hostfs_resolve(h, HOSTFS_SYSFS, path, &devpath);
        if (r < 0 || !hostfs_exists(h, HOSTFS_SYSFS, path)) {
                const char *t = parentless_driver(h, f, cache);
                if (t) {
                        if (free_and_strdup(&f->transport, t) < 0 || free_and_strdup(&f->driver, t) < 0)
                                return -ENOMEM;
                } else {
                        disk_facts_set_unknown(f, FACT_TRANSPORT, "virtual device without a parent device");
                        disk_facts_set_unknown(f, FACT_DRIVER, "virtual device without a parent device");
                }
                disk_facts_set_unknown(f, FACT_SCSI_HOST, "not a SCSI device");
                disk_facts_set_unknown(f, FACT_MEDIUM_ROTATION, "not a SCSI disk (VPD pages are SCSI's)");
                disk_facts_set_unknown(f, FACT_HOST_NR_HW_QUEUES, "not a SCSI device");
                disk_facts_set_unknown(f, FACT_HOST_CAN_QUEUE, "not a SCSI device");
                *ret_devpath = NULL;
                return 0;
        }

        /* The bus or class of the parent device says the transport: block/<d>/device/subsystem
         * ("bus/scsi", "bus/virtio", "bus/mmc", "class/nvme", and "class/nvme-subsystem" for a
         * native-multipath head, whose parent is the nvme-subsys<N> device). */
        _cleanup_free_ char *subsystem = NULL;
        char why[PATH_MAX + 64];        /* why the SCSI host facts are unknown */
        snprintf(path, sizeof(path), "block/%s/device/subsystem", f->name);
        r = basename_of_link(h, path, &subsystem);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                disk_facts_set_unknown(f, FACT_TRANSPORT, "%s: %s", path, errno_reason(r));
                disk_facts_set_unknown(f, FACT_TRANSPORT_DEVICE, "%s: %s", path, errno_reason(r));
                snprintf(why, sizeof(why), "transport unknown (%s: %s)", path, errno_reason(r));
        } else if (free_and_strdup(&f->transport, transport_of_subsystem(subsystem)) < 0)
                return -ENOMEM;
        else
                snprintf(why, sizeof(why), "not a SCSI device");

        if (streq_ptr(f->transport, "scsi")) {
                /* the Scsi_Host device ("host<N>", drivers/scsi/hosts.c) is the ancestor that
                 * holds its scsi_host class device */
                _cleanup_free_ char *host = device_ancestor_with(h, devpath, "scsi_host");
                const char *b = host ? strrchr(host, '/') : NULL;
                if (b && !(f->scsi_host = strdup(b + 1)))
                        return -ENOMEM;
                snprintf(why, sizeof(why), "no scsi_host directory above %s", devpath);
                f->scsi_channel = scsi_channel_of(devpath);
                /* A SCSI host on a USB interface (uas, usb-storage: drivers/usb/storage/) has the
                 * USB device for its transport: the interface directory ("2-1:1.0") is the one
                 * with bInterfaceClass (drivers/usb/core/sysfs.c). */
                char *usb = host ? device_ancestor_with(h, host, "bInterfaceClass") : NULL;
                if (usb) {
                        free(f->transport_device);
                        f->transport_device = usb;
                        if (free_and_strdup(&f->transport, "usb") < 0)
                                return -ENOMEM;
                }
                if ((r = gather_rotation_rate(h, f)) < 0)
                        return r;
        } else
                disk_facts_set_unknown(f, FACT_MEDIUM_ROTATION, "not a SCSI disk (VPD pages are SCSI's)");
        if (f->scsi_host) {
                r = gather_scsi_host(h, f, cache);
                if (r < 0)
                        return r;
        } else {
                disk_facts_set_unknown(f, FACT_SCSI_HOST, "%s", why);
                disk_facts_set_unknown(f, FACT_HOST_NR_HW_QUEUES, "%s", why);
                disk_facts_set_unknown(f, FACT_HOST_CAN_QUEUE, "%s", why);
                const char *t = f->transport;

                /* nvme: block/<d>/device is the controller, its "device" the PCI function */
                r = -ENOENT;
                if (t && streq(t, "nvme")) {
                        snprintf(path, sizeof(path), "block/%s/device/device/driver", f->name);
                        r = basename_of_link(h, path, &f->driver);
                }
                if (r < 0) {
                        snprintf(path, sizeof(path), "block/%s/device/driver", f->name);
                        r = basename_of_link(h, path, &f->driver);
                }
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        disk_facts_set_unknown(f, FACT_DRIVER, "%s: %s", path, errno_reason(r));
        }

        *ret_devpath = TAKE_PTR(devpath);
        return 0;
}

static int gather_debugfs_state(HostFs *h, DiskFacts *f, bool debugfs, const char *why) {
        char path[PATH_MAX];
        _cleanup_free_ char *s = NULL;
        unsigned maj, min;

        if (!debugfs)
                return disk_facts_set_unknown(f, FACT_SQ_SCHED, "%s", why);
        bool known = kernel_release_parse(f->kernel_release, &maj, &min) >= 0;
        if (known && (maj < 5 || (maj == 5 && min < 19)))
                return disk_facts_set_unknown(f, FACT_SQ_SCHED,
                                              "kernel %u.%u predates QUEUE_FLAG_SQ_SCHED (5.19, 4d337cebcb1c)", maj, min);

        snprintf(path, sizeof(path), "block/%s/state", f->name);
        int r = hostfs_read(h, HOSTFS_DEBUGFS, path, &s);
        if (r < 0)
                return r == -ENOMEM ? r : disk_facts_set_unknown(f, FACT_SQ_SCHED, "debugfs %s: %s", path, errno_reason(r));
        /* blk_flags_show() prints a flag without a name in blk_queue_flag_name[] as its bit
         * number: 6.1 names no SQ_SCHED and shows QUEUE_FLAG_SQ_SCHED (bit 30 in 6.1's
         * include/linux/blkdev.h) as "30" (seen on 6.1.0-57 with mq-deadline on a shared
         * tagset: "...|REGISTERED|NOWAIT|30"); 6.12 prints "SQ_SCHED". The bare number is
         * trusted only before 6.12, whose flags are renumbered. */
        f->sq_sched = flags_has_token(s, "SQ_SCHED") ||
                      (known && (maj < 6 || (maj == 6 && min < 12)) && flags_has_token(s, "30")) ? TRISTATE_YES : TRISTATE_NO;
        return 0;
}

/*
 * Without debugfs, learn the shared host tagset (BLK_MQ_F_TAG_HCTX_SHARED) from the driver:
 * megaraid_sas/mpt3sas host_tagset_enable (81e7eb5bf08f, 664f0dce2058), smartpqi and
 * hisi_sas v3 always when multi-queue, scsi_debug with host_max_queue > 0. Drivers that
 * never set it (nvme, virtio, loop) are "no". Others stay unknown.
 */
static int gather_shared_tags_fallback(HostFs *h, DiskFacts *f) {
        /* not "sd": the SCSI disk driver (block/<d>/device/driver when no SCSI host is found)
         * sits above every host driver, shared tagset or not */
        static const char * const never[] = { "nvme", "virtio_blk", "virtio_scsi", "loop", "null_blk", "device-mapper" };
        _cleanup_free_ char *v = NULL;
        char path[PATH_MAX];
        Tristate t = TRISTATE_UNKNOWN;
        const char *src = NULL;
        char buf[128];

        if (f->shared_tags != TRISTATE_UNKNOWN || !f->driver || !f->has_mq)
                return 0;

        if (streq(f->driver, "megaraid_sas") || streq(f->driver, "mpt3sas")) {
                snprintf(path, sizeof(path), "module/%s/parameters/host_tagset_enable", f->driver);
                if (hostfs_read(h, HOSTFS_SYSFS, path, &v) >= 0) {
                        strip_newline(v);
                        t = streq(v, "0") ? TRISTATE_NO : TRISTATE_YES;
                        snprintf(buf, sizeof(buf), "%s.host_tagset_enable=%s", f->driver, v);
                } else {
                        t = TRISTATE_NO;
                        snprintf(buf, sizeof(buf), "%s has no host_tagset_enable: kernel before the shared host tagset", f->driver);
                }
                src = buf;
        } else if (streq(f->driver, "smartpqi") || streq(f->driver, "hisi_sas_v3_hw")) {
                t = f->host_nr_hw_queues > 1 ? TRISTATE_YES : TRISTATE_NO;
                snprintf(buf, sizeof(buf), "%s uses a host-wide tagset when multi-queue (host nr_hw_queues=%" PRIi64 ")",
                         f->driver, f->host_nr_hw_queues);
                src = buf;
        } else if (streq(f->driver, "scsi_debug")) {
                uint64_t q;
                if (hostfs_read_u64(h, HOSTFS_SYSFS, "module/scsi_debug/parameters/host_max_queue", &q) >= 0) {
                        t = q > 0 ? TRISTATE_YES : TRISTATE_NO;
                        snprintf(buf, sizeof(buf), "scsi_debug.host_max_queue=%" PRIu64, q);
                        src = buf;
                }
        } else
                for (size_t i = 0; i < ELEMENTSOF(never); i++)
                        if (streq(f->driver, never[i])) {
                                t = TRISTATE_NO;
                                snprintf(buf, sizeof(buf), "driver %s does not share tags across hctx", f->driver);
                                src = buf;
                        }

        if (t == TRISTATE_UNKNOWN)
                return 0;
        f->shared_tags = t;
        f->unknown[FACT_SHARED_TAGS] = mfree_str(f->unknown[FACT_SHARED_TAGS]);
        return free_and_strdup(&f->shared_tags_source, src);
}

/* The kernel's configuration (once per batch) into f's copy, each part with its unknown reason. */
static int gather_kernel_config(HostFs *h, DiskFacts *f, GatherCache *c) {
        static const Fact facts[_KERNEL_UNKNOWN_MAX] = {
                [KERNEL_UNKNOWN_PREEMPT_RT] = FACT_PREEMPT_RT,
                [KERNEL_UNKNOWN_IRQ_THREADS] = FACT_IRQ_THREADS_FORCED,
                [KERNEL_UNKNOWN_ISOLATED] = FACT_ISOLATED_CPUS,
        };
        _Static_assert(ELEMENTSOF(((GatherCache *) 0)->kernel_unknown) == _KERNEL_UNKNOWN_MAX, "kernel_unknown");
        if (!c->have_kernel_config) {
                int r = kernel_config_gather(h, f->kernel_release, c->machine && c->machine->have_boot ? &c->machine->boot : NULL,
                                             &c->kernel, c->kernel_unknown);
                if (r < 0)
                        return r;
                c->have_kernel_config = true;
        }
        kernel_config_facts_done(&f->kernel);
        if (kernel_config_facts_copy(&c->kernel, &f->kernel) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < _KERNEL_UNKNOWN_MAX; i++)
                if (c->kernel_unknown[i] && disk_facts_set_unknown(f, facts[i], "%s", c->kernel_unknown[i]) < 0)
                        return -ENOMEM;
        return 0;
}

int device_kernel_config_changed(HostFs *h, const DiskFacts *f, GatherCache *c) {
        static const Fact facts[_KERNEL_UNKNOWN_MAX] = {
                [KERNEL_UNKNOWN_PREEMPT_RT] = FACT_PREEMPT_RT,
                [KERNEL_UNKNOWN_IRQ_THREADS] = FACT_IRQ_THREADS_FORCED,
                [KERNEL_UNKNOWN_ISOLATED] = FACT_ISOLATED_CPUS,
        };
        if (!c->have_kernel_config) {
                int r = kernel_config_gather(h, f->kernel_release, c->machine && c->machine->have_boot ? &c->machine->boot : NULL,
                                             &c->kernel, c->kernel_unknown);
                if (r < 0)
                        return r;
                c->have_kernel_config = true;
        }
        if (!kernel_config_facts_equal(&c->kernel, &f->kernel))
                return 1;
        /* the reason of an unknown (f's reason is "<reason>" as gather_kernel_config() set it) */
        for (size_t i = 0; i < _KERNEL_UNKNOWN_MAX; i++)
                if (!streq_ptr(c->kernel_unknown[i], f->unknown[facts[i]]))
                        return 1;
        return 0;
}

static char *module_of_path(const char *path, size_t len);
static bool module_name_eq(const char *a, const char *b);

/* Is module (dashes and underscores alike) listed in modules.builtin's text ("kernel/drivers/nvme/host/nvme.ko")? */
static bool builtin_lists(const char *text, const char *module) {
        for (const char *line = text; line && *line;) {
                const char *nl = strchr(line, '\n');
                size_t l = nl ? (size_t) (nl - line) : strlen(line);
                _cleanup_free_ char *m = module_of_path(line, l);
                if (m && module_name_eq(m, module))
                        return true;
                line = nl ? nl + 1 : NULL;
        }
        return false;
}

/*
 * Whether the disk's driver is built in: listed in lib/modules/<release>/modules.builtin (kbuild
 * writes every obj-y module there, scripts/Makefile.modinst); a loadable module has
 * /sys/module/<name>/initstate (kernel/module/sysfs.c, only for modules loaded with
 * init_module), a built-in one has at most parameters/ there (kernel/params.c
 * param_sysfs_builtin()).
 */
static int gather_driver_module(HostFs *h, DiskFacts *f, GatherCache *c) {
        char path[PATH_MAX];
        if (!f->driver)
                return disk_facts_set_unknown(f, FACT_DRIVER_MODULE, "driver unknown");
        if (!c->have_builtin_modules) {
                c->have_builtin_modules = true;
                int r = f->kernel_release ? (snprintf(path, sizeof(path), "%s/modules.builtin", f->kernel_release),
                                             hostfs_read(h, HOSTFS_MODULES, path, &c->builtin_modules)) : -ENOENT;
                if (r == -ENOMEM)
                        return r;
                c->builtin_modules_error = r < 0 ? r : 0;
        }
        snprintf(path, sizeof(path), "module/%s/initstate", f->driver);
        bool loaded = hostfs_exists(h, HOSTFS_SYSFS, path);
        if (c->builtin_modules && builtin_lists(c->builtin_modules, f->driver)) {
                f->driver_module = DRIVER_MODULE_BUILTIN;
                return free_and_asprintf(&f->driver_module_source, "/lib/modules/%s/modules.builtin", f->kernel_release);
        }
        if (loaded) {
                f->driver_module = DRIVER_MODULE_LOADABLE;
                return free_and_asprintf(&f->driver_module_source, "loaded: /sys/module/%s/initstate", f->driver);
        }
        if (c->builtin_modules) {
                f->driver_module = DRIVER_MODULE_LOADABLE;
                return free_and_asprintf(&f->driver_module_source, "not in /lib/modules/%s/modules.builtin", f->kernel_release);
        }
        return disk_facts_set_unknown(f, FACT_DRIVER_MODULE, "/lib/modules/%s/modules.builtin: %s, no /sys/module/%s/initstate",
                                      strna(f->kernel_release), strerror(-c->builtin_modules_error), f->driver);
}

static int gather_modparams(HostFs *h, DiskFacts *f) {
        char path[PATH_MAX];

        if (!f->driver)
                return 0;
        for (const KnownModuleParam *k = known_module_params; k->module; k++) {
                if (!streq(k->module, f->driver))
                        continue;
                ModuleParamFacts *n = realloc(f->modparams, (f->n_modparams + 1) * sizeof(ModuleParamFacts));
                if (!n)
                        return -ENOMEM;
                f->modparams = n;
                ModuleParamFacts *p = &n[f->n_modparams++];
                *p = (ModuleParamFacts) { .module = strdup(k->module), .param = strdup(k->param) };
                if (!p->module || !p->param)
                        return -ENOMEM;

                struct stat st;
                snprintf(path, sizeof(path), "module/%s/parameters/%s", k->module, k->param);
                if (hostfs_read(h, HOSTFS_SYSFS, path, &p->value) >= 0) {
                        strip_newline(p->value);
                        p->writable = hostfs_stat(h, HOSTFS_SYSFS, path, &st) >= 0 && (st.st_mode & 0222);
                }
        }
        return 0;
}

static bool devnum_on_disk(HostFs *h, const char *majmin, const char *name, unsigned depth);

/* Does the block device at sysfs path canon (resolved) sit on disk name, directly, as a partition or below dm/md? */
static bool path_on_disk(HostFs *h, const char *canon, const char *name, unsigned depth) {
        _cleanup_strv_free_ char **slaves = NULL;
        char p[PATH_MAX];

        /* devices/.../block/<disk> or devices/.../block/<disk>/<partition> */
        const char *b = strstr(canon, "/block/");
        if (b) {
                b += 7;
                size_t l = strcspn(b, "/");
                if (l == strlen(name) && strncmp(b, name, l) == 0)
                        return true;
        }
        snprintf(p, sizeof(p), "%s/slaves", canon);
        if (hostfs_list(h, HOSTFS_SYSFS, p, &slaves) < 0)
                return false;
        STRV_FOREACH(sl, slaves) {
                _cleanup_free_ char *dev = NULL;
                snprintf(p, sizeof(p), "class/block/%s/dev", *sl);
                if (hostfs_read(h, HOSTFS_SYSFS, p, &dev) >= 0 && devnum_on_disk(h, strip_newline(dev), name, depth + 1))
                        return true;
        }
        return false;
}

/* Does the block device majmin ("8:2") sit on disk name, directly, as a partition or below dm/md? */
static bool devnum_on_disk(HostFs *h, const char *majmin, const char *name, unsigned depth) {
        _cleanup_free_ char *canon = NULL;
        char p[PATH_MAX];

        if (depth > 4)
                return false;
        snprintf(p, sizeof(p), "dev/block/%s", majmin);
        if (hostfs_resolve(h, HOSTFS_SYSFS, p, &canon) < 0)
                return false;
        return path_on_disk(h, canon, name, depth);
}

void root_mounts_done(RootMounts *r) {
        for (size_t i = 0; i < r->n_devices; i++)
                free(r->devices[i].path);
        free(r->devices);
        *r = (RootMounts) {};
}

void machine_cache_done(MachineCache *c) {
        free(c->kernel_release);
        kernel_boot_done(&c->boot);
        root_mounts_done(&c->roots);
        *c = (MachineCache) {};
}

/* Read the "/" mounts' devices into r (valid unless mountinfo is unreadable). Returns 0 or -ENOMEM. */
static int root_mounts_read(HostFs *h, RootMounts *r) {
        _cleanup_free_ char *mi = NULL;

        root_mounts_done(r);
        int k = hostfs_read(h, HOSTFS_PROCFS, "self/mountinfo", &mi);
        if (k < 0)
                return k == -ENOMEM ? k : 0;    /* no root disk known; read again next time */
        /* "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw" (proc(5)): field 3 majmin, field 5 mount point */
        for (char *line = mi; line && *line; ) {
                char *nl = strchr(line, '\n');
                if (nl)
                        *nl = 0;
                char majmin[32], mnt[8], p[64];
                if (sscanf(line, "%*s %*s %31s %*s %7s", majmin, mnt) == 2 && streq(mnt, "/")) {
                        RootDevice *n = realloc(r->devices, (r->n_devices + 1) * sizeof(RootDevice));
                        if (!n)
                                return -ENOMEM;
                        r->devices = n;
                        RootDevice *d = &n[r->n_devices++];
                        *d = (RootDevice) {};
                        snprintf(d->majmin, sizeof(d->majmin), "%s", majmin);
                        snprintf(p, sizeof(p), "dev/block/%s", majmin);
                        k = hostfs_resolve(h, HOSTFS_SYSFS, p, &d->path);
                        if (k == -ENOMEM)
                                return k;
                }
                line = nl ? nl + 1 : NULL;
        }
        r->valid = true;
        return 0;
}

static int gather_root_disk(HostFs *h, DiskFacts *f, GatherCache *cache) {
        RootMounts *roots = cache->machine && cache->machine->mounts_watched ? &cache->machine->roots : &cache->roots;

        if (!roots->valid) {
                int r = root_mounts_read(h, roots);
                if (r < 0) {
                        root_mounts_done(roots);
                        return r;
                }
        }
        for (size_t i = 0; i < roots->n_devices && !f->root_disk; i++)
                f->root_disk = roots->devices[i].path && path_on_disk(h, roots->devices[i].path, f->name, 0);
        return 0;
}

/* A sysfs attribute of the disk, blanks trimmed at both ends (NVMe pads serial numbers with
 * spaces); NULL when absent, unreadable or blank. -ENOMEM only on allocation failure. */
static int read_id_attr(HostFs *h, const char *name, const char *attr, char **ret) {
        _cleanup_free_ char *s = NULL;
        char path[PATH_MAX];

        *ret = NULL;
        snprintf(path, sizeof(path), "block/%s/%s", name, attr);
        int r = hostfs_read(h, HOSTFS_SYSFS, path, &s);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return 0;
        size_t l = strlen(s);
        while (l > 0 && strchr(" \t\n", s[l - 1]))
                s[--l] = 0;
        size_t skip = strspn(s, " \t");
        if (s[skip] == 0)
                return 0;
        *ret = strdup(s + skip);
        return *ret ? 0 : -ENOMEM;
}

/* "nvme0c1n2": an NVMe multipath path device (drivers/nvme/host/multipath.c nvme_set_disk_name()). */
static bool nvme_path_device(const char *name) {
        unsigned a, b, c;
        int n = 0;
        return sscanf(name, "nvme%uc%un%u%n", &a, &b, &c, &n) == 3 && name[n] == 0;
}

/*
 * Does the disk's parent device hold other disks? SCSI, MMC and others list them in
 * device/block/, NVMe namespaces sit in the controller's directory itself (device/nvme0n2).
 * Returns 1, 0, or -ENOMEM.
 */
static int parent_has_other_disks(HostFs *h, const char *name) {
        _cleanup_strv_free_ char **a = NULL, **b = NULL;
        char path[PATH_MAX];
        size_t n = 0;

        snprintf(path, sizeof(path), "block/%s/device/block", name);
        int r = hostfs_list(h, HOSTFS_SYSFS, path, &a);
        if (r == -ENOMEM)
                return r;
        STRV_FOREACH(x, a)
                n += !streq(*x, name);
        snprintf(path, sizeof(path), "block/%s/device", name);
        r = hostfs_list(h, HOSTFS_SYSFS, path, &b);
        if (r == -ENOMEM)
                return r;
        STRV_FOREACH(x, b) {
                char sub[PATH_MAX];
                if (streq(*x, name) || streq(*x, "block") || streq(*x, "subsystem"))
                        continue;
                snprintf(sub, sizeof(sub), "block/%s/device/%s/dev", name, *x);
                /* a disk: has dev and a queue/ (the controller's char device has dev but no queue) */
                char q[PATH_MAX];
                snprintf(q, sizeof(q), "block/%s/device/%s/queue", name, *x);
                n += hostfs_exists(h, HOSTFS_SYSFS, sub) && hostfs_exists(h, HOSTFS_SYSFS, q);
        }
        return n > 0;
}

/*
 * The disk's stable identity (the key of its files in the state directory). Each source
 * names one thing; where several disks share that thing, what tells them apart is added, so
 * that no two disks of one machine have one identity (issue 13 item 10):
 *
 *   wwid:<W>                SCSI device/wwid (VPD page 0x83): one per logical unit. The
 *     .../path:<ID_PATH>    legs of a dm-multipath map are several disks of one LU and
 *     .../sas:<address>     share it: udev's ID_PATH (by-path) or the SAS address is added
 *                           (path_key()); without either they collide and the manager
 *                           says so.
 *   wwid:<W>                NVMe namespace wwid: one per namespace; a path device
 *     .../cntlid:<C>        (nvmeXcYnZ, native multipath) shares it (or serial and nsid)
 *                           with its head and the other paths: its controller's cntlid is
 *                           added (gather_identity()).
 *   serial:<S>              virtio-blk serial (set by whoever starts the VM: may repeat).
 *   serial:<S>/nsid:<N>     NVMe controller serial, shared by the controller's namespaces:
 *                           the namespace id tells them apart.
 *   mmc:<CID>[/<area>]      an MMC/SD card (device/cid: manufacturer, OEM, product, serial).
 *                           The card's user area (mmcblk0) and its hardware partitions
 *                           (mmcblk0boot0, mmcblk0boot1, mmcblk0gp0..3, mmcblk0rpmb before
 *                           it became a character device) are disks of one card: the area
 *                           is the name after "mmcblk<N>" (drivers/mmc/core/block.c
 *                           mmc_blk_alloc_part()), none for the user area.
 *   serial:<S>/disk:<name>  any other device/serial whose parent has several disks.
 *   loop:<F>[@<off>][+<size>] the backing file; offset and sizelimit when not 0 (two loop
 *                           devices on one file at one offset still collide).
 *   dm:<uuid>, dm-name:<n>  device-mapper map (dm/uuid: "mpath-...", "LVM-...", "CRYPT-...").
 *   path:<devpath>[/<name>] the sysfs path of the parent device; the disk's name added
 *                           when the parent holds other disks.
 * Returns 0 or -ENOMEM; no source -> FACT_IDENTITY unknown.
 */
static int identity_source(HostFs *h, DiskFacts *f, const char *devpath) {
        _cleanup_free_ char *v = NULL, *extra = NULL;
        int r;

        if ((r = read_id_attr(h, f->name, "device/wwid", &v)) < 0)     /* SCSI VPD 0x83 */
                return r;
        if (v)
                return asprintf(&f->identity, "wwid:%s", v) < 0 ? -ENOMEM : 0;

        if ((r = read_id_attr(h, f->name, "wwid", &v)) < 0)             /* NVMe namespace */
                return r;
        if (v)
                return asprintf(&f->identity, "wwid:%s", v) < 0 ? -ENOMEM : 0;

        if ((r = read_id_attr(h, f->name, "serial", &v)) < 0)           /* virtio-blk */
                return r;
        if (v)
                return asprintf(&f->identity, "serial:%s", v) < 0 ? -ENOMEM : 0;

        if ((r = read_id_attr(h, f->name, "device/cid", &v)) < 0)       /* MMC/SD card */
                return r;
        if (v && startswith(f->name, "mmcblk")) {
                const char *area = f->name + 6 + strspn(f->name + 6, "0123456789");
                return asprintf(&f->identity, "mmc:%s%s%s", v, *area ? "/" : "", area) < 0 ? -ENOMEM : 0;
        }
        v = mfree_str(v);

        if ((r = read_id_attr(h, f->name, "device/serial", &v)) < 0)    /* NVMe controller, others */
                return r;
        if (v) {
                if ((r = read_id_attr(h, f->name, "nsid", &extra)) < 0)
                        return r;
                if (extra)
                        return asprintf(&f->identity, "serial:%s/nsid:%s", v, extra) < 0 ? -ENOMEM : 0;
                r = parent_has_other_disks(h, f->name);
                if (r < 0)
                        return r;
                return asprintf(&f->identity, "serial:%s%s%s", v, r ? "/disk:" : "", r ? f->name : "") < 0 ? -ENOMEM : 0;
        }

        if ((r = read_id_attr(h, f->name, "loop/backing_file", &v)) < 0)
                return r;
        if (v) {
                _cleanup_free_ char *off = NULL, *limit = NULL;
                if ((r = read_id_attr(h, f->name, "loop/offset", &off)) < 0 ||
                    (r = read_id_attr(h, f->name, "loop/sizelimit", &limit)) < 0)
                        return r;
                bool o = off && !streq(off, "0"), l = limit && !streq(limit, "0");
                return asprintf(&f->identity, "loop:%s%s%s%s%s", v, o ? "@" : "", o ? off : "", l ? "+" : "", l ? limit : "") < 0 ?
                        -ENOMEM : 0;
        }

        if ((r = read_id_attr(h, f->name, "dm/uuid", &v)) < 0)
                return r;
        if (v)
                return asprintf(&f->identity, "dm:%s", v) < 0 ? -ENOMEM : 0;
        if ((r = read_id_attr(h, f->name, "dm/name", &v)) < 0)
                return r;
        if (v)
                return asprintf(&f->identity, "dm-name:%s", v) < 0 ? -ENOMEM : 0;

        if (devpath) {
                r = parent_has_other_disks(h, f->name);
                if (r < 0)
                        return r;
                return asprintf(&f->identity, "path:%s%s%s", devpath, r ? "/" : "", r ? f->name : "") < 0 ? -ENOMEM : 0;
        }
        return disk_facts_set_unknown(f, FACT_IDENTITY, "no WWID, serial, backing file or device path: overrides are not persisted");
}


/* ---- zoned, multipath, elevator modules ------------------------------------------------------ */

static int gather_zoned(HostFs *h, DiskFacts *f) {
        _cleanup_free_ char *s = NULL;
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "block/%s/queue/zoned", f->name);
        int r = hostfs_read(h, HOSTFS_SYSFS, path, &s);
        if (r == -ENOMEM)
                return r;
        f->zoned_unreadable = r < 0 && r != -ENOENT;
        if (r < 0)
                return disk_facts_set_unknown(f, FACT_ZONED, "%s: %s", path, errno_reason(r));
        Zoned z = zoned_from_string(strip_newline(s));
        f->zoned_unreadable = z < 0;
        if (z < 0)
                return disk_facts_set_unknown(f, FACT_ZONED, "%s: unknown zoned model \"%s\"", path, s);
        f->zoned = z;
        return 0;
}

/* Elevator name a module file provides ("kernel/block/kyber-iosched.ko.zst" -> "kyber"), or NULL. */
static char *elevator_of_module(const char *path, size_t len) {
        static const char * const known[] = { "mq-deadline", "bfq" };   /* block/Makefile: mq-deadline.o, bfq.o */
        const char *b = path;
        for (const char *p = path; p < path + len; p++)
                if (*p == '/')
                        b = p + 1;
        size_t l = path + len - b;
        const char *ko = memmem(b, l, ".ko", 3);
        if (!ko)
                return NULL;
        l = ko - b;
        for (size_t i = 0; i < ELEMENTSOF(known); i++)
                if (l == strlen(known[i]) && strncmp(b, known[i], l) == 0)
                        return strdup(known[i]);
        /* "<name>-iosched": the module alias request_module() asks for, as a file name; not the
         * legacy single-queue ones of 4.x trees (cfq-iosched.ko): no blk-mq queue takes them */
        if (l > 8 && (strncmp(b + l - 8, "-iosched", 8) == 0 || strncmp(b + l - 8, "_iosched", 8) == 0)) {
                char *e = strndup(b, l - 8);
                if (e && elevator_name_is_legacy(e, NULL))
                        e = mfree_str(e);
                return e;
        }
        return NULL;
}

/* Module name of a module file path ("kernel/block/kyber-iosched.ko.zst" -> "kyber-iosched"); NULL on ENOMEM. */
static char *module_of_path(const char *path, size_t len) {
        const char *b = path;
        for (const char *p = path; p < path + len; p++)
                if (*p == '/')
                        b = p + 1;
        const char *ko = memmem(b, path + len - b, ".ko", 3);
        return strndup(b, ko ? (size_t) (ko - b) : (size_t) (path + len - b));
}

/* modprobe treats '-' and '_' in module names alike. */
static bool module_name_eq(const char *a, const char *b) {
        for (; *a && *b; a++, b++)
                if (*a != *b && !((*a == '-' || *a == '_') && (*b == '-' || *b == '_')))
                        return false;
        return *a == *b;
}

/*
 * Elevators provided by the modules listed in text, one per line up to ':' (modules.dep) or
 * EOL; with pairs, "<elevator>=<module>" for each is appended there too.
 */
static int elevators_of_module_list(const char *text, char ***ret, char ***pairs) {
        for (const char *line = text; line && *line; ) {
                const char *nl = strchr(line, '\n');
                size_t l = nl ? (size_t) (nl - line) : strlen(line);
                const char *colon = memchr(line, ':', l);
                size_t pl = colon ? (size_t) (colon - line) : l;
                _cleanup_free_ char *e = elevator_of_module(line, pl);
                if (e && !strv_contains(*ret, e)) {
                        if (strv_extend(ret, e) < 0)
                                return -ENOMEM;
                        _cleanup_free_ char *m = module_of_path(line, pl), *pair = NULL;
                        if (pairs && (!m || asprintf(&pair, "%s=%s", e, m) < 0 || strv_extend(pairs, pair) < 0))
                                return -ENOMEM;
                }
                line = nl ? nl + 1 : NULL;
        }
        return 0;
}

/* The module of elevator e from "<elevator>=<module>" pairs, or NULL. */
static const char *pair_module(char * const *pairs, const char *e) {
        size_t l = strlen(e);
        STRV_FOREACH(p, pairs)
                if (strncmp(*p, e, l) == 0 && (*p)[l] == '=')
                        return *p + l + 1;
        return NULL;
}

/*
 * Why modprobe would not load module for the kernel's request_module("<elevator>-iosched"),
 * from one modprobe.d file (file names it), or NULL: "install <module> /bin/false" (or true:
 * nothing is loaded either way), or "blacklist <module>" when the request goes through an
 * alias (blacklist only ignores a module's aliases, modprobe.d(5)).
 */
static char *modprobe_blocks(const char *text, const char *file, const char *elevator, const char *module) {
        char request[160];
        snprintf(request, sizeof(request), "%s-iosched", elevator);
        bool by_alias = !module_name_eq(module, request);
        _cleanup_free_ char *copy = strdup(text);
        if (!copy)
                return NULL;
        for (char *line = copy; line && *line; ) {
                char *nl = strchr(line, '\n');
                if (nl)
                        *nl = 0;
                char cmd[32], m[128], prog[256];
                int n = sscanf(line, " %31s %127s %255s", cmd, m, prog);
                char *r = NULL;
                /* modprobe looks up install commands under the name asked for too (libkmod
                 * kmod_module_new_from_lookup(): config aliases, modules.dep, symbols, then
                 * install/remove commands, then modules.alias): "install bfq-iosched /bin/false"
                 * catches the kernel's request before the alias to bfq is looked at */
                if (n == 3 && streq(cmd, "install") && module_name_eq(m, request) && !module_name_eq(module, request)) {
                        const char *base = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
                        if (streq(base, "false") || streq(base, "true")) {
                                if (asprintf(&r, "install %s %s in %s (the name the kernel asks for)", m, prog, file) < 0)
                                        r = NULL;
                                return r;
                        }
                }
                if (n >= 2 && module_name_eq(m, module)) {
                        const char *base = n == 3 ? (strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog) : "";
                        if (streq(cmd, "blacklist") && by_alias) {
                                if (asprintf(&r, "blacklist %s in %s (the kernel asks for the alias %s)", m, file, request) < 0)
                                        r = NULL;
                                return r;
                        }
                        if (streq(cmd, "install") && n == 3 && (streq(base, "false") || streq(base, "true"))) {
                                if (asprintf(&r, "install %s %s in %s", m, prog, file) < 0)
                                        r = NULL;
                                return r;
                        }
                }
                line = nl ? nl + 1 : NULL;
        }
        return NULL;
}

/*
 * Why the kernel command line keeps module (the module of elevator, whose request is
 * "<elevator>-iosched") from loading, or NULL: "module_blacklist=a,b" makes the kernel refuse
 * to load those modules whatever asks (kernel/module/main.c blacklisted(), strcmp() against
 * the module's name, '-' written as '_' as KBUILD_MODNAME has it); "modprobe.blacklist=a,b"
 * is modprobe's "blacklist" from the command line (libkmod kmod_config_parse_kcmdline()),
 * which like the modprobe.d keyword only ignores a module's aliases.
 */
static char *cmdline_blocks(const char *cmdline, const char *elevator, const char *module) {
        char request[160];
        snprintf(request, sizeof(request), "%s-iosched", elevator);
        bool by_alias = !module_name_eq(module, request);

        for (const char *p = cmdline; p && *p; ) {
                p += strspn(p, " \t\n\"");    /* parse_args() takes "param=value" and param="value" */
                size_t l = strcspn(p, " \t\n");
                const char *list = NULL;
                bool kernel = false;
                if (l > 17 && strncmp(p, "module_blacklist=", 17) == 0) {
                        list = p + 17;
                        kernel = true;
                } else if (l > 19 && strncmp(p, "modprobe.blacklist=", 19) == 0)
                        list = p + 19;
                if (list && *list == '"')
                        list++;
                for (const char *t = list; t && t < p + l; ) {
                        size_t tl = strcspn(t, ", \t\n\"");
                        char name[128];
                        if (tl > 0 && tl < sizeof(name)) {
                                memcpy(name, t, tl);
                                name[tl] = 0;
                                bool hit = false;
                                if (kernel) {
                                        /* the module's own name: '-' in its file name is '_' in the kernel */
                                        char own[128];
                                        snprintf(own, sizeof(own), "%s", module);
                                        for (char *c = own; *c; c++)
                                                if (*c == '-')
                                                        *c = '_';
                                        hit = streq(name, own);
                                } else
                                        hit = by_alias && module_name_eq(name, module);
                                if (hit) {
                                        char *r = NULL;
                                        if (asprintf(&r, kernel ? "module_blacklist=%s on the kernel command line (the kernel refuses to load %s)" :
                                                                  "modprobe.blacklist=%s on the kernel command line (the kernel asks for the alias %s)",
                                                     name, kernel ? name : request) < 0)
                                                r = NULL;
                                        return r;
                                }
                        }
                        if (t[tl] != ',')
                                break;          /* a blank, the closing quote or the end ends the list */
                        t += tl + 1;
                }
                p += l;
        }
        return NULL;
}

/*
 * Loadable elevators whose module modprobe's configuration keeps from loading move to blocked:
 * the kernel command line (proc/cmdline), then the .conf files of etc/modprobe.d,
 * run/modprobe.d, usr/local/lib/modprobe.d, lib/modprobe.d and usr/lib/modprobe.d (kmod's
 * directories, libkmod.c default_config_paths[], highest priority first; a file name seen in an earlier directory hides
 * the same name in a later one, as kmod's conf_files_list() does, and on a merged /usr the
 * two lib directories are one).
 */
static int apply_modprobe_d(HostFs *h, GatherCache *c, char * const *pairs) {
        static const struct {
                HostFsKind kind;
                const char *dir, *label;
        } dirs[] = {
                { HOSTFS_MODPROBE_D, ".",                    "/etc/modprobe.d/" },
                { HOSTFS_RUN,        "modprobe.d",           "/run/modprobe.d/" },
                { HOSTFS_USR_LOCAL_LIB, "modprobe.d",        "/usr/local/lib/modprobe.d/" },
                { HOSTFS_LIB,        "modprobe.d",           "/lib/modprobe.d/" },
                { HOSTFS_USR_LIB,    "modprobe.d",           "/usr/lib/modprobe.d/" },
        };
        _cleanup_free_ char *cmdline = NULL, *disabled = NULL, *modprobe = NULL;
        const char *none_loads = NULL;          /* no module loads at all, why */
        if (c->elevators_loadable) {
                if (hostfs_read(h, HOSTFS_PROCFS, "cmdline", &cmdline) == -ENOMEM ||
                    hostfs_read(h, HOSTFS_PROCFS, "sys/kernel/modules_disabled", &disabled) == -ENOMEM ||
                    hostfs_read(h, HOSTFS_PROCFS, "sys/kernel/modprobe", &modprobe) == -ENOMEM)
                        return -ENOMEM;
                /* kernel/module/main.c may_init_module(): modules_disabled (set once, never
                 * cleared) refuses every load; kernel/module/kmod.c __request_module(): an empty
                 * modprobe_path makes the kernel ask no one */
                if (disabled && streq(strip_newline(disabled), "1"))
                        none_loads = "kernel.modules_disabled=1 (/proc/sys/kernel/modules_disabled): the kernel loads no module";
                else if (modprobe && streq(strip_newline(modprobe), ""))
                        none_loads = "kernel.modprobe is empty (/proc/sys/kernel/modprobe): the kernel asks no one to load a module";
        }
        char **keep = NULL;

        STRV_FOREACH(e, c->elevators_loadable) {
                const char *module = pair_module(pairs, *e);
                _cleanup_free_ char *why = none_loads ? strdup(none_loads) :
                                           module && cmdline ? cmdline_blocks(cmdline, *e, module) : NULL;
                if (none_loads && !why) {
                        strv_free(keep);
                        return -ENOMEM;
                }
                _cleanup_strv_free_ char **seen = NULL;
                for (size_t d = 0; d < ELEMENTSOF(dirs) && module && !why; d++) {
                        _cleanup_strv_free_ char **names = NULL;
                        if (hostfs_list(h, dirs[d].kind, dirs[d].dir, &names) < 0)
                                continue;
                        STRV_FOREACH(n, names) {
                                size_t l = strlen(*n);
                                if (l < 6 || !streq(*n + l - 5, ".conf"))
                                        continue;
                                if (strv_contains(seen, *n))
                                        continue;       /* hidden by the file of that name in an earlier directory */
                                if (strv_extend(&seen, *n) < 0) {
                                        strv_free(keep);
                                        return -ENOMEM;
                                }
                                char path[PATH_MAX], file[PATH_MAX];
                                _cleanup_free_ char *text = NULL;
                                snprintf(path, sizeof(path), "%s/%s", dirs[d].dir, *n);
                                snprintf(file, sizeof(file), "%s%s", dirs[d].label, *n);
                                if (hostfs_read(h, dirs[d].kind, path, &text) < 0)
                                        continue;
                                why = modprobe_blocks(text, file, *e, module);
                                if (why)
                                        break;
                        }
                }
                char *entry = NULL;
                int r = why ? (asprintf(&entry, "%s: %s", *e, why) < 0 ? -ENOMEM : strv_extend(&c->elevators_blocked, entry)) :
                              strv_extend(&keep, *e);
                free(entry);
                if (r < 0) {
                        strv_free(keep);
                        return -ENOMEM;
                }
        }
        strv_free(c->elevators_loadable);
        c->elevators_loadable = keep;
        return 0;
}

/*
 * Read the elevators of release's module tree: modules.builtin (built in) and modules.dep
 * (loadable), plus modules.alias lines "alias <name>-iosched <module>" for a module whose file
 * name does not say it (the kernel asks for "<name>-iosched"). *ret_error: reading modules.dep
 * failed (-errno). Returns 0 or -ENOMEM.
 */
static int read_module_tree(HostFs *h, const char *release, int *ret_error, char ***builtin_l, char ***loadable_l,
                            char ***pairs) {
        _cleanup_free_ char *dep = NULL, *builtin = NULL, *alias = NULL;
        char path[PATH_MAX];
        int r;

        snprintf(path, sizeof(path), "%s/modules.dep", release);
        r = hostfs_read(h, HOSTFS_MODULES, path, &dep);
        if (r == -ENOMEM)
                return r;
        *ret_error = r < 0 ? r : 0;
        snprintf(path, sizeof(path), "%s/modules.builtin", release);
        r = hostfs_read(h, HOSTFS_MODULES, path, &builtin);
        if (r == -ENOMEM)
                return r;
        if (builtin && elevators_of_module_list(builtin, builtin_l, NULL) < 0)
                return -ENOMEM;
        if (dep && elevators_of_module_list(dep, loadable_l, pairs) < 0)
                return -ENOMEM;

        /* modules.alias has ~25,000 lines (PCI/USB ids): look only at the "-iosched " ones */
        snprintf(path, sizeof(path), "%s/modules.alias", release);
        if (dep && hostfs_read(h, HOSTFS_MODULES, path, &alias) >= 0)
                for (const char *p = strstr(alias, "-iosched "); p; p = strstr(p + 1, "-iosched ")) {
                        const char *line = p;
                        while (line > alias && line[-1] != '\n')
                                line--;
                        const char *name = startswith(line, "alias ");
                        const char *mod = p + 9, *end = mod + strcspn(mod, " \n");
                        if (!name || p <= name || end == mod || memchr(name, ' ', p - name) || p - name > 100 || end - mod > 100)
                                continue;
                        char a[128], pair[300];
                        snprintf(a, sizeof(a), "%.*s", (int) (p - name), name);
                        if (elevator_name_is_legacy(a, NULL))
                                continue;
                        snprintf(pair, sizeof(pair), "%s=%.*s", a, (int) (end - mod), mod);
                        if (!strv_contains(*loadable_l, a) && !strv_contains(*builtin_l, a) &&
                            (strv_extend(loadable_l, a) < 0 || strv_extend(pairs, pair) < 0))
                                return -ENOMEM;
                }
        /* built in wins: the same name in both lists is registered at boot */
        char **loadable = NULL;
        STRV_FOREACH(e, *loadable_l)
                if (!strv_contains(*builtin_l, *e) && strv_extend(&loadable, *e) < 0) {
                        strv_free(loadable);
                        return -ENOMEM;
                }
        strv_free(*loadable_l);
        *loadable_l = loadable;
        return 0;
}

void module_tree_cache_done(ModuleTreeCache *c) {
        free(c->release);
        strv_free(c->builtin);
        strv_free(c->loadable);
        strv_free(c->pairs);
        *c = (ModuleTreeCache) {};
}

static const char * const module_tree_files[] = { "modules.dep", "modules.builtin", "modules.alias" };

/* The identity of release's module index files now (st_ino 0: absent or unreadable). */
static void module_tree_stat(HostFs *h, const char *release, struct stat files[static 3]) {
        for (size_t i = 0; i < ELEMENTSOF(module_tree_files); i++) {
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "%s/%s", release, module_tree_files[i]);
                if (hostfs_stat(h, HOSTFS_MODULES, path, &files[i]) < 0)
                        files[i] = (struct stat) {};
        }
}

static bool module_tree_same(const struct stat *a, const struct stat *b) {
        return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
               a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/*
 * The elevators of the running release's module tree, once per batch, and from c->module_tree
 * (when the caller keeps one) while its files are unchanged; modprobe.d applied every time.
 */
static int gather_elevator_modules(HostFs *h, const char *release, GatherCache *c) {
        _cleanup_strv_free_ char **pairs = NULL;
        ModuleTreeCache *t = c->module_tree;
        int r;

        if (c->have_elevator_modules)
                return 0;
        c->have_elevator_modules = true;
        if (!release) {
                c->elevator_modules_error = -ENOENT;
                return 0;
        }
        struct stat now[3];
        if (t)
                module_tree_stat(h, release, now);
        bool hit = t && t->valid && streq_ptr(t->release, release);
        for (size_t i = 0; hit && i < ELEMENTSOF(now); i++)
                hit = module_tree_same(&now[i], &t->files[i]);
        if (hit) {
                c->elevator_modules_error = t->error;
                if ((t->builtin && !(c->elevators_builtin = strv_copy(t->builtin))) ||
                    (t->loadable && !(c->elevators_loadable = strv_copy(t->loadable))) ||
                    (t->pairs && !(pairs = strv_copy(t->pairs))))
                        return -ENOMEM;
                return apply_modprobe_d(h, c, pairs);
        }

        r = read_module_tree(h, release, &c->elevator_modules_error, &c->elevators_builtin, &c->elevators_loadable, &pairs);
        if (r < 0)
                return r;
        if (t) {
                /* the stat taken before the read: a file replaced in between is read again next time */
                module_tree_cache_done(t);
                t->release = strdup(release);
                t->error = c->elevator_modules_error;
                memcpy(t->files, now, sizeof(now));
                t->valid = t->release &&
                           (!c->elevators_builtin || (t->builtin = strv_copy(c->elevators_builtin))) &&
                           (!c->elevators_loadable || (t->loadable = strv_copy(c->elevators_loadable))) &&
                           (!pairs || (t->pairs = strv_copy(pairs)));
        }
        return apply_modprobe_d(h, c, pairs);
}

/* Copy the cache's lists into f, leaving out what queue/scheduler lists already. */
static int gather_elevators_available(HostFs *h, DiskFacts *f, GatherCache *c) {
        int r = gather_elevator_modules(h, f->kernel_release, c);
        if (r < 0)
                return r;
        if (c->elevator_modules_error < 0 && !c->elevators_builtin)
                return disk_facts_set_unknown(f, FACT_ELEVATORS_LOADABLE, "/lib/modules/%s/modules.dep: %s: only the elevators queue/scheduler lists count",
                                              f->kernel_release ?: "(release unknown)", strerror(-c->elevator_modules_error));
        char **from[] = { c->elevators_builtin, c->elevators_loadable, c->elevators_blocked };
        char ***to[] = { &f->elevators_builtin, &f->elevators_loadable, &f->elevators_blocked };
        for (size_t i = 0; i < ELEMENTSOF(from); i++)
                STRV_FOREACH(e, from[i])
                        if (!strv_contains(f->elevators, *e) && strv_extend(to[i], *e) < 0)
                                return -ENOMEM;
        return 0;
}

int device_elevators_offered(HostFs *h, ModuleTreeCache *tree, char ***ret) {
        assert(ret);
        _cleanup_(gather_cache_done) GatherCache c = { .module_tree = tree };
        _cleanup_strv_free_ char **out = NULL, **disks = NULL;
        _cleanup_free_ char *release = NULL;
        int r;

        (void) hostfs_kernel_release(h, &release);
        r = gather_elevator_modules(h, release, &c);
        if (r < 0)
                return r;
        /* a blocked module is still this kernel's: only modprobe.d keeps it from loading */
        STRV_FOREACH(e, c.elevators_blocked) {
                _cleanup_free_ char *name = strndup(*e, strcspn(*e, ":"));
                if (!name || (!strv_contains(out, name) && strv_extend(&out, name) < 0))
                        return -ENOMEM;
        }
        char **lists[] = { c.elevators_builtin, c.elevators_loadable };
        for (size_t i = 0; i < ELEMENTSOF(lists); i++)
                STRV_FOREACH(e, lists[i])
                        if (!strv_contains(out, *e) && strv_extend(&out, *e) < 0)
                                return -ENOMEM;
        /* and what is registered now (block/elevator.c elv_iosched_show() lists only those) */
        if (device_list_disks(h, &disks) >= 0)
                STRV_FOREACH(d, disks) {
                        _cleanup_free_ char *sched = NULL;
                        _cleanup_strv_free_ char **names = NULL;
                        char path[PATH_MAX];
                        snprintf(path, sizeof(path), "block/%s/queue/scheduler", *d);
                        if (hostfs_read(h, HOSTFS_SYSFS, path, &sched) < 0 || parse_scheduler(sched, &names, NULL, NULL) < 0)
                                continue;
                        STRV_FOREACH(n, names)
                                if (!strv_contains(out, *n) && strv_extend(&out, *n) < 0)
                                        return -ENOMEM;
                }
        if (!out && !(out = calloc(1, sizeof(char *))))
                return -ENOMEM;
        *ret = TAKE_PTR(out);
        return 0;
}

/* block/<d>/<rel> stripped of its newline, or NULL (ENOMEM included: callers treat it as absent). */
static char *read_attr(HostFs *h, const char *disk, const char *rel) {
        char path[PATH_MAX];
        char *s = NULL;
        snprintf(path, sizeof(path), "block/%s/%s", disk, rel);
        if (hostfs_read(h, HOSTFS_SYSFS, path, &s) < 0)
                return NULL;
        return strip_newline(s);
}

static int set_multipath(DiskFacts *f, Multipath m, const char *of, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int set_multipath(DiskFacts *f, Multipath m, const char *of, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = free_and_vasprintf(&f->multipath_source, fmt, ap);
        va_end(ap);
        if (r < 0)
                return r;
        f->multipath = m;
        return free_and_strdup(&f->multipath_of, of);
}

/*
 * dm-multipath and NVMe multipath roles:
 *  - a map: this disk's dm/uuid starts with "mpath-" (multipath-tools names its maps so);
 *    request-based when it has a blk-mq queue (queue_mode rq/mq), bio-based otherwise;
 *  - a leg: a holder in holders/ is such a map, or udev's database has
 *    DM_MULTIPATH_DEVICE_PATH=1 (multipath-tools' 11-dm-mpath/62-multipath rules claim paths
 *    before the map exists);
 *  - an NVMe path device: hidden (block/<d>/hidden = 1, or the nvme<s>c<c>n<n> name) with a
 *    head nvme<s>n<n> whose multipath/ lists it.
 */
static int gather_multipath(HostFs *h, DiskFacts *f) {
        _cleanup_free_ char *uuid = read_attr(h, f->name, "dm/uuid");
        _cleanup_strv_free_ char **holders = NULL;
        char path[PATH_MAX];
        int r;

        if (uuid && startswith(uuid, "mpath-")) {
                if (!f->has_mq)
                        return 0;       /* bio-based map: no-mq, nothing to tune */
                _cleanup_free_ char *name = read_attr(h, f->name, "dm/name");
                return set_multipath(f, MULTIPATH_MAP, NULL, "dm/uuid %s%s%s", uuid, name ? ", dm/name " : "", strempty(name));
        }

        unsigned s, c, n;
        int end = 0;
        _cleanup_free_ char *hidden = read_attr(h, f->name, "hidden");
        if (sscanf(f->name, "nvme%uc%un%u%n", &s, &c, &n, &end) == 3 && f->name[end] == 0) {
                char head[64];
                snprintf(head, sizeof(head), "nvme%un%u", s, n);
                snprintf(path, sizeof(path), "block/%s/multipath/%s", head, f->name);
                bool listed = hostfs_exists(h, HOSTFS_SYSFS, path);
                /* Kernels without the head's multipath/ directory (6.1 and 6.12 have none,
                 * tests/fixtures/vm-*-nvme-tcp-2q): the head is the disk nvme<s>n<n> of the
                 * subsystem nvme-subsys<s> the path's name points at (nvme_mpath_set_disk_name(),
                 * drivers/nvme/host/multipath.c). */
                bool in_subsys = false;
                char subsys[64], hpath[PATH_MAX];
                _cleanup_free_ char *hdev = NULL;
                snprintf(subsys, sizeof(subsys), "/nvme-subsys%u", s);
                snprintf(hpath, sizeof(hpath), "block/%s/device", head);
                if (!listed && hostfs_resolve(h, HOSTFS_SYSFS, hpath, &hdev) >= 0) {
                        size_t lh = strlen(hdev), ls = strlen(subsys);
                        in_subsys = lh >= ls && streq(hdev + lh - ls, subsys);
                }
                if (listed || streq_ptr(hidden, "1"))
                        return set_multipath(f, MULTIPATH_NVME_PATH, listed || in_subsys ? head : NULL, "%s%s%s%s%s",
                                             streq_ptr(hidden, "1") ? "hidden=1" : "name nvme<subsys>c<ctrl>n<ns>",
                                             listed ? ", listed in block/" : "", listed ? path + 6 : "",
                                             in_subsys ? ", head block/" : "", in_subsys ? head : "");
        }

        snprintf(path, sizeof(path), "block/%s/holders", f->name);
        r = hostfs_list(h, HOSTFS_SYSFS, path, &holders);
        if (r == -ENOMEM)
                return r;
        STRV_FOREACH(x, holders) {
                _cleanup_free_ char *hu = read_attr(h, *x, "dm/uuid");
                if (!hu || !startswith(hu, "mpath-"))
                        continue;
                _cleanup_free_ char *name = read_attr(h, *x, "dm/name");
                snprintf(path, sizeof(path), "block/%s/mq", *x);
                bool rq = hostfs_exists(h, HOSTFS_SYSFS, path);
                return set_multipath(f, rq ? MULTIPATH_LEG : MULTIPATH_LEG_BIO, *x, "holders/%s dm/uuid %s%s%s, %s",
                                     *x, hu, name ? " dm/name " : "", strempty(name),
                                     rq ? "request-based (mq/)" : "bio-based (no mq/)");
        }

        _cleanup_free_ char *db = NULL;
        snprintf(path, sizeof(path), "udev/data/b%u:%u", f->major, f->minor);
        if (hostfs_read(h, HOSTFS_RUN, path, &db) >= 0)
                for (char *l = db; l && *l; ) {
                        char *nl = strchr(l, '\n');
                        if (nl)
                                *nl = 0;
                        if (streq(l, "E:DM_MULTIPATH_DEVICE_PATH=1"))
                                return set_multipath(f, MULTIPATH_LEG, NULL, "udev DM_MULTIPATH_DEVICE_PATH=1 (run/%s)", path);
                        l = nl ? nl + 1 : NULL;
                }
        return 0;
}

/*
 * What tells one path of a multipath LU from the others, stable across boots: udev's ID_PATH
 * of the disk ("pci-0000:00:1f.2-sas-0x5000c500a1b2c3d4-lun-0", the by-path name, from
 * run/udev/data/b<major>:<minor>), else the SAS address of the target port the disk is
 * reached through (device/sas_address, mpt3sas and others). *ret NULL when neither is known
 * (host and target numbers are assigned at probe: no stable key). Returns 0 or -ENOMEM.
 */
static int path_key(HostFs *h, const DiskFacts *f, char **ret) {
        _cleanup_free_ char *db = NULL, *sas = NULL;
        char path[64];

        *ret = NULL;
        snprintf(path, sizeof(path), "udev/data/b%u:%u", f->major, f->minor);
        if (hostfs_read(h, HOSTFS_RUN, path, &db) >= 0)
                for (char *l = db; l && *l; ) {
                        char *nl = strchr(l, '\n');
                        if (nl)
                                *nl = 0;
                        const char *v = startswith(l, "E:ID_PATH=");
                        if (v && *v)
                                return asprintf(ret, "path:%s", v) < 0 ? -ENOMEM : 0;
                        l = nl ? nl + 1 : NULL;
                }
        int r = read_id_attr(h, f->name, "device/sas_address", &sas);
        if (r < 0 || !sas)
                return r;
        return asprintf(ret, "sas:%s", sas) < 0 ? -ENOMEM : 0;
}

static int gather_identity(HostFs *h, DiskFacts *f, const char *devpath) {
        _cleanup_free_ char *cntlid = NULL, *leg = NULL;
        char *id = NULL;

        int r = identity_source(h, f, devpath);
        if (r < 0 || !f->identity)
                return r;
        if (f->multipath == MULTIPATH_LEG || f->multipath == MULTIPATH_LEG_BIO) {
                /* every leg of a multipath map is the same LU: one WWID for all of them */
                if ((r = path_key(h, f, &leg)) < 0)
                        return r;
                if (!leg)
                        return 0;       /* legs without a path key collide: the manager says so */
                if (asprintf(&id, "%s/%s", f->identity, leg) < 0)
                        return -ENOMEM;
                free(f->identity);
                f->identity = id;
                return 0;
        }
        if (!nvme_path_device(f->name))
                return 0;
        /* a path device shares the namespace's wwid (or serial and nsid) with its head and the
         * other paths: its controller (cntlid, unique in the subsystem) tells them apart */
        if ((r = read_id_attr(h, f->name, "device/cntlid", &cntlid)) < 0)
                return r;
        if (asprintf(&id, "%s/%s%s", f->identity, cntlid ? "cntlid:" : "path:", cntlid ?: f->name) < 0)
                return -ENOMEM;
        free(f->identity);
        f->identity = id;
        return 0;
}

int device_gather(HostFs *h, const char *name, DiskFacts **ret) {
        _cleanup_(gather_cache_done) GatherCache cache = {};
        return device_gather_cached(h, name, &cache, ret);
}

int device_gather_cached(HostFs *h, const char *name, GatherCache *cache, DiskFacts **ret) {
        assert(ret);
        if (!cache)
                return device_gather(h, name, ret);

        _cleanup_(disk_facts_freep) DiskFacts *f = NULL;
        _cleanup_free_ char *devpath = NULL, *s = NULL;
        char path[PATH_MAX];
        const char *why = NULL;
        int r;

        if (!disk_name_is_valid(name))
                return -EINVAL;

        f = disk_facts_new(name);
        if (!f)
                return -ENOMEM;

        snprintf(path, sizeof(path), "block/%s/dev", name);
        r = hostfs_read(h, HOSTFS_SYSFS, path, &s);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                /* A hidden disk (GENHD_FL_HIDDEN: the path device nvme<s>c<c>n<n> under an NVMe
                 * multipath head) is registered without a devt, so sysfs has no dev attribute
                 * for it (block/genhd.c device_add_disk(); seen on 6.1 and 6.12,
                 * tests/fixtures/vm-*-nvme-tcp-2q).  It still carries the blk-mq queue. A kernel
                 * without the "hidden" attribute is known by the path device's name, which only
                 * drivers/nvme/host/multipath.c nvme_set_disk_name() gives. */
                _cleanup_free_ char *hidden = read_attr(h, name, "hidden");
                bool by_name = !hidden && nvme_path_device(name);
                if (!streq_ptr(hidden, "1") && !by_name)
                        return -ENOENT;
                r = disk_facts_set_unknown(f, FACT_DEVNUM, by_name ?
                                           "hidden NVMe path device (name nvme<subsys>c<ctrl>n<ns>, no hidden attribute): the kernel "
                                           "gives it no device number in sysfs (block/genhd.c)" :
                                           "hidden disk (hidden=1): the kernel gives it no device number in sysfs (block/genhd.c)");
                if (r < 0)
                        return r;
        } else if (sscanf(s, "%u:%u", &f->major, &f->minor) != 2)
                return -ENOENT;

        struct stat st;
        snprintf(path, sizeof(path), "block/%s", name);
        if (hostfs_stat(h, HOSTFS_SYSFS, path, &st) >= 0)
                f->sysfs_ino = st.st_ino;

        uint64_t sectors;
        snprintf(path, sizeof(path), "block/%s/size", name);
        r = hostfs_read_u64(h, HOSTFS_SYSFS, path, &sectors);
        if (r < 0)
                return r == -ENOMEM ? r : -ENOENT;
        if (sectors == 0)
                return -ENOMEDIUM;
        f->size_bytes = sectors * 512;

        if (!cache->kernel_release && cache->machine && cache->machine->kernel_release &&
            !(cache->kernel_release = strdup(cache->machine->kernel_release)))
                return -ENOMEM;
        r = cache->kernel_release ? 0 : hostfs_kernel_release(h, &cache->kernel_release);
        if (r >= 0 && !(f->kernel_release = strdup(cache->kernel_release)))
                r = -ENOMEM;
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                disk_facts_set_unknown(f, FACT_KERNEL_RELEASE, "proc/sys/kernel/osrelease: %s", errno_reason(r));

        bool debugfs = hostfs_debugfs_available(h, &why);

        r = gather_hctx(h, f, debugfs);
        if (r < 0)
                return r;
        r = gather_queue(h, f);
        if (r < 0)
                return r;
        r = gather_transport(h, f, cache, &devpath);
        if (r < 0)
                return r;
        r = gather_zoned(h, f);
        if (r < 0)
                return r;
        r = gather_multipath(h, f);
        if (r < 0)
                return r;
        r = gather_elevators_available(h, f, cache);
        if (r < 0)
                return r;
        r = gather_debugfs_state(h, f, debugfs, why);
        if (r < 0)
                return r;
        r = gather_irqs(h, f, devpath, debugfs, cache);
        if (r < 0)
                return r;
        if (f->n_hctx <= 1 || irq_affinity_needs_map(f)) {
                r = device_gather_hctx_details(h, f, /* history = */ NULL);     /* a gather: the facts alone */
                if (r < 0)
                        return r;
        }
        r = gather_numa(h, f, devpath);
        if (r < 0)
                return r;
        r = gather_identity(h, f, devpath);
        if (r < 0)
                return r;
        r = gather_modparams(h, f);
        if (r < 0)
                return r;
        r = gather_driver_module(h, f, cache);
        if (r < 0)
                return r;
        r = gather_kernel_config(h, f, cache);
        if (r < 0)
                return r;
        if (f->shared_tags != TRISTATE_UNKNOWN && !f->shared_tags_source &&
            (r = free_and_strdup(&f->shared_tags_source, "debugfs hctx flags")) < 0)
                return r;
        r = gather_shared_tags_fallback(h, f);
        if (r < 0)
                return r;
        r = gather_root_disk(h, f, cache);
        if (r < 0)
                return r;
        r = net_gather(h, f, devpath, debugfs, cache);
        if (r < 0)
                return r;

        if (!f->has_mq) {
                /* A bio-based queue has none of the blk-mq attributes that matter. */
                disk_facts_set_unknown(f, FACT_SHARED_TAGS, "no blk-mq queue");
                disk_facts_set_unknown(f, FACT_SQ_SCHED, "no blk-mq queue");
        }

        *ret = TAKE_PTR(f);
        return 0;
}

/* The queue/iosched state of f as one string (changed or not); NULL on ENOMEM. */
static char *iosched_signature(const DiskFacts *f) {
        _cleanup_(memstream_done) MemStream m = {};
        FILE *out = memstream_open(&m);
        if (!out)
                return NULL;
        fprintf(out, "%s|%" PRIu64 "|%s", strempty(f->iosched_elevator), f->iosched_ino, strempty(f->iosched_unknown));
        for (size_t i = 0; i < f->n_iosched; i++)
                fprintf(out, "|%s=%s", f->iosched[i].name, f->iosched[i].value ?: "?");
        return memstream_close_text(&m);
}

int device_refresh_knobs(HostFs *h, DiskFacts *f, bool irqs) {
        static const Fact refreshed[] = { FACT_ELEVATOR, FACT_ELEVATORS, FACT_RQ_AFFINITY, FACT_NR_REQUESTS };
        _cleanup_free_ char *old_elevator = TAKE_PTR(f->elevator), *old_elevators = strv_join(f->elevators, " ");
        _cleanup_free_ char *old_unknown = NULL;
        int old_rq = f->rq_affinity, changed = 0, r;
        int64_t old_nr = f->nr_requests;
        bool old_configurable = f->elevator_configurable;
        const char *why = NULL;

        _cleanup_free_ char *old_iosched = iosched_signature(f), *new_iosched = NULL;
        if (!old_iosched)
                return -ENOMEM;
        /* queue/scheduler, rq_affinity, nr_requests */
        if (asprintf(&old_unknown, "%s|%s|%s|%s", strempty(f->unknown[FACT_ELEVATOR]), strempty(f->unknown[FACT_ELEVATORS]),
                     strempty(f->unknown[FACT_RQ_AFFINITY]), strempty(f->unknown[FACT_NR_REQUESTS])) < 0 || !old_elevators)
                return -ENOMEM;
        f->elevators = strv_free(f->elevators);
        f->elevator_configurable = false;
        f->rq_affinity = -1;
        f->nr_requests = -1;
        for (size_t i = 0; i < ELEMENTSOF(refreshed); i++)
                f->unknown[refreshed[i]] = mfree_str(f->unknown[refreshed[i]]);
        r = gather_queue_knobs(h, f);
        if (r < 0)
                return r;
        _cleanup_free_ char *new_elevators = strv_join(f->elevators, " "), *new_unknown = NULL;
        if (!new_elevators ||
            asprintf(&new_unknown, "%s|%s|%s|%s", strempty(f->unknown[FACT_ELEVATOR]), strempty(f->unknown[FACT_ELEVATORS]),
                     strempty(f->unknown[FACT_RQ_AFFINITY]), strempty(f->unknown[FACT_NR_REQUESTS])) < 0)
                return -ENOMEM;
        bool elevator_changed = !streq_ptr(old_elevator, f->elevator) || old_configurable != f->elevator_configurable;
        if (!(new_iosched = iosched_signature(f)))
                return -ENOMEM;
        changed = !streq(old_iosched, new_iosched) || elevator_changed || !streq(old_elevators, new_elevators) || old_rq != f->rq_affinity ||
                  old_nr != f->nr_requests || !streq(old_unknown, new_unknown);

        /* SQ_SCHED follows the elevator (set by mq-deadline and bfq, cleared by none) */
        if (elevator_changed) {
                f->sq_sched = TRISTATE_UNKNOWN;
                f->unknown[FACT_SQ_SCHED] = mfree_str(f->unknown[FACT_SQ_SCHED]);
                if (!f->has_mq)
                        r = disk_facts_set_unknown(f, FACT_SQ_SCHED, "no blk-mq queue");
                else
                        r = gather_debugfs_state(h, f, hostfs_debugfs_available(h, &why), why);
                if (r < 0)
                        return r;
        }

        /* queue vectors' affinity (a vector shared with other disks is made this disk's own
         * only when it changed: disk_facts_own_irqs()) */
        for (size_t i = 0; irqs && i < f->n_irqs; i++) {
                _cleanup_free_ char *aff = NULL, *list = NULL;
                _cleanup_(cpuset_done) CpuSet set = {};
                char path[64];
                snprintf(path, sizeof(path), "irq/%u/smp_affinity_list", f->irqs[i].irq);
                if (hostfs_read(h, HOSTFS_PROCFS, path, &aff) >= 0 && cpuset_parse(aff, &set) >= 0 &&
                    !(list = cpuset_format(&set)))
                        return -ENOMEM;
                if (streq_ptr(list, f->irqs[i].affinity_list))
                        continue;
                r = disk_facts_own_irqs(f);
                if (r < 0)
                        return r;
                IrqFacts *q = &f->irqs[i];
                cpuset_done(&q->affinity);
                q->affinity = set;
                set = (CpuSet) {};
                free(q->affinity_list);
                q->affinity_list = TAKE_PTR(list);
                changed = true;
        }
        /* the driver's queue-layout module parameters (blkmqd's runtime write, or another tool's) */
        for (size_t i = 0; i < f->n_modparams; i++) {
                ModuleParamFacts *p = &f->modparams[i];
                char path[PATH_MAX];
                _cleanup_free_ char *v = NULL, *old = TAKE_PTR(p->value);
                snprintf(path, sizeof(path), "module/%s/parameters/%s", p->module, p->param);
                if (hostfs_read(h, HOSTFS_SYSFS, path, &v) >= 0)
                        strip_newline(v);
                p->value = TAKE_PTR(v);
                changed = changed || !streq_ptr(old, p->value);
        }

        /* a network disk's NIC vectors and XPS (facts/net.c) */
        r = irqs ? net_refresh(h, f) : 0;
        if (r < 0)
                return r;
        return changed || r > 0;
}

int device_list_disks(HostFs *h, char ***ret) {
        assert(ret);
        _cleanup_strv_free_ char **names = NULL, **disks = NULL;
        int r = hostfs_list(h, HOSTFS_SYSFS, "block", &names);
        if (r < 0)
                return r;
        disks = calloc(1, sizeof(char *));
        if (!disks)
                return -ENOMEM;
        STRV_FOREACH(n, names)
                if ((r = strv_extend(&disks, *n)) < 0)
                        return r;
        *ret = TAKE_PTR(disks);
        return 0;
}

int device_list_partitions(HostFs *h, const char *name, char ***ret) {
        assert(name);
        assert(ret);
        _cleanup_strv_free_ char **entries = NULL, **parts = calloc(1, sizeof(char *));
        char path[PATH_MAX];
        struct stat st;

        if (!parts)
                return -ENOMEM;
        snprintf(path, sizeof(path), "block/%s", name);
        int r = hostfs_list(h, HOSTFS_SYSFS, path, &entries);
        if (r < 0)
                return r;
        STRV_FOREACH(e, entries) {
                /* a partition is named after its disk ("sda1", "nvme0n1p1", "mmcblk0p1") */
                if (!startswith(*e, name))
                        continue;
                snprintf(path, sizeof(path), "block/%s/%s/partition", name, *e);
                if (hostfs_stat(h, HOSTFS_SYSFS, path, &st) >= 0 && S_ISREG(st.st_mode) && strv_extend(&parts, *e) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(parts);
        return 0;
}

int device_list_lower(HostFs *h, const char *name, char ***ret) {
        char path[PATH_MAX];
        struct stat st;

        snprintf(path, sizeof(path), "block/%s/slaves", name);
        int r = hostfs_list(h, HOSTFS_SYSFS, path, ret);
        if (r != -ENOENT)
                return r;
        /* every disk has slaves/ (block/genhd.c device_add_disk()), but a fixture tree may not */
        snprintf(path, sizeof(path), "block/%s", name);
        if (hostfs_stat(h, HOSTFS_SYSFS, path, &st) < 0)
                return -ENOENT;
        *ret = calloc(1, sizeof(char *));
        return *ret ? 0 : -ENOMEM;
}
