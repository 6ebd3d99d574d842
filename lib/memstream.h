/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/*
 * The end of a text built with open_memstream(&buf, &size): close f and hand the text to *ret.
 * buf is the pointer given to open_memstream() (fclose() sets it last; open_memstream(3)).
 * Returns 0 (*ret owns the text, *buf NULL), or -ENOMEM when the stream could not be closed
 * (a write ran out of memory): the text is freed and *ret is left alone.
 */
static inline int memstream_finish(FILE *f, char **buf, char **ret) {
        if (fclose(f) != 0) {
                free(*buf);
                *buf = NULL;
                return -ENOMEM;
        }
        *ret = *buf;
        *buf = NULL;
        return 0;
}
