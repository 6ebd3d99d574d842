/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include "apply.h"
#include "cross-disk.h"
#include "log.h"
#include "macro.h"
#include "memstream.h"
#include "modules.h"
#include "parse.h"
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
        [MODPARAM_PENDING]        = "pending",
        [MODPARAM_TIMEOUT]        = "timeout",
        [MODPARAM_DEFERRED]       = "deferred",
        [MODPARAM_CHANGED_EXTERNALLY] = "changed-externally",
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
        free(p->owner);
        free(p->written);
        free(p->external);
}

void modules_done(Modules *m) {
        for (size_t i = 0; i < m->n_params; i++)
                param_done(&m->params[i]);
        free(m->params);
        free(m->boot_file);
        module_wishes_free(m->boot_options, m->n_boot_options);
        *m = (Modules) {};
}

void modules_history(const Modules *m, PolicyHistory *ret) {
        ret->boot_modules = m->boot_options;
        ret->n_boot_modules = m->n_boot_options;
}

/* The line after l's (its NUL at the end of the text when l's is the last one). */
static const char *next_line(const char *l) {
        l += strcspn(l, "\n");
        return *l ? l + 1 : l;
}

/* Line l as "options <module> <param>=<value>": true with module and pv filled, pv cut at the
 * '=' (pv is the parameter) and *ret_value pointing after it, into pv. */
static bool options_line(const char *l, char module[static 128], char pv[static 256], const char **ret_value) {
        if (sscanf(l, "options %127s %255s", module, pv) != 2)
                return false;
        char *eq = strchr(pv, '=');
        if (!eq)
                return false;
        *eq = 0;
        *ret_value = eq + 1;
        return true;
}

