/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"
#include "macro.h"
#include "parse.h"

void kernel_cmdline_done(KernelCmdline *c) {
        for (size_t i = 0; i < c->n_params; i++) {
                free(c->params[i].module);
                free(c->params[i].param);
                free(c->params[i].value);
        }
        free(c->params);
        *c = (KernelCmdline) {};
}

static bool is_blank(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* A copy of s[0..n) with '-' as '_' (kernel/params.c dash2underscore()). */
static char *name_dup(const char *s, size_t n) {
        char *d = strndup(s, n);
        if (d)
                for (char *p = d; *p; p++)
                        if (*p == '-')
                                *p = '_';
        return d;
}

/* next_arg(): one word from *p (quotes kept out of the value), advancing *p. */
static int next_word(const char **p, char **ret_word) {
        const char *s = *p;
        bool in_quote = false;
        size_t n = 0;
        char *w = malloc(strlen(s) + 1);
        if (!w)
                return -ENOMEM;
        for (; *s && (in_quote || !is_blank(*s)); s++) {
                if (*s == '"') {
                        in_quote = !in_quote;
                        continue;
                }
                w[n++] = *s;
        }
        w[n] = 0;
        *p = s;
        *ret_word = w;
        return 0;
}

int kernel_cmdline_parse(const char *text, KernelCmdline *ret) {
        assert(ret);
        _cleanup_(kernel_cmdline_done) KernelCmdline c = {};
        unsigned index = 0;

        for (const char *p = text ?: ""; ; index++) {
                while (is_blank(*p))
                        p++;
                if (!*p)
                        break;
                _cleanup_free_ char *w = NULL;
                if (next_word(&p, &w) < 0)
                        return -ENOMEM;
                if (streq(w, "--"))
                        break;          /* the rest is init's */
                const char *eq = strchr(w, '=');
                size_t name_len = eq ? (size_t) (eq - w) : strlen(w);
                const char *dot = memchr(w, '.', name_len);
                KernelCmdlineParam *n = realloc(c.params, (c.n_params + 1) * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                c.params = n;
                KernelCmdlineParam *kp = &c.params[c.n_params++];
                *kp = (KernelCmdlineParam) { .index = index };
                if (dot && dot > w) {
                        kp->module = name_dup(w, dot - w);
                        kp->param = name_dup(dot + 1, name_len - (dot + 1 - w));
                } else
                        kp->param = name_dup(w, name_len);
                kp->value = eq ? strdup(eq + 1) : NULL;
                if (!kp->param || (dot && dot > w && !kp->module) || (eq && !kp->value))
                        return -ENOMEM;
        }
        *ret = c;
        c = (KernelCmdline) {};
        return 0;
}

const KernelCmdlineParam *kernel_cmdline_find(const KernelCmdline *c, const char *module, const char *param) {
        assert(c);
        _cleanup_free_ char *want_module = module ? name_dup(module, strlen(module)) : NULL,
                            *want = name_dup(param, strlen(param));
        if (!want || (module && !want_module))
                return NULL;
        for (size_t i = c->n_params; i > 0; i--) {
                const KernelCmdlineParam *kp = &c->params[i - 1];
                if (streq(kp->param, want) && (module ? kp->module && streq(kp->module, want_module) : !kp->module))
                        return kp;
        }
        return NULL;
}

int kernel_isolcpus_parse(const char *value, CpuSet *ret, bool *ret_managed_irq) {
        assert(ret);
        assert(ret_managed_irq);
        static const char * const known[] = { "nohz,", "domain,", "managed_irq," };
        bool managed = false;
        const char *p = value ?: "";

        /* kernel/sched/isolation.c housekeeping_isolcpus_setup(): flags while a letter leads */
        while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) {
                const char *rest = NULL;
                for (size_t i = 0; i < ELEMENTSOF(known) && !rest; i++)
                        if ((rest = startswith(p, known[i])) && i == 2)
                                managed = true;
                if (rest) {
                        p = rest;
                        continue;
                }
                /* an unknown flag is skipped up to its ','; one with a character that is
                 * neither a letter nor '_' makes the kernel drop the whole parameter
                 * (3662daf02350 "sched/isolation: Allow "isolcpus=" to skip unknown sub-parameters") */
                size_t n = strcspn(p, ",");
                for (size_t i = 0; i < n; i++)
                        if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') || p[i] == '_'))
                                return -EINVAL;
                p += n;
                if (*p == ',')
                        p++;
        }
        if (!*p)
                return -EINVAL;         /* no CPU list: housekeeping_setup() refuses it */
        CpuSet s = {};
        int r = cpuset_parse(p, &s);
        if (r < 0)
                return r;
        *ret = s;
        *ret_managed_irq = managed;
        return 0;
}
