/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer: config_parse_text() (manager/conf.c, libinih). Any text: 0, or -EINVAL with an
 * error "fuzz.conf:<line>: <what>" whose line is within the text; never a crash or a leak.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = strndup((const char *) data, size);
        Config c;
        char *error = NULL;
        if (!text || config_init(&c) < 0) {
                free(text);
                return 0;
        }
        int r = config_parse_text(&c, "fuzz.conf", text, &error);
        assert(r == 0 || r == -EINVAL || r == -ENOMEM);
        if (r == 0)
                assert(!error);
        if (r == -EINVAL && error) {
                assert(strncmp(error, "fuzz.conf:", 10) == 0);
                long line = strtol(error + 10, NULL, 10);
                size_t lines = 1;
                for (const char *p = text; *p; p++)
                        lines += *p == '\n';
                assert(line >= 1 && (size_t) line <= lines + 1);
        }
        if (r == 0)
                assert(c.rate_window_usec >= 200000 && c.rate_window_usec <= 3600000000ULL);
        free(error);
        config_done(&c);
        free(text);
        return 0;
}
