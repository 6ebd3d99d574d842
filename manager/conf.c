/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf.h"
#include "macro.h"
#include "parse.h"
#include "strv.h"

static const char * const mode_table[_MODE_MAX] = {
        [MODE_AUTO]    = "auto",
        [MODE_DRY_RUN] = "dry-run",
        [MODE_OFF]     = "off",
};

DEFINE_STRING_TABLE_LOOKUP(manager_mode, ManagerMode, mode_table, _MODE_MAX, _MODE_INVALID);

void config_done(Config *c) {
        policy_config_done(&c->policy);
        c->devices = strv_free(c->devices);
        for (size_t i = 0; i < c->n_elevators; i++) {
                free(c->elevators[i].name);
                free(c->elevators[i].where);
                free(c->elevators[i].section);
        }
        free(c->elevators);
        c->elevators = NULL;
        c->n_elevators = 0;
        c->textfile_dir = mfree_str(c->textfile_dir);
}

int config_init(Config *c) {
        assert(c);
        *c = (Config) { .mode = _MODE_INVALID, .rate_window_usec = 1000000, .verify_usec = CONFIG_VERIFY_USEC_DEFAULT,
                        .metrics_interval_usec = CONFIG_METRICS_INTERVAL_USEC_DEFAULT };
        return policy_config_init_defaults(&c->policy);
}

typedef struct ParseContext {
        Config *config;
        const char *file;
        char *error;
        int line;
        int error_line;         /* line of error (the first one a handler reported) */
        bool continuation;      /* this Key= is a further piece of a physical line too long for libinih */
        DeviceRule *rule;       /* the current [Device:] section */
        int speed_line;         /* the last line setting FastMs= or SlowMs=, 0 none */
} ParseContext;

static int parse_bool(const char *v) {
        if (!strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcasecmp(v, "on") || streq(v, "1"))
                return 1;
        if (!strcasecmp(v, "no") || !strcasecmp(v, "false") || !strcasecmp(v, "off") || streq(v, "0"))
                return 0;
        return -EINVAL;
}

/* Words of v appended to *l (a list key continued over pieces of one long line). */
static int append_words(const char *v, char ***l) {
        _cleanup_free_ char *copy = strdup(v);
        char *save = NULL;
        if (!copy)
                return -ENOMEM;
        for (char *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save))
                if (strv_extend(l, t) < 0)
                        return -ENOMEM;
        return 0;
}

static int fail(ParseContext *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(ParseContext *p, const char *fmt, ...) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (!p->error) {
                if (asprintf(&p->error, "%s:%d: %s", p->file, p->line, msg) < 0)
                        p->error = NULL;
                p->error_line = p->line;
        }
        return 0;       /* inih: stop at this line */
}

/* Key=v that takes one of two words: *ret_a = (v is a). 1, or fail()'s 0 for any other v. */
static int parse_choice(ParseContext *p, const char *key, const char *v, const char *a, const char *b, bool *ret_a) {
        if (!streq(v, a) && !streq(v, b))
                return fail(p, "%s=%s: expected %s or %s", key, v, a, b);
        *ret_a = streq(v, a);
        return 1;
}

/* Key=SECONDS|0|off|no of a periodic job: 1 to 86400 s, or 0 for none (no timer at all); zero
 * says what 0 means in the error. 1 with *ret_usec, or fail()'s 0. */
static int parse_period(ParseContext *p, const char *key, const char *v, const char *zero, uint64_t *ret_usec) {
        char *e;
        double sec = strtod(v, &e);
        if (streq(v, "off") || streq(v, "no"))
                sec = 0;
        else if (e == v || *e || !(sec == 0 || (sec >= 1 && sec <= 86400)))      /* NaN fails both */
                return fail(p, "%s=%s: expected %s or seconds from 1 to 86400", key, v, zero);
        *ret_usec = (uint64_t) (sec * 1e6);
        return 1;
}

