/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply-net.h"
#include "log.h"
#include "macro.h"
#include "net-align.h"
#include "parse.h"
#include "strv.h"

bool apply_net_knob(Knob k) {
        return k == KNOB_NIC_IRQ_AFFINITY || k == KNOB_XPS || k == KNOB_NR_IO_QUEUES;
}

/* One item "<id>:<cpulist>": where it lives and how it is written. */
typedef struct Item {
        char id[96];
        char cpus[4096];
        HostFsKind kind;
        char path[PATH_MAX];
        bool mask;              /* written as a hex mask (xps_cpus), else a cpulist */
} Item;

static int item_parse(Knob k, const char *s, size_t len, Item *ret) {
        const char *colon = memchr(s, ':', len);
        if (!colon || (size_t) (colon - s) >= sizeof(ret->id) || len - (colon - s) - 1 >= sizeof(ret->cpus))
                return -EINVAL;
        *ret = (Item) {};
        memcpy(ret->id, s, colon - s);
        memcpy(ret->cpus, colon + 1, len - (colon - s) - 1);
        if (k == KNOB_NIC_IRQ_AFFINITY) {
                unsigned irq;
                char end;
                if (sscanf(ret->id, "%u%c", &irq, &end) != 1)
                        return -EINVAL;
                ret->kind = HOSTFS_PROCFS;
                snprintf(ret->path, sizeof(ret->path), "irq/%u/smp_affinity_list", irq);
                return 0;
        }
        /* "<if>/tx-<n>" */
        const char *slash = strchr(ret->id, '/');
        unsigned q;
        char end;
        if (!slash || slash == ret->id || sscanf(slash + 1, "tx-%u%c", &q, &end) != 1 ||
            strncmp(ret->id, "./", 2) == 0 || strncmp(ret->id, "../", 3) == 0)
                return -EINVAL;
        ret->kind = HOSTFS_SYSFS;
        ret->mask = true;
        snprintf(ret->path, sizeof(ret->path), "class/net/%.*s/queues/tx-%u/xps_cpus", (int) (slash - ret->id), ret->id, q);
        return 0;
}

/* Items of a composite value; -EINVAL for a malformed one. */
static int items_parse(Knob k, const char *value, Item **ret, size_t *ret_n) {
        size_t n = 0, cap = 1;
        for (const char *p = value; *p; p++)
                cap += *p == ' ';
        _cleanup_free_ Item *items = calloc(cap, sizeof(Item));
        if (!items)
                return -ENOMEM;
        for (const char *p = value; *p;) {
                size_t l = strcspn(p, " ");
                if (l > 0) {
                        if (n >= cap)
                                return -EINVAL;
                        int r = item_parse(k, p, l, &items[n++]);
                        if (r < 0)
                                return r;
                }
                p += l;
                p += *p == ' ';
        }
        *ret = TAKE_PTR(items);
        *ret_n = n;
        return 0;
}

/* The kernel's value of an item, as a normalised cpulist. */
static int item_read(HostFs *h, const Item *it, char **ret) {
        _cleanup_free_ char *s = NULL;
        _cleanup_(cpuset_done) CpuSet set = {};
        int r = hostfs_read(h, it->kind, it->path, &s);
        if (r < 0)
                return r;
        r = it->mask ? cpuset_parse_mask(s, &set) : cpuset_parse(s, &set);
        if (r < 0)
                return r;
        *ret = cpuset_format(&set);
        return *ret ? 0 : -ENOMEM;
}

/* What is written: the cpulist, or for a mask item its hex mask. */
static int item_value(const Item *it, const char *cpus, char **ret) {
        if (!it->mask)
                return (*ret = strdup(cpus)) ? 0 : -ENOMEM;
        _cleanup_(cpuset_done) CpuSet set = {};
        int r = cpuset_parse(cpus, &set);
        if (r < 0)
                return r;
        return (*ret = cpuset_format_mask(&set)) ? 0 : -ENOMEM;
}

static bool cpulists_equal(const char *a, const char *b) {
        _cleanup_(cpuset_done) CpuSet x = {}, y = {};
        return cpuset_parse(a, &x) >= 0 && cpuset_parse(b, &y) >= 0 && cpuset_equal(&x, &y);
}

