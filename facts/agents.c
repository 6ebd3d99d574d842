/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agents.h"
#include "cmdline.h"
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

/* Ends a name: "queue/scheduler" but not "queue/scheduler_foo". */
static bool name_ends(const char *p) {
        return !(isalnum((unsigned char) *p) || *p == '_');
}

/*
 * What a path, key or command names: one of blkmqd's knobs, an elevator tunable
 * (*ret_tunable, newly allocated), a NIC's channels or XPS. Fills src->sets/knob/name/target.
 * Returns true when it names one. -ENOMEM is returned as false with *oom set.
 */
static bool classify_path(const char *s, Source *src, bool *oom) {
        const char *p;
        for (size_t i = 0; i < ELEMENTSOF(queue_attrs); i++)
                if ((p = strstr(s, queue_attrs[i].attr)) && name_ends(p + strlen(queue_attrs[i].attr))) {
                        src->sets = SOURCE_SETS_KNOB;
                        src->knob = queue_attrs[i].knob;
                        src->target = SOURCE_TARGET_DISK;
                        return true;
                }
        if ((p = strstr(s, "queue/iosched/"))) {
                p += strlen("queue/iosched/");
                size_t n = 0;
                while (isalnum((unsigned char) p[n]) || p[n] == '_')
                        n++;
                if (n == 0)
                        return false;
                if (!(src->name = strndup(p, n))) {
                        *oom = true;
                        return false;
                }
                src->sets = SOURCE_SETS_TUNABLE;
                src->knob = -1;
                src->target = SOURCE_TARGET_DISK;
                return true;
        }
        if ((p = strstr(s, "xps_cpus")) && name_ends(p + 8)) {
                src->sets = SOURCE_SETS_KNOB;
                src->knob = KNOB_XPS;
                src->target = SOURCE_TARGET_NIC;
                return true;
        }
        if (strstr(s, "smp_affinity")) {
                src->sets = SOURCE_SETS_KNOB;
                src->knob = KNOB_IRQ_AFFINITY;
                src->target = SOURCE_TARGET_IRQ;
                return true;
        }
        if ((p = strstr(s, "ethtool")) && (strstr(p, " -L") || strstr(p, "--set-channels"))) {
                src->sets = SOURCE_SETS_CHANNELS;
                src->knob = -1;
                src->target = SOURCE_TARGET_NIC;
                return true;
        }
        return false;
}

/* "echo VALUE > ...": the value a shell command writes, or NULL. */
static char *echoed_value(const char *cmd) {
        const char *p = strstr(cmd, "echo ");
        if (!p)
                return NULL;
        p += 5;
        while (*p == ' ')
                p++;
        size_t n = strcspn(p, " >'\"");
        const char *q = p + n;
        while (*q == ' ')
                q++;
        return n > 0 && *q == '>' ? strndup(p, n) : NULL;
}

/* udev's "a|b|c" pattern as globs appended to *l. 0 or -ENOMEM. */
static int add_alternatives(char ***l, const char *pattern) {
        _cleanup_free_ char *copy = strdup(pattern);
        if (!copy)
                return -ENOMEM;
        for (char *save = NULL, *t = strtok_r(copy, "|", &save); t; t = strtok_r(NULL, "|", &save))
                if (strv_extend(l, t) < 0)
                        return -ENOMEM;
        return 0;
}

/* ---- udev rules ------------------------------------------------------------------------------- */

typedef struct UdevPair {
        char *key, *attr, *value;
        bool assign, negate;
} UdevPair;