static int parse_manager(ParseContext *p, const char *key, const char *v) {
        Config *c = p->config;
        int b;

        if (streq(key, "Mode")) {
                ManagerMode m = manager_mode_from_string(v);
                if (m < 0)
                        return fail(p, "Mode=%s: expected auto, dry-run or off", v);
                c->mode = m;
        } else if (streq(key, "Devices")) {
                if (!p->continuation)
                        c->devices = strv_free(c->devices);
                if (append_words(v, &c->devices) < 0)
                        return fail(p, "out of memory");
        } else if (streq(key, "Reassert")) {
                if ((b = parse_bool(v)) < 0)
                        return fail(p, "Reassert=%s: expected yes or no", v);
                c->reassert = b;
        } else if (streq(key, "RateWindowSec")) {
                char *e;
                double sec = strtod(v, &e);
                if (e == v || *e || !(sec >= 0.2 && sec <= 3600))      /* NaN fails both */
                        return fail(p, "RateWindowSec=%s: expected seconds from 0.2 to 3600", v);
                c->rate_window_usec = (uint64_t) (sec * 1e6);
        } else if (streq(key, "VerifySec")) {
                return parse_period(p, key, v, "0 (off)", &c->verify_usec);
        } else if (streq(key, "DeferTo")) {
                DeferTo d = defer_to_from_string(v);
                if (d < 0)
                        return fail(p, "DeferTo=%s: expected admin, all or none", v);
                c->policy.defer_to = d;
        } else if (streq(key, "MetricsIntervalSec")) {
                return parse_period(p, key, v, "0 (on change only)", &c->metrics_interval_usec);
        } else if (streq(key, "TextfileDirectory")) {
                bool off = streq(v, "off") || streq(v, "no") || isempty(v);
                if (!off && (v[0] != '/' || strstr(v, "/../") || (strlen(v) >= 3 && streq(v + strlen(v) - 3, "/.."))))
                        return fail(p, "TextfileDirectory=%s: expected an absolute directory or off", v);
                if (free_and_strdup(&c->textfile_dir, off ? "" : v) < 0)
                        return fail(p, "out of memory");
        } else if (streq(key, "ModuleParams")) {
                bool propose = false;
                if (!parse_choice(p, key, v, "propose", "write", &propose))
                        return 0;
                c->module_params_write = !propose;
        } else if (streq(key, "VirtualDevices")) {
                bool list = false;
                if (!parse_choice(p, key, v, "list", "manage", &list))
                        return 0;
                c->policy.manage_virtual = !list;
        } else
                return fail(p, "unknown key \"%s\" in [Manager]", key);
        return 1;
}

/*
 * Check every word of an Elevator= value; 1 when fine, else fail()'s 0 with the line. Legacy
 * single-queue names (elevator_name_is_legacy(), any case) are refused with the blk-mq name to
 * use: no silent mapping (cfq and bfq, deadline and mq-deadline are different code). So is a
 * word that can never match what a kernel offers (elevator_name_invalid(): "BFQ",
 * "mq-deadline,bfq", a quoted name), "auto", and "keep" inside a list or where keep_allowed
 * is false ([Device:] Elevator= takes one elevator).
 */
/* Note name of an Elevator= line of section (cls: its class, _DISK_CLASS_INVALID for a [Device:]
 * section) for config_check_elevators() and the manager's warnings. 1, or fail()'s 0. */
static int note_elevator(ParseContext *p, const char *name, DiskClass cls, const char *section) {
        Config *c = p->config;
        ConfigElevator *n = realloc(c->elevators, (c->n_elevators + 1) * sizeof(ConfigElevator));
        if (!n)
                return fail(p, "out of memory");
        c->elevators = n;
        n[c->n_elevators] = (ConfigElevator) { .cls = cls, .name = strdup(name), .section = strdup(section) };
        c->n_elevators++;
        if (!n[c->n_elevators - 1].name || !n[c->n_elevators - 1].section ||
            asprintf(&n[c->n_elevators - 1].where, "%s:%d", p->file, p->line) < 0)
                return fail(p, "out of memory");
        return 1;
}

