/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "macro.h"
#include "memstream.h"
#include "modules.h"
#include "strv.h"

static const char * const state_table[_MODPARAM_STATE_MAX] = {
        [MODPARAM_PROPOSED]       = "proposed",
        [MODPARAM_PENDING_REBOOT] = "pending-reboot",
        [MODPARAM_PENDING_RESET]  = "pending-reset",
        [MODPARAM_EFFECTIVE]      = "effective",
        [MODPARAM_NOT_EFFECTIVE]  = "not-effective",
        [MODPARAM_UNSUPPORTED]    = "unsupported",
        [MODPARAM_CONFLICT]       = "conflict",
        [MODPARAM_ERROR]          = "error",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(module_param_state, ModuleParamState, state_table, _MODPARAM_STATE_MAX);

static void param_done(ModuleParam *p) {
        free(p->module);
        free(p->param);
        free(p->current);
        free(p->wanted);
        free(p->original);
        free(p->wanted_by);
        free(p->note);
}

void modules_done(Modules *m) {
        for (size_t i = 0; i < m->n_params; i++)
                param_done(&m->params[i]);
        free(m->params);
        free(m->boot_file);
        *m = (Modules) {};
}

const ModuleParam *modules_get(const Modules *m, const char *module, const char *param) {
        for (size_t i = 0; i < m->n_params; i++)
                if (streq(m->params[i].module, module) && streq(m->params[i].param, param))
                        return &m->params[i];
        return NULL;
}

static int64_t boot_time(HostFs *h) {
        _cleanup_free_ char *stat = NULL;
        if (hostfs_read(h, HOSTFS_PROCFS, "stat", &stat) < 0)
                return -1;
        const char *b = strstr(stat, "\nbtime ");
        long long t;
        return b && sscanf(b + 7, "%lld", &t) == 1 ? t : -1;
}

bool modprobe_file_is_blkmqd(const char *text) {
        const char *p = startswith(text, MODPROBE_D_HEADER "\n");
        bool wanted_by = false;

        if (!p)
                return false;
        /* only what modprobe_content() writes: pairs of "# wanted by ..." and "options M P=V" */
        while (*p) {
                size_t l = strcspn(p, "\n");
                char m[128], pv[256], rest;
                if (p[l] != '\n')
                        return false;           /* a torn or hand-appended last line */
                if (!wanted_by && startswith(p, "# wanted by "))
                        wanted_by = true;
                else if (wanted_by && startswith(p, "options ") && l < 384 &&
                         sscanf(p, "options %127s %255s%c", m, pv, &rest) == 3 && rest == '\n' && strchr(pv, '='))
                        wanted_by = false;
                else
                        return false;
                p += l + 1;
        }
        return !wanted_by;
}

void modules_init(HostFs *h, Modules *m) {
        _cleanup_free_ char *text = NULL;
        int64_t mtime, btime = boot_time(h);

        /* Who wrote it is in the file itself: a blkmqd.conf left by an earlier run is blkmqd's
         * to update and remove, a file anyone else wrote or edited never is. */
        if (hostfs_read(h, HOSTFS_MODPROBE_D, MODPROBE_D_FILE, &text) < 0)
                return;
        m->file_written = modprobe_file_is_blkmqd(text);
        if (!m->file_written)
                log_warning("/etc/modprobe.d/" MODPROBE_D_FILE " exists and is not blkmqd's (no blkmqd header, or edited "
                            "since): blkmqd will neither change nor remove it");
        if (hostfs_mtime(h, HOSTFS_MODPROBE_D, MODPROBE_D_FILE, &mtime) < 0 || btime < 0 || mtime >= btime)
                return;
        m->boot_file = TAKE_PTR(text);
}

/* "options <module> <param>=<value>" present in text? */
static bool file_has_option(const char *text, const char *module, const char *param, const char *value) {
        char line[512];
        snprintf(line, sizeof(line), "options %s %s=%s\n", module, param, value);
        return text && strstr(text, line);
}

static ModuleParam *param_get_or_add(Modules *m, const char *module, const char *param) {
        ModuleParam *p = (ModuleParam *) modules_get(m, module, param);
        if (p)
                return p;
        ModuleParam *n = realloc(m->params, (m->n_params + 1) * sizeof(ModuleParam));
        if (!n)
                return NULL;
        m->params = n;
        p = &n[m->n_params];
        *p = (ModuleParam) { .module = strdup(module), .param = strdup(param) };
        if (!p->module || !p->param) {
                param_done(p);
                return NULL;
        }
        m->n_params++;
        return p;
}

static int set_note(ModuleParam *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int set_note(ModuleParam *p, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = free_and_vasprintf(&p->note, fmt, ap);
        va_end(ap);
        return r;
}

/* Collect wishes: one entry per (module, param); disagreeing disks -> conflict. */
static int collect(Modules *m, const Registry *reg) {
        for (size_t i = 0; i < m->n_params; i++) {
                ModuleParam *p = &m->params[i];
                p->wanted = mfree_str(p->wanted);
                p->wanted_by = mfree_str(p->wanted_by);
                p->state = MODPARAM_PROPOSED;
        }
        for (size_t i = 0; i < reg->n_devices; i++) {
                const Device *d = reg->devices[i];
                if (!d->plan.manage || !d->facts)
                        continue;
                for (size_t j = 0; j < d->plan.n_modules; j++) {
                        const ModuleWish *w = &d->plan.modules[j];
                        ModuleParam *p = param_get_or_add(m, w->module, w->param);
                        if (!p)
                                return -ENOMEM;
                        if (p->wanted && !streq(p->wanted, w->value))
                                p->state = MODPARAM_CONFLICT;
                        else if (free_and_strdup(&p->wanted, w->value) < 0)
                                return -ENOMEM;
                        char *by = NULL;
                        if (asprintf(&by, "%s%s%s", p->wanted_by ?: "", p->wanted_by ? " " : "", d->name) < 0)
                                return -ENOMEM;
                        free(p->wanted_by);
                        p->wanted_by = by;

                        /* current value and existence, from the disk's facts */
                        for (size_t k = 0; k < d->facts->n_modparams; k++) {
                                const ModuleParamFacts *mf = &d->facts->modparams[k];
                                if (streq(mf->module, w->module) && streq(mf->param, w->param) &&
                                    free_and_strdup(&p->current, mf->value) < 0)
                                        return -ENOMEM;
                        }
                        p->root_disk = p->root_disk || d->facts->root_disk;
                }
        }
        return 0;
}

static char *modprobe_content(const Modules *m) {
        _cleanup_(memstream_done) MemStream text = {};
        FILE *f = memstream_open(&text);
        bool any = false;
        if (!f)
                return NULL;
        fputs(MODPROBE_D_HEADER "\n", f);
        for (size_t i = 0; i < m->n_params; i++) {
                const ModuleParam *p = &m->params[i];
                if (!p->wanted || !p->current || p->state == MODPARAM_CONFLICT)
                        continue;
                fprintf(f, "# wanted by %s\noptions %s %s=%s\n", strna(p->wanted_by), p->module, p->param, p->wanted);
                any = true;
        }
        return any ? memstream_close_text(&text) : NULL;
}

int modules_update(HostFs *h, Modules *m, const Registry *reg, const PolicyConfig *config, bool write) {
        int r = collect(m, reg);
        if (r < 0)
                return r;

        for (size_t i = 0; i < m->n_params; i++) {
                ModuleParam *p = &m->params[i];
                const KnownModuleParam *k = known_module_param(p->module, p->param);
                if (!p->wanted) {
                        p->state = MODPARAM_PROPOSED;
                        set_note(p, "no disk wants a value any more");
                        continue;
                }
                if (p->state == MODPARAM_CONFLICT) {
                        set_note(p, "disks %s want different values; nothing written", strna(p->wanted_by));
                        continue;
                }
                if (!p->current) {
                        p->state = MODPARAM_UNSUPPORTED;
                        set_note(p, "sysfs module/%s/parameters/%s does not exist in this kernel", p->module, p->param);
                        continue;
                }
                if (streq(p->current, p->wanted)) {
                        p->state = MODPARAM_EFFECTIVE;
                        set_note(p, "the running module has %s=%s", p->param, p->current);
                        continue;
                }
                if (file_has_option(m->boot_file, p->module, p->param, p->wanted)) {
                        p->state = MODPARAM_NOT_EFFECTIVE;
                        set_note(p, "in /etc/modprobe.d/" MODPROBE_D_FILE " at this boot, yet the module has %s=%s%s",
                                 p->param, p->current,
                                 p->root_disk ? ": the driver loads from the initramfs, rebuild it (update-initramfs -u)" : "");
                        continue;
                }
                const char *root_note = p->root_disk ?
                        "; the root filesystem is behind this driver: rebuild the initramfs (update-initramfs -u) before rebooting" : "";
                if (!write) {
                        p->state = MODPARAM_PROPOSED;
                        set_note(p, "ModuleParams=propose: add \"options %s %s=%s\" to /etc/modprobe.d (takes effect at %s)%s",
                                 p->module, p->param, p->wanted, k ? k->takes_effect : "next boot", root_note);
                        continue;
                }
                if (k && !k->load_time_only) {
                        char path[PATH_MAX];
                        snprintf(path, sizeof(path), "module/%s/parameters/%s", p->module, p->param);
                        if (!p->original && free_and_strdup(&p->original, p->current) < 0)
                                return -ENOMEM;
                        r = hostfs_write(h, HOSTFS_SYSFS, path, p->wanted);
                        if (r < 0) {
                                p->state = MODPARAM_ERROR;
                                set_note(p, "writing %s: %s", path, strerror(-r));
                                log_warning_errno(r, "Failed to set %s.%s=%s: %m", p->module, p->param, p->wanted);
                                continue;
                        }
                        p->state = MODPARAM_PENDING_RESET;
                        set_note(p, "written; takes effect at %s%s", k->takes_effect, root_note);
                } else {
                        p->state = MODPARAM_PENDING_REBOOT;
                        set_note(p, "in /etc/modprobe.d/" MODPROBE_D_FILE "; takes effect at %s%s",
                                 k ? k->takes_effect : "next boot", root_note);
                }
        }

        if (!write)
                return 0;

        _cleanup_free_ char *want = modprobe_content(m), *have = NULL;
        (void) hostfs_read(h, HOSTFS_MODPROBE_D, MODPROBE_D_FILE, &have);
        if (streq_ptr(want, have))
                return 0;
        if (have && !modprobe_file_is_blkmqd(have)) {
                /* someone else's file (or blkmqd's, edited by hand): never overwritten nor removed */
                m->file_written = false;
                if (!want)
                        return 0;
                if (!m->foreign_logged)
                        log_warning("/etc/modprobe.d/" MODPROBE_D_FILE " is not blkmqd's (no blkmqd header, or edited "
                                    "since): not overwriting it; move it away to let blkmqd write its own");
                m->foreign_logged = true;
                for (size_t i = 0; i < m->n_params; i++)
                        if (m->params[i].state == MODPARAM_PENDING_REBOOT) {
                                m->params[i].state = MODPARAM_ERROR;
                                set_note(&m->params[i], "/etc/modprobe.d/" MODPROBE_D_FILE " exists and is not blkmqd's "
                                         "(no blkmqd header, or edited since): left alone, nothing written");
                        }
                return 0;
        }
        m->foreign_logged = false;
        if (want) {
                r = hostfs_replace_file(h, HOSTFS_MODPROBE_D, MODPROBE_D_FILE, want);
                if (r >= 0) {
                        m->file_written = true;
                        log_info("Wrote /etc/modprobe.d/" MODPROBE_D_FILE);
                }
        } else if (have) {              /* blkmqd's (checked above), and nothing is wanted any more */
                r = hostfs_unlink(h, HOSTFS_MODPROBE_D, MODPROBE_D_FILE);
                if (r >= 0) {
                        m->file_written = false;
                        log_info("Removed /etc/modprobe.d/" MODPROBE_D_FILE ": no disk wants a module parameter any more");
                }
        }
        if (r < 0) {
                log_warning_errno(r, "Failed to update /etc/modprobe.d/" MODPROBE_D_FILE ": %m");
                for (size_t i = 0; i < m->n_params; i++)
                        if (m->params[i].state == MODPARAM_PENDING_REBOOT) {
                                m->params[i].state = MODPARAM_ERROR;
                                set_note(&m->params[i], "writing /etc/modprobe.d/" MODPROBE_D_FILE ": %s", strerror(-r));
                        }
        }
        (void) config;
        return 0;
}

int modules_originals(const Modules *m, char ***ret) {
        _cleanup_strv_free_ char **kv = NULL;
        for (size_t i = 0; i < m->n_params; i++) {
                const ModuleParam *p = &m->params[i];
                _cleanup_free_ char *key = NULL;
                if (!p->original)
                        continue;
                if (asprintf(&key, "%s.%s", p->module, p->param) < 0 || strv_extend(&kv, key) < 0 ||
                    strv_extend(&kv, p->original) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(kv);
        return 0;
}

int modules_load_originals(Modules *m, char * const *kv) {
        for (size_t i = 0; kv && kv[i] && kv[i + 1]; i += 2) {
                const char *dot = strchr(kv[i], '.');
                if (!dot || dot == kv[i] || !dot[1])
                        continue;
                _cleanup_free_ char *module = strndup(kv[i], dot - kv[i]);
                if (!module)
                        return -ENOMEM;
                const KnownModuleParam *k = known_module_param(module, dot + 1);
                if (!k || k->load_time_only)
                        continue;       /* only runtime values are written under /sys/module */
                ModuleParam *p = param_get_or_add(m, module, dot + 1);
                if (!p || free_and_strdup(&p->original, kv[i + 1]) < 0)
                        return -ENOMEM;
                log_info("Original %s=%s recorded by an earlier run will be put back by restore", kv[i], kv[i + 1]);
        }
        return 0;
}

int modules_restore(HostFs *h, Modules *m) {
        int n = 0, ret = 0, r;

        _cleanup_free_ char *have = NULL;
        r = hostfs_read(h, HOSTFS_MODPROBE_D, MODPROBE_D_FILE, &have);
        if (r >= 0 && !modprobe_file_is_blkmqd(have)) {
                if (m->file_written)
                        log_warning("/etc/modprobe.d/" MODPROBE_D_FILE " was edited since blkmqd wrote it: leaving it in place");
                m->file_written = false;
        } else if (r >= 0) {
                r = hostfs_unlink(h, HOSTFS_MODPROBE_D, MODPROBE_D_FILE);
                if (r < 0)
                        ret = log_warning_errno(r, "Failed to remove /etc/modprobe.d/" MODPROBE_D_FILE ": %m");
                else {
                        log_info("Removed /etc/modprobe.d/" MODPROBE_D_FILE);
                        m->file_written = false;
                        n++;
                }
        }
        for (size_t i = 0; i < m->n_params; i++) {
                ModuleParam *p = &m->params[i];
                char path[PATH_MAX];
                if (!p->original)
                        continue;
                snprintf(path, sizeof(path), "module/%s/parameters/%s", p->module, p->param);
                r = hostfs_write(h, HOSTFS_SYSFS, path, p->original);
                if (r < 0) {
                        if (ret >= 0)
                                ret = log_warning_errno(r, "Failed to restore %s.%s=%s: %m", p->module, p->param, p->original);
                        continue;
                }
                log_info("Restored %s.%s=%s", p->module, p->param, p->original);
                p->original = mfree_str(p->original);
                n++;
        }
        return ret < 0 ? ret : n;
}
