/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer: kernel_cmdline_parse() (lib/cmdline.c). 0 or -ENOMEM; every parameter has a name
 * without dashes, a module (if any) without dashes and not empty; kernel_cmdline_find() of
 * each one returns a parameter of that name (the last one set).
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = strndup((const char *) data, size);
        KernelCmdline c = {};
        if (!text)
                return 0;
        int r = kernel_cmdline_parse(text, &c);
        assert(r == 0 || r == -ENOMEM);
        for (size_t i = 0; r == 0 && i < c.n_params; i++) {
                const KernelCmdlineParam *p = &c.params[i];
                assert(p->param && !strchr(p->param, '-'));
                assert(!p->module || (*p->module && !strchr(p->module, '-')));
                const KernelCmdlineParam *f = kernel_cmdline_find(&c, p->module, p->param);
                assert(f && strcmp(f->param, p->param) == 0 && f->index >= p->index);
        }
        kernel_cmdline_done(&c);
        free(text);
        return 0;
}
