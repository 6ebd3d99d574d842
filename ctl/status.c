/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * blkmqctl status [DISK...]: the daemon's mode, then one row per disk (every disk under
 * devices/, or those named): DISK, CLASS (class), HCTX (facts/nr_hw_queues), ROT
 * (facts/rotational), SPEED (the first word of facts/speed), ELEVATOR (facts/elevator), PLANNED
 * (plan/elevator), STATE (the most significant state over applied/<knob>, applied/iosched per
 * tunable), OWNER (the most significant owner/<knob>), REMOTE (the remote completion share
 * over hctx/<n>/completed_local, completed_remote, else remote_pct). The columns fit the
 * terminal (80 in a pipe; --wide keeps them all). --json: the same per disk, with version,
 * mode, facts/rotational_hint, facts/speed and applied/elevator. Exit 2 when a named disk is
 * not listed (check_disk() says why).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "ctl.h"
#include "macro.h"
#include "strv.h"

static bool parse_double(const char *v, double *ret) {
        if (!v || !*v)
                return false;
        char *end;
        errno = 0;
        double x = strtod(v, &end);
        if (errno || end == v)
                return false;
        if (*end == '%')
                end++;
        while (*end == ' ' || *end == '\n')
                end++;
        if (*end)
                return false;
        *ret = x;
        return true;
}

typedef struct Row {
        char *disk, *class, *hwq, *rot, *elev, *plan, *state, *owner, *remote;
        char *applied_elevator;
        char *speed;            /* facts/speed: "fast: p50 84 µs, ..." */
        char *speed_word;       /* its first word: unmeasured, fast, slow */
        char *hint;             /* facts/rotational_hint */
        double remote_pct;
        bool have_remote;
} Row;

/* "changed externally" (someone else's value over blkmqd's, applied/ "changed externally to X
 * (...)", STATE_EXTERNAL) ranks above ok: an admin must see another tool at work on a disk whose
 * other knobs are unmanaged. A trial user never saw it in STATE when it ranked last. */
static int state_rank(const char *s) {
        static const char *const order[] = {
                "error", "timeout (still pending)", "pending-reboot", "unsupported", "dry-run", "pending", STATE_EXTERNAL,
                "deferred", "ok", "kept", "unmanaged",
        };
        for (size_t i = 0; i < ELEMENTSOF(order); i++)
                if (streq(s, order[i]))
                        return (int) i;
        return 50;
}

