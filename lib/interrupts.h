/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Parser for /proc/interrupts (kernel/irq/proc.c show_interrupts()):
 *
 *              CPU0       CPU1
 *    36:          0      93662 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
 *   NMI:          0          0   Non-maskable interrupts
 *
 * The header names the CPU columns (offline CPUs are omitted, so columns are mapped by
 * the header's CPUn names, not by position). Only numeric IRQ lines are kept. Pure.
 */

#include <stddef.h>
#include <stdint.h>

typedef struct IrqLine {
        unsigned irq;
        char *chip;             /* "PCI-MSIX-0000:00:02.0" */
        char *name;             /* action name(s): "virtio1-req.0"; "" when none */
        uint64_t *counts;       /* per column, n_cpus entries */
} IrqLine;

typedef struct ProcInterrupts {
        unsigned *cpus;         /* CPU number of each column */
        size_t n_cpus;
        IrqLine *lines;
        size_t n_lines;
} ProcInterrupts;

/*
 * Parse the whole file content. Returns 0, -EINVAL (no CPU header, a numeric line with
 * fewer counts than columns), -ENOMEM. Lines that are not numeric IRQs are skipped.
 */
int proc_interrupts_parse(const char *text, ProcInterrupts *ret);
void proc_interrupts_done(ProcInterrupts *p);

/* The line of irq, or NULL. */
const IrqLine *proc_interrupts_find(const ProcInterrupts *p, unsigned irq);

/* Sum of an IRQ line's counts over all CPUs. */
uint64_t irq_line_total(const ProcInterrupts *p, const IrqLine *l);