static int check_elevator_names(ParseContext *p, const char *v, bool keep_allowed, DiskClass cls, const char *section) {
        _cleanup_free_ char *copy = strdup(v);
        char *save = NULL, buf[128];
        size_t n = 0;
        if (!copy)
                return fail(p, "out of memory");
        const char *instead, *why;
        for (char *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save), n++) {
                if (elevator_name_is_legacy(t, &instead))
                        return fail(p, "Elevator=%s: \"%s\" is a legacy single-queue elevator name that no blk-mq kernel (5.0 and later) offers; "
                                    "use \"%s\" (or another name listed in /sys/block/*/queue/scheduler)",
                                    v, t, instead);
                if ((why = elevator_name_invalid(t, buf, sizeof(buf))))
                        return fail(p, "Elevator=%s: \"%s\": %s", v, t, why);
                if (streq(t, "auto") || (streq(t, "keep") && !keep_allowed))
                        return fail(p, "Elevator=%s: \"%s\" is not an elevator; %s", v, t,
                                    keep_allowed ? "\"keep\" alone leaves the elevator as it is" :
                                                   "leave Elevator= out of the section to keep what the class decides");
                if (streq(t, "keep") && (n > 0 || strtok_r(NULL, " \t", &save)))
                        return fail(p, "Elevator=%s: \"keep\" stands alone, not in a list of elevators", v);
                if (!streq(t, "keep") && !note_elevator(p, t, cls, section))
                        return 0;
        }
        return 1;
}

int config_check_elevators(const Config *c, char * const *offered, char **ret_error) {
        assert(c);
        assert(ret_error);
        for (size_t i = 0; i < c->n_elevators; i++) {
                const ConfigElevator *e = &c->elevators[i];
                if (elevator_name_in_tree(e->name) || strv_contains(offered, e->name))
                        continue;
                const char *meant = elevator_name_suggest(e->name);
                _cleanup_free_ char *list = strv_join((char **) offered, " ");
                char hint[64] = "";
                if (meant)
                        snprintf(hint, sizeof(hint), "; did you mean \"%s\"?", meant);
                if (asprintf(ret_error, "%s: %s Elevator=: no kernel has an elevator \"%s\" (mainline has none, mq-deadline, "
                             "kyber and bfq; this kernel offers %s, and no module for it)%s", e->where, e->section, e->name,
                             list && *list ? list : "no other", hint) < 0)
                        *ret_error = NULL;
                return -EINVAL;
        }
        return 0;
}

/*
 * IoSched.<elevator>.<tunable>=VALUE|keep (keep, or auto, clears): the tunable, and the
 * validated value into *ret (NULL for keep). 1, or fail()'s 0 with the line.
 */
static int parse_iosched_key(ParseContext *p, const char *key, const char *v, IoschedTunable *ret_t, char **ret) {
        const char *dotted = startswith(key, "IoSched.");
        IoschedTunable t = dotted ? iosched_tunable_from_dotted(dotted) : _IOSCHED_TUNABLE_INVALID;
        if (t < 0)
                return fail(p, "%s=: not an elevator tunable blkmqd knows (IoSched.bfq.slice_idle, IoSched.mq-deadline.fifo_batch, "
                            "IoSched.kyber.read_lat_nsec, ...: man blkmqd.conf)", key);
        *ret_t = t;
        *ret = NULL;
        if (streq(v, "keep") || streq(v, "auto"))
                return 1;
        int r = iosched_tunable_validate(t, v, strlen(v), ret);
        if (r < 0) {
                _cleanup_free_ char *expected = iosched_tunable_expected(t);
                return fail(p, "%s=%s: %s; expected %s", key, v, r == -ERANGE ? "out of range" : "not a decimal number",
                            strna(expected));
        }
        return 1;
}