/* The "options <module> <param>=<value>" lines of a zz-blkmqd.conf (modprobe_file_is_blkmqd()). 0 or -ENOMEM. */
static int parse_options(const char *text, ModuleWish **ret, size_t *ret_n) {
        for (const char *l = text; l && *l; l = next_line(l)) {
                char module[128], pv[256];
                const char *value;
                if (!options_line(l, module, pv, &value))
                        continue;
                int r = module_wishes_add(ret, ret_n, module, pv, value);
                if (r < 0)
                        return r;
        }
        return 0;
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

/*
 * An earlier blkmqd's /etc/modprobe.d/blkmqd.conf (MODPROBE_D_FILE_OLD) sorted before the
 * distributions' files, whose options then won at the module's next load: renamed to
 * MODPROBE_D_FILE when it is in blkmqd's form and no MODPROBE_D_FILE exists (the rename keeps
 * its mtime: whether this boot read it is still told by it). One that is not blkmqd's is the
 * admin's and stays; with both present the old one, blkmqd's, is removed.
 */
static void modules_rename_old_file(HostFs *h) {
        _cleanup_free_ char *old = NULL;
        int r;

        if (hostfs_read(h, HOSTFS_MODPROBE_D, MODPROBE_D_FILE_OLD, &old) < 0 || !modprobe_file_is_blkmqd(old))
                return;
        if (hostfs_exists(h, HOSTFS_MODPROBE_D, MODPROBE_D_FILE)) {
                r = hostfs_unlink(h, HOSTFS_MODPROBE_D, MODPROBE_D_FILE_OLD);
                if (r < 0)
                        log_warning_errno(r, "Failed to remove the earlier /etc/modprobe.d/" MODPROBE_D_FILE_OLD " (blkmqd's, "
                                          "/etc/modprobe.d/" MODPROBE_D_FILE " is the one now), ignoring: %m");
                else
                        log_info("Removed the earlier /etc/modprobe.d/" MODPROBE_D_FILE_OLD ": /etc/modprobe.d/" MODPROBE_D_FILE
                                 " holds blkmqd's options now");
                return;
        }
        r = hostfs_rename_file(h, HOSTFS_MODPROBE_D, MODPROBE_D_FILE_OLD, MODPROBE_D_FILE);
        if (r < 0)
                log_warning_errno(r, "Failed to rename /etc/modprobe.d/" MODPROBE_D_FILE_OLD " to " MODPROBE_D_FILE
                                  " (a distribution's file sorting after it wins at the module's next load): %m");
        else
                log_info("Renamed /etc/modprobe.d/" MODPROBE_D_FILE_OLD " to " MODPROBE_D_FILE ": modprobe reads the files "
                         "by name and the last value wins, so blkmqd's options come after the distribution's files");
}

void modules_init(HostFs *h, Modules *m) {
        _cleanup_free_ char *text = NULL;
        int64_t mtime, btime = boot_time(h);

        /* Who wrote it is in the file itself: a zz-blkmqd.conf left by an earlier run is blkmqd's
         * to update and remove, a file anyone else wrote or edited never is. */
        modules_rename_old_file(h);
        if (hostfs_read(h, HOSTFS_MODPROBE_D, MODPROBE_D_FILE, &text) < 0)
                return;
        m->file_written = modprobe_file_is_blkmqd(text);
        if (!m->file_written)
                log_warning("/etc/modprobe.d/" MODPROBE_D_FILE " exists and is not blkmqd's (no blkmqd header, or edited "
                            "since): blkmqd will neither change nor remove it");
        if (hostfs_mtime(h, HOSTFS_MODPROBE_D, MODPROBE_D_FILE, &mtime) < 0 || btime < 0 || mtime >= btime)
                return;
        if (m->file_written && parse_options(text, &m->boot_options, &m->n_boot_options) < 0)
                log_warning_errno(ENOMEM, "Out of memory reading /etc/modprobe.d/" MODPROBE_D_FILE "'s options: %m");
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

/* The disks' wishes merged (policies/cross-disk.h policy_modules_merge(): one entry per
 * (module, param), disagreeing disks a conflict) into the parameters' state. */
static int collect(Modules *m, const Registry *reg) {
        for (size_t i = 0; i < m->n_params; i++) {
                ModuleParam *p = &m->params[i];
                p->wanted = mfree_str(p->wanted);
                p->wanted_by = mfree_str(p->wanted_by);
                p->state = MODPARAM_PROPOSED;
                p->unsupported = false;
                p->held = false;
                p->deferred = false;
                p->owner = mfree_str(p->owner);
        }
        _cleanup_free_ PolicyPeer *peers = calloc(reg->n_devices ?: 1, sizeof(PolicyPeer));
        if (!peers)
                return -ENOMEM;
        size_t n_peers = 0;
        for (size_t i = 0; i < reg->n_devices; i++) {
                const Device *d = reg->devices[i];
                if (d->plan.manage && d->facts && (d->plan.n_modules > 0 || d->plan.n_modules_deferred > 0))
                        peers[n_peers++] = (PolicyPeer) { .name = d->name, .facts = d->facts, .plan = &d->plan };
        }
        ModuleMerged *merged = NULL;
        size_t n_merged = 0;
        int r = policy_modules_merge(peers, n_peers, &merged, &n_merged);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_merged; i++) {
                ModuleMerged *e = &merged[i];
                ModuleParam *p = param_get_or_add(m, e->module, e->param);
                if (!p) {
                        r = -ENOMEM;
                        break;
                }
                p->wanted = TAKE_PTR(e->wanted);
                p->wanted_by = TAKE_PTR(e->wanted_by);
                p->owner = TAKE_PTR(e->owner);
                if (e->conflict)
                        p->state = MODPARAM_CONFLICT;
                p->unsupported = e->unsupported;
                p->root_disk = p->root_disk || e->root_disk;
                p->deferred = e->deferred;
        }
        module_merged_free(merged, n_merged);
        return r;
}

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

/*
 * A journal record about one module parameter, as apply_log_knob() writes one about a disk's
 * knob: MESSAGE_ID= (what happened), BLKMQD_KNOB=<module>.<param>, BLKMQD_MODULE=,
 * BLKMQD_PARAM=, BLKMQD_OLD_VALUE= and BLKMQD_NEW_VALUE= where there are values; no DEVICE=
 * (a parameter is the module's, not one disk's).
 */
static void log_param(const ModuleParam *p, int level, const char *message_id, const char *old, const char *new,
                      const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void log_param(const ModuleParam *p, int level, const char *message_id, const char *old, const char *new,
                      const char *fmt, ...) {
        _cleanup_free_ char *f_knob = NULL, *f_mod = NULL, *f_param = NULL, *f_old = NULL, *f_new = NULL;
        const char *fields[6] = {};
        size_t n = 0;
        va_list ap;
        if (asprintf(&f_knob, "BLKMQD_KNOB=%s.%s", p->module, p->param) >= 0)
                fields[n++] = f_knob;
        if (asprintf(&f_mod, "BLKMQD_MODULE=%s", p->module) >= 0)
                fields[n++] = f_mod;
        if (asprintf(&f_param, "BLKMQD_PARAM=%s", p->param) >= 0)
                fields[n++] = f_param;
        if (old && asprintf(&f_old, "BLKMQD_OLD_VALUE=%s", old) >= 0)
                fields[n++] = f_old;
        if (new && asprintf(&f_new, "BLKMQD_NEW_VALUE=%s", new) >= 0)
                fields[n++] = f_new;
        va_start(ap, fmt);
        log_fullv(level, 0, NULL, message_id, fields, __FILE__, __LINE__, __func__, fmt, ap);
        va_end(ap);
        if (streq(message_id, BLKMQD_MESSAGE_EXTERNAL_CHANGE))
                apply_count_knob_record(KNOB_RECORD_EXTERNAL);  /* blkmqd_external_changes_total, as a disk's */
}

/* Seconds (rounded up) until the war's next rewrite may come. */
static unsigned war_left_sec(const Backoff *b, uint64_t now) {
        return b->retry_usec > now ? (unsigned) ((b->retry_usec - now + 999999) / 1000000) : 0;
}

/*
 * A runtime parameter blkmqd wrote at this boot (p->written, still its wish) that has another
 * value now, neither blkmqd's nor the original (the value before blkmqd: what a module reload
 * gives back, which makes blkmqd's write simply gone): someone else's, as a disk's knob is
 * (apply/apply.c). Reassert=no (or nothing to be written): said once in the journal, left, and
 * not put back at stop or restore. Reassert=yes: rewritten, with the disk knobs' backoff when
 * it is changed again. Returns true when the parameter is decided (changed externally, left),
 * false when the write path goes on (a rewrite, or no external change).
 */
static bool external_change(Modules *m, ModuleParam *p, bool write) {
        if (!p->written || !p->current || !streq(p->written, p->wanted) || streq(p->current, p->written))
                return false;
        if (p->original && streq(p->current, p->original)) {
                /* the module has its own value again (a reload of it): nothing of blkmqd's left */
                p->written = mfree_str(p->written);
                p->external = mfree_str(p->external);
                return false;
        }
        bool transition = !streq_ptr(p->external, p->current);
        if (transition && free_and_strdup(&p->external, p->current) < 0)
                return false;
        const char *next = m->file_written ? "; the next boot still gets blkmqd's value from /etc/modprobe.d/" MODPROBE_D_FILE : "";
        if (!m->reassert || !write) {
                if (transition)
                        log_param(p, LOG_NOTICE, BLKMQD_MESSAGE_EXTERNAL_CHANGE, p->written, p->current,
                                  "Module parameter %s.%s changed externally to %s (blkmqd wrote %s); leaving it (Reassert=no)",
                                  p->module, p->param, p->current, p->written);
                p->state = MODPARAM_CHANGED_EXTERNALLY;
                set_note(p, "changed externally to %s (blkmqd wrote %s); left alone (Reassert=no): no longer blkmqd's, "
                         "not put back at stop or restore%s", p->current, p->written, next);
                return true;
        }
        uint64_t now = now_usec();
        if (p->war.level > 0 && now < p->war.retry_usec) {
                p->state = MODPARAM_CHANGED_EXTERNALLY;
                set_note(p, "changed externally to %s again (blkmqd wrote %s); write war: Reassert=yes rewrites it in %u s",
                         p->current, p->written, war_left_sec(&p->war, now));
                return true;
        }
        if (p->war.level > 0 && now - p->war.last_usec > 2 * APPLY_BACKOFF_MAX_USEC)
                p->war.level = 0;
        p->war.level++;
        p->war.last_usec = now;
        p->war.retry_usec = now + apply_backoff_delay(p->war.level);
        log_param(p, p->war.level >= 2 ? LOG_WARNING : LOG_NOTICE, BLKMQD_MESSAGE_EXTERNAL_CHANGE, p->written, p->current,
                  "Module parameter %s.%s changed externally to %s (blkmqd wrote %s); rewritten (Reassert=yes)%s",
                  p->module, p->param, p->current, p->written,
                  p->war.level >= 2 ? ": write war, further rewrites back off" : "");
        return false;
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
                if (!p->wanted || (!p->current && !p->held) || p->unsupported || p->deferred ||
                    p->state == MODPARAM_CONFLICT)
                        continue;
                fprintf(f, "# wanted by %s\noptions %s %s=%s\n", strna(p->wanted_by), p->module, p->param, p->wanted);
                any = true;
        }
        return any ? memstream_close_text(&text) : NULL;
}

/* The note of a parameter in zz-blkmqd.conf (pending-reboot). */
static void set_reboot_note(ModuleParam *p) {
        const KnownModuleParam *k = known_module_param(p->module, p->param);
        set_note(p, "in /etc/modprobe.d/" MODPROBE_D_FILE "; takes effect at %s%s", k ? k->takes_effect : "next boot",
                 p->root_disk ? "; the root filesystem is behind this driver: rebuild the initramfs (update-initramfs -u) before rebooting" : "");
}

/* The parameter a WRITE_OP_WRITE of path "module/<m>/parameters/<p>" is about, or NULL. */
static ModuleParam *param_of_path(Modules *m, const char *path) {
        for (size_t i = 0; i < m->n_params; i++) {
                char p[PATH_MAX];
                snprintf(p, sizeof(p), "module/%s/parameters/%s", m->params[i].module, m->params[i].param);
                if (streq(p, path))
                        return &m->params[i];
        }
        return NULL;
}

static int job_add(WriteJob **j, const char *lane) {
        if (!*j && !(*j = write_job_new(lane)))
                return -ENOMEM;
        (*j)->stop_on_error = false;    /* one parameter's failure is no reason to skip the others */
        return 0;
}

/* p->current = what /sys/module/<m>/parameters/<p> holds now (NULL: no such parameter). 0 or -ENOMEM. */
static int read_current(HostFs *h, ModuleParam *p) {
        char path[PATH_MAX];
        _cleanup_free_ char *v = NULL;
        snprintf(path, sizeof(path), "module/%s/parameters/%s", p->module, p->param);
        if (hostfs_read(h, HOSTFS_SYSFS, path, &v) >= 0)
                strip_newline(v);
        return free_and_strdup(&p->current, v);
}

/* The kernel's value after blkmqd's write or put-back of op (its read back, else what was written). */
static int current_after(ModuleParam *p, const WriteOp *op) {
        _cleanup_free_ char *v = op->read_back && op->read_result >= 0 && op->read ? strdup(op->read) : strdup(op->value);
        if (!v)
                return -ENOMEM;
        strip_newline(v);
        return free_and_strdup(&p->current, v);
}

/*
 * The state of a parameter whose running value is the wanted one (p->current == p->wanted):
 * a runtime parameter blkmqd wrote at this boot over another value (p->original) is in the
 * module, not yet in the devices it drives: they were set up with the original and take the
 * new value at their next reset or probe (pending-reset; blkmqd cannot see a reset, so it
 * stays until the next boot, which takes the value from zz-blkmqd.conf). Otherwise effective.
 */
static void set_in_module(Modules *m, ModuleParam *p) {
        const KnownModuleParam *k = known_module_param(p->module, p->param);
        if (p->original && !streq(p->original, p->wanted)) {
                p->state = MODPARAM_PENDING_RESET;
                set_note(p, "the running module has %s=%s, written by blkmqd over %s; the devices take it at %s%s",
                         p->param, p->current, p->original, k ? k->takes_effect : "next boot",
                         p->root_disk ? "; the root filesystem is behind this driver: rebuild the initramfs "
                                        "(update-initramfs -u) before rebooting" : "");
                return;
        }
        p->state = MODPARAM_EFFECTIVE;
        bool from_file = file_has_option(m->boot_file, p->module, p->param, p->wanted);
        set_note(p, "the running module has %s=%s%s", p->param, p->current,
                 !from_file ? "" : m->file_written ? " (from /etc/modprobe.d/" MODPROBE_D_FILE " at this boot)" :
                 " (from /etc/modprobe.d/" MODPROBE_D_FILE " at this boot; the file is gone: the next boot has the module's own value)");
}

/* A disk of module's in the registry (one that could decide about its parameters)? */
static bool module_has_disk(const Registry *reg, const char *module) {
        for (size_t i = 0; i < reg->n_devices; i++) {
                const Device *d = reg->devices[i];
                if (d->facts && streq_ptr(d->facts->driver, module))
                        return true;
        }
        return false;
}

/*
 * The options of blkmqd's own zz-blkmqd.conf (text) that no disk present can decide: no disk of
 * that driver is in the registry (at boot blkmqd starts before udev has added them all). They
 * are kept as they are, "# wanted by" line too, so the file is neither removed nor rewritten
 * because a disk has not appeared yet; a disk of the driver that does not want it, a config
 * change seen by one, or restore removes it. 0 or -ENOMEM.
 */
static int hold_undecided(Modules *m, const Registry *reg, const char *text) {
        const char *by = NULL;
        size_t by_len = 0;
        if (!text || !modprobe_file_is_blkmqd(text))
                return 0;
        for (const char *l = text; *l; l = next_line(l)) {
                char module[128], pv[256];
                const char *wanted, *w = startswith(l, "# wanted by ");
                if (w) {
                        by = w;
                        by_len = strcspn(w, "\n");
                        continue;
                }
                if (!options_line(l, module, pv, &wanted))
                        continue;
                ModuleParam *p = (ModuleParam *) modules_get(m, module, pv);
                if ((p && p->wanted) || module_has_disk(reg, module))
                        continue;
                if (!p && !(p = param_get_or_add(m, module, pv)))
                        return -ENOMEM;
                if (free_and_strdup(&p->wanted, wanted) < 0)
                        return -ENOMEM;
                free(p->wanted_by);
                if (!(p->wanted_by = by ? strndup(by, by_len) : strdup("")))
                        return -ENOMEM;
                p->held = true;
        }
        return 0;
}

int modules_decide(HostFs *h, Modules *m, const Registry *reg, bool write, WriteJob **ret_job) {
        _cleanup_(write_job_freep) WriteJob *j = NULL;
        _cleanup_free_ char *on_disk = NULL;
        int r = collect(m, reg);
        if (r < 0)
                return r;
        (void) hostfs_read(h, HOSTFS_MODPROBE_D, MODPROBE_D_FILE, &on_disk);
        r = hold_undecided(m, reg, on_disk);
        if (r < 0)
                return r;
        /* what the kernel has now, for every parameter (a disk's facts hold what was read when
         * it was gathered: before blkmqd's own write, or another tool's) */
        for (size_t i = 0; i < m->n_params; i++)
                if ((r = read_current(h, &m->params[i])) < 0)
                        return r;

        for (size_t i = 0; i < m->n_params; i++) {
                ModuleParam *p = &m->params[i];
                const KnownModuleParam *k = known_module_param(p->module, p->param);
                if (p->held) {
                        bool effective = streq_ptr(p->current, p->wanted);
                        p->state = effective ? MODPARAM_EFFECTIVE : MODPARAM_PENDING_REBOOT;
                        set_note(p, "in /etc/modprobe.d/" MODPROBE_D_FILE ", kept: no %s disk is here yet to decide it "
                                 "(a disk of the driver, a config change or restore may remove it)%s", p->module,
                                 effective ? "; the running module has it" : "");
                        continue;
                }
                if (!p->wanted) {
                        p->state = MODPARAM_PROPOSED;
                        set_note(p, "no disk wants a value any more");
                        continue;
                }
                if (p->state == MODPARAM_CONFLICT) {
                        set_note(p, "disks %s want different values; nothing written", strna(p->wanted_by));
                        continue;
                }
                if (p->deferred) {
                        p->state = MODPARAM_DEFERRED;
                        set_note(p, "left to %s: blkmqd would set %s=%s; nothing written, neither /sys/module nor "
                                 "/etc/modprobe.d/" MODPROBE_D_FILE " (DeferTo=none makes blkmqd write over it)",
                                 strna(p->owner), p->param, p->wanted);
                        continue;
                }
                if (p->unsupported || !p->current) {
                        char why[256];
                        p->state = MODPARAM_UNSUPPORTED;        /* as the policy said it (explain, journal) */
                        set_note(p, "%s", module_param_unsupported_reason(p->module, p->param, why, sizeof(why)));
                        continue;
                }
                if (streq(p->current, p->wanted)) {
                        p->external = mfree_str(p->external);
                        set_in_module(m, p);
                        continue;
                }
                if (k && !k->load_time_only && external_change(m, p, write))
                        continue;
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
                        set_note(p, "%s, nothing written: add \"options %s %s=%s\" to /etc/modprobe.d (takes effect at %s)%s",
                                 m->not_written_why ?: "ModuleParams=propose", p->module, p->param, p->wanted,
                                 k ? k->takes_effect : "next boot", root_note);
                        continue;
                }
                if (k && !k->load_time_only) {
                        char path[PATH_MAX];
                        snprintf(path, sizeof(path), "module/%s/parameters/%s", p->module, p->param);
                        if (!p->original && free_and_strdup(&p->original, p->current) < 0)
                                return -ENOMEM;
                        if (job_add(&j, MODULES_LANE) < 0 || write_job_add(j, HOSTFS_SYSFS, path, p->wanted, true) < 0)
                                return -ENOMEM;
                        log_debug("Writing \"%s\" to module parameter %s.%s (sysfs %s)", p->wanted, p->module, p->param, path);
                        p->state = MODPARAM_PENDING;
                        set_note(p, "writing %s to the running module's %s.%s", p->wanted, p->module, p->param);
                } else {
                        p->state = MODPARAM_PENDING_REBOOT;
                        set_reboot_note(p);
                }
        }

        if (write) {
                _cleanup_free_ char *want = modprobe_content(m), *have = NULL;
                (void) hostfs_read(h, HOSTFS_MODPROBE_D, MODPROBE_D_FILE, &have);
                if (streq_ptr(want, have))
                        ;
                else if (have && !modprobe_file_is_blkmqd(have)) {
                        /* someone else's file (or blkmqd's, edited by hand): never overwritten nor removed */
                        m->file_written = false;
                        if (want) {
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
                        }
                } else if (want || have) {      /* have: blkmqd's (checked above), and nothing is wanted any more */
                        m->foreign_logged = false;
                        if (job_add(&j, MODULES_LANE) < 0 || write_job_add_file(j, HOSTFS_MODPROBE_D, MODPROBE_D_FILE, want) < 0)
                                return -ENOMEM;
                        log_debug("%s \"/etc/modprobe.d/" MODPROBE_D_FILE "\"", want ? "Writing" : "Removing");
                        for (size_t i = 0; i < m->n_params; i++)
                                if (m->params[i].state == MODPARAM_PENDING_REBOOT) {
                                        m->params[i].state = MODPARAM_PENDING;
                                        set_note(&m->params[i], "writing /etc/modprobe.d/" MODPROBE_D_FILE);
                                }
                } else
                        m->foreign_logged = false;
        }
        *ret_job = TAKE_PTR(j);
        return 0;
}

