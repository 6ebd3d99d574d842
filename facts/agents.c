/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agents.h"
#include "log.h"
#include "macro.h"
#include "parse.h"
#include "strv.h"

/* The queue attribute files blkmqd writes, as another tool names them. */
static const struct {
        const char *attr;
        Knob knob;
} queue_attrs[] = {
        { "queue/scheduler",   KNOB_ELEVATOR },
        { "queue/nr_requests", KNOB_NR_REQUESTS },
        { "queue/rq_affinity", KNOB_RQ_AFFINITY },
};

/* The attribute a path or command names, or _KNOB_INVALID. */
static Knob knob_named_in(const char *s) {
        for (size_t i = 0; i < ELEMENTSOF(queue_attrs); i++) {
                const char *p = strstr(s, queue_attrs[i].attr);
                /* "queue/scheduler" but not "queue/scheduler_foo" */
                if (p && !(isalnum((unsigned char) p[strlen(queue_attrs[i].attr)]) || p[strlen(queue_attrs[i].attr)] == '_'))
                        return queue_attrs[i].knob;
        }
        if (strstr(s, "smp_affinity"))
                return KNOB_IRQ_AFFINITY;
        return _KNOB_INVALID;
}

/* ---- udev rules ------------------------------------------------------------------------------- */

/*
 * One rule (a logical line): KEY{attr}OP"value" pairs separated by commas/blanks (udev(7)).
 * Returns the number of hits.
 */
static int udev_rule(const char *rule, unsigned line, agent_hit_t hit, void *userdata) {
        const char *p = rule;
        int n = 0;

        for (;;) {
                while (*p == ' ' || *p == '\t' || *p == ',')
                        p++;
                if (!*p || *p == '#')
                        return n;
                const char *key = p;
                while (isalnum((unsigned char) *p) || *p == '_')
                        p++;
                size_t key_len = p - key;
                const char *attr = NULL;
                size_t attr_len = 0;
                if (*p == '{') {
                        attr = ++p;
                        while (*p && *p != '}')
                                p++;
                        if (!*p)
                                return n;       /* not a rule udev would accept: ignored */
                        attr_len = p - attr;
                        p++;
                }
                while (*p == ' ' || *p == '\t')
                        p++;
                bool assign;
                if (startswith(p, "==") || startswith(p, "!=")) {
                        assign = false;
                        p += 2;
                } else if (startswith(p, "+=") || startswith(p, "-=") || startswith(p, ":=")) {
                        assign = true;
                        p += 2;
                } else if (*p == '=') {
                        assign = true;
                        p++;
                } else
                        return n;               /* not KEY OP: the rest is not understood, ignored */
                while (*p == ' ' || *p == '\t')
                        p++;
                if (*p != '"')
                        return n;
                const char *value = ++p;
                while (*p && !(*p == '"' && p[-1] != '\\'))
                        p++;
                size_t value_len = p - value;
                if (*p)
                        p++;
                if (!assign || key_len == 0)
                        continue;

                _cleanup_free_ char *k = strndup(key, key_len), *a = attr ? strndup(attr, attr_len) : NULL,
                                    *v = strndup(value, value_len);
                if (!k || !v || (attr && !a))
                        return -ENOMEM;
                Knob knob = _KNOB_INVALID;
                if (streq(k, "ATTR") && a) {
                        /* the device's own attribute: queue/scheduler of a disk, smp_affinity of an irq */
                        for (size_t i = 0; i < ELEMENTSOF(queue_attrs); i++)
                                if (streq(a, queue_attrs[i].attr))
                                        knob = queue_attrs[i].knob;
                        if (knob < 0 && strstr(a, "smp_affinity"))
                                knob = KNOB_IRQ_AFFINITY;
                } else if (streq(k, "RUN") || streq(k, "PROGRAM"))
                        knob = knob_named_in(v);
                if (knob < 0)
                        continue;
                char what[256];
                snprintf(what, sizeof(what), "%s%s%s%s=\"%s\"", k, a ? "{" : "", strempty(a), a ? "}" : "", v);
                hit(userdata, line, knob, what);
                n++;
        }
}