/* One rule (a logical line): KEY{attr}OP"value" pairs separated by commas/blanks (udev(7)). */
static int udev_rule(const char *rule, unsigned line, const AgentFile *af, Sources *s) {
        UdevPair pairs[64];
        size_t n_pairs = 0;
        int n = 0, r = 0;

        for (const char *p = rule; n_pairs < ELEMENTSOF(pairs);) {
                while (*p == ' ' || *p == '\t' || *p == ',')
                        p++;
                if (!*p || *p == '#')
                        break;
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
                                break;          /* not a rule udev would accept: ignored */
                        attr_len = p - attr;
                        p++;
                }
                while (*p == ' ' || *p == '\t')
                        p++;
                bool assign, negate = false;
                if (startswith(p, "==") || startswith(p, "!=")) {
                        assign = false;
                        negate = *p == '!';
                        p += 2;
                } else if (startswith(p, "+=") || startswith(p, "-=") || startswith(p, ":=")) {
                        assign = true;
                        p += 2;
                } else if (*p == '=') {
                        assign = true;
                        p++;
                } else
                        break;                  /* not KEY OP: the rest is not understood, ignored */
                while (*p == ' ' || *p == '\t')
                        p++;
                if (*p != '"')
                        break;
                const char *value = ++p;
                while (*p && !(*p == '"' && p[-1] != '\\'))
                        p++;
                size_t value_len = p - value;
                if (*p)
                        p++;
                if (key_len == 0)
                        continue;
                UdevPair *u = &pairs[n_pairs++];
                *u = (UdevPair) { .key = strndup(key, key_len), .attr = attr ? strndup(attr, attr_len) : NULL,
                                  .value = strndup(value, value_len), .assign = assign, .negate = negate };
                if (!u->key || !u->value || (attr && !u->attr)) {
                        r = -ENOMEM;
                        goto out;
                }
        }

        for (size_t i = 0; i < n_pairs; i++) {
                const UdevPair *u = &pairs[i];
                if (!u->assign)
                        continue;
                Source src = { .tool = SOURCE_UDEV_RULE, .admin = af->admin, .file = (char *) af->file, .line = line,
                               .label = (char *) af->label, .knob = -1, .match_rotational = -1 };
                bool oom = false, hit = false;
                _cleanup_strv_free_ char **match = NULL, **nomatch = NULL;
                _cleanup_free_ char *unevaluated = NULL, *name = NULL, *value = NULL, *what = NULL;

                if (streq(u->key, "ATTR") && u->attr) {
                        /* the device's own attribute: queue/scheduler of a disk, queues/tx-N/xps_cpus of a NIC */
                        hit = classify_path(u->attr, &src, &oom) && src.sets != SOURCE_SETS_CHANNELS &&
                              (startswith(u->attr, "queue/") || startswith(u->attr, "queues/") || strstr(u->attr, "smp_affinity"));
                        if (hit && !(value = strdup(u->value)))
                                oom = true;
                } else if (streq(u->key, "RUN") || streq(u->key, "PROGRAM")) {
                        hit = classify_path(u->value, &src, &oom);
                        if (hit)
                                value = echoed_value(u->value);
                }
                name = src.name;
                if (oom) {
                        r = -ENOMEM;
                        goto out;
                }
                if (!hit)
                        continue;
                if (src.sets == SOURCE_SETS_KNOB && src.knob == KNOB_ELEVATOR && value) {
                        const char *instead = NULL;
                        if (elevator_name_is_legacy(value, &instead) && instead) {
                                free(value);
                                if (!(value = strdup(instead))) {
                                        r = -ENOMEM;
                                        goto out;
                                }
                        }
                }
                /* the matches of the same rule: which devices it is for */
                for (size_t j = 0; j < n_pairs; j++) {
                        const UdevPair *m = &pairs[j];
                        if (m->assign)
                                continue;
                        if (streq(m->key, "KERNEL")) {
                                if (add_alternatives(m->negate ? &nomatch : &match, m->value) < 0) {
                                        r = -ENOMEM;
                                        goto out;
                                }
                        } else if (streq(m->key, "ATTR") && m->attr && streq(m->attr, "queue/rotational") && !m->negate &&
                                   (streq(m->value, "0") || streq(m->value, "1")))
                                src.match_rotational = m->value[0] - '0';
                        else if (streq(m->key, "ACTION") || streq(m->key, "DEVTYPE") || streq(m->key, "SUBSYSTEM") ||
                                 (streq(m->key, "ENV") && m->attr && streq(m->attr, "DEVTYPE")))
                                continue;       /* every disk (NIC) gets add and change events */
                        else if (!unevaluated &&
                                 asprintf(&unevaluated, "%s%s%s%s%s\"%s\"", m->key, m->attr ? "{" : "", strempty(m->attr),
                                          m->attr ? "}" : "", m->negate ? "!=" : "==", m->value) < 0) {
                                unevaluated = NULL;
                                r = -ENOMEM;
                                goto out;
                        }
                }
                if (asprintf(&what, "%s%s%s%s=\"%s\"", u->key, u->attr ? "{" : "", strempty(u->attr), u->attr ? "}" : "",
                             u->value) < 0) {
                        what = NULL;
                        r = -ENOMEM;
                        goto out;
                }
                src.what = what;
                src.value = value;
                src.match = match;
                src.nomatch = nomatch;
                src.match_unevaluated = unevaluated;
                if (sources_add(s, &src) < 0) {
                        r = -ENOMEM;
                        goto out;
                }
                n++;
        }
out:
        for (size_t i = 0; i < n_pairs; i++) {
                free(pairs[i].key);
                free(pairs[i].attr);
                free(pairs[i].value);
        }
        return r < 0 ? r : n;
}

