/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer: policy_override_validate() for every knob. Input: knob byte, then the bytes a
 * user writes. Accepted values are normalised: validating the result again gives the same
 * result; never a blank, newline or NUL in it; rq_affinity 0..2. A knob byte with the high bit
 * set picks an elevator tunable instead (iosched_override_validate(), issue 18): accepted
 * values are decimal, within the tunable's [min, max], and validate to themselves.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <inttypes.h>

#include "facts.h"
#include "iosched.h"
#include "parse.h"
#include "policy.h"

static void one_tunable(IoschedTunable t, const uint8_t *data, size_t size, const DiskFacts *f) {
        const IoschedTunableInfo *info = iosched_tunable_info(t);
        char *v = NULL;
        int r = iosched_override_validate(t, (const char *) data, size, f, &v);
        assert(r == 0 || r == -EINVAL || r == -ERANGE || r == -ENOMEM);
        if (r < 0 || !v) {
                assert(!v);
                return;
        }
        assert(*v && strspn(v + (v[0] == '-'), "0123456789") == strlen(v + (v[0] == '-')));
        assert(strcmp(v, "-0") != 0 && (v[0] != '0' || !v[1]));
        if (v[0] == '-')
                assert(info->min < 0 && strtoll(v, NULL, 10) >= info->min);
        else {
                uint64_t n = strtoull(v, NULL, 10);
                assert(n <= info->max && (info->min <= 0 || n >= (uint64_t) info->min));
        }
        char *again = NULL;
        assert(iosched_override_validate(t, v, strlen(v), f, &again) == 0 && again && strcmp(again, v) == 0);
        free(again);
        free(v);
}

static DiskFacts *f;
static CpuSet online;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (!f) {
                f = disk_facts_new("sdb");
                f->n_hctx = 1;
                f->hctx = calloc(1, sizeof(HctxFacts));
                f->hctx[0] = (HctxFacts) { .nr_tags = 64, .nr_reserved_tags = 1, .irq = -1 };
                parse_scheduler("[none] mq-deadline kyber bfq\n", &f->elevators, &f->elevator, &f->elevator_configurable);
                cpuset_parse("0-3,8", &online);
        }
        if (size < 1)
                return 0;
        if (data[0] & 0x80) {
                one_tunable((IoschedTunable) ((data[0] & 0x7f) % _IOSCHED_TUNABLE_MAX), data + 1, size - 1, f);
                return 0;
        }
        int k = data[0] % _POLICY_FILE_MAX;       /* every policy file: the knobs and enabled */
        char *v = NULL;
        int r = policy_override_validate(k, (const char *) data + 1, size - 1, f, &online, &v);
        assert(r == 0 || r == -EINVAL || r == -ERANGE || r == -ENOMEM);
        if (r < 0) {
                assert(!v);
                return 0;
        }
        if (v) {
                assert(!strpbrk(v, " \t\n") && *v);
                char *again = NULL;
                assert(policy_override_validate(k, v, strlen(v), f, &online, &again) == 0);
                assert(again && strcmp(again, v) == 0);
                free(again);
                /* rq_affinity takes the kernel's three values, or "keep" (leave it to the disk) */
                if (k == KNOB_RQ_AFFINITY)
                        assert(!strcmp(v, "0") || !strcmp(v, "1") || !strcmp(v, "2") || !strcmp(v, "keep"));
        }
        /* v == NULL is "auto": every policy file takes it, enabled included */
        free(v);
        return 0;
}