static int parse_class(ParseContext *p, DiskClass cls, const char *key, const char *v) {
        ClassPolicy *cp = &p->config->policy.classes[cls];

        if (startswith(key, "IoSched.")) {
                IoschedTunable t;
                char *value;
                if (!parse_iosched_key(p, key, v, &t, &value))
                        return 0;
                free(cp->iosched[t]);
                cp->iosched[t] = value;
                return 1;
        }
        if (streq(key, "Elevator")) {
                if (!p->continuation)
                        cp->elevators = strv_free(cp->elevators);
                if (streq(v, "keep") && !p->continuation)
                        return 1;
                char section[64];
                snprintf(section, sizeof(section), "[Class:%s]", disk_class_to_string(cls));
                if (!check_elevator_names(p, v, true, cls, section))
                        return 0;
                if (append_words(v, &cp->elevators) < 0)
                        return fail(p, "out of memory");
                if (!cp->elevators)
                        return fail(p, "Elevator= needs at least one name, or \"keep\"");
        } else if (streq(key, "RqAffinity")) {
                int x;
                if (streq(v, "keep"))
                        cp->rq_affinity = -1;
                else if (parse_int(v, &x) < 0 || x < 0 || x > 2)
                        return fail(p, "RqAffinity=%s: expected 0, 1, 2 or keep", v);
                else
                        cp->rq_affinity = x;
        } else if (streq(key, "HostTagset")) {
                if (streq(v, "auto"))
                        cp->host_tagset = HOST_TAGSET_AUTO;
                else if (streq(v, "disable"))
                        cp->host_tagset = HOST_TAGSET_DISABLE;
                else if (streq(v, "keep"))
                        cp->host_tagset = HOST_TAGSET_KEEP;
                else
                        return fail(p, "HostTagset=%s: expected auto, disable or keep", v);
        } else if (streq(key, "IrqAffinity"))
                return parse_choice(p, key, v, "hctx", "keep", &cp->irq_follow_hctx);
        else
                return fail(p, "unknown key \"%s\" in a [Class:] section", key);
        return 1;
}

static int set_rule_knob(ParseContext *p, Knob k, const char *v) {
        DeviceRule *rule = p->rule;

        if (policy_overrides_set(&rule->settings, k, v) < 0)
                return fail(p, "out of memory");
        /* explain shows "config:<section>=<value>"; the label lives as long as the rule */
        rule->settings.origin[k] = rule->label;
        return 1;
}

