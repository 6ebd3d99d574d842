/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What blkmqd itself did, as the policy's input (policies/history.h). */

#include <stdlib.h>

#include "history.h"

void policy_history_done(PolicyHistory *h) {
        if (!h)
                return;
        free(h->elevator_before);
        free(h->elevator_unloaded);
        for (size_t i = 0; i < h->n_irqs; i++)
                free(h->irqs[i].affinity_before);
        free(h->irqs);
        *h = POLICY_HISTORY_INIT;
}

const char *policy_history_irq_before(const PolicyHistory *h, unsigned irq) {
        for (size_t i = 0; h && i < h->n_irqs; i++)
                if (h->irqs[i].irq == irq)
                        return h->irqs[i].affinity_before;
        return NULL;
}

const PolicyHistory *policy_history_or_none(const PolicyHistory *h) {
        static const PolicyHistory none = { .rq_affinity_before = -1, .nr_requests_before = -1 };
        return h ?: &none;
}