/* The current composite of the items of value ("<id>:<cpulist> ..."); -errno of the first failed read. */
static int read_composite(HostFs *h, const Item *items, size_t n, char **ret, int *ret_failed) {
        char *s = NULL;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *cur = NULL;
                int r = item_read(h, &items[i], &cur);
                if (r < 0) {
                        free(s);
                        *ret_failed = (int) i;
                        return r;
                }
                char *t;
                if (asprintf(&t, "%s%s%s:%s", strempty(s), s ? " " : "", items[i].id, cur) < 0) {
                        free(s);
                        return -ENOMEM;
                }
                free(s);
                s = t;
        }
        *ret = s ?: strdup("");
        return *ret ? 0 : -ENOMEM;
}

/* A job writing, for each item of target that differs from the same item of current, its
 * value; then the n_back items of back (originals put back: the plan no longer has them). */
static int composite_job(const Device *d, Knob k, const Item *target, size_t n, const Item *current,
                         const Item *back, size_t n_back, WriteJob **ret) {
        _cleanup_(write_job_freep) WriteJob *j = write_job_new(d->name);
        if (!j)
                return -ENOMEM;
        for (size_t i = 0; i < n + n_back; i++) {
                const Item *it = i < n ? &target[i] : &back[i - n];
                if (i < n && current && cpulists_equal(target[i].cpus, current[i].cpus))
                        continue;
                _cleanup_free_ char *v = NULL;
                int r = item_value(it, it->cpus, &v);
                if (r < 0)
                        return r;
                if (write_job_add(j, it->kind, it->path, v, true) < 0)
                        return -ENOMEM;
                log_device_debug(d->name, "Writing \"%s\" to \"%s\"%s", v, it->path, i < n ? "" : " (put back: no longer planned)");
        }
        j->stop_on_error = false;
        j->tag = k;
        *ret = j->n_ops ? TAKE_PTR(j) : NULL;
        return 0;
}

/* The cpulist of item id in items, NULL when absent. */
static const char *items_find(const Item *items, size_t n, const char *id) {
        for (size_t i = 0; i < n; i++)
                if (streq(items[i].id, id))
                        return items[i].cpus;
        return NULL;
}

/* The composite of the items for which keep[i] is set ("" when none). */
static char *items_join(const Item *items, size_t n, const bool *keep) {
        char *s = strdup("");
        for (size_t i = 0; s && i < n; i++) {
                char *t;
                if (!keep[i])
                        continue;
                if (asprintf(&t, "%s%s%s:%s", s, *s ? " " : "", items[i].id, items[i].cpus) < 0)
                        t = NULL;
                free(s);
                s = t;
        }
        return s;
}

/* a->original with the items of its own for which keep[] is set (NULL when none). */
static int originals_keep(Applied *a, const Item *orig, size_t n_orig, const bool *keep) {
        bool any = false;
        for (size_t i = 0; i < n_orig; i++)
                any = any || keep[i];
        _cleanup_free_ char *kept = any ? items_join(orig, n_orig, keep) : NULL;
        if (any && !kept)
                return -ENOMEM;
        free(a->original);
        a->original = TAKE_PTR(kept);
        return 0;
}

/*
 * The plan of knob k changed from a->value to wanted (items, n). Per item of the original: the
 * kernel's value is not what blkmqd left there (a->value's item): someone else's now (a
 * driver placing its queues again after ethtool -L), dropped and said once; the plan no
 * longer has it and it is still blkmqd's: put back now (ret_back, dropped from the original
 * as the job is made). cur_items: the kernel's values of items as the decision read them.
 * Returns 0 or -ENOMEM.
 */