static int parse_device(ParseContext *p, const char *key, const char *v) {
        DeviceRule *rule = p->rule;
        char **glob = streq(key, "MatchName") ? &rule->match_name :
                      streq(key, "MatchDriver") ? &rule->match_driver :
                      streq(key, "MatchTransport") ? &rule->match_transport :
                      streq(key, "MatchIdentity") ? &rule->match_identity : NULL;
        int b;

        if (glob)
                return free_and_strdup(glob, v) < 0 ? fail(p, "out of memory") : 1;

        if (streq(key, "MatchHwQueues")) {
                uint64_t a, z;
                const char *dash = strchr(v, '-');
                if (dash) {
                        _cleanup_free_ char *lo = strndup(v, dash - v);
                        if (!lo || parse_u64(lo, &a) < 0 || parse_u64(dash + 1, &z) < 0 || a > z)
                                return fail(p, "MatchHwQueues=%s: expected N or MIN-MAX", v);
                } else if (parse_u64(v, &a) < 0)
                        return fail(p, "MatchHwQueues=%s: expected N or MIN-MAX", v);
                else
                        z = a;
                rule->match_hwq_min = a;
                rule->match_hwq_max = z;
                return 1;
        }
        if (streq(key, "MatchRotational")) {
                if ((b = parse_bool(v)) < 0)
                        return fail(p, "MatchRotational=%s: expected yes or no", v);
                rule->match_rotational = b ? TRISTATE_YES : TRISTATE_NO;
                return 1;
        }
        if (streq(key, "DeferTo")) {
                DeferTo d = defer_to_from_string(v);
                if (d < 0)
                        return fail(p, "DeferTo=%s: expected admin, all or none", v);
                rule->settings.defer_to = d;
                rule->settings.defer_to_set = true;
                rule->settings.defer_to_origin = rule->label;
                return 1;
        }
        if (streq(key, "Enabled")) {
                if ((b = parse_bool(v)) < 0)
                        return fail(p, "Enabled=%s: expected yes or no", v);
                rule->settings.disabled = !b;
                rule->has_enabled = true;
                rule->settings.origin[POLICY_FILE_ENABLED] = rule->label;
                return 1;
        }

        if (startswith(key, "IoSched.")) {
                IoschedTunable t;
                _cleanup_free_ char *value = NULL;
                if (!parse_iosched_key(p, key, v, &t, &value))
                        return 0;
                if (policy_overrides_set_iosched(&rule->settings, t, value) < 0)
                        return fail(p, "out of memory");
                rule->settings.iosched_origin[t] = rule->label;
                return 1;
        }

        /* Knob settings; values are checked against each disk when the rule applies. */
        Knob k = streq(key, "Elevator") ? KNOB_ELEVATOR :
                 streq(key, "RqAffinity") ? KNOB_RQ_AFFINITY :
                 streq(key, "NrRequests") ? KNOB_NR_REQUESTS :
                 streq(key, "IrqAffinity") ? KNOB_IRQ_AFFINITY :
                 streq(key, "NicIrqAffinity") ? KNOB_NIC_IRQ_AFFINITY :
                 streq(key, "Xps") ? KNOB_XPS :
                 streq(key, "NrIoQueues") ? KNOB_NR_IO_QUEUES : _KNOB_INVALID;
        if (k < 0)
                return fail(p, "unknown key \"%s\" in [Device:%s]", key, rule->name);

        if ((k == KNOB_NIC_IRQ_AFFINITY || k == KNOB_XPS) && !streq(v, "hctx") && !streq(v, "keep"))
                return fail(p, "%s=%s: expected hctx or keep", key, v);
        if (k == KNOB_NR_IO_QUEUES && !streq(v, "keep")) {
                uint64_t x;
                if (parse_u64(v, &x) < 0 || x < 1 || x > 65535)
                        return fail(p, "NrIoQueues=%s: expected keep or a number from 1 to 65535", v);
        }

        /* every knob takes keep: left to the disk, whatever the class wants */
        if (streq(v, "keep"))
                return set_rule_knob(p, k, v);
        if (k == KNOB_RQ_AFFINITY) {
                int x;
                if (parse_int(v, &x) < 0 || x < 0 || x > 2)
                        return fail(p, "RqAffinity=%s: expected 0, 1, 2 or keep", v);
        } else if (k == KNOB_NR_REQUESTS) {
                uint64_t x;
                if (parse_u64(v, &x) < 0 || x < 4)
                        return fail(p, "NrRequests=%s: expected a number >= 4 or keep", v);
        } else if (k == KNOB_IRQ_AFFINITY && !streq(v, "hctx")) {
                _cleanup_(cpuset_done) CpuSet set = {};
                if (cpuset_parse(v, &set) < 0 || cpuset_count(&set) == 0)
                        return fail(p, "IrqAffinity=%s: expected hctx, a CPU list or keep", v);
        } else if (k == KNOB_ELEVATOR && !check_elevator_names(p, v, true, _DISK_CLASS_INVALID, rule->label + strlen("config ")))
                return 0;
        else if (k == KNOB_ELEVATOR && strpbrk(v, " \t"))
                return fail(p, "Elevator=%s: one elevator name", v);
        return set_rule_knob(p, k, v);
}

/* [Network]: what the alignment rule may do (policies/net-align.c). */
static int parse_network(ParseContext *p, const char *key, const char *v) {
        NetPolicy *np = &p->config->policy.net;
        if (streq(key, "NicIrqAffinity"))
                return parse_choice(p, key, v, "hctx", "keep", &np->nic_irq_follow_hctx);
        if (streq(key, "Xps"))
                return parse_choice(p, key, v, "hctx", "keep", &np->xps_follow_hctx);
        if (streq(key, "NrIoQueues"))
                return parse_choice(p, key, v, "propose", "keep", &np->propose_nr_io_queues);
        if (streq(key, "NicChannels"))
                return parse_choice(p, key, v, "propose", "keep", &np->propose_nic_channels);
        return fail(p, "unknown key \"%s\" in [Network]", key);
}

/* A decimal number of v's unit scaled to µs (ms: 1000, s: 1000000) within [min, max] µs into *ret. */
static bool parse_scaled_usec(const char *v, double scale, double min, double max, uint64_t *ret) {
        char *e;
        double x = strtod(v, &e);
        if (e == v || *e || !(x * scale >= min && x * scale <= max))     /* NaN fails both */
                return false;
        *ret = (uint64_t) (x * scale + 0.5);
        return true;
}

/* [Speed]: the measured speed's thresholds and hysteresis, the drivers whose rotational flag is
 * trusted (policies/speed.h). */
