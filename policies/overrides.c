/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Validation of what users write into devices/<disk>/policy/<knob>. Pure. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "parse.h"
#include "policy-internal.h"
#include "strv.h"

#define OVERRIDE_MAX 4096
/* block/blk-mq.h / include/linux/blkdev.h */
#define BLKDEV_MIN_RQ 4
#define MAX_SCHED_RQ (16 * 128)   /* 16 * BLKDEV_DEFAULT_RQ */

/* queue/nr_requests store (block/blk-sysfs.c): > reserved tags, >= BLKDEV_MIN_RQ,
 * <= MAX_SCHED_RQ with an elevator, <= the tag set depth without one. */
void nr_requests_limits(const DiskFacts *f, const char *elevator, uint64_t *ret_min, uint64_t *ret_max) {
        assert(f);
        assert(ret_min);
        assert(ret_max);
        uint64_t max = MAX_SCHED_RQ;
        if (elevator && streq(elevator, "none") && f->n_hctx > 0 && f->hctx[0].nr_tags > 0)
                max = f->hctx[0].nr_tags;
        uint64_t min = BLKDEV_MIN_RQ;
        if (f->n_hctx > 0 && f->hctx[0].nr_reserved_tags >= 0 && (uint64_t) f->hctx[0].nr_reserved_tags + 1 > min)
                min = f->hctx[0].nr_reserved_tags + 1;
        *ret_min = min;
        *ret_max = max;
}

static int validate_nr_requests(const char *v, const DiskFacts *f, char **ret) {
        uint64_t n, min, max;
        nr_requests_limits(f, f->elevator, &min, &max);
        int r = parse_u64_range(v, min, max, &n);      /* "-4": ERANGE, like rq_affinity's "-1" */
        if (r < 0)
                return r;
        return asprintf(ret, "%" PRIu64, n) < 0 ? -ENOMEM : 0;
}

