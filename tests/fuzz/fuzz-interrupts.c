/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer: proc_interrupts_parse() (lib/interrupts.c). 0 or -EINVAL; on success every line
 * has n_cpus counts, find() returns the line of its IRQ, totals do not crash.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "interrupts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = strndup((const char *) data, size);
        ProcInterrupts p = {};
        if (!text)
                return 0;
        int r = proc_interrupts_parse(text, &p);
        assert(r == 0 || r == -EINVAL || r == -ENOMEM);
        if (r == 0) {
                assert(p.n_cpus > 0);
                for (size_t i = 0; i < p.n_lines; i++) {
                        const IrqLine *l = proc_interrupts_find(&p, p.lines[i].irq);
                        assert(l && l->irq == p.lines[i].irq);
                        assert(p.lines[i].chip && p.lines[i].name && p.lines[i].counts);
                        (void) irq_line_total(&p, &p.lines[i]);
                }
                proc_interrupts_done(&p);
        } else
                assert(p.n_cpus == 0 && p.n_lines == 0);
        free(text);
        return 0;
}