void modules_finish(Modules *m, const WriteJob *j) {
        for (size_t i = 0; i < j->n_ops; i++) {
                const WriteOp *op = &j->ops[i];
                if (op->type == WRITE_OP_WRITE) {
                        ModuleParam *p = param_of_path(m, op->path);
                        if (!p)
                                continue;
                        if (op->result < 0) {
                                p->state = MODPARAM_ERROR;
                                set_note(p, "writing /sys/%s: %s", op->path, strerror(-op->result));
                                log_warning_errno(op->result, "Failed to set %s.%s=%s: %m", p->module, p->param, op->value);
                                continue;
                        }
                        if (current_after(p, op) < 0) {
                                p->state = MODPARAM_ERROR;
                                set_note(p, "out of memory reading /sys/%s back", op->path);
                        } else if (streq_ptr(p->current, p->wanted)) {
                                /* blkmqd's value now: another one found later is someone else's */
                                (void) free_and_strdup(&p->written, p->current);
                                p->external = mfree_str(p->external);
                                set_in_module(m, p);
                        }
                        else {
                                p->state = MODPARAM_ERROR;
                                set_note(p, "wrote %s to /sys/%s, yet the module has %s", op->value, op->path, strna(p->current));
                                log_warning("Wrote %s.%s=%s, yet the module has %s", p->module, p->param, op->value,
                                            strna(p->current));
                        }
                        continue;
                }
                if (op->type != WRITE_OP_REPLACE && op->type != WRITE_OP_UNLINK)
                        continue;
                bool replace = op->type == WRITE_OP_REPLACE;
                if (op->result >= 0) {
                        m->file_written = replace;
                        if (replace)
                                log_info("Wrote /etc/modprobe.d/" MODPROBE_D_FILE);
                        else
                                log_info("Removed /etc/modprobe.d/" MODPROBE_D_FILE ": no disk wants a module parameter any more");
                } else
                        log_warning_errno(op->result, "Failed to update /etc/modprobe.d/" MODPROBE_D_FILE ": %m");
                for (size_t k = 0; k < m->n_params; k++) {
                        ModuleParam *p = &m->params[k];
                        if (p->state != MODPARAM_PENDING && p->state != MODPARAM_TIMEOUT)
                                continue;
                        bool runtime = false;   /* a runtime parameter of this job: its own op decided it */
                        for (size_t o = 0; o < j->n_ops && !runtime; o++)
                                runtime = j->ops[o].type == WRITE_OP_WRITE && param_of_path(m, j->ops[o].path) == p;
                        if (runtime)
                                continue;
                        if (op->result >= 0) {
                                p->state = MODPARAM_PENDING_REBOOT;
                                set_reboot_note(p);
                        } else {
                                p->state = MODPARAM_ERROR;
                                set_note(p, "writing /etc/modprobe.d/" MODPROBE_D_FILE ": %s", strerror(-op->result));
                        }
                }
        }
}