static int validate_cpulist(const char *v, const CpuSet *online, char **ret) {
        _cleanup_(cpuset_done) CpuSet set = {};
        int r = cpuset_parse(v, &set);
        if (r < 0)
                return r;
        if (cpuset_count(&set) == 0)
                return -EINVAL;
        if (online && !cpuset_is_subset(&set, online))
                return -ERANGE;         /* names an offline or absent CPU: a number outside what the file takes */
        char *s = cpuset_format(&set);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int policy_override_validate(int file, const char *input, size_t len, const DiskFacts *f,
                             const CpuSet *online, char **ret) {
        _cleanup_free_ char *v = NULL;
        int r;

        if (len == 0 || len > OVERRIDE_MAX || memchr(input, 0, len))
                return -EINVAL;
        if (input[len - 1] == '\n')
                len--;
        if (len == 0)
                return -EINVAL;
        v = strndup(input, len);
        if (!v)
                return -ENOMEM;
        if (strpbrk(v, "\n\t "))
                return -EINVAL;

        if (streq(v, "auto") && file >= 0 && file < _POLICY_FILE_MAX) {
                *ret = NULL;
                return 0;
        }
        /* every knob (not enabled): leave it to the disk, whatever the class wants */
        if (streq(v, "keep") && file >= 0 && file < _KNOB_MAX) {
                *ret = TAKE_PTR(v);
                return 0;
        }

        switch ((int) file) {
        case KNOB_ELEVATOR:
                /* listed, built in or loadable (the kernel loads it on the write) */
                if (disk_facts_elevator_source(f, v) == ELEVATOR_UNAVAILABLE)
                        return -EINVAL;
                /* a zoned disk without zone write plugging keeps mq-deadline */
                if (disk_facts_zoned_needs_deadline(f, NULL) && !streq(v, "mq-deadline"))
                        return -EINVAL;
                break;
        case KNOB_RQ_AFFINITY: {
                int x;
                r = parse_int(v, &x);
                if (r < 0)
                        return r;
                if (x < 0 || x > 2)
                        return -ERANGE;
                return asprintf(ret, "%d", x) < 0 ? -ENOMEM : 0;     /* normalised: "02" -> "2" */
        }
        case KNOB_NR_REQUESTS:
                return validate_nr_requests(v, f, ret);
        case KNOB_IRQ_AFFINITY:
                if (streq(v, "hctx"))
                        break;
                return validate_cpulist(v, online, ret);
        case KNOB_NIC_IRQ_AFFINITY:
        case KNOB_XPS:
                if (!streq(v, "hctx") && !streq(v, "keep"))
                        return -EINVAL;
                break;
        case KNOB_NR_IO_QUEUES: {
                uint64_t x;
                if (streq(v, "keep"))
                        break;
                r = parse_u64_range(v, 1, 65535, &x);
                if (r < 0)
                        return r;
                return asprintf(ret, "%" PRIu64, x) < 0 ? -ENOMEM : 0;
        }
        case POLICY_FILE_ENABLED: {
                uint64_t x;
                r = parse_u64_range(v, 0, 1, &x);       /* "2", "-1": ERANGE; "yes": EINVAL */
                if (r < 0)
                        return r;
                return asprintf(ret, "%" PRIu64, x) < 0 ? -ENOMEM : 0;
        }
        default:
                return -EINVAL;
        }
        *ret = TAKE_PTR(v);
        return 0;
}

char *policy_override_expected(int file, const DiskFacts *f, const CpuSet *online) {
        _cleanup_free_ char *list = NULL, *cpus = NULL;
        uint64_t min, max;
        char *r = NULL;

        switch ((int) file) {
        case KNOB_ELEVATOR: {
                const char *why;
                if (!f->elevator_configurable)
                        return strdup("\"keep\" or \"auto\" only: this queue cannot take an elevator");
                if (disk_facts_zoned_needs_deadline(f, &why)) {
                        if (asprintf(&r, "\"mq-deadline\", \"keep\" or \"auto\": zoned=%s, %s", strna(zoned_to_string(f->zoned)), why) < 0)
                                r = NULL;
                        return r;
                }
                list = strv_join(f->elevators, " ");
                if (!list)
                        return NULL;
                char **more[] = { f->elevators_builtin, f->elevators_loadable };
                for (size_t i = 0; i < ELEMENTSOF(more); i++)
                        STRV_FOREACH(e, more[i]) {
                                char *n = NULL;
                                if (strv_contains(f->elevators, *e))
                                        continue;
                                if (asprintf(&n, "%s %s(%s)", list, *e, i == 0 ? "built in" : "module, loaded on the write") < 0)
                                        return NULL;
                                free(list);
                                list = n;
                        }
                if (asprintf(&r, "one of the elevators the device offers (%s), \"keep\", or \"auto\"", list) < 0)
                        r = NULL;
                return r;
        }
        case KNOB_RQ_AFFINITY:
                return strdup("0, 1 or 2, \"keep\", or \"auto\"");
        case KNOB_NR_REQUESTS:
                nr_requests_limits(f, f->elevator, &min, &max);
                if (asprintf(&r, "a number from %" PRIu64 " to %" PRIu64 " with elevator %s, \"keep\", or \"auto\"",
                             min, max, f->elevator ?: "unknown") < 0)
                        r = NULL;
                return r;
        case KNOB_IRQ_AFFINITY:
                cpus = online ? cpuset_format(online) : NULL;
                if (asprintf(&r, "\"hctx\", a CPU list of online CPUs%s%s%s, \"keep\", or \"auto\"",
                             cpus ? " (" : "", cpus ?: "", cpus ? ")" : "") < 0)
                        r = NULL;
                return r;
        case KNOB_NIC_IRQ_AFFINITY:
                return strdup("\"hctx\" (the NIC's unmanaged queue IRQs on the CPUs of the hctx they serve), \"keep\", or \"auto\"");
        case KNOB_XPS:
                return strdup("\"hctx\" (XPS of each TX queue = the CPUs of its hctx), \"keep\", or \"auto\"");
        case KNOB_NR_IO_QUEUES:
                return strdup("a number of I/O queues from 1 to 65535 for the next connect, \"keep\", or \"auto\" (the NIC's channels)");
        case POLICY_FILE_ENABLED:
                return strdup("1 (manage this disk) or 0 (leave it alone), or \"auto\" (the configuration decides)");
        default:
                return NULL;
        }
}