static int rebase_originals(HostFs *h, Device *d, Knob k, const Item *items, const Item *cur_items, size_t n, Item **ret_back,
                            size_t *ret_n_back) {
        Applied *a = &d->applied[k];
        _cleanup_free_ Item *orig = NULL, *mine = NULL, *back = NULL;
        _cleanup_free_ bool *keep = NULL;
        _cleanup_free_ char *theirs = NULL;
        size_t n_orig = 0, n_mine = 0, n_back = 0;

        if (items_parse(k, a->original, &orig, &n_orig) < 0) {
                a->original = mfree_str(a->original);
                return 0;
        }
        if (items_parse(k, a->value, &mine, &n_mine) < 0)
                n_mine = 0;
        keep = calloc(n_orig + 1, sizeof(bool));
        back = calloc(n_orig + 1, sizeof(Item));
        if (!keep || !back)
                return -ENOMEM;
        for (size_t i = 0; i < n_orig; i++) {
                _cleanup_free_ char *cur = NULL;
                const char *m = items_find(mine, n_mine, orig[i].id), *seen = items_find(cur_items, n, orig[i].id);
                keep[i] = true;
                /* an item the decision read already: that reading (a driver placing its vectors
                 * again can change them between two reads; the original and the write must
                 * come from one snapshot) */
                if (seen) {
                        if (!(cur = strdup(seen)))
                                return -ENOMEM;
                } else if (item_read(h, &orig[i], &cur) < 0)
                        continue;       /* unreadable (a vector or queue gone): left as it is */
                if (m && !cpulists_equal(cur, m)) {
                        char *t;
                        if (asprintf(&t, "%s%s%s at %s", strempty(theirs), theirs ? ", " : "", orig[i].id, *cur ? cur : "none") < 0)
                                return -ENOMEM;
                        free(theirs);
                        theirs = t;
                        keep[i] = false;
                } else if (!items_find(items, n, orig[i].id)) {
                        keep[i] = false;
                        if (!cpulists_equal(cur, orig[i].cpus))
                                back[n_back++] = orig[i];
                }
        }
        if (theirs)
                log_device_full(LOG_NOTICE, 0, d->name, NULL, NULL, "%s changed externally since blkmqd wrote it, no longer "
                                "blkmqd's to put back: %s", knob_to_string(k), theirs);
        int r = originals_keep(a, orig, n_orig, keep);
        if (r < 0)
                return r;
        *ret_back = TAKE_PTR(back);
        *ret_n_back = n_back;
        return 0;
}

/* Record as original the current value (cur[i]) of every item of items that will be written
 * (differs) and has no original yet. Returns 0 or -ENOMEM. */
static int originals_add(Applied *a, Knob k, const Item *items, const Item *cur, size_t n) {
        _cleanup_free_ Item *orig = NULL;
        size_t n_orig = 0;
        char *s = a->original ? strdup(a->original) : strdup("");

        if (!s)
                return -ENOMEM;
        if (a->original && items_parse(k, a->original, &orig, &n_orig) < 0)
                n_orig = 0;
        for (size_t i = 0; i < n; i++) {
                char *t;
                if (cpulists_equal(items[i].cpus, cur[i].cpus) || items_find(orig, n_orig, items[i].id))
                        continue;
                if (asprintf(&t, "%s%s%s:%s", s, *s ? " " : "", items[i].id, cur[i].cpus) < 0) {
                        free(s);
                        return -ENOMEM;
                }
                free(s);
                s = t;
        }
        free(a->original);
        a->original = *s ? s : (free(s), NULL);
        return 0;
}

/* "4 I/O queues: default 2, read 2, poll 0": the controller's I/O queues and, with several
 * maps, the hctx of each map as the plan counted them; NBD: "4 connections". NULL on ENOMEM. */
static char *in_use(const Device *d, const NetFacts *n) {
        char *s = NULL;
        size_t n_maps = 0;
        if (streq_ptr(n->transport, "nbd"))
                return asprintf(&s, "%lld connections", (long long) n->connections) < 0 ? NULL : s;
        for (HctxType t = 0; d->plan.net_maps_known && t < _HCTX_TYPE_MAX; t++)
                n_maps += d->plan.net_map_hctx[t] > 0;
        int r = n_maps <= 1 ? asprintf(&s, "%lld I/O queues", (long long) n->nr_io_queues) :
                asprintf(&s, "%lld I/O queues: default %zu, read %zu, poll %zu", (long long) n->nr_io_queues,
                         d->plan.net_map_hctx[HCTX_TYPE_DEFAULT], d->plan.net_map_hctx[HCTX_TYPE_READ],
                         d->plan.net_map_hctx[HCTX_TYPE_POLL]);
        return r < 0 ? NULL : s;
}

