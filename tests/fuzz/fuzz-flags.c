/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer: flags_has_token(text, token). Input: token, one NUL byte, text (no NUL: token
 * is the first 32 bytes). A found token really is in the text, between separators.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *nul = memchr(data, 0, size);
        size_t tl = nul ? (size_t) (nul - (const char *) data) : (size < 32 ? size : 32);
        char *token = strndup((const char *) data, tl);
        char *text = strndup((const char *) data + tl + (nul ? 1 : 0), size - tl - (nul ? 1 : 0));
        if (!token || !text)
                goto out;

        bool found = flags_has_token(text, token);
        if (found) {
                assert(*token);
                assert(strstr(text, token));
        }
        /* a token made of separators alone is never a token */
        if (*token && strspn(token, "| \n\t") == strlen(token))
                assert(!found || strstr(text, token));
        /* the token is found when it is the whole text */
        if (*token && !strpbrk(token, "| \n\t"))
                assert(flags_has_token(token, token));
out:
        free(token);
        free(text);
        return 0;
}
