/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer: nic_irq_queue_from_name() (policies/net-facts.c) on any /proc/interrupts action name:
 * -1 or a queue number 0..65535 with a valid direction; the name is never written to. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "net-facts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = strndup((const char *) data, size);
        if (!s)
                return 0;
        char *copy = strdup(s);
        NicQueueDir dir = (NicQueueDir) 77;
        int q = nic_irq_queue_from_name(s, &dir);
        assert(q >= -1 && q <= 65535);
        if (q >= 0)
                assert(dir == NIC_QUEUE_BOTH || dir == NIC_QUEUE_RX || dir == NIC_QUEUE_TX);
        else
                assert(dir == (NicQueueDir) 77);        /* untouched on "no queue" */
        assert(nic_irq_queue_from_name(s, NULL) == q);
        assert(copy && strcmp(copy, s) == 0);
        free(copy);
        free(s);
        return 0;
}