static int propose_nr_io_queues(Device *d, const ApplyOptions *o) {
        Applied *a = &d->applied[KNOB_NR_IO_QUEUES];
        const char *wanted = d->plan.manage ? d->plan.nr_io_queues : NULL;
        const NetFacts *n = d->facts ? d->facts->net : NULL;

        if (!wanted || !n) {
                a->value = mfree_str(a->value);
                applied_set(a, APPLY_UNMANAGED, 0, NULL);
                return 0;
        }
        if (o->verify_only)
                return 0;
        /* NBD: "connections=N", nbd-client -C N (policies/net-align.c); nvme: fabrics options */
        const char *connections = startswith(wanted, "connections=");
        _cleanup_free_ char *cli = connections ? strdup(connections) : net_align_cli_options(wanted), *now = in_use(d, n),
                            *instead = NULL;
        if (!cli || !now)
                return -ENOMEM;
        if (d->plan.net_action == NET_ACTION_NIC_CHANNELS &&
            asprintf(&instead, "; recommended instead (network/recommended): ethtool -L %s combined %u, no reconnect",
                     n->nic ? n->nic->ifname : "?", d->plan.net_channels) < 0)
                return -ENOMEM;
        bool changed = !streq_ptr(a->value, wanted) || a->state != (o->dry_run ? APPLY_DRY_RUN : APPLY_PENDING_RECONNECT);
        free_and_strdup(&a->value, wanted);
        if (changed)
                log_device_info(d->name, "%s%s for the next connect of %s (now %s): pending-reconnect; "
                                "a live %s is never disconnected%s", o->dry_run ? "dry-run: would propose " : "",
                                wanted, strna(n->controller), now, connections ? "NBD device" : "controller", strempty(instead));
        if (connections)
                applied_set(a, o->dry_run ? APPLY_DRY_RUN : APPLY_PENDING_RECONNECT, 0,
                            "%s%s at the next connect of %s (now %s): nbd-client %s %s /dev/%s -C %s with the export's other "
                            "options; blkmqd never disconnects a connected NBD device%s",
                            o->dry_run ? "would propose " : "", wanted, strna(n->controller), now, strna(n->traddr),
                            strna(n->trsvcid), strna(n->controller), cli, strempty(instead));
        else
                applied_set(a, o->dry_run ? APPLY_DRY_RUN : APPLY_PENDING_RECONNECT, 0,
                            "%s%s at the next connect of %s (now %s): nvme connect -t %s -a %s -s %s %s, or the same keys "
                            "(\"%s\") for this port in nvme-cli's /etc/nvme/config.json; blkmqd never disconnects a live "
                            "controller%s",
                            o->dry_run ? "would propose " : "", wanted, strna(n->controller), now,
                            strna(n->transport), strna(n->traddr), strna(n->trsvcid), cli, wanted, strempty(instead));
        return 0;
}

/* Put the original back within an apply run (no wish any more): a job, or forgotten when already back. */
static int no_wish(HostFs *h, Device *d, Knob k, const ApplyOptions *o, WriteJob **ret_job) {
        Applied *a = &d->applied[k];
        if (!a->original) {
                a->value = mfree_str(a->value);
                if (a->state != APPLY_UNMANAGED || a->message)
                        applied_set(a, APPLY_UNMANAGED, 0, NULL);
                return 0;
        }
        if (!apply_restore_may_write(a, o))
                return 0;
        return apply_net_restore_decide(h, d, k, ret_job);
}

/* The knob is where the plan wants it (state ok or kept): its applied/ line says what isolated
 * CPUs changed in the placement (Plan.isolated, policies/net-align.c), nothing else. */
static void applied_set_placed(Device *d, Knob k, ApplyState state) {
        const char *isolated = d->plan.isolated[k];
        if (isolated)
                applied_set(&d->applied[k], state, 0, "%s", isolated);
        else
                applied_set(&d->applied[k], state, 0, NULL);
}

