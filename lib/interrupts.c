/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "interrupts.h"
#include "macro.h"

void proc_interrupts_done(ProcInterrupts *p) {
        for (size_t i = 0; i < p->n_lines; i++) {
                free(p->lines[i].chip);
                free(p->lines[i].name);
                free(p->lines[i].counts);
        }
        free(p->lines);
        free(p->cpus);
        *p = (ProcInterrupts) {};
}

static const char *skip_blanks(const char *s) {
        while (*s == ' ' || *s == '\t')
                s++;
        return s;
}

static int parse_header(const char *line, size_t len, ProcInterrupts *p) {
        const char *s = line, *end = line + len;
        while (s < end) {
                s = skip_blanks(s);
                if (s >= end)
                        break;
                if (strncmp(s, "CPU", 3) != 0)
                        return -EINVAL;
                char *e;
                unsigned long cpu = strtoul(s + 3, &e, 10);
                if (e == s + 3 || cpu > 65535)
                        return -EINVAL;
                unsigned *n = realloc(p->cpus, (p->n_cpus + 1) * sizeof(unsigned));
                if (!n)
                        return -ENOMEM;
                p->cpus = n;
                p->cpus[p->n_cpus++] = cpu;
                s = e;
        }
        return p->n_cpus > 0 ? 0 : -EINVAL;
}

/* Copy the next blank-separated token of [*s, end) and advance; NULL at the end. */
static char *next_token(const char **s, const char *end) {
        const char *a = skip_blanks(*s), *b = a;
        while (b < end && *b != ' ' && *b != '\t')
                b++;
        *s = b;
        return a < b ? strndup(a, b - a) : NULL;
}

static int parse_irq_line(const char *line, size_t len, ProcInterrupts *p) {
        const char *s = skip_blanks(line), *end = line + len;
        char *e;

        if (!isdigit((unsigned char) *s))
                return 0;               /* NMI:, LOC:, ERR:, ... */
        unsigned long irq = strtoul(s, &e, 10);
        if (*e != ':' || irq > UINT32_MAX)
                return 0;
        s = e + 1;

        IrqLine l = { .irq = irq };
        l.counts = calloc(p->n_cpus, sizeof(uint64_t));
        if (!l.counts)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_cpus; i++) {
                s = skip_blanks(s);
                if (!isdigit((unsigned char) *s)) {
                        free(l.counts);
                        return -EINVAL;
                }
                l.counts[i] = strtoull(s, &e, 10);
                s = e;
        }

        /* chip name; then, by architecture and version, "<hwirq>-<type>" (x86: "1-edge"), or
         * "<hwirq> <Type>" (arm64 GIC: "524289 Edge"), or just the type (old kernels); then the
         * action names (kernel/irq/proc.c show_interrupts()) */
        l.chip = next_token(&s, end);
        for (int i = 0; i < 2; i++) {
                const char *rest = s;
                _cleanup_free_ char *tok = next_token(&rest, end);
                if (!tok)
                        break;
                bool number = tok[strspn(tok, "0123456789")] == 0;
                bool type = strcasestr(tok, "edge") || strcasestr(tok, "level") || strcasestr(tok, "fasteoi");
                if (!(number && i == 0) && !type)
                        break;
                s = rest;
                if (type)
                        break;
        }
        s = skip_blanks(s);
        l.name = strndup(s, end - s);
        if (!l.chip)
                l.chip = strdup("");
        if (!l.name || !l.chip) {
                free(l.chip);
                free(l.name);
                free(l.counts);
                return -ENOMEM;
        }
        /* trailing blanks */
        for (size_t k = strlen(l.name); k > 0 && isspace((unsigned char) l.name[k - 1]); k--)
                l.name[k - 1] = 0;

        IrqLine *n = realloc(p->lines, (p->n_lines + 1) * sizeof(IrqLine));
        if (!n) {
                free(l.chip);
                free(l.name);
                free(l.counts);
                return -ENOMEM;
        }
        p->lines = n;
        p->lines[p->n_lines++] = l;
        return 0;
}

int proc_interrupts_parse(const char *text, ProcInterrupts *ret) {
        assert(ret);
        ProcInterrupts p = {};
        const char *s = text;
        bool header = false;
        int r = 0;

        while (*s) {
                const char *nl = strchr(s, '\n');
                size_t len = nl ? (size_t) (nl - s) : strlen(s);
                if (!header) {
                        r = parse_header(s, len, &p);
                        header = true;
                } else
                        r = parse_irq_line(s, len, &p);
                if (r < 0) {
                        proc_interrupts_done(&p);
                        return r;
                }
                s += len + !!nl;
        }
        if (!header) {
                proc_interrupts_done(&p);
                return -EINVAL;
        }
        *ret = p;
        return 0;
}

const IrqLine *proc_interrupts_find(const ProcInterrupts *p, unsigned irq) {
        for (size_t i = 0; i < p->n_lines; i++)
                if (p->lines[i].irq == irq)
                        return &p->lines[i];
        return NULL;
}

uint64_t irq_line_total(const ProcInterrupts *p, const IrqLine *l) {
        assert(p);
        assert(l);
        uint64_t t = 0;
        for (size_t i = 0; i < p->n_cpus; i++)
                t += l->counts[i];
        return t;
}