int agents_scan_udev_rules(const char *text, agent_hit_t hit, void *userdata) {
        _cleanup_free_ char *rule = NULL;
        size_t rule_len = 0;
        unsigned line = 0, first = 0;
        int n = 0;

        for (const char *p = text; p && *p;) {
                const char *nl = strchr(p, '\n');
                size_t l = nl ? (size_t) (nl - p) : strlen(p);
                line++;
                bool cont = l > 0 && p[l - 1] == '\\';
                char *r = realloc(rule, rule_len + l + 1);
                if (!r)
                        return -ENOMEM;
                rule = r;
                if (rule_len == 0)
                        first = line;
                memcpy(rule + rule_len, p, cont ? l - 1 : l);
                rule_len += cont ? l - 1 : l;
                rule[rule_len] = 0;
                p = nl ? nl + 1 : NULL;
                if (cont && p)
                        continue;
                const char *s = rule;
                while (*s == ' ' || *s == '\t')
                        s++;
                if (*s && *s != '#') {
                        int k = udev_rule(s, first, hit, userdata);
                        if (k < 0)
                                return k;
                        n += k;
                }
                rule_len = 0;
        }
        return n;
}

/* ---- tuned ------------------------------------------------------------------------------------ */

static char *strip(char *s) {
        while (*s == ' ' || *s == '\t')
                s++;
        size_t l = strlen(s);
        while (l > 0 && (s[l - 1] == ' ' || s[l - 1] == '\t' || s[l - 1] == '\r'))
                s[--l] = 0;
        return s;
}

typedef struct TunedKey {
        unsigned line;
        char *section, *key, *value;
} TunedKey;

int agents_scan_tuned(const char *text, agent_hit_t hit, void *userdata, char **ret_include) {
        _cleanup_free_ char *copy = strdup(text ?: "");
        _cleanup_free_ char *section = NULL, *include = NULL;
        TunedKey *keys = NULL;
        size_t n_keys = 0;
        unsigned line = 0;
        int n = 0, r = 0;

        if (!copy)
                return -ENOMEM;
        /* first pass: every key with its section (type= may come after the option) */
        for (char *save = NULL, *l = copy; l; l = save) {
                save = strchr(l, '\n');
                if (save)
                        *save++ = 0;
                line++;
                char *s = strip(l);
                if (!*s || *s == '#' || *s == ';')
                        continue;
                if (*s == '[') {
                        char *e = strchr(s, ']');
                        if (!e)
                                continue;
                        *e = 0;
                        free(section);
                        section = strdup(strip(s + 1));
                        if (!section) {
                                r = -ENOMEM;
                                goto out;
                        }
                        continue;
                }
                char *eq = strchr(s, '=');
                if (!eq || !section)
                        continue;
                *eq = 0;
                TunedKey *nk = realloc(keys, (n_keys + 1) * sizeof(TunedKey));
                if (!nk) {
                        r = -ENOMEM;
                        goto out;
                }
                keys = nk;
                keys[n_keys] = (TunedKey) { .line = line, .section = strdup(section), .key = strdup(strip(s)),
                                            .value = strdup(strip(eq + 1)) };
                if (!keys[n_keys].section || !keys[n_keys].key || !keys[n_keys].value) {
                        n_keys++;
                        r = -ENOMEM;
                        goto out;
                }
                n_keys++;
        }

        for (size_t i = 0; i < n_keys; i++) {
                const TunedKey *k = &keys[i];
                /* the plugin: type= of the section, else the section's name */
                const char *type = k->section;
                for (size_t j = 0; j < n_keys; j++)
                        if (streq(keys[j].section, k->section) && streq(keys[j].key, "type"))
                                type = keys[j].value;
                if (streq(k->section, "main") && streq(k->key, "include")) {
                        free(include);
                        if (!(include = strdup(k->value))) {
                                r = -ENOMEM;
                                goto out;
                        }
                        continue;
                }
                Knob knob = _KNOB_INVALID;
                if (streq(type, "disk") && streq(k->key, "elevator"))
                        knob = KNOB_ELEVATOR;
                else if (streq(type, "sysfs"))
                        knob = knob_named_in(k->key);
                else if (streq(type, "scheduler") && (streq(k->key, "isolated_cores") || streq(k->key, "default_irq_smp_affinity")))
                        knob = KNOB_IRQ_AFFINITY;
                if (knob < 0 || !*k->value)
                        continue;
                char what[256];
                snprintf(what, sizeof(what), "[%s] %s=%s", k->section, k->key, k->value);
                hit(userdata, k->line, knob, what);
                n++;
        }
        if (ret_include)
                *ret_include = TAKE_PTR(include);
out:
        for (size_t i = 0; i < n_keys; i++) {
                free(keys[i].section);
                free(keys[i].key);
                free(keys[i].value);
        }
        free(keys);
        return r < 0 ? r : n;
}