static int parse_speed(ParseContext *p, const char *key, const char *v) {
        SpeedConfig *c = &p->config->policy.speed;
        uint64_t x;
        int b;

        if (streq(key, "FastMs") || streq(key, "SlowMs")) {
                if (!parse_scaled_usec(v, 1000, 1, 60e6, &x))
                        return fail(p, "%s=%s: expected milliseconds from 0.001 to 60000", key, v);
                *(streq(key, "FastMs") ? &c->fast_usec : &c->slow_usec) = x;
        } else if (streq(key, "MinIOs")) {
                if (parse_u64_range(v, 16, UINT64_C(100000000), &x) < 0)
                        return fail(p, "MinIOs=%s: expected a number of I/Os from 16 to 100000000", v);
                c->min_ios = x;
        } else if (streq(key, "WindowSec")) {
                if (!parse_scaled_usec(v, 1e6, 0, 86400e6, &x))
                        return fail(p, "WindowSec=%s: expected seconds from 0 to 86400", v);
                c->window_usec = x;
        } else if (streq(key, "MinChangeSec")) {
                if (!parse_scaled_usec(v, 1e6, 0, 86400e6 * 7, &x))
                        return fail(p, "MinChangeSec=%s: expected seconds from 0 to 604800", v);
                c->min_change_usec = x;
        } else if (streq(key, "Measure")) {
                if ((b = parse_bool(v)) < 0)
                        return fail(p, "Measure=%s: expected yes or no", v);
                c->measure = b;
        } else if (streq(key, "TrustRotational")) {
                if (!p->continuation)
                        c->trust_rotational = strv_free(c->trust_rotational);
                if (append_words(v, &c->trust_rotational) < 0)
                        return fail(p, "out of memory");
        } else
                return fail(p, "unknown key \"%s\" in [Speed]", key);
        if (streq(key, "FastMs") || streq(key, "SlowMs"))
                p->speed_line = p->line;        /* the file's last bound: a bad pair is reported there */
        return 1;
}

static int on_ini(void *userdata, const char *section, const char *key, const char *value, int line) {
        ParseContext *p = userdata;
        const char *s;

        p->line = line;
        if (!key)
                return 1;               /* section start (INI_CALL_HANDLER_ON_NEW_SECTION) */
        if (streq(section, "Manager"))
                return parse_manager(p, key, value);
        if (streq(section, "Network"))
                return parse_network(p, key, value);
        if (streq(section, "Speed"))
                return parse_speed(p, key, value);
        if ((s = startswith(section, "Class:"))) {
                DiskClass c = disk_class_from_string(s);
                if (c < 0 || c == DISK_CLASS_NO_MQ || c == DISK_CLASS_UNKNOWN)
                        return fail(p, "[Class:%s]: not a class blkmqd tunes", s);
                return parse_class(p, c, key, value);
        }
        if ((s = startswith(section, "Device:"))) {
                PolicyConfig *pc = &p->config->policy;
                if (!p->rule || !streq(p->rule->name, s)) {
                        DeviceRule *n = realloc(pc->rules, (pc->n_rules + 1) * sizeof(DeviceRule));
                        if (!n)
                                return fail(p, "out of memory");
                        pc->rules = n;
                        p->rule = &n[pc->n_rules++];
                        *p->rule = (DeviceRule) { .match_hwq_min = -1, .match_hwq_max = -1,
                                                  .match_rotational = TRISTATE_UNKNOWN };
                        if (!(p->rule->name = strdup(s)) || asprintf(&p->rule->label, "config [Device:%s]", s) < 0)
                                return fail(p, "out of memory");
                }
                return parse_device(p, key, value);
        }
        if ((s = startswith(section, "Module:"))) {
                uint64_t x;
                PolicyConfig *pc = &p->config->policy;
                if (!known_module_param(s, key))
                        return fail(p, "[Module:%s] %s: not a queue-layout parameter blkmqd manages", s, key);
                if (parse_u64(value, &x) < 0)
                        return fail(p, "[Module:%s] %s=%s: expected a number", s, key, value);
                for (size_t i = 0; i < pc->n_module_params; i++)      /* a later setting wins */
                        if (streq(pc->module_params[i].module, s) && streq(pc->module_params[i].param, key))
                                return free_and_strdup(&pc->module_params[i].value, value) < 0 ? fail(p, "out of memory") : 1;
                if (module_wishes_add(&pc->module_params, &pc->n_module_params, s, key, value) < 0)
                        return fail(p, "out of memory");
                return 1;
        }
        return fail(p, "unknown section [%s]", section);
}

