/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/*
 * A text built with fprintf() into memory (open_memstream(3)):
 *
 *         _cleanup_(memstream_done) MemStream m = {};
 *         FILE *out = memstream_open(&m);
 *         if (!out)
 *                 return -ENOMEM;
 *         fprintf(out, ...);              (an early return frees everything)
 *         return memstream_close(&m, ret);
 *
 * The stream writes buf and size behind the caller's back (at fflush() and fclose()), so a
 * MemStream stays where it was opened: never copy one.
 */
typedef struct MemStream {
        FILE *f;
        char *buf;
        size_t size;
} MemStream;

/* Open m (zeroed). Returns its stream, or NULL (ENOMEM). */
static inline FILE *memstream_open(MemStream *m) {
        m->f = open_memstream(&m->buf, &m->size);
        return m->f;
}

/*
 * Close m's stream and hand its text to *ret. Returns 0 (*ret owns the text), or -ENOMEM when
 * the stream could not be closed (a write ran out of memory): the text is freed and *ret left
 * alone.
 */
static inline int memstream_close(MemStream *m, char **ret) {
        FILE *f = m->f;
        m->f = NULL;
        if (fclose(f) != 0) {
                free(m->buf);
                m->buf = NULL;
                return -ENOMEM;
        }
        *ret = m->buf;
        m->buf = NULL;
        return 0;
}

/* memstream_close() for a caller whose only error is "no text": the text, or NULL (ENOMEM). */
static inline char *memstream_close_text(MemStream *m) {
        char *text = NULL;
        (void) memstream_close(m, &text);
        return text;
}

/* Drop m: close an open stream, free the text (for _cleanup_). */
static inline void memstream_done(MemStream *m) {
        if (m->f)
                (void) fclose(m->f);
        m->f = NULL;
        free(m->buf);
        m->buf = NULL;
}