/* ---- reading them through hostfs -------------------------------------------------------------- */

typedef struct WarnContext {
        const char *file;       /* as the administrator knows it: "/etc/udev/rules.d/60-x.rules" */
        const char *tool;       /* "udev rule", "tuned profile \"NAME\"" */
        unsigned n;             /* hits so far (all files) */
} WarnContext;

static void on_hit(void *userdata, unsigned line, Knob knob, const char *what) {
        WarnContext *c = userdata;
        if (++c->n > AGENTS_WARN_MAX)
                return;
        const char *attr = knob == KNOB_IRQ_AFFINITY ? "IRQ affinity" :
                           knob == KNOB_ELEVATOR ? "the queue scheduler (elevator)" : knob_to_string(knob);
        log_warning("%s:%u: %s %s sets %s, which blkmqd manages too: it may overwrite blkmqd's value "
                    "(blkmqd reports that as \"changed externally\"; Reassert=yes would fight it)",
                    c->file, line, c->tool, what, attr);
}

static const struct {
        HostFsKind kind;
        const char *dir;        /* relative to the kind */
        const char *shown;      /* as written in the warning */
} udev_dirs[] = {
        { HOSTFS_ETC,     "udev/rules.d", "/etc/udev/rules.d" },
        { HOSTFS_RUN,     "udev/rules.d", "/run/udev/rules.d" },
        { HOSTFS_USR_LIB, "udev/rules.d", "/usr/lib/udev/rules.d" },
        { HOSTFS_LIB,     "udev/rules.d", "/lib/udev/rules.d" },
};

static void scan_udev(HostFs *h, WarnContext *c) {
        _cleanup_strv_free_ char **seen = NULL;

        for (size_t d = 0; d < ELEMENTSOF(udev_dirs); d++) {
                _cleanup_strv_free_ char **names = NULL;
                if (hostfs_list(h, udev_dirs[d].kind, udev_dirs[d].dir, &names) < 0)
                        continue;
                STRV_FOREACH(name, names) {
                        size_t l = strlen(*name);
                        if (l < 7 || !streq(*name + l - 6, ".rules") || strv_contains(seen, *name))
                                continue;
                        if (strv_extend(&seen, *name) < 0)      /* an earlier directory hides later ones */
                                return;
                        _cleanup_free_ char *text = NULL, *rel = NULL, *shown = NULL;
                        if (asprintf(&rel, "%s/%s", udev_dirs[d].dir, *name) < 0 ||
                            asprintf(&shown, "%s/%s", udev_dirs[d].shown, *name) < 0)
                                return;
                        if (hostfs_read(h, udev_dirs[d].kind, rel, &text) < 0)
                                continue;       /* a link to /dev/null reads empty: masked */
                        c->file = shown;
                        c->tool = "udev rule";
                        (void) agents_scan_udev_rules(text, on_hit, c);
                }
        }
}

/* tuned runs: /run/tuned/tuned.pid names a process that exists. */
static bool tuned_running(HostFs *h) {
        _cleanup_free_ char *pid = NULL;
        char path[64];
        unsigned p;
        if (hostfs_read(h, HOSTFS_RUN, "tuned/tuned.pid", &pid) < 0 || sscanf(pid, "%u", &p) != 1 || p == 0)
                return false;
        snprintf(path, sizeof(path), "%u", p);
        return hostfs_exists(h, HOSTFS_PROCFS, path);
}