/* The most significant state over applied/<knob>: "error" beats "ok" beats "kept". */
static char *applied_state(const char *disk) {
        _cleanup_strv_free_ char **knobs = NULL;
        char *best = NULL;
        if (list_dev_dir(disk, "applied", &knobs) < 0)
                return NULL;
        STRV_FOREACH(k, knobs) {
                char *v = read_dev(disk, "applied", *k, NULL);
                if (!v)
                        continue;
                if (streq(*k, "iosched")) {
                        /* one "<elevator>.<tunable> <state>: ..." line per tunable */
                        for (char *save = NULL, *l = strtok_r(v, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                                char *st = strchr(l, ' ');
                                st = st ? st + 1 : l;
                                state_word(st);
                                if (!best || state_rank(st) < state_rank(best))
                                        (void) free_and_strdup(&best, st);     /* ENOMEM: best stays */
                        }
                        free(v);
                        continue;
                }
                state_word(v);
                if (!best || state_rank(v) < state_rank(best)) {
                        free(best);
                        best = v;
                } else
                        free(v);
        }
        return best;
}

/* Remote completion share: sum of hctx/<n>/completed_remote over sum of completed_local +
 * completed_remote; else the mean of hctx/<n>/remote_pct. Returns 1 with a value, 0 when the
 * files say unavailable (or no completion yet), -ENOENT when there are none to read (the disk
 * lists no hctx, or went away). */
static int remote_pct(const char *disk, double *ret) {
        _cleanup_strv_free_ char **hctx = NULL;
        uint64_t local = 0, remote = 0;
        double pct_sum = 0;
        size_t pct_n = 0;
        bool any_file = false, counters_ok = true;

        if (list_dev_dir(disk, "hctx", &hctx) < 0)
                return -ENOENT;
        size_t n = strv_length(hctx);
        STRV_FOREACH(h, hctx) {
                _cleanup_free_ char *l = read_dev(disk, "hctx", *h, "completed_local"),
                                    *r = read_dev(disk, "hctx", *h, "completed_remote"),
                                    *p = read_dev(disk, "hctx", *h, "remote_pct");
                uint64_t a, b;
                double d;
                if (l || r || p)
                        any_file = true;
                if (value_u64(l, &a) && value_u64(r, &b)) {
                        local += a;
                        remote += b;
                } else
                        counters_ok = false;
                if (parse_double(p, &d)) {
                        pct_sum += d;
                        pct_n++;
                }
        }
        if (!any_file)
                return -ENOENT;
        if (counters_ok && n > 0) {
                if (local + remote == 0)
                        return 0;       /* no completions yet: no share to show, not 0 % */
                *ret = 100.0 * (double) remote / (double) (local + remote);
                return 1;
        }
        if (pct_n > 0) {
                *ret = pct_sum / (double) pct_n;
                return 1;
        }
        return 0;
}

static void row_free(Row *r) {
        free(r->disk);
        free(r->class);
        free(r->hwq);
        free(r->rot);
        free(r->elev);
        free(r->plan);
        free(r->state);
        free(r->owner);
        free(r->remote);
        free(r->applied_elevator);
        free(r->speed);
        free(r->speed_word);
        free(r->hint);
}

/*
 * The most significant owner over owner/<knob> (policies/owners.h): "deferred" (another tool's
 * setting wins), then "overridden", "corrected", "agrees", "none"; with the knobs it is about
 * ("deferred elevator,xps"). NULL when owner/ names none (or the disk went away).
 */
static char *owner_summary(const char *disk) {
        static const char *const order[] = { "deferred", "overridden", "corrected", "agrees", "none" };
        _cleanup_strv_free_ char **knobs = NULL;
        char *out = NULL;
        size_t best = ELEMENTSOF(order);
        char list[256] = "";
        if (list_dev_dir(disk, "owner", &knobs) < 0)
                return NULL;
        for (size_t pass = 0; pass < 2; pass++)
                STRV_FOREACH(k, knobs) {
                        _cleanup_free_ char *v = read_dev(disk, "owner", *k, NULL);
                        if (!v)
                                continue;
                        v[strcspn(v, ":\n")] = '\0';
                        for (size_t o = 0; o < ELEMENTSOF(order); o++)
                                if (streq(v, order[o])) {
                                        if (pass == 0 && o < best)
                                                best = o;
                                        else if (pass == 1 && o == best && best < 3) {
                                                size_t l = strlen(list);
                                                snprintf(list + l, sizeof(list) - l, "%s%s", l ? "," : "", *k);
                                        }
                                }
                }
        if (best >= ELEMENTSOF(order))
                return NULL;
        if (asprintf(&out, "%s%s%s", order[best], *list ? " " : "", list) < 0)
                return NULL;
        return out;
}

static int row_fill(Row *row, const char *disk) {
        double pct;
        *row = (Row) { .disk = strdup(disk) };
        row->class = read_dev(disk, "class", NULL, NULL);
        row->hwq = read_dev(disk, "facts", "nr_hw_queues", NULL);
        row->rot = read_dev(disk, "facts", "rotational", NULL);
        row->elev = read_dev(disk, "facts", "elevator", NULL);
        row->plan = read_dev(disk, "plan", "elevator", NULL);
        row->applied_elevator = read_dev(disk, "applied", "elevator", NULL);
        row->speed = read_dev(disk, "facts", "speed", NULL);
        row->hint = read_dev(disk, "facts", "rotational_hint", NULL);
        row->speed_word = row->speed ? strndup(row->speed, strcspn(row->speed, ":, (")) : NULL;
        row->state = applied_state(disk);
        row->owner = owner_summary(disk);
        int r = remote_pct(disk, &pct);
        if (r > 0) {
                row->have_remote = true;
                row->remote_pct = pct;
                if (asprintf(&row->remote, "%.1f%%", pct) < 0)
                        row->remote = NULL;
        } else
                row->remote = strdup(r == 0 ? "n/a" : "-");
        return row->disk ? 0 : -ENOMEM;
}

int cmd_status(int argc, char **argv) {
        _cleanup_strv_free_ char **disks = NULL;
        int r, missing = 0;
        /* status DISK...: those disks' rows; one not listed says why (check_disk()) */
        r = disk_arguments_or_all(argc, argv, &disks, &missing);
        if (r != EXIT_OK)
                return r;

        size_t n = strv_length(disks);
        Row *rows = calloc(n ? n : 1, sizeof(Row));
        if (!rows)
                return EXIT_FAILED;
        for (size_t i = 0; i < n; i++)
                (void) row_fill(&rows[i], disks[i]);

        /* the daemon's mode (auto, dry-run, off): the STATE column reads differently in each
         * (after "blkmqctl restore" it is off and nothing is written) */
        _cleanup_free_ char *mode = read_top("mode");
        if (mode)
                mode[strcspn(mode, "\n")] = '\0';

        if (arg_json) {
                _cleanup_free_ char *version = read_top("version");
                printf("{\"mountpoint\":");
                json_string(stdout, arg_mountpoint);
                json_field("version", version, /* number = */ false);
                json_field("mode", mode, /* number = */ false);
                printf(",\"devices\":[");
                for (size_t i = 0; i < n; i++) {
                        Row *w = &rows[i];
                        printf("%s{\"disk\":", i ? "," : "");
                        json_string(stdout, w->disk);
                        json_field("class", w->class, /* number = */ false);
                        json_field("nr_hw_queues", w->hwq, /* number = */ true);
                        json_field("rotational", w->rot, /* number = */ true);
                        json_field("rotational_hint", w->hint, /* number = */ false);
                        json_field("speed", w->speed_word, /* number = */ false);
                        json_field("speed_evidence", w->speed, /* number = */ false);
                        json_field("elevator", value_unavailable(w->elev) ? NULL : w->elev, /* number = */ false);
                        json_field("planned_elevator", w->plan, /* number = */ false);
                        json_field("applied_elevator", w->applied_elevator, /* number = */ false);
                        json_field("state", w->state, /* number = */ false);
                        json_field("owner", w->owner, /* number = */ false);
                        printf(",\"remote_pct\":");
                        if (w->have_remote)
                                printf("%.2f", w->remote_pct);
                        else
                                printf("null");
                        printf("}");
                }
                printf("]}\n");
        } else {
                /* Columns to the terminal's width (80 when not a terminal): when the widest row
                 * does not fit, PLANNED goes first, then ROT, then HCTX, then SPEED, then OWNER (--wide
                 * keeps them all). */
                enum { C_DISK, C_CLASS, C_HCTX, C_ROT, C_SPEED, C_ELEV, C_PLAN, C_STATE, C_OWNER, C_REMOTE, _C_MAX };
                static const char *const head[_C_MAX] = { "DISK", "CLASS", "HCTX", "ROT", "SPEED", "ELEVATOR", "PLANNED", "STATE",
                                                   "OWNER", "REMOTE" };
                static const bool right[_C_MAX] = { [C_HCTX] = true, [C_ROT] = true, [C_REMOTE] = true };
                int w[_C_MAX];
                bool on[_C_MAX];
                for (int k = 0; k < _C_MAX; k++) {
                        w[k] = (int) strlen(head[k]);
                        on[k] = true;
                }
                for (size_t i = 0; i < n; i++) {
                        const char *cell[_C_MAX] = { show(rows[i].disk), show_class(rows[i].class), show(rows[i].hwq), show(rows[i].rot),
                                                     show(rows[i].speed_word), show(rows[i].elev), show(rows[i].plan), show(rows[i].state), show(rows[i].owner),
                                                     rows[i].remote };
                        for (int k = 0; k < _C_MAX; k++)
                                if (cell[k] && (int) strlen(cell[k]) > w[k])
                                        w[k] = (int) strlen(cell[k]);
                }
                unsigned cols = 80;
                struct winsize ws;
                if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
                        cols = ws.ws_col;
                static const int drop[] = { C_PLAN, C_ROT, C_HCTX, C_SPEED, C_OWNER };
                for (size_t d = 0; !arg_wide && d < ELEMENTSOF(drop); d++) {
                        int total = 0;
                        for (int k = 0; k < _C_MAX; k++)
                                total += on[k] ? w[k] + (total ? 2 : 0) : 0;
                        if (total <= (int) cols)
                                break;
                        on[drop[d]] = false;
                }
                printf("mode: %s%s\n", show(mode), streq_ptr(mode, "off") ?
                       " (nothing is written: echo auto > mode to manage again)" :
                       streq_ptr(mode, "dry-run") ? " (nothing is written; applied/ says what would be)" : "");
                for (size_t i = 0; i <= n; i++) {
                        const Row *x = i ? &rows[i - 1] : NULL;
                        const char *cell[_C_MAX];
                        for (int k = 0; k < _C_MAX; k++)
                                cell[k] = head[k];
                        if (x) {
                                const char *c[_C_MAX] = { show(x->disk), show_class(x->class), show(x->hwq), show(x->rot),
                                                          show(x->speed_word), show(x->elev), show(x->plan), show(x->state), show(x->owner),
                                                          x->remote ?: "-" };
                                memcpy(cell, c, sizeof(cell));
                        }
                        bool first = true;
                        int last = _C_MAX - 1;
                        while (last > 0 && !on[last])
                                last--;
                        for (int k = 0; k < _C_MAX; k++) {
                                if (!on[k])
                                        continue;
                                printf("%s%*s%s", first ? "" : "  ", right[k] ? w[k] : 0, right[k] ? cell[k] : "",
                                       right[k] ? "" : cell[k]);
                                if (!right[k] && k != last)
                                        printf("%*s", w[k] - (int) strlen(cell[k]), "");
                                first = false;
                        }
                        putchar('\n');
                }
                if (n == 0)
                        printf("(no disks managed)\n");
        }
        for (size_t i = 0; i < n; i++)
                row_free(&rows[i]);
        free(rows);
        return fflush(stdout) == 0 && missing == 0 ? EXIT_OK : EXIT_FAILED;
}