/*
 * libinih (Debian's build) takes lines of at most INI_MAX_LINE - 1 bytes. The reader feeds
 * it one physical line at a time, counting lines, and cuts a longer "Key=a b c ..." at
 * blanks into several "Key=..." pieces flagged as continuations: list keys (Devices=,
 * Elevator=) append them, any other key reports "value too long".
 */
typedef struct LineReader {
        const char *text;
        int line;               /* physical line of the last piece handed out */
        bool continuation;      /* the last piece continues a long physical line */
        char *key;              /* the key of a long line being cut, "" = not cutting */
        const char *rest;       /* what is left of that line's value */
        size_t rest_len;
        int *piece_line;        /* physical line of every line handed to inih (inih counts pieces) */
        size_t n_pieces;
} LineReader;

static char *reader_note(LineReader *r, char *str) {
        int *n = realloc(r->piece_line, (r->n_pieces + 1) * sizeof(int));
        if (!n)
                return NULL;
        r->piece_line = n;
        n[r->n_pieces++] = r->line;
        return str;
}

static void reader_piece(LineReader *r, char *str, int num) {
        size_t room = num - 2 - strlen(r->key) - 1;     /* "Key=" + piece + "\n" + NUL */
        size_t l = r->rest_len;
        if (l > room) {
                l = room;
                while (l > 0 && r->rest[l] != ' ' && r->rest[l] != '\t')
                        l--;
                if (l == 0)
                        l = room;       /* one word longer than a line: cut it, the value check rejects it */
        }
        snprintf(str, num, "%s=%.*s\n", r->key, (int) l, r->rest);
        r->rest += l;
        r->rest_len -= l;
        while (r->rest_len > 0 && (*r->rest == ' ' || *r->rest == '\t')) {
                r->rest++;
                r->rest_len--;
        }
}

static char *reader(char *str, int num, void *stream) {
        LineReader *r = stream;

        if (r->key && r->rest_len > 0) {
                r->continuation = true;
                reader_piece(r, str, num);
                return reader_note(r, str);
        }
        r->key = mfree_str(r->key);
        r->continuation = false;
        if (!*r->text)
                return NULL;

        const char *nl = strchr(r->text, '\n');
        size_t l = nl ? (size_t) (nl - r->text) : strlen(r->text);
        const char *line = r->text;
        r->text += l + !!nl;
        r->line++;

        if (l + 2 <= (size_t) num) {
                memcpy(str, line, l);
                str[l] = '\n';
                str[l + 1] = 0;
                return reader_note(r, str);
        }

        const char *eq = memchr(line, '=', l);
        if (!eq || (size_t) (eq - line) + 16 > (size_t) num) {
                snprintf(str, num, "\x01 line too long\n");   /* a syntax error at this line */
                return reader_note(r, str);
        }
        r->key = strndup(line, eq - line);
        if (!r->key)
                return NULL;
        r->rest = eq + 1;
        r->rest_len = l - (eq + 1 - line);
        reader_piece(r, str, num);
        return reader_note(r, str);
}

typedef struct Handler {
        ParseContext *ctx;
        LineReader *reader;
} Handler;

static int on_ini_line(void *userdata, const char *section, const char *key, const char *value) {
        Handler *h = userdata;
        h->ctx->continuation = h->reader->continuation;
        if (h->ctx->continuation && key && !streq(key, "Devices") && !streq(key, "Elevator") &&
            !streq(key, "TrustRotational")) {
                h->ctx->line = h->reader->line;
                return fail(h->ctx, "%s=: value too long (one line holds at most %d bytes; only Devices= and Elevator= lists may be longer)",
                            key, INI_MAX_LINE - 1);
        }
        return on_ini(h->ctx, section, key, value, h->reader->line);
}

