/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "state.h"
#include "strv.h"

static const char * const section_dir[_STATE_SECTION_MAX] = {
        [STATE_OVERRIDES] = "overrides",
        [STATE_ORIGINALS] = "originals",
        [STATE_MEASURED]  = "measured",
};

struct State {
        char *dir;
        int lock_fd;            /* the directory, flock()ed */
        int fd[_STATE_SECTION_MAX];
};

const char *state_dir(const State *s) {
        assert(s);
        return s->dir;
}

static int mkdir_p(const char *path, mode_t mode) {
        _cleanup_free_ char *p = strdup(path);
        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++)
                if (*s == '/') {
                        *s = 0;
                        if (mkdir(p, 0755) < 0 && errno != EEXIST)
                                return negative_errno();
                        *s = '/';
                }
        if (mkdir(p, mode) < 0 && errno != EEXIST)
                return negative_errno();
        return 0;
}

int state_open(const char *dir, State **ret) {
        assert(ret);
        int r = mkdir_p(dir, 0700);
        if (r < 0)
                return r;

        _cleanup_(state_freep) State *s = calloc(1, sizeof(State));
        if (!s)
                return -ENOMEM;
        for (size_t i = 0; i < _STATE_SECTION_MAX; i++)
                s->fd[i] = -EBADF;
        s->lock_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (s->lock_fd < 0)
                return negative_errno();
        if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0)
                return errno == EWOULDBLOCK ? -EBUSY : negative_errno();
        s->dir = strdup(dir);
        if (!s->dir)
                return -ENOMEM;
        for (size_t i = 0; i < _STATE_SECTION_MAX; i++) {
                _cleanup_free_ char *sub = NULL;
                if (asprintf(&sub, "%s/%s", dir, section_dir[i]) < 0)
                        return -ENOMEM;
                r = mkdir_p(sub, 0700);
                if (r < 0)
                        return r;
                s->fd[i] = open(sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (s->fd[i] < 0)
                        return negative_errno();
        }
        *ret = TAKE_PTR(s);
        return 0;
}

State *state_free(State *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < _STATE_SECTION_MAX; i++)
                closep(&s->fd[i]);
        closep(&s->lock_fd);
        free(s->dir);
        free(s);
        return NULL;
}

/* FNV-1a, 64 bit: a stable fingerprint for identities too long for a file name. */
static uint64_t fnv1a(const char *s) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        for (; *s; s++)
                h = (h ^ (unsigned char) *s) * UINT64_C(0x100000001b3);
        return h;
}

#define ESCAPED_MAX 200         /* NAME_MAX headroom for ".tmp" and ".corrupt" */

char *state_escape_identity(const char *identity) {
        size_t l = strlen(identity);
        char *r = malloc(l * 3 + 1), *p = r;
        if (!r)
                return NULL;
        for (const char *c = identity; *c; c++) {
                /* '.' first would make "." / ".." or a hidden file: escape it like anything else */
                if (isalnum((unsigned char) *c) || strchr("-_:@", *c) || (*c == '.' && c != identity))
                        *p++ = *c;
                else
                        p += sprintf(p, "%%%02x", (unsigned char) *c);
        }
        *p = 0;
        if (strlen(r) > ESCAPED_MAX)
                /* keep a readable prefix, make it unique with a hash of the whole identity */
                sprintf(r + ESCAPED_MAX - 17, "~%016" PRIx64, fnv1a(identity));
        return r;
}