int apply_net_decide(HostFs *h, Device *d, Knob k, const ApplyOptions *o, WriteJob **ret_job) {
        Applied *a = &d->applied[k];
        const char *knob = knob_to_string(k);
        const char *wanted = d->plan.manage ? plan_get(&d->plan, k) : NULL;
        _cleanup_free_ Item *items = NULL, *cur_items = NULL;
        _cleanup_free_ char *current = NULL;
        size_t n = 0, n_cur = 0;
        int failed = -1, r;

        d->run.knob_new_original = false;
        if (k == KNOB_NR_IO_QUEUES)
                return propose_nr_io_queues(d, o);
        if (!wanted)
                return no_wish(h, d, k, o, ret_job);
        /* refused in a way retrying cannot fix: said once, never written again */
        bool refused = a->state == APPLY_UNSUPPORTED && streq_ptr(a->value, wanted);

        r = items_parse(k, wanted, &items, &n);
        if (r < 0) {
                applied_set(a, APPLY_ERROR, r, "malformed plan %s", wanted);
                return r == -ENOMEM ? r : 0;
        }
        r = read_composite(h, items, n, &current, &failed);
        if (r == -ENOMEM)
                return r;
        if (r < 0 && refused)
                return 0;
        if (r < 0) {
                applied_set(a, APPLY_ERROR, r, "cannot read %s: %s", failed >= 0 ? items[failed].path : "?",
                          strerrorname_np(-r) ?: "error");
                return 0;
        }
        r = items_parse(k, current, &cur_items, &n_cur);
        if (r < 0)
                return r == -ENOMEM ? r : 0;

        bool same = n_cur == n;
        for (size_t i = 0; same && i < n; i++)
                same = cpulists_equal(items[i].cpus, cur_items[i].cpus);
        if (refused) {
                /* in place by someone else's hand: kept, the refusal is the past (as apply.c's
                 * queue knobs) */
                if (same)
                        applied_set_placed(d, k, a->original ? APPLY_OK : APPLY_KEPT);
                return 0;
        }

        /* someone else changed what blkmqd wrote, or what its plan found in place (kept):
         * reported once, not fought (Reassert=no) */
        if ((a->state == APPLY_OK || a->state == APPLY_EXTERNAL || a->state == APPLY_KEPT) && streq_ptr(a->value, wanted) &&
            !same && !o->reassert) {
                bool transition = a->state != APPLY_EXTERNAL;
                if (transition)
                        a->external_kept = a->state == APPLY_KEPT;
                const char *how = a->external_kept ? "blkmqd's plan kept" : "blkmqd wrote";
                _cleanup_free_ char *was = a->original ? strdup(a->original) : NULL;
                if (transition)
                        apply_log_knob(d, knob, KNOB_RECORD_EXTERNAL, LOG_NOTICE, 0, wanted, current,
                                       "%s changed externally to %s (%s %s); leaving it (Reassert=no)",
                                          knob, current, how, wanted);
                applied_set(a, APPLY_EXTERNAL, 0, "changed externally to %s (%s %s; what changed is no longer blkmqd's to restore)",
                          current, how, wanted);
                /* the items someone else changed are theirs now; the others keep their original */
                _cleanup_free_ Item *orig = NULL;
                size_t n_orig = 0;
                if (a->original && items_parse(k, a->original, &orig, &n_orig) >= 0) {
                        _cleanup_free_ bool *keep = calloc(n_orig + 1, sizeof(bool));
                        if (!keep)
                                return -ENOMEM;
                        for (size_t i = 0; i < n_orig; i++) {
                                const char *c = items_find(cur_items, n_cur, orig[i].id), *w = items_find(items, n, orig[i].id);
                                keep[i] = c && w && cpulists_equal(c, w);
                        }
                        r = originals_keep(a, orig, n_orig, keep);
                        if (r < 0)
                                return r;
                } else
                        a->original = mfree_str(a->original);
                return transition || !streq_ptr(was, a->original);
        }
        if (o->verify_only && !(a->state == APPLY_EXTERNAL && same))
                return 0;       /* a value back where blkmqd wants it: said now (as in apply.c) */

        /* the plan changed since blkmqd acted (the NIC's facts changed: channels, a bond's
         * failover): the originals of items someone else changed since are theirs, and items the
         * plan no longer has are put back now */
        _cleanup_free_ Item *back = NULL;
        size_t n_back = 0;
        bool rebased = false;
        if (!o->dry_run && a->original && a->value && !streq(a->value, wanted)) {
                _cleanup_free_ char *before = strdup(a->original);
                if (!before)
                        return -ENOMEM;
                r = rebase_originals(h, d, k, items, cur_items, n, &back, &n_back);
                if (r < 0)
                        return r;
                rebased = !streq_ptr(before, a->original);
        }
        if (same && n_back == 0) {
                bool dropped = a->original && streq(a->original, wanted);
                if (dropped)
                        a->original = mfree_str(a->original);
                applied_set_placed(d, k, a->original ? APPLY_OK : APPLY_KEPT);
                free_and_strdup(&a->value, wanted);
                return dropped || rebased;      /* the originals changed: stored */
        }
        if (o->dry_run) {
                apply_dry_run(d, a, knob, current, wanted);
                return 0;
        }
        /* the original of every item about to be written that has none yet: its value now */
        d->run.knob_new_original = !a->original;
        r = originals_add(a, k, items, cur_items, n);
        if (r < 0)
                return r;
        free_and_strdup(&a->value, wanted);
        r = composite_job(d, k, items, n, cur_items, back, n_back, ret_job);
        if (r >= 0 && !*ret_job) {      /* only restores that were already in place */
                applied_set_placed(d, k, a->original ? APPLY_OK : APPLY_KEPT);
                return 1;
        }
        return r;
}