static const struct {
        HostFsKind kind;
        const char *dir;
        const char *shown;
} tuned_dirs[] = {
        { HOSTFS_ETC,     "tuned/profiles", "/etc/tuned/profiles" },
        { HOSTFS_ETC,     "tuned",          "/etc/tuned" },
        { HOSTFS_USR_LIB, "tuned/profiles", "/usr/lib/tuned/profiles" },
        { HOSTFS_USR_LIB, "tuned",          "/usr/lib/tuned" },
};

/* One profile and its include= parents (at most depth 8: a loop ends there). */
static void scan_tuned_profile(HostFs *h, WarnContext *c, const char *profile, unsigned depth) {
        if (depth > 8 || !*profile || strchr(profile, '/') || streq(profile, ".") || streq(profile, ".."))
                return;
        for (size_t d = 0; d < ELEMENTSOF(tuned_dirs); d++) {
                _cleanup_free_ char *text = NULL, *rel = NULL, *shown = NULL, *tool = NULL, *include = NULL;
                if (asprintf(&rel, "%s/%s/tuned.conf", tuned_dirs[d].dir, profile) < 0 ||
                    asprintf(&shown, "%s/%s/tuned.conf", tuned_dirs[d].shown, profile) < 0 ||
                    asprintf(&tool, "tuned profile \"%s\"", profile) < 0)
                        return;
                if (hostfs_read(h, tuned_dirs[d].kind, rel, &text) < 0)
                        continue;
                c->file = shown;
                c->tool = tool;
                (void) agents_scan_tuned(text, on_hit, c, &include);
                c->file = c->tool = NULL;
                /* include=a,b (tuned also accepts blanks) */
                for (char *save = NULL, *t = include ? strtok_r(include, ", \t", &save) : NULL; t; t = strtok_r(NULL, ", \t", &save))
                        scan_tuned_profile(h, c, t, depth + 1);
                return;         /* the first directory holding the profile wins */
        }
}

static void scan_tuned(HostFs *h, WarnContext *c) {
        _cleanup_free_ char *active = NULL;
        if (hostfs_read(h, HOSTFS_ETC, "tuned/active_profile", &active) < 0)
                return;
        if (!tuned_running(h)) {
                log_debug("tuned has an active profile but is not running: not checked");
                return;
        }
        for (char *save = NULL, *t = strtok_r(active, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save))
                scan_tuned_profile(h, c, t, 0);
}

/* irqbalance runs: its control socket /run/irqbalance/irqbalance<PID>.sock (irqbalance.c,
 * SOCKET_TMPFS) names a process that exists. It moves every IRQ that is not kernel-managed. */
static void scan_irqbalance(HostFs *h, WarnContext *c) {
        _cleanup_strv_free_ char **names = NULL;
        if (hostfs_list(h, HOSTFS_RUN, "irqbalance", &names) < 0)
                return;
        STRV_FOREACH(name, names) {
                char proc[32], tail[8] = "";
                unsigned pid;
                if (sscanf(*name, "irqbalance%u%7s", &pid, tail) != 2 || !streq(tail, ".sock") || pid == 0)
                        continue;
                snprintf(proc, sizeof(proc), "%u", pid);
                if (!hostfs_exists(h, HOSTFS_PROCFS, proc))
                        continue;
                if (++c->n > AGENTS_WARN_MAX)
                        return;
                log_warning("irqbalance is running (pid %u, /run/irqbalance/%s): it moves the affinity of every IRQ the kernel "
                            "does not manage, which blkmqd manages too for the queue vectors it places (IrqAffinity=): "
                            "blkmqd reports that as \"changed externally\"; ban those IRQs in irqbalance or leave them to it",
                            pid, *name);
                return;
        }
}

int agents_warn(HostFs *h) {
        WarnContext c = {};
        scan_udev(h, &c);
        scan_tuned(h, &c);
        scan_irqbalance(h, &c);
        if (c.n > AGENTS_WARN_MAX)
                log_warning("... and %u more place(s) where udev rules or tuned set what blkmqd manages", c.n - AGENTS_WARN_MAX);
        return (int) c.n;
}