int agents_scan_udev_rules(const char *text, const AgentFile *af, Sources *s) {
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
                const char *t = rule;
                while (*t == ' ' || *t == '\t')
                        t++;
                if (*t && *t != '#') {
                        int k = udev_rule(t, first, af, s);
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

/*
 * The next line of a text split in place: *p is where it goes on (NULL at the end); *line
 * counts lines from 1. The line comes back stripped of blanks at both ends, NULL at the end.
 */
static char *next_line(char **p, unsigned *line) {
        char *l = *p;
        if (!l)
                return NULL;
        *p = strchr(l, '\n');
        if (*p)
                *(*p)++ = 0;
        (*line)++;
        return strip(l);
}

typedef struct TunedKey {
        unsigned line;
        char *section, *key, *value;
} TunedKey;

/* The value of key in section (the last one), or NULL. */
static const char *tuned_get(const TunedKey *keys, size_t n, const char *section, const char *key) {
        const char *v = NULL;
        for (size_t j = 0; j < n; j++)
                if (streq(keys[j].section, section) && streq(keys[j].key, key))
                        v = keys[j].value;
        return v;
}

/* tuned's devices= (tuned/utils/... device_matcher: comma or blank separated globs, "!" negates). */
static int tuned_devices(const char *devices, char ***match, char ***nomatch) {
        if (!devices)
                return 0;
        _cleanup_free_ char *copy = strdup(devices);
        if (!copy)
                return -ENOMEM;
        for (char *save = NULL, *t = strtok_r(copy, ", \t", &save); t; t = strtok_r(NULL, ", \t", &save))
                if (strv_extend(*t == '!' ? nomatch : match, *t == '!' ? t + 1 : t) < 0)
                        return -ENOMEM;
        return 0;
}

/* A [sysfs] key naming sys/block/<glob>/queue/... -> the glob; sys/class/net/<glob>/queues/... likewise
 * (tuned's keys are absolute paths; this only parses their text). */
static char *sysfs_device_glob(const char *key) {
        const char *rel = key[0] == '/' ? key + 1 : key;
        const char *p = startswith(rel, "sys/block/") ?: startswith(rel, "sys/class/net/");
        if (!p)
                return NULL;
        size_t n = strcspn(p, "/");
        return n > 0 ? strndup(p, n) : NULL;
}

int agents_scan_tuned(const char *text, const AgentFile *af, Sources *s, char **ret_include) {
        assert(af);
        _cleanup_free_ char *copy = strdup(text ?: "");
        _cleanup_free_ char *section = NULL, *include = NULL;
        TunedKey *keys = NULL;
        size_t n_keys = 0;
        unsigned line = 0;
        int n = 0, r = 0;

        if (!copy)
                return -ENOMEM;
        /* first pass: every key with its section (type= and devices= may come after the option) */
        for (char *p = copy, *t; (t = next_line(&p, &line));) {
                if (!*t || *t == '#' || *t == ';')
                        continue;
                if (*t == '[') {
                        char *e = strchr(t, ']');
                        if (!e)
                                continue;
                        *e = 0;
                        free(section);
                        section = strdup(strip(t + 1));
                        if (!section) {
                                r = -ENOMEM;
                                goto out;
                        }
                        continue;
                }
                char *eq = strchr(t, '=');
                if (!eq || !section)
                        continue;
                *eq = 0;
                TunedKey *nk = realloc(keys, (n_keys + 1) * sizeof(TunedKey));
                if (!nk) {
                        r = -ENOMEM;
                        goto out;
                }
                keys = nk;
                keys[n_keys] = (TunedKey) { .line = line, .section = strdup(section), .key = strdup(strip(t)),
                                            .value = strdup(strip(eq + 1)) };
                n_keys++;
                if (!keys[n_keys - 1].section || !keys[n_keys - 1].key || !keys[n_keys - 1].value) {
                        r = -ENOMEM;
                        goto out;
                }
        }

        for (size_t i = 0; i < n_keys; i++) {
                const TunedKey *k = &keys[i];
                /* the plugin: type= of the section, else the section's name */
                const char *type = tuned_get(keys, n_keys, k->section, "type") ?: k->section;
                const char *devices = tuned_get(keys, n_keys, k->section, "devices");
                if (streq(k->section, "main") && streq(k->key, "include")) {
                        free(include);
                        if (!(include = strdup(k->value))) {
                                r = -ENOMEM;
                                goto out;
                        }
                        continue;
                }
                if (!*k->value)
                        continue;
                Source src = { .tool = SOURCE_TUNED, .admin = af->admin, .file = (char *) af->file, .line = k->line,
                               .label = (char *) af->label, .knob = -1, .match_rotational = -1 };
                bool oom = false, hit = false;
                _cleanup_strv_free_ char **match = NULL, **nomatch = NULL;
                _cleanup_free_ char *what = NULL, *value = NULL, *glob = NULL, *unevaluated = NULL;
                if (streq(type, "disk") && streq(k->key, "elevator")) {
                        src.sets = SOURCE_SETS_KNOB;
                        src.knob = KNOB_ELEVATOR;
                        src.target = SOURCE_TARGET_DISK;
                        hit = true;
                } else if (streq(type, "net") && streq(k->key, "channels")) {
                        src.sets = SOURCE_SETS_CHANNELS;
                        src.target = SOURCE_TARGET_NIC;
                        hit = true;
                } else if (streq(type, "sysfs")) {
                        hit = classify_path(k->key, &src, &oom) && src.sets != SOURCE_SETS_CHANNELS;
                        glob = sysfs_device_glob(k->key);
                } else if (streq(type, "scheduler") && (streq(k->key, "isolated_cores") || streq(k->key, "default_irq_smp_affinity"))) {
                        src.sets = SOURCE_SETS_KNOB;
                        src.knob = KNOB_IRQ_AFFINITY;
                        src.target = SOURCE_TARGET_IRQ;
                        hit = true;
                }
                _cleanup_free_ char *name = src.name;
                if (oom) {
                        r = -ENOMEM;
                        goto out;
                }
                if (!hit)
                        continue;
                /* tuned writes the value as given (plugin_disk.py _set_elevator()); ">N"/"<N" compare first */
                if (src.knob != KNOB_IRQ_AFFINITY && !(value = strdup(k->value))) {
                        r = -ENOMEM;
                        goto out;
                }
                if (glob) {
                        if (strv_extend(&match, glob) < 0) {
                                r = -ENOMEM;
                                goto out;
                        }
                } else if (src.target == SOURCE_TARGET_DISK || src.target == SOURCE_TARGET_NIC) {
                        if (tuned_devices(devices, &match, &nomatch) < 0) {
                                r = -ENOMEM;
                                goto out;
                        }
                        const char *regex = tuned_get(keys, n_keys, k->section, "devices_udev_regex");
                        if (regex && asprintf(&unevaluated, "devices_udev_regex=%s", regex) < 0) {
                                unevaluated = NULL;
                                r = -ENOMEM;
                                goto out;
                        }
                }
                if (asprintf(&what, "[%s] %s=%s", k->section, k->key, k->value) < 0) {
                        what = NULL;
                        r = -ENOMEM;
                        goto out;
                }
                src.what = what;
                src.value = value;
                src.match = match;
                src.nomatch = nomatch;
                src.match_unevaluated = unevaluated;
                if (sources_add(s, &src) < 0) {
                        r = -ENOMEM;
                        goto out;
                }
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

/* ---- .link files ------------------------------------------------------------------------------ */

int agents_scan_link(const char *text, const AgentFile *af, Sources *s) {
        assert(af);
        _cleanup_free_ char *copy = strdup(text ?: "");
        _cleanup_strv_free_ char **names = NULL, **drivers = NULL;
        _cleanup_free_ char *unevaluated = NULL;
        const char *section = "";
        struct { unsigned line; char *key, *value; } sets[16];
        size_t n_sets = 0;
        unsigned line = 0;
        int n = 0, r = 0;

        if (!copy)
                return -ENOMEM;
        for (char *p = copy, *t; (t = next_line(&p, &line));) {
                if (!*t || *t == '#' || *t == ';')
                        continue;
                if (*t == '[') {
                        section = startswith(t, "[Match]") ? "Match" : startswith(t, "[Link]") ? "Link" : "";
                        continue;
                }
                char *eq = strchr(t, '=');
                if (!eq)
                        continue;
                *eq = 0;
                char *key = strip(t), *value = strip(eq + 1);
                if (streq(section, "Match")) {
                        /* systemd.link(5): a space-separated list of globs; an empty one resets */
                        char ***l2 = streq(key, "OriginalName") ? &names : streq(key, "Driver") ? &drivers : NULL;
                        if (l2) {
                                if (!*value)
                                        *l2 = strv_free(*l2);
                                for (char *sv = NULL, *w = strtok_r(value, " \t", &sv); w; w = strtok_r(NULL, " \t", &sv))
                                        if (strv_extend(l2, w) < 0)
                                                return -ENOMEM;
                        } else if (!unevaluated && asprintf(&unevaluated, "%s=%s", key, value) < 0) {
                                unevaluated = NULL;
                                return -ENOMEM;
                        }
                } else if (streq(section, "Link") && n_sets < ELEMENTSOF(sets) &&
                           (streq(key, "IRQAffinityPolicy") || streq(key, "CombinedChannels") || streq(key, "RxChannels") ||
                            streq(key, "TxChannels") || streq(key, "OtherChannels")))
                        sets[n_sets++] = (typeof(sets[0])) { .line = line, .key = key, .value = value };
        }
        for (size_t i = 0; i <= n_sets; i++) {
                if (i == n_sets && n > 0)
                        break;
                _cleanup_free_ char *what = NULL;
                Source src = { .tool = SOURCE_LINK, .admin = af->admin, .file = (char *) af->file, .label = (char *) af->label,
                               .knob = -1, .match_rotational = -1, .target = SOURCE_TARGET_NIC, .group = af->group,
                               .match = names, .match_driver = drivers, .sets = SOURCE_SETS_NOTHING };
                if (i < n_sets) {
                        src.line = sets[i].line;
                        if (streq(sets[i].key, "IRQAffinityPolicy")) {
                                src.sets = SOURCE_SETS_KNOB;
                                src.knob = KNOB_NIC_IRQ_AFFINITY;
                        } else
                                src.sets = SOURCE_SETS_CHANNELS;
                        src.value = sets[i].value;
                        if (asprintf(&what, "[Link] %s=%s", sets[i].key, sets[i].value) < 0)
                                return -ENOMEM;
                } else if (!(what = strdup("(no setting blkmqd knows; it still hides later .link files)")))
                        return -ENOMEM;
                src.what = what;
                /* a match blkmqd cannot evaluate (MACAddress=, Path=, Property=): the file may or may
                 * not be the one applied; its IRQ policy counts (value NULL: never "the disk has it") */
                src.match_unevaluated = unevaluated;
                r = sources_add(s, &src);
                if (r < 0)
                        return r;
                n++;
        }
        return n;
}

/* ---- the kernel command line ------------------------------------------------------------------ */

int agents_scan_cmdline(const char *text, Sources *s) {
        _cleanup_(kernel_cmdline_done) KernelCmdline c = {};
        int n = 0;
        if (kernel_cmdline_parse(text, &c) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < c.n_params; i++) {
                const KernelCmdlineParam *p = &c.params[i];
                if (!p->value)
                        continue;
                Source src = { .tool = SOURCE_CMDLINE, .admin = true, .file = (char *) "(/proc/cmdline)",
                               .label = (char *) "kernel command line", .knob = -1, .match_rotational = -1 };
                _cleanup_free_ char *what = NULL, *value = NULL;
                if (!p->module && streq(p->param, "elevator")) {
                        /* block/elevator.c elevator_setup(): ignored by the kernel since 5.0 ("does not
                         * have any effect anymore"); RHEL 8's udev rule applies it to every disk */
                        const char *instead = NULL;
                        src.sets = SOURCE_SETS_KNOB;
                        src.knob = KNOB_ELEVATOR;
                        src.target = SOURCE_TARGET_DISK;
                        value = strdup(elevator_name_is_legacy(p->value, &instead) && instead ? instead : p->value);
                } else if (p->module) {
                        src.sets = SOURCE_SETS_MODULE_PARAM;
                        src.target = SOURCE_TARGET_MODULE;
                        src.module = p->module;
                        src.name = p->param;
                        value = strdup(p->value);
                } else
                        continue;
                if (!value || asprintf(&what, "%s%s%s=%s", strempty(p->module), p->module ? "." : "", p->param, p->value) < 0)
                        return -ENOMEM;
                src.what = what;
                src.value = value;
                if (sources_add(s, &src) < 0)
                        return -ENOMEM;
                n++;
        }
        return n;
}

/* ---- irqbalance ------------------------------------------------------------------------------- */

/* A shell assignment's value: quotes removed. Newly allocated. */
static char *shell_value(const char *v) {
        size_t l = strlen(v);
        if (l >= 2 && (v[0] == '"' || v[0] == '\'') && v[l - 1] == v[0])
                return strndup(v + 1, l - 2);
        return strdup(v);
}

int agents_scan_irqbalance(const char *text, const char *file, IrqbalanceFacts *ib) {
        _cleanup_free_ char *copy = strdup(text ?: "");
        unsigned line = 0;
        if (!copy || !(ib->config = strdup(file)))
                return -ENOMEM;
        for (char *p = copy, *t; (t = next_line(&p, &line));) {
                if (startswith(t, "export "))
                        t = strip(t + 7);
                if (!*t || *t == '#')
                        continue;
                const char *v;
                if ((v = startswith(t, "IRQBALANCE_ONESHOT="))) {
                        _cleanup_free_ char *x = shell_value(v);
                        if (!x)
                                return -ENOMEM;
                        ib->oneshot = *x != 0;  /* irqbalance.c: any non-empty value */
                } else if ((v = startswith(t, "IRQBALANCE_ARGS="))) {
                        free(ib->args);
                        if (!(ib->args = shell_value(v)))
                                return -ENOMEM;
                        ib->args_line = line;
                }
        }
        if (!ib->args)
                return 0;
        /* irqbalance.c parse_command_line(): getopt_long, "-i N"/"--banirq=N", "-l F"/"--policyscript=F", "-o" */
        _cleanup_free_ char *args = strdup(ib->args);
        if (!args)
                return -ENOMEM;
        char *prev = NULL;
        for (char *save = NULL, *w = strtok_r(args, " \t", &save); w; prev = w, w = strtok_r(NULL, " \t", &save)) {
                const char *irq = startswith(w, "--banirq=") ?: (prev && (streq(prev, "-i") || streq(prev, "--banirq")) ? w : NULL);
                if (!irq && startswith(w, "-i") && w[2])
                        irq = w + 2;
                const char *script = startswith(w, "--policyscript=") ?:
                                     (prev && (streq(prev, "-l") || streq(prev, "--policyscript")) ? w : NULL);
                if (!script && startswith(w, "-l") && w[2])
                        script = w + 2;
                if (irq) {
                        uint64_t x;
                        if (parse_u64(irq, &x) == 0 && x <= UINT32_MAX) {
                                unsigned *nb = realloc(ib->banned_irqs, (ib->n_banned_irqs + 1) * sizeof(unsigned));
                                if (!nb)
                                        return -ENOMEM;
                                ib->banned_irqs = nb;
                                ib->banned_irqs[ib->n_banned_irqs++] = (unsigned) x;
                        }
                } else if (script) {
                        free(ib->policy_script);
                        if (!(ib->policy_script = strdup(script)))
                                return -ENOMEM;
                } else if (streq(w, "-o") || streq(w, "--oneshot"))
                        ib->oneshot = true;
        }
        return 0;
}

/* ---- modprobe.d -------------------------------------------------------------------------------- */

/* kmod's modname_normalize(): dashes are underscores. */
static void module_normalize(char *m) {
        for (; *m; m++)
                if (*m == '-')
                        *m = '_';
}

int agents_scan_modprobe(const char *text, const AgentFile *af, Sources *s) {
        assert(af);
        assert(s);
        _cleanup_free_ char *joined = NULL;
        int n = 0;
        unsigned line = 0;

        for (const char *l = text; l && *l;) {
                size_t len = strcspn(l, "\n");
                unsigned first = ++line;
                /* a line ending in a backslash continues on the next (libkmod-config.c kmod_config_parse()) */
                free(joined);
                if (!(joined = strndup(l, len)))
                        return -ENOMEM;
                l += len + (l[len] == '\n');
                while (*joined && joined[strlen(joined) - 1] == '\\' && *l) {
                        size_t more = strcspn(l, "\n");
                        joined[strlen(joined) - 1] = ' ';
                        _cleanup_free_ char *j = NULL;
                        if (asprintf(&j, "%s%.*s", joined, (int) more, l) < 0)
                                return -ENOMEM;
                        free(joined);
                        joined = TAKE_PTR(j);
                        l += more + (l[more] == '\n');
                        line++;
                }
                char *p = joined + strspn(joined, " \t");
                if (*p == '#' || !startswith(p, "options") || !strchr(" \t", p[7]) || !p[7])
                        continue;
                p += 7;
                p += strspn(p, " \t");
                size_t ml = strcspn(p, " \t");
                if (ml == 0)
                        continue;
                _cleanup_free_ char *module = strndup(p, ml);
                if (!module)
                        return -ENOMEM;
                module_normalize(module);
                p += ml;
                /* "p=v p2=v2 ...": a value may be quoted (kmod passes it on as written) */
                for (;;) {
                        p += strspn(p, " \t");
                        if (!*p)
                                break;
                        const char *start = p;
                        bool quoted = false;
                        for (; *p && (quoted || !strchr(" \t", *p)); p++)
                                if (*p == '"')
                                        quoted = !quoted;
                        _cleanup_free_ char *opt = strndup(start, p - start), *what = NULL, *value = NULL;
                        if (!opt)
                                return -ENOMEM;
                        char *eq = strchr(opt, '=');
                        if (!eq || eq == opt)
                                continue;
                        *eq = 0;
                        const char *v = eq + 1;
                        size_t vl = strlen(v);
                        value = vl >= 2 && v[0] == '"' && v[vl - 1] == '"' ? strndup(v + 1, vl - 2) : strdup(v);
                        if (!value || asprintf(&what, "options %s %s=%s", module, opt, eq + 1) < 0)
                                return -ENOMEM;
                        Source src = { .tool = SOURCE_MODPROBE_D, .admin = af->admin, .file = (char *) af->file, .line = first,
                                       .label = (char *) "modprobe.d file", .what = what, .sets = SOURCE_SETS_MODULE_PARAM,
                                       .knob = -1, .module = module, .name = opt, .value = value,
                                       .target = SOURCE_TARGET_MODULE, .match_rotational = -1 };
                        if (sources_add(s, &src) < 0)
                                return -ENOMEM;
                        n++;
                }
        }
        return n;
}

/* ---- reading them through hostfs -------------------------------------------------------------- */

typedef struct ConfDir {
        HostFsKind kind;
        const char *dir;        /* relative to the kind */
        const char *shown;      /* as the admin knows it */
        bool admin;
} ConfDir;

static const ConfDir udev_dirs[] = {
        { HOSTFS_ETC,     "udev/rules.d", "/etc/udev/rules.d",     true },
        { HOSTFS_RUN,     "udev/rules.d", "/run/udev/rules.d",     true },
        { HOSTFS_USR_LOCAL_LIB, "udev/rules.d", "/usr/local/lib/udev/rules.d", true },
        { HOSTFS_USR_LIB, "udev/rules.d", "/usr/lib/udev/rules.d", false },
        { HOSTFS_LIB,     "udev/rules.d", "/lib/udev/rules.d",     false },
};

static const ConfDir link_dirs[] = {
        { HOSTFS_ETC,     "systemd/network", "/etc/systemd/network",     true },
        { HOSTFS_RUN,     "systemd/network", "/run/systemd/network",     true },
        { HOSTFS_USR_LOCAL_LIB, "systemd/network", "/usr/local/lib/systemd/network", true },
        { HOSTFS_USR_LIB, "systemd/network", "/usr/lib/systemd/network", false },
        { HOSTFS_LIB,     "systemd/network", "/lib/systemd/network",     false },
};

/* modprobe.d(5), kmod's libkmod/libkmod.c default_config_paths[]: /etc, /run and /usr/local/lib
 * are the admin's, /usr/lib (DISTCONFDIR on most distributions) and /lib the distribution's, in
 * that order (kmod 30 of Debian 12 has no DISTCONFDIR entry and reads /usr/lib through /lib).
 * udev(7) and systemd.link(5) read the same /etc, /run, /usr/local/lib, /usr/lib, /lib order. */
static const ConfDir modprobe_dirs[] = {
        { HOSTFS_ETC,     "modprobe.d", "/etc/modprobe.d",     true },
        { HOSTFS_RUN,     "modprobe.d", "/run/modprobe.d",     true },
        { HOSTFS_USR_LOCAL_LIB, "modprobe.d", "/usr/local/lib/modprobe.d", true },
        { HOSTFS_USR_LIB, "modprobe.d", "/usr/lib/modprobe.d", false },
        { HOSTFS_LIB,     "modprobe.d", "/lib/modprobe.d",     false },
};

typedef struct ConfFile {
        char *name;
        size_t dir;
} ConfFile;

static int conf_file_cmp(const void *a, const void *b) {
        return strcmp(((const ConfFile *) a)->name, ((const ConfFile *) b)->name);
}

/*
 * The files with suffix of dirs (earlier directory hides a name in a later one), sorted by
 * name with strcmp() as systemd's conf_files_list() does, each scanned with scan(). Files
 * that read empty (or a link to /dev/null) are masked.
 */
static int scan_conf_dirs(HostFs *h, const ConfDir *dirs, size_t n_dirs, const char *suffix, const char *label,
                          int (*scan)(const char *text, const AgentFile *af, Sources *s), Sources *s) {
        ConfFile *files = NULL;
        size_t n_files = 0;
        int r = 0;

        for (size_t d = 0; d < n_dirs; d++) {
                _cleanup_strv_free_ char **names = NULL;
                if (hostfs_list(h, dirs[d].kind, dirs[d].dir, &names) < 0)
                        continue;
                STRV_FOREACH(name, names) {
                        size_t l = strlen(*name), sl = strlen(suffix);
                        if (l <= sl || !streq(*name + l - sl, suffix))
                                continue;
                        bool seen = false;
                        for (size_t i = 0; i < n_files; i++)
                                seen = seen || streq(files[i].name, *name);
                        if (seen)
                                continue;
                        ConfFile *nf = realloc(files, (n_files + 1) * sizeof(ConfFile));
                        if (!nf) {
                                r = -ENOMEM;
                                goto out;
                        }
                        files = nf;
                        if (!(files[n_files].name = strdup(*name))) {
                                r = -ENOMEM;
                                goto out;
                        }
                        files[n_files++].dir = d;
                }
        }
        if (n_files > 0)
                qsort(files, n_files, sizeof(ConfFile), conf_file_cmp);
        for (size_t i = 0; i < n_files; i++) {
                const ConfDir *d = &dirs[files[i].dir];
                _cleanup_free_ char *text = NULL, *rel = NULL, *shown = NULL;
                if (asprintf(&rel, "%s/%s", d->dir, files[i].name) < 0 || asprintf(&shown, "%s/%s", d->shown, files[i].name) < 0) {
                        r = -ENOMEM;
                        goto out;
                }
                if (hostfs_read(h, d->kind, rel, &text) < 0)
                        continue;       /* a link to /dev/null reads empty: masked */
                AgentFile af = { .file = shown, .label = label, .admin = d->admin, .group = (unsigned) i };
                r = scan(text, &af, s);
                if (r < 0)
                        goto out;
        }
        r = 0;
out:
        for (size_t i = 0; i < n_files; i++)
                free(files[i].name);
        free(files);
        return r;
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

/* One profile, its include= parents first (a child's option wins: it comes later), at most depth 8. */
static int scan_tuned_profile(HostFs *h, const char *profile, bool admin, unsigned depth, Sources *s) {
        if (depth > 8 || !*profile || strchr(profile, '/') || streq(profile, ".") || streq(profile, ".."))
                return 0;
        for (size_t d = 0; d < ELEMENTSOF(tuned_dirs); d++) {
                _cleanup_free_ char *text = NULL, *rel = NULL, *shown = NULL, *label = NULL, *include = NULL;
                if (asprintf(&rel, "%s/%s/tuned.conf", tuned_dirs[d].dir, profile) < 0 ||
                    asprintf(&shown, "%s/%s/tuned.conf", tuned_dirs[d].shown, profile) < 0 ||
                    asprintf(&label, "tuned profile \"%s\"", profile) < 0)
                        return -ENOMEM;
                if (hostfs_read(h, tuned_dirs[d].kind, rel, &text) < 0)
                        continue;
                /* the parents first: read include= without keeping what it sets */
                Sources scratch = {};
                int r = agents_scan_tuned(text, &(AgentFile) { .file = shown, .label = label, .admin = admin }, &scratch, &include);
                sources_done(&scratch);
                if (r < 0)
                        return r;
                for (char *save = NULL, *t = include ? strtok_r(include, ", \t", &save) : NULL; t; t = strtok_r(NULL, ", \t", &save)) {
                        r = scan_tuned_profile(h, t, admin, depth + 1, s);
                        if (r < 0)
                                return r;
                }
                r = agents_scan_tuned(text, &(AgentFile) { .file = shown, .label = label, .admin = admin }, s, NULL);
                return r < 0 ? r : 0;   /* the first directory holding the profile wins */
        }
        return 0;
}

static int scan_tuned(HostFs *h, Sources *s) {
        _cleanup_free_ char *active = NULL, *mode = NULL;
        if (hostfs_read(h, HOSTFS_ETC, "tuned/active_profile", &active) < 0)
                return 0;
        if (!tuned_running(h)) {
                log_debug("tuned has an active profile but is not running: not counted");
                return 0;
        }
        /* "auto": tuned-adm recommend (or the package's first start) chose it, not the admin */
        bool admin = !(hostfs_read(h, HOSTFS_ETC, "tuned/profile_mode", &mode) >= 0 && startswith(mode, "auto"));
        char *t = strip(strip_newline(active));
        if (!*t)
                return 0;       /* tuned-adm off */
        if (!(s->tuned_profile = strdup(t)))
                return -ENOMEM;
        for (char *save = NULL, *p = strtok_r(t, " \t\n", &save); p; p = strtok_r(NULL, " \t\n", &save)) {
                int r = scan_tuned_profile(h, p, admin, 0, s);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int scan_irqbalance(HostFs *h, Sources *s) {
        IrqbalanceFacts *ib = &s->irqbalance;
        _cleanup_strv_free_ char **names = NULL;
        if (hostfs_list(h, HOSTFS_RUN, "irqbalance", &names) >= 0)
                STRV_FOREACH(name, names) {
                        char proc[32], tail[8] = "";
                        unsigned pid;
                        if (sscanf(*name, "irqbalance%u%7s", &pid, tail) != 2 || !streq(tail, ".sock") || pid == 0)
                                continue;
                        snprintf(proc, sizeof(proc), "%u", pid);
                        if (!hostfs_exists(h, HOSTFS_PROCFS, proc))
                                continue;
                        ib->running = true;
                        ib->pid = pid;
                        break;
                }
        static const struct { const char *rel, *shown; } files[] = {
                { "default/irqbalance",   "/etc/default/irqbalance" },
                { "sysconfig/irqbalance", "/etc/sysconfig/irqbalance" },
        };
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                _cleanup_free_ char *text = NULL;
                if (hostfs_read(h, HOSTFS_ETC, files[i].rel, &text) < 0)
                        continue;
                return agents_scan_irqbalance(text, files[i].shown, ib);
        }
        return 0;
}

/* blkmqd's own zz-blkmqd.conf (or an earlier blkmqd's blkmqd.conf, before the start renames it) is blkmqd's setting, not another tool's; one the admin wrote or
 * edited (not in blkmqd's form, modprobe_file_is_blkmqd()) is theirs. */
static int scan_modprobe(const char *text, const AgentFile *af, Sources *s) {
        if ((streq(af->file, "/etc/modprobe.d/" MODPROBE_D_FILE) || streq(af->file, "/etc/modprobe.d/" MODPROBE_D_FILE_OLD)) &&
            modprobe_file_is_blkmqd(text))
                return 0;
        return agents_scan_modprobe(text, af, s);
}

static int scan_link(const char *text, const AgentFile *af, Sources *s) {
        return agents_scan_link(text, af, s);
}

int agents_gather(HostFs *h, Sources *ret) {
        assert(ret);
        _cleanup_(sources_done) Sources s = {};
        _cleanup_free_ char *cmdline = NULL;
        int r;

        /* in the order they act: modprobe.d, whose options modprobe passes before the command
         * line's (libkmod/libkmod-config.c kmod_config_new(): the files in conf_files_list()
         * order, by name, then kmod_config_parse_kcmdline()), the command line (boot), udev
         * rules (add/change events), tuned */
        r = scan_conf_dirs(h, modprobe_dirs, ELEMENTSOF(modprobe_dirs), ".conf", "modprobe.d file", scan_modprobe, &s);
        if (r < 0)
                return r;
        if (hostfs_read(h, HOSTFS_PROCFS, "cmdline", &cmdline) >= 0) {
                r = agents_scan_cmdline(cmdline, &s);
                if (r < 0)
                        return r;
                s.cmdline_text = TAKE_PTR(cmdline);
        }
        r = scan_conf_dirs(h, udev_dirs, ELEMENTSOF(udev_dirs), ".rules", "udev rule", agents_scan_udev_rules, &s);
        if (r >= 0)
                r = scan_conf_dirs(h, link_dirs, ELEMENTSOF(link_dirs), ".link", ".link file", scan_link, &s);
        if (r >= 0)
                r = scan_tuned(h, &s);
        if (r >= 0)
                r = scan_irqbalance(h, &s);
        if (r < 0)
                return r;
        *ret = s;
        s = (Sources) {};
        return 0;
}

static const char *sets_what(const Source *src) {
        if (src->sets == SOURCE_SETS_TUNABLE)
                return "an elevator tunable";
        if (src->sets == SOURCE_SETS_CHANNELS)
                return "a NIC's channels";
        if (src->sets == SOURCE_SETS_MODULE_PARAM)
                return "a module parameter";
        switch (src->knob) {
        case KNOB_ELEVATOR:         return "the queue scheduler (elevator)";
        case KNOB_IRQ_AFFINITY:     return "IRQ affinity";
        case KNOB_NIC_IRQ_AFFINITY: return "the NIC's IRQ affinity";
        case KNOB_XPS:              return "XPS";
        default:                    return knob_to_string(src->knob);
        }
}

/* The same place as one warned about before: file, line, setting and owner. */
static bool source_warned(const Source *src, const Sources *previous) {
        for (size_t i = 0; previous && i < previous->n; i++) {
                const Source *p = &previous->v[i];
                if (p->line == src->line && p->admin == src->admin && p->sets == src->sets && p->knob == src->knob &&
                    streq_ptr(p->file, src->file) && streq_ptr(p->label, src->label) && streq_ptr(p->what, src->what))
                        return true;
        }
        return false;
}

int agents_warn(const Sources *s, DeferTo defer_to, const Sources *previous, DeferTo previous_defer_to) {
        unsigned n = 0;
        if (previous && previous_defer_to != defer_to)
                previous = NULL;        /* what blkmqd does changed: every place again */
        for (size_t i = 0; i < s->n; i++) {
                const Source *src = &s->v[i];
                if (src->sets == SOURCE_SETS_NOTHING || source_warned(src, previous))
                        continue;
                /* a module parameter of a driver blkmqd never proposes: not worth a line */
                if (src->sets == SOURCE_SETS_MODULE_PARAM && !known_module_param(src->module, src->name))
                        continue;
                if (++n > AGENTS_WARN_MAX)
                        continue;
                bool defers = defer_to == DEFER_TO_ALL || (defer_to == DEFER_TO_ADMIN && src->admin);
                const char *does = src->sets == SOURCE_SETS_CHANNELS ?
                        "blkmqd aligns to the channels it finds and never changes them" :
                        defers ? "blkmqd leaves it where it applies (deferred)" :
                                 "blkmqd writes its own value over it where it applies";
                char at[32] = "";
                if (src->line)
                        snprintf(at, sizeof(at), ":%u", src->line);
                log_warning("%s%s: %s %s sets %s, which blkmqd manages too; %s is %s (DeferTo=%s): %s",
                            src->file, at, src->label, src->what, sets_what(src),
                            src->admin ? "it" : "this", src->admin ? "the admin's choice" : "a distribution default",
                            defer_to_to_string(defer_to), does);
        }
        bool irqbalance_warned = previous && previous->irqbalance.running && previous->irqbalance.pid == s->irqbalance.pid &&
                                 streq_ptr(previous->irqbalance.config, s->irqbalance.config);
        if (s->irqbalance.running && !irqbalance_warned && ++n <= AGENTS_WARN_MAX)
                log_warning("irqbalance is running (pid %u%s%s): it moves every IRQ the kernel does not manage and it does "
                            "not ban, which blkmqd manages too for the vectors it places; explain names them, the setting that "
                            "places them (IrqAffinity= or NicIrqAffinity=) and how to ban them",
                            s->irqbalance.pid, s->irqbalance.config ? ", " : "", strempty(s->irqbalance.config));
        if (n > AGENTS_WARN_MAX)
                log_warning("... and %u more place(s) where other tools set what blkmqd manages", n - AGENTS_WARN_MAX);
        return (int) n;
}