char *state_format(StateSection section, const char *identity, char * const *kv) {
        char *buf = NULL;
        size_t size = 0;

        if (strv_length(kv) == 0)
                return strdup("");
        FILE *f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        fprintf(f, "# blkmqd %s for %s\n", section_dir[section], identity);
        for (size_t i = 0; kv[i] && kv[i + 1]; i += 2)
                fprintf(f, "%s=%s\n", kv[i], kv[i + 1]);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

int state_save_text(State *s, StateSection section, const char *identity, const char *text) {
        assert(s);
        _cleanup_free_ char *name = state_escape_identity(identity), *tmp = NULL;
        int dfd = s->fd[section];
        size_t size = strlen(text);
        int r;

        if (!name)
                return -ENOMEM;
        if (size == 0) {
                if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
                        return negative_errno();
                return 0;
        }

        if (asprintf(&tmp, ".%s.tmp", name) < 0)
                return -ENOMEM;
        _cleanup_close_ int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return negative_errno();
        ssize_t k = write(fd, text, size);
        if (k != (ssize_t) size || fsync(fd) < 0) {
                r = k >= 0 && k != (ssize_t) size ? -EIO : negative_errno();
                (void) unlinkat(dfd, tmp, 0);
                return r;
        }
        if (renameat(dfd, tmp, dfd, name) < 0) {
                r = negative_errno();
                (void) unlinkat(dfd, tmp, 0);
                return r;
        }
        (void) fsync(dfd);
        return 0;
}

int state_save(State *s, StateSection section, const char *identity, char * const *kv) {
        _cleanup_free_ char *text = state_format(section, identity, kv);
        if (!text)
                return -ENOMEM;
        return state_save_text(s, section, identity, text);
}

int state_load(State *s, StateSection section, const char *identity, char ***ret) {
        assert(s);
        assert(ret);
        _cleanup_free_ char *name = state_escape_identity(identity), *line = NULL;
        _cleanup_strv_free_ char **l = NULL;
        int dfd = s->fd[section];
        size_t n = 0;
        int r = 0;

        if (!name)
                return -ENOMEM;
        int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) {
                if (errno == ENOENT) {
                        *ret = NULL;
                        return 0;
                }
                return negative_errno();
        }
        FILE *f = fdopen(fd, "r");
        if (!f) {
                close(fd);
                return -ENOMEM;
        }
        while (getline(&line, &n, f) > 0) {
                size_t len = strlen(line);
                if (len == 0 || line[len - 1] != '\n') {       /* a torn last line */
                        r = -EBADMSG;
                        break;
                }
                strip_newline_inplace(line);
                if (line[0] == '#' || line[0] == 0)
                        continue;
                char *eq = strchr(line, '=');
                if (!eq || eq == line) {
                        r = -EBADMSG;
                        break;
                }
                *eq = 0;
                if (strv_extend(&l, line) < 0 || strv_extend(&l, eq + 1) < 0) {
                        r = -ENOMEM;
                        break;
                }
        }
        fclose(f);

        if (r == -EBADMSG) {
                _cleanup_free_ char *corrupt = NULL;
                if (asprintf(&corrupt, "%s.corrupt", name) >= 0)
                        (void) renameat(dfd, name, dfd, corrupt);
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(l);
        return 0;
}

int state_overrides_kv(const PolicyOverrides *o, char ***ret) {
        assert(o);
        assert(ret);
        _cleanup_strv_free_ char **kv = NULL;

        for (Knob k = 0; k < _KNOB_MAX; k++) {
                const char *v = policy_overrides_get(o, k);
                if (v && (strv_extend(&kv, knob_to_string(k)) < 0 || strv_extend(&kv, v) < 0))
                        return -ENOMEM;
        }
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++) {
                const IoschedTunableInfo *i = iosched_tunable_info(t);
                char key[128];
                snprintf(key, sizeof(key), "iosched.%s.%s", i->elevator, i->name);
                if (o->iosched[t] && (strv_extend(&kv, key) < 0 || strv_extend(&kv, o->iosched[t]) < 0))
                        return -ENOMEM;
        }
        if ((o->disabled || o->enabled_set) &&
            (strv_extend(&kv, "enabled") < 0 || strv_extend(&kv, o->disabled ? "0" : "1") < 0))
                return -ENOMEM;
        *ret = TAKE_PTR(kv);
        return 0;
}

int state_save_overrides(State *s, const char *identity, const PolicyOverrides *o) {
        _cleanup_strv_free_ char **kv = NULL;
        int r = state_overrides_kv(o, &kv);
        if (r < 0)
                return r;
        return state_save(s, STATE_OVERRIDES, identity, kv);
}

int state_load_overrides(State *s, const char *identity, char ***ret) {
        return state_load(s, STATE_OVERRIDES, identity, ret);
}