void modules_timeout(Modules *m, const WriteJob *j, uint64_t usec) {
        for (size_t i = 0; i < m->n_params; i++) {
                ModuleParam *p = &m->params[i];
                if (p->state != MODPARAM_PENDING)
                        continue;
                p->state = MODPARAM_TIMEOUT;
                set_note(p, "%s: no answer after %g s; the outcome is recorded when it returns", strna(p->note), (double) usec / 1e6);
        }
        log_warning_errno(ETIMEDOUT, "Module parameters: the write of \"%s\" has not returned after %g s; the rest is served, "
                          "its outcome is recorded when it returns", j->ops[0].path, (double) usec / 1e6);
}

int modules_update(HostFs *h, Modules *m, const Registry *reg, const PolicyConfig *config, bool write) {
        _cleanup_(write_job_freep) WriteJob *j = NULL;
        int r = modules_decide(h, m, reg, write, &j);
        if (r < 0 || !j)
                return r;
        writer_run_inline(h, j);
        modules_finish(m, j);
        (void) config;
        return 0;
}

int modules_originals(const Modules *m, char ***ret) {
        _cleanup_strv_free_ char **kv = NULL;
        for (size_t i = 0; i < m->n_params; i++) {
                const ModuleParam *p = &m->params[i];
                _cleanup_free_ char *key = NULL;
                _cleanup_free_ char *wkey = NULL, *xkey = NULL;
                if (p->original && (asprintf(&key, "%s.%s", p->module, p->param) < 0 || strv_extend(&kv, key) < 0 ||
                                    strv_extend(&kv, p->original) < 0))
                        return -ENOMEM;
                /* what blkmqd wrote: after a restart another value is still told from blkmqd's own */
                if (p->written && (asprintf(&wkey, "%s.%s" MODULES_WRITTEN_SUFFIX, p->module, p->param) < 0 ||
                                   strv_extend(&kv, wkey) < 0 || strv_extend(&kv, p->written) < 0))
                        return -ENOMEM;
                /* and the value someone else put there, said once: a restart does not say it again */
                if (p->written && p->external &&
                    (asprintf(&xkey, "%s.%s" MODULES_EXTERNAL_SUFFIX, p->module, p->param) < 0 ||
                     strv_extend(&kv, xkey) < 0 || strv_extend(&kv, p->external) < 0))
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(kv);
        return 0;
}

int modules_load_originals(Modules *m, char * const *kv) {
        char *p_written = NULL, *p_external = NULL;     /* markers only: which field a key is */
        for (size_t i = 0; kv && kv[i] && kv[i + 1]; i += 2) {
                const char *dot = strchr(kv[i], '.');
                if (!dot || dot == kv[i] || !dot[1])
                        continue;
                _cleanup_free_ char *module = strndup(kv[i], dot - kv[i]), *param = NULL;
                if (!module)
                        return -ENOMEM;
                const char *suffix = strchr(dot + 1, '@');
                char **slot = NULL;
                if (suffix && streq(suffix, MODULES_WRITTEN_SUFFIX))
                        slot = &p_written;
                else if (suffix && streq(suffix, MODULES_EXTERNAL_SUFFIX))
                        slot = &p_external;
                else if (suffix)
                        continue;
                if (!(param = suffix ? strndup(dot + 1, suffix - (dot + 1)) : strdup(dot + 1)))
                        return -ENOMEM;
                const KnownModuleParam *k = known_module_param(module, param);
                if (!k || k->load_time_only)
                        continue;       /* only runtime values are written under /sys/module */
                ModuleParam *p = param_get_or_add(m, module, param);
                if (!p || free_and_strdup(slot == &p_written ? &p->written : slot == &p_external ? &p->external : &p->original,
                                          kv[i + 1]) < 0)
                        return -ENOMEM;
                if (!suffix)
                        log_info("Original %s=%s recorded by an earlier run will be put back by restore", kv[i], kv[i + 1]);
        }
        return 0;
}

int modules_restore_decide(HostFs *h, Modules *m, bool keep_file, WriteJob **ret_job) {
        _cleanup_(write_job_freep) WriteJob *j = NULL;
        _cleanup_free_ char *have = NULL;

        int r = keep_file ? -ENOENT : hostfs_read(h, HOSTFS_MODPROBE_D, MODPROBE_D_FILE, &have);
        if (r >= 0 && !modprobe_file_is_blkmqd(have)) {
                if (m->file_written)
                        log_warning("/etc/modprobe.d/" MODPROBE_D_FILE " was edited since blkmqd wrote it: leaving it in place");
                m->file_written = false;
        } else if (r >= 0 && (job_add(&j, MODULES_LANE) < 0 || write_job_add_file(j, HOSTFS_MODPROBE_D, MODPROBE_D_FILE, NULL) < 0))
                return -ENOMEM;
        for (size_t i = 0; i < m->n_params; i++) {
                ModuleParam *p = &m->params[i];
                char path[PATH_MAX];
                if (!p->original)
                        continue;
                /* what the module has now: a value neither blkmqd's nor the original is someone
                 * else's, not blkmqd's to put back (as a disk's knob, apply_restore()) */
                if (p->written && read_current(h, p) >= 0 && p->current && !streq(p->current, p->written) &&
                    !streq(p->current, p->original)) {
                        log_param(p, LOG_NOTICE, BLKMQD_MESSAGE_EXTERNAL_CHANGE, p->written, p->current,
                                  "Module parameter %s.%s changed externally to %s (blkmqd wrote %s); not restoring %s over it",
                                  p->module, p->param, p->current, p->written, p->original);
                        (void) free_and_strdup(&p->external, p->current);
                        p->state = MODPARAM_CHANGED_EXTERNALLY;
                        set_note(p, "changed externally to %s (blkmqd wrote %s); not put back to %s: no longer blkmqd's",
                                 p->current, p->written, p->original);
                        p->original = mfree_str(p->original);
                        continue;
                }
                snprintf(path, sizeof(path), "module/%s/parameters/%s", p->module, p->param);
                if (job_add(&j, MODULES_LANE) < 0 || write_job_add(j, HOSTFS_SYSFS, path, p->original, true) < 0)
                        return -ENOMEM;
        }
        *ret_job = TAKE_PTR(j);
        return 0;
}

int modules_restore_finish(Modules *m, const WriteJob *j) {
        int n = 0, ret = 0;

        for (size_t i = 0; i < j->n_ops; i++) {
                const WriteOp *op = &j->ops[i];
                if (op->type == WRITE_OP_UNLINK) {
                        if (op->result < 0)
                                ret = log_warning_errno(op->result, "Failed to remove /etc/modprobe.d/" MODPROBE_D_FILE ": %m");
                        else {
                                log_info("Removed /etc/modprobe.d/" MODPROBE_D_FILE);
                                m->file_written = false;
                                /* undone: what it gave this boot is no reason for a wish any more
                                 * (boot_file stays: what this boot's modules read, a fact) */
                                module_wishes_free(m->boot_options, m->n_boot_options);
                                m->boot_options = NULL;
                                m->n_boot_options = 0;
                                n++;
                        }
                        continue;
                }
                ModuleParam *p = op->type == WRITE_OP_WRITE ? param_of_path(m, op->path) : NULL;
                if (!p)
                        continue;
                if (op->result < 0) {
                        if (ret >= 0)
                                ret = log_warning_errno(op->result, "Failed to restore %s.%s=%s: %m", p->module, p->param, op->value);
                        continue;
                }
                log_info("Restored %s.%s=%s", p->module, p->param, op->value);
                if (current_after(p, op) < 0 && ret >= 0)
                        ret = -ENOMEM;
                if (streq_ptr(p->original, op->value)) {
                        p->original = mfree_str(p->original);
                        p->written = mfree_str(p->written);     /* nothing of blkmqd's is in the module any more */
                        p->external = mfree_str(p->external);
                }
                n++;
        }
        return ret < 0 ? ret : n;
}

static int restore_inline(HostFs *h, Modules *m, bool keep_file) {
        _cleanup_(write_job_freep) WriteJob *j = NULL;
        int r = modules_restore_decide(h, m, keep_file, &j);
        if (r < 0 || !j)
                return r;
        writer_run_inline(h, j);
        return modules_restore_finish(m, j);
}

int modules_restore(HostFs *h, Modules *m) {
        return restore_inline(h, m, false);
}

int modules_stop(HostFs *h, Modules *m) {
        return restore_inline(h, m, true);
}