int config_parse_text(Config *c, const char *name, const char *text, char **ret_error) {
        assert(c);
        assert(ret_error);
        ParseContext p = { .config = c, .file = name };
        LineReader r = { .text = text };
        Handler h = { .ctx = &p, .reader = &r };

        int e = ini_parse_stream(reader, &r, on_ini_line, &h);
        int first = e > 0 && (size_t) e <= r.n_pieces ? r.piece_line[e - 1] : e;
        free(r.key);
        free(r.piece_line);

        /* inih returns its first error, a handler's or a syntax error; report whichever line
         * comes first (a handler error is kept with its own message) */
        if (e > 0 && (!p.error || first < p.error_line)) {
                free(p.error);
                if (asprintf(&p.error, "%s:%d: syntax error (expected [Section] or Key=Value)", name, first) < 0)
                        p.error = NULL;
        }
        const SpeedConfig *sc = &c->policy.speed;
        if (e == 0 && !p.error && p.speed_line > 0 && sc->fast_usec >= sc->slow_usec) {
                p.line = p.speed_line;
                fail(&p, "[Speed] FastMs= (%g ms) must stay below SlowMs= (%g ms): the margin between them keeps a "
                     "disk from switching back and forth", (double) sc->fast_usec / 1000, (double) sc->slow_usec / 1000);
        }
        if (e != 0 || p.error) {
                if (!p.error && asprintf(&p.error, "%s: read error", name) < 0)
                        p.error = NULL;
                *ret_error = p.error;
                return -EINVAL;
        }
        return 0;
}

static int read_file(const char *path, char **ret) {
        FILE *f = fopen(path, "re");
        if (!f)
                return negative_errno();
        char *buf = NULL;
        size_t n = 0, size = 0;
        FILE *m = open_memstream(&buf, &size);
        if (!m) {
                fclose(f);
                return -ENOMEM;
        }
        char chunk[4096];
        while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
                fwrite(chunk, 1, n, m);
        int err = ferror(f);
        fclose(f);
        if (fclose(m) != 0 || err) {
                free(buf);
                return -EIO;
        }
        *ret = buf;
        return 0;
}

static int name_compare(const void *a, const void *b) {
        return strcmp(*(char * const *) a, *(char * const *) b);
}

int config_load(const char *path, Config *ret, char **ret_error) {
        assert(ret);
        assert(ret_error);
        _cleanup_(config_done) Config c = {};
        _cleanup_free_ char *text = NULL, *dropin = NULL;
        _cleanup_strv_free_ char **files = NULL;
        int r;

        r = config_init(&c);
        if (r < 0)
                return r;

        r = read_file(path, &text);
        if (r >= 0) {
                r = config_parse_text(&c, path, text, ret_error);
                if (r < 0)
                        return r;
        } else if (r != -ENOENT) {
                if (asprintf(ret_error, "%s: %s", path, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }

        if (asprintf(&dropin, "%s.d", path) < 0)
                return -ENOMEM;
        DIR *d = opendir(dropin);
        if (d) {
                struct dirent *de;
                while ((de = readdir(d))) {
                        size_t l = strlen(de->d_name);
                        if (l > 5 && streq(de->d_name + l - 5, ".conf") && de->d_name[0] != '.')
                                if (strv_extend(&files, de->d_name) < 0) {
                                        closedir(d);
                                        return -ENOMEM;
                                }
                }
                closedir(d);
                if (files)      /* qsort(NULL, 0) is undefined (UBSan) */
                        qsort(files, strv_length(files), sizeof(char *), name_compare);
        }
        STRV_FOREACH(f, files) {
                _cleanup_free_ char *p = NULL, *t = NULL;
                if (asprintf(&p, "%s/%s", dropin, *f) < 0)
                        return -ENOMEM;
                r = read_file(p, &t);
                if (r < 0) {
                        if (asprintf(ret_error, "%s: %s", p, strerror(-r)) < 0)
                                *ret_error = NULL;
                        return r;
                }
                r = config_parse_text(&c, p, t, ret_error);
                if (r < 0)
                        return r;
        }

        *ret = c;
        c = (Config) {};
        return 0;
}
