/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "memstream.h"
#include "parse.h"
#include "strv.h"

char *strip_newline(char *s) {
        size_t l = strlen(s);
        if (l > 0 && s[l - 1] == '\n')
                s[l - 1] = 0;
        return s;
}

/* Length of s without one trailing newline. */
static size_t value_length(const char *s) {
        size_t l = strlen(s);
        if (l > 0 && s[l - 1] == '\n')
                l--;
        return l;
}

int parse_u64(const char *s, uint64_t *ret) {
        assert(ret);
        size_t l = value_length(s);
        uint64_t v = 0;

        if (l == 0)
                return -EINVAL;
        for (size_t i = 0; i < l; i++) {
                if (!isdigit((unsigned char) s[i]))
                        return -EINVAL;
                unsigned d = s[i] - '0';
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        *ret = v;
        return 0;
}

int parse_u64_range(const char *s, uint64_t min, uint64_t max, uint64_t *ret) {
        assert(s);
        assert(ret);
        bool neg = s[0] == '-';
        uint64_t v;
        int r = parse_u64(s + neg, &v);
        if (r < 0)
                return neg && r == -ERANGE ? -ERANGE : r;
        if (neg && v > 0)
                return -ERANGE;         /* a number, below every unsigned range */
        if (v < min || v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

int parse_int(const char *s, int *ret) {
        assert(s);
        assert(ret);
        bool neg = s[0] == '-';
        uint64_t v;
        int r = parse_u64(s + neg, &v);
        if (r < 0)
                return r;
        if (neg ? v > (uint64_t) INT_MAX + 1 : v > INT_MAX)
                return -ERANGE;
        *ret = neg ? (int) -(int64_t) v : (int) v;
        return 0;
}

void cpuset_done(CpuSet *s) {
        free(s->bits);
        *s = (CpuSet) {};
}

int cpuset_copy(const CpuSet *s, CpuSet *ret) {
        assert(s);
        assert(ret);
        CpuSet c = {};
        if (s->n_words > 0) {
                c.bits = malloc(s->n_words * sizeof(uint64_t));
                if (!c.bits)
                        return -ENOMEM;
                memcpy(c.bits, s->bits, s->n_words * sizeof(uint64_t));
                c.n_words = s->n_words;
        }
        *ret = c;
        return 0;
}

int cpuset_add(CpuSet *s, unsigned cpu) {
        if (cpu >= BLKMQD_CPUS_MAX)
                return -ERANGE;
        unsigned w = cpu / 64;
        if (w >= s->n_words) {
                uint64_t *b = realloc(s->bits, (w + 1) * sizeof(uint64_t));
                if (!b)
                        return -ENOMEM;
                memset(b + s->n_words, 0, (w + 1 - s->n_words) * sizeof(uint64_t));
                s->bits = b;
                s->n_words = w + 1;
        }
        s->bits[w] |= UINT64_C(1) << (cpu % 64);
        return 0;
}

bool cpuset_isset(const CpuSet *s, unsigned cpu) {
        unsigned w = cpu / 64;
        return w < s->n_words && (s->bits[w] & (UINT64_C(1) << (cpu % 64)));
}

unsigned cpuset_count(const CpuSet *s) {
        assert(s);
        unsigned n = 0;
        for (unsigned i = 0; i < s->n_words; i++)
                n += __builtin_popcountll(s->bits[i]);
        return n;
}

static uint64_t word(const CpuSet *s, unsigned i) {
        return i < s->n_words ? s->bits[i] : 0;
}

bool cpuset_equal(const CpuSet *a, const CpuSet *b) {
        assert(a);
        assert(b);
        for (unsigned i = 0; i < MAX(a->n_words, b->n_words); i++)
                if (word(a, i) != word(b, i))
                        return false;
        return true;
}

bool cpuset_is_subset(const CpuSet *a, const CpuSet *b) {
        assert(a);
        for (unsigned i = 0; i < a->n_words; i++)
                if (a->bits[i] & ~word(b, i))
                        return false;
        return true;
}

/* Parse a CPU number at *p, advancing *p. */
static int parse_cpu_number(const char **p, unsigned *ret) {
        unsigned long v = 0;
        const char *q = *p;

        if (!isdigit((unsigned char) *q))
                return -EINVAL;
        for (; isdigit((unsigned char) *q); q++) {
                v = v * 10 + (*q - '0');
                if (v >= BLKMQD_CPUS_MAX)
                        return -ERANGE;
        }
        *p = q;
        *ret = v;
        return 0;
}

int cpuset_parse(const char *s, CpuSet *ret) {
        assert(ret);
        _cleanup_(cpuset_done) CpuSet set = {};
        size_t l = value_length(s);
        const char *p = s, *end = s + l;
        int r;

        while (p < end) {
                unsigned a, b;

                r = parse_cpu_number(&p, &a);
                if (r < 0)
                        return r;
                b = a;
                if (p < end && *p == '-') {
                        p++;
                        r = parse_cpu_number(&p, &b);
                        if (r < 0)
                                return r;
                        if (b < a)
                                return -EINVAL;
                }
                for (unsigned c = a; c <= b; c++) {
                        r = cpuset_add(&set, c);
                        if (r < 0)
                                return r;
                }
                if (p == end)
                        break;
                if (*p != ',')
                        return -EINVAL;
                p++;
                if (p < end && *p == ' ')       /* mq/N/cpu_list uses ", " */
                        p++;
                if (p == end)                   /* trailing comma */
                        return -EINVAL;
        }

        *ret = set;
        set = (CpuSet) {};
        return 0;
}

char *cpuset_format(const CpuSet *s) {
        assert(s);
        _cleanup_(memstream_done) MemStream m = {};
        FILE *f = memstream_open(&m);
        if (!f)
                return NULL;

        bool first = true;
        unsigned n = s->n_words * 64;
        for (unsigned c = 0; c < n; c++) {
                if (!cpuset_isset(s, c))
                        continue;
                unsigned e = c;
                while (e + 1 < n && cpuset_isset(s, e + 1))
                        e++;
                fprintf(f, "%s%u", first ? "" : ",", c);
                if (e > c)
                        fprintf(f, "-%u", e);
                first = false;
                c = e;
        }
        return memstream_close_text(&m);
}

int cpuset_parse_mask(const char *s, CpuSet *ret) {
        assert(ret);
        _cleanup_(cpuset_done) CpuSet set = {};
        size_t l = value_length(s), nwords = 1;
        int r;

        if (l == 0)
                return -EINVAL;
        for (size_t i = 0; i < l; i++)
                nwords += s[i] == ',';
        /* words from the right: the last is CPUs 0-31 */
        const char *end = s + l;
        for (size_t w = 0; w < nwords; w++) {
                const char *b = end;
                while (b > s && b[-1] != ',')
                        b--;
                size_t wl = (size_t) (end - b);
                if (wl == 0 || wl > 8)
                        return -EINVAL;
                uint32_t v = 0;
                for (const char *p = b; p < end; p++) {
                        int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 :
                                *p >= 'A' && *p <= 'F' ? *p - 'A' + 10 : -1;
                        if (d < 0)
                                return -EINVAL;
                        v = v << 4 | (uint32_t) d;
                }
                for (unsigned bit = 0; bit < 32; bit++)
                        if (v & (UINT32_C(1) << bit)) {
                                r = cpuset_add(&set, w * 32 + bit);
                                if (r < 0)
                                        return r;
                        }
                end = b > s ? b - 1 : s;
        }
        *ret = set;
        set = (CpuSet) {};
        return 0;
}

char *cpuset_format_mask(const CpuSet *s) {
        assert(s);
        unsigned words = 0;
        for (unsigned c = 0; c < s->n_words * 64; c++)
                if (cpuset_isset(s, c))
                        words = c / 32 + 1;
        if (words == 0)
                return strdup("0");
        char *buf = malloc(words * 9 + 1), *p = buf;
        if (!buf)
                return NULL;
        for (unsigned w = words; w-- > 0;) {
                uint32_t v = 0;
                for (unsigned bit = 0; bit < 32; bit++)
                        if (cpuset_isset(s, w * 32 + bit))
                                v |= UINT32_C(1) << bit;
                p += sprintf(p, w == words - 1 ? "%x" : ",%08x", v);
        }
        return buf;
}

int parse_scheduler(const char *s, char ***ret_available, char **ret_current, bool *ret_configurable) {
        _cleanup_strv_free_ char **available = NULL;
        _cleanup_free_ char *current = NULL, *copy = NULL;
        bool bracketed = false;
        int r;

        copy = strndup(s, value_length(s));
        if (!copy)
                return -ENOMEM;

        char *save = NULL;
        for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
                size_t l = strlen(tok);
                bool open = tok[0] == '[', close = tok[l - 1] == ']';

                if (open != close || (open && l < 3))
                        return -EINVAL;
                if (open) {
                        if (current)
                                return -EINVAL;
                        tok[l - 1] = 0;
                        tok++;
                        current = strdup(tok);
                        if (!current)
                                return -ENOMEM;
                        bracketed = true;
                }
                if (strchr(tok, '[') || strchr(tok, ']'))
                        return -EINVAL;
                r = strv_extend(&available, tok);
                if (r < 0)
                        return r;
        }
        if (!available)
                return -EINVAL;

        if (ret_configurable)
                *ret_configurable = bracketed;
        if (ret_available)
                *ret_available = TAKE_PTR(available);
        if (ret_current)
                *ret_current = TAKE_PTR(current);
        return 0;
}

bool flags_has_token(const char *s, const char *token) {
        size_t l = strlen(token);
        if (l == 0)
                return false;   /* strstr() finds "" everywhere: p += 0 would never end */
        for (const char *p = s; (p = strstr(p, token)); p += l) {
                bool start = p == s || strchr("| \n\t", p[-1]);
                bool end = strchr("| \n\t", p[l]) != NULL;   /* also matches the final NUL */
                if (start && end)
                        return true;
        }
        return false;
}

static char *name_map(const char *s, char from, char to, char *buf, size_t size) {
        size_t l = strlen(s);
        if (l >= size)
                return NULL;
        for (size_t i = 0; i <= l; i++)
                buf[i] = s[i] == from ? to : s[i];
        return buf;
}

char *disk_name_from_kernel(const char *kernel_name, char *buf, size_t size) {
        return name_map(kernel_name, '/', '!', buf, size);
}

char *disk_name_to_kernel(const char *name, char *buf, size_t size) {
        return name_map(name, '!', '/', buf, size);
}

bool disk_name_is_valid(const char *name) {
        size_t l = strlen(name);
        return l > 0 && l < 32 && !strchr(name, '/') && !streq(name, ".") && !streq(name, "..");
}

char *keyval_list_get(const char *list, const char *key) {
        size_t kl = strlen(key);
        for (const char *p = list; p && *p;) {
                size_t l = strcspn(p, ",\n");
                if (l > kl && strncmp(p, key, kl) == 0 && p[kl] == '=')
                        return strndup(p + kl + 1, l - kl - 1);
                p += l;
                if (*p != ',')
                        break;
                p++;
        }
        return NULL;
}

int proc_devices_block_name(const char *text, unsigned major, char *buf, size_t size) {
        const char *p = text ? strstr(text, "Block devices:\n") : NULL;
        if (!p || (p != text && p[-1] != '\n'))
                return -EINVAL;
        for (p = strchr(p, '\n') + 1; *p && *p != '\n';) {
                size_t l = strcspn(p, "\n");
                unsigned m;
                int n = 0;
                if (sscanf(p, "%u %n", &m, &n) == 1 && n > 0 && (size_t) n < l && m == major) {
                        size_t nl = l - (size_t) n;
                        if (nl + 1 > size || memchr(p + n, ' ', nl))
                                return -EINVAL;
                        memcpy(buf, p + n, nl);
                        buf[nl] = 0;
                        return 0;
                }
                p += l;
                if (*p == '\n')
                        p++;
        }
        return -ENOENT;
}