/*
 * Per item of the original: already back (nothing to do), someone else's (the current value is
 * neither the original nor blkmqd's: left, counted), or blkmqd's (written back). Items are
 * independent: another tool moving one NIC vector does not keep the others from coming back.
 */
int apply_net_restore_decide(HostFs *h, Device *d, Knob k, WriteJob **ret_job) {
        Applied *a = &d->applied[k];
        _cleanup_free_ Item *items = NULL, *mine = NULL;
        _cleanup_free_ bool *todo = NULL;
        _cleanup_free_ char *theirs = NULL;
        size_t n = 0, n_mine = 0, n_todo = 0;

        if (k == KNOB_NR_IO_QUEUES || !a->original) {
                if (k == KNOB_NR_IO_QUEUES && d->run.restore) {
                        a->value = mfree_str(a->value);
                        applied_set(a, APPLY_UNMANAGED, 0, NULL);
                }
                return 0;
        }
        int r = items_parse(k, a->original, &items, &n);
        if (r < 0) {
                /* a stored original blkmqd cannot read back: forget it rather than write garbage */
                log_device_warning_errno(d->name, r, "%s: stored original \"%s\" is malformed, forgetting it: %m",
                                         knob_to_string(k), a->original);
                a->original = mfree_str(a->original);
                return r == -ENOMEM ? r : 0;
        }
        if (a->value && items_parse(k, a->value, &mine, &n_mine) < 0)
                n_mine = 0;
        if (!(todo = calloc(n + 1, sizeof(bool))))
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *cur = NULL;
                if (item_read(h, &items[i], &cur) < 0) {
                        todo[i] = true;         /* unreadable: try the write, its error is reported */
                        n_todo++;
                        continue;
                }
                if (cpulists_equal(cur, items[i].cpus))
                        continue;               /* already back */
                const char *m = items_find(mine, n_mine, items[i].id);
                if (m && !cpulists_equal(cur, m)) {
                        char *t;
                        if (asprintf(&t, "%s%s%s at %s", strempty(theirs), theirs ? ", " : "", items[i].id, *cur ? cur : "none") < 0)
                                return -ENOMEM;
                        free(theirs);
                        theirs = t;
                        d->run.left++;
                        continue;
                }
                todo[i] = true;
                n_todo++;
        }
        if (theirs)
                apply_log_knob(d, knob_to_string(k), KNOB_RECORD_EXTERNAL, LOG_NOTICE, 0, NULL, theirs,
                               "%s: changed externally since blkmqd wrote it, not restored over: %s",
                                knob_to_string(k), theirs);
        if (n_todo == 0) {
                a->original = mfree_str(a->original);
                a->value = mfree_str(a->value);
                applied_set(a, APPLY_UNMANAGED, 0, theirs ? "changed externally: not blkmqd's to put back" : NULL);
                return 0;
        }
        /* only the items written back stay the original (a failed write keeps them for the next restore) */
        _cleanup_free_ char *keep = items_join(items, n, todo);
        if (!keep || free_and_strdup(&a->original, keep) < 0)
                return -ENOMEM;
        _cleanup_free_ Item *back = NULL;
        size_t n_back = 0;
        r = items_parse(k, a->original, &back, &n_back);
        if (r < 0)
                return r;
        r = composite_job(d, k, back, n_back, NULL, NULL, 0, ret_job);
        if (r >= 0 && *ret_job)
                (*ret_job)->tag |= 0x100;       /* TAG_RESTORE of apply/apply.c */
        return r;
}

int apply_net_finish(HostFs *h, Device *d, Knob k, const WriteJob *j, bool restore) {
        Applied *a = &d->applied[k];
        const char *knob = knob_to_string(k);
        _cleanup_free_ char *failed = NULL;
        int first_error = 0, written = 0;

        for (size_t i = 0; i < j->n_ops; i++) {
                const WriteOp *op = &j->ops[i];
                int r = op->result;
                _cleanup_(cpuset_done) CpuSet want = {}, got = {};
                if (r >= 0)
                        written++;
                if (r >= 0 && !restore) {
                        bool mask = strstr(op->path, "xps_cpus");
                        r = op->read_result;
                        if (r >= 0)
                                r = (mask ? cpuset_parse_mask(op->value, &want) : cpuset_parse(op->value, &want)) < 0 ||
                                    (mask ? cpuset_parse_mask(op->read, &got) : cpuset_parse(op->read, &got)) < 0 ? -EIO : 0;
                        if (r >= 0 && !cpuset_equal(&want, &got))
                                r = -EIO;
                }
                if (r < 0) {
                        char *t;
                        if (asprintf(&t, "%s%s%s %s: %s", strempty(failed), failed ? ", " : "", op->path, op->value,
                                     strerrorname_np(-r) ?: "error") >= 0) {
                                free(failed);
                                failed = t;
                        }
                        if (!first_error)
                                first_error = r;
                }
        }

        if (restore) {
                if (first_error) {
                        apply_log_knob(d, knob, KNOB_RECORD_FAILED, LOG_WARNING, first_error, a->value, a->original,
                                       "Failed to restore %s %s: %s", knob, strna(a->original), strna(failed));
                        applied_set(a, APPLY_ERROR, first_error, "restoring %s: %s", strna(a->original), strna(failed));
                        if (d->run.error >= 0)
                                d->run.error = first_error;
                        d->run.failed++;
                        return 0;
                }
                apply_log_knob(d, knob, KNOB_RECORD_RESTORE, LOG_NOTICE, 0, a->value, a->original, "%s restored to %s", knob,
                               strna(a->original));
                a->original = mfree_str(a->original);
                a->value = mfree_str(a->value);
                applied_set(a, APPLY_UNMANAGED, 0, d->run.restore ? NULL : "put back: the value before blkmqd changed it");
                return 1;
        }
        if (first_error) {
                WriteErrorClass c = apply_classify_error(first_error);
                bool dropped = false;
                if (!written && d->run.knob_new_original) {
                        a->original = mfree_str(a->original);    /* nothing changed */
                        dropped = true;
                }
                applied_set(a, c == WRITE_ERROR_UNSUPPORTED ? APPLY_UNSUPPORTED : APPLY_ERROR, first_error, "%s%s", strna(failed),
                          k == KNOB_NIC_IRQ_AFFINITY && (first_error == -EIO || first_error == -EPERM) ?
                          " (a kernel-managed vector refuses user affinity)" : "");
                apply_log_knob(d, knob, KNOB_RECORD_FAILED, LOG_WARNING, first_error, a->original, a->value,
                               "Failed to set %s %s: %s%s", knob, strna(a->value), strna(failed),
                                         c == WRITE_ERROR_UNSUPPORTED ? ", not retrying" : ", will retry");
                return written || dropped;
        }
        applied_set_placed(d, k, APPLY_OK);
        apply_log_knob(d, knob, KNOB_RECORD_WRITE, LOG_NOTICE, 0, a->original, a->value, "%s -> %s (was %s)", knob, strna(a->value),
                       strna(a->original));
        return written ? written : 1;
}
