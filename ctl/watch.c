/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * blkmqctl watch DISK: a frame a second until q, ^C or a signal (--iterations N: N frames).
 * The header has class, facts/elevator, applied/elevator and a one-line summary of stat (I/O
 * rates and in_flight); then one row per hctx/<n>/: cpu_list, nr_tags, and per second the
 * difference of two reads of dispatched, completed_local, completed_remote, queued, runs, with
 * remote_pct, active and tags_busy as they are. A frame fits the terminal (TIOCGWINSZ, else
 * $COLUMNS and $LINES, else 80x24): columns by priority, rows cut with a footer saying what
 * does not fit. A column whose every value is unavailable is left out.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "macro.h"
#include "strv.h"

static volatile sig_atomic_t quit_signal = 0;
static struct termios saved_termios;
static bool termios_saved = false;

static void on_quit_signal(int sig) {
        quit_signal = sig;
}

static void terminal_restore(void) {
        if (termios_saved) {
                (void) tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_termios);
                termios_saved = false;
        }
        if (isatty(STDOUT_FILENO)) {
                fputs("\033[?25h", stdout);     /* show the cursor again */
                fflush(stdout);
        }
}

static void terminal_setup(void) {
        if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_termios) == 0) {
                struct termios t = saved_termios;
                t.c_lflag &= ~(ICANON | ECHO);
                t.c_cc[VMIN] = 0;
                t.c_cc[VTIME] = 0;
                if (tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0)
                        termios_saved = true;
        }
        if (isatty(STDOUT_FILENO))
                fputs("\033[?25l", stdout);     /* hide the cursor */
}

/*
 * Per-hctx columns, in display order, with the width of their values. Rates are per second,
 * from two reads of a counter; values are shown as they are. prio: the order in which columns
 * are kept when the terminal is too narrow for all (1 first): dispatch and completion locality
 * are what the watch is for (DESIGN.md "Remote completions"), queue runs and tag use come after.
 */
typedef struct WatchColumn {
        const char *attr;       /* hctx/<n>/<attr> */
        const char *head;       /* column title */
        bool rate;
        unsigned prio;
} WatchColumn;

static const WatchColumn watch_columns[] = {
        { "dispatched",       "disp/s",   true,  1 },
        { "completed_local",  "local/s",  true,  2 },
        { "completed_remote", "remote/s", true,  3 },
        { "remote_pct",       "remote%",  false, 4 },
        { "queued",           "queued/s", true,  5 },
        { "runs",             "runs/s",   true,  6 },
        { "active",           "active",   false, 7 },
        { "tags_busy",        "busy",     false, 8 },
};
#define N_COL ELEMENTSOF(watch_columns)
#define COL_WIDTH 8             /* each column: two spaces and a value of up to 8 ("999.9k/s" is shown as "999.9k") */
#define HCTX_WIDTH 4
#define TAGS_WIDTH 5
#define CPUS_WIDTH_MAX 12

typedef struct Sample {
        char *hctx;
        bool have[N_COL];
        uint64_t v[N_COL];
} Sample;

static double now_seconds(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void samples_free(Sample *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(s[i].hctx);
        free(s);
}

/*
 * The frame's size: the terminal's (TIOCGWINSZ on stdout), else $COLUMNS and $LINES, else
 * 80x24. A frame uses at most rows - 1 lines, so the cursor line after it does not scroll
 * its first line away.
 */
static void watch_size(unsigned *ret_rows, unsigned *ret_cols) {
        struct winsize ws;
        unsigned rows = 24, cols = 80;
        const char *e;
        unsigned long v;

        if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
                rows = ws.ws_row;
                cols = ws.ws_col;
        } else {
                char *end;
                if ((e = getenv("COLUMNS")) && (v = strtoul(e, &end, 10)) > 0 && !*end && v < 10000)
                        cols = v;
                if ((e = getenv("LINES")) && (v = strtoul(e, &end, 10)) > 0 && !*end && v < 10000)
                        rows = v;
        }
        *ret_rows = rows < 8 ? 8 : rows;
        *ret_cols = cols < 40 ? 40 : cols;
}

/* One line of at most cols bytes (the tree's values are ASCII), newline added. */
static void put_line(unsigned cols, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put_line(unsigned cols, const char *fmt, ...) {
        char buf[1024];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        if (n < 0)
                n = 0;
        size_t l = strlen(buf);
        if (l > cols)
                l = cols;
        fwrite(buf, 1, l, stdout);
        fputc('\n', stdout);
}

/* A rate in at most 6 characters: 950, 12.3k, 4.56M, 1.2G. */
static void fmt_rate(char *buf, size_t size, double v) {
        if (v < 999.5)
                snprintf(buf, size, "%.0f", v);
        else if (v < 99950)
                snprintf(buf, size, "%.1fk", v / 1e3);
        else if (v < 999.5e3)
                snprintf(buf, size, "%.0fk", v / 1e3);
        else if (v < 99.95e6)
                snprintf(buf, size, "%.1fM", v / 1e6);
        else if (v < 999.5e6)
                snprintf(buf, size, "%.0fM", v / 1e6);
        else
                snprintf(buf, size, "%.1fG", v / 1e9);
}

/* The first line of v, cut to width (a '+' marks a cut). */
static void fit(char *buf, size_t size, const char *v, unsigned width) {
        size_t l = strcspn(v, "\n");
        if (l > width && width > 1)
                snprintf(buf, size, "%.*s+", (int) width - 1, v);
        else
                snprintf(buf, size, "%.*s", (int) l, v);
}

/* The value of "<key> <value>" in text (blkmqd's stat file), or NULL; copied into buf. */
static const char *stat_value(const char *text, const char *key, char *buf, size_t size) {
        size_t kl = strlen(key);
        for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, key, kl) == 0 && p[kl] == ' ') {
                        snprintf(buf, size, "%.*s", (int) strcspn(p + kl + 1, "\n"), p + kl + 1);
                        return buf;
                }
        return NULL;
}

/* stat in one line: I/O rates and in_flight (the file has one "<field> <value>" per line, fuse-fs/stats.c). */
static void stat_summary(const char *stat, char *buf, size_t size) {
        char r[32], w[32], f[32];
        const char *rv = stat_value(stat, "read_ios_per_sec", r, sizeof(r)), *wv = stat_value(stat, "write_ios_per_sec", w, sizeof(w)),
                   *fv = stat_value(stat, "in_flight", f, sizeof(f));
        if (!rv && !wv && !fv) {
                snprintf(buf, size, "%.*s", (int) strcspn(stat, "\n"), stat);   /* "unavailable: ..." */
                return;
        }
        snprintf(buf, size, "reads/s %s  writes/s %s  in_flight %s", rv ?: "-", wv ?: "-", fv ?: "-");
}

/* A row's values (cpu_list, nr_tags, then one per column): NULL where a file could not be read,
 * so not a strv. */
static void values_free(char **v, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

static int watch_frame(const char *disk, Sample *prev, size_t n_prev, double dt, Sample **ret, size_t *ret_n) {
        _cleanup_strv_free_ char **hctx = NULL;
        bool present[N_COL] = {}, shown[N_COL] = {};
        unsigned rows, cols;
        _cleanup_free_ char *class = read_dev(disk, "class", NULL, NULL), *elev = read_dev(disk, "facts", "elevator", NULL),
                            *stat = read_dev(disk, "stat", NULL, NULL), *applied = read_dev(disk, "applied", "elevator", NULL);
        time_t t = time(NULL);
        char tbuf[32];

        watch_size(&rows, &cols);
        strftime(tbuf, sizeof(tbuf), "%H:%M:%S", localtime(&t));
        if (isatty(STDOUT_FILENO))
                fputs("\033[H\033[2J", stdout);
        put_line(cols, "%s  %s  class %s  elevator %s   (q: quit)", disk, tbuf, show_class(class), show(elev));
        put_line(cols, "applied elevator: %s", show(applied));
        if (stat) {
                char sum[256];
                stat_summary(stat, sum, sizeof(sum));
                put_line(cols, "stat: %s", sum);
        }
        unsigned used = stat ? 3 : 2;

        if (list_dev_dir(disk, "hctx", &hctx) < 0) {
                put_line(cols, "(disk %s has gone away)", disk);
                fflush(stdout);
                return -ENOENT;
        }

        size_t n = strv_length(hctx);
        Sample *cur = calloc(n ? n : 1, sizeof(Sample));
        char ***vals = calloc(n ? n : 1, sizeof(char **));
        if (!cur || !vals) {
                free(cur);
                free(vals);
                return -ENOMEM;
        }
        unsigned cpus_width = 4;
        for (size_t i = 0; i < n; i++) {
                cur[i].hctx = strdup(hctx[i]);
                vals[i] = calloc(N_COL + 2, sizeof(char *));
                for (size_t a = 0; a < N_COL; a++) {
                        char *v = read_dev(disk, "hctx", hctx[i], watch_columns[a].attr);
                        /* a column whose every value is unavailable is no column: nothing to watch */
                        if (v && (watch_columns[a].rate ? value_u64(v, &cur[i].v[a]) : !startswith(v, "unavailable")))
                                present[a] = true;
                        cur[i].have[a] = watch_columns[a].rate && value_u64(v, &cur[i].v[a]);
                        if (vals[i])
                                vals[i][a + 2] = v;
                        else
                                free(v);
                }
                if (!vals[i])
                        continue;
                vals[i][0] = read_dev(disk, "hctx", hctx[i], "cpu_list");
                vals[i][1] = read_dev(disk, "hctx", hctx[i], "nr_tags");
                size_t l = strlen(show(vals[i][0]));
                if (l > cpus_width)
                        cpus_width = l > CPUS_WIDTH_MAX ? CPUS_WIDTH_MAX : l;
        }

        /* the columns that fit, by priority; the others are named in the footer */
        unsigned width = HCTX_WIDTH + 2 + cpus_width + 2 + TAGS_WIDTH, n_hidden = 0;
        for (unsigned prio = 1; prio <= N_COL; prio++)
                for (size_t a = 0; a < N_COL; a++)
                        if (watch_columns[a].prio == prio && present[a]) {
                                if (width + 2 + COL_WIDTH <= cols) {
                                        shown[a] = true;
                                        width += 2 + COL_WIDTH;
                                } else
                                        n_hidden++;
                        }

        char line[1024], cell[64];
        int k = snprintf(line, sizeof(line), "%*s  %-*s  %*s", HCTX_WIDTH, "HCTX", (int) cpus_width, "CPUS", TAGS_WIDTH, "TAGS");
        for (size_t a = 0; a < N_COL; a++)
                if (shown[a] && k >= 0 && (size_t) k < sizeof(line))
                        k += snprintf(line + k, sizeof(line) - k, "  %*s", COL_WIDTH, watch_columns[a].head);
        put_line(cols, "%s", line);
        used++;

        /* rows - 1 lines in all; a footer line when something does not fit */
        bool any = false;
        for (size_t a = 0; a < N_COL; a++)
                any = any || present[a];
        size_t avail = rows - 1 - used;         /* rows >= 8, used <= 4 */
        size_t notes = !any + (n_hidden > 0);
        size_t n_rows = n;
        if (n + notes > avail) {                /* a footer line says how many more */
                size_t footer = !any + 1;
                n_rows = avail > footer + 1 ? avail - footer : 1;
        }

        for (size_t i = 0; i < n; i++) {
                const Sample *p = NULL;
                for (size_t j = 0; j < n_prev; j++)
                        if (prev[j].hctx && cur[i].hctx && streq(prev[j].hctx, cur[i].hctx))
                                p = &prev[j];
                if (i < n_rows) {
                        char cpus[CPUS_WIDTH_MAX + 8], tags[TAGS_WIDTH + 8];
                        fit(cpus, sizeof(cpus), vals[i] ? show(vals[i][0]) : "-", cpus_width);
                        fit(tags, sizeof(tags), vals[i] ? show(vals[i][1]) : "-", TAGS_WIDTH);
                        k = snprintf(line, sizeof(line), "%*s  %-*s  %*s", HCTX_WIDTH, hctx[i], (int) cpus_width, cpus, TAGS_WIDTH, tags);
                        for (size_t a = 0; a < N_COL; a++) {
                                if (!shown[a] || k < 0 || (size_t) k >= sizeof(line))
                                        continue;
                                if (!watch_columns[a].rate)
                                        fit(cell, sizeof(cell), vals[i] && vals[i][a + 2] && !startswith(vals[i][a + 2], "unavailable") ?
                                            vals[i][a + 2] : "n/a", COL_WIDTH);
                                else if (!cur[i].have[a])
                                        snprintf(cell, sizeof(cell), "n/a");
                                else if (!p || !p->have[a] || dt <= 0 || cur[i].v[a] < p->v[a])
                                        snprintf(cell, sizeof(cell), "-");
                                else
                                        fmt_rate(cell, sizeof(cell), (double) (cur[i].v[a] - p->v[a]) / dt);
                                k += snprintf(line + k, sizeof(line) - k, "  %*s", COL_WIDTH, cell);
                        }
                        put_line(cols, "%s", line);
                }
                if (vals[i])
                        values_free(vals[i], N_COL + 2);
        }
        if (n > n_rows || n_hidden > 0) {
                k = 0;
                line[0] = 0;
                if (n > n_rows)
                        k = snprintf(line, sizeof(line), "+%zu more hctx (%zu in all)%s", n - n_rows, n, n_hidden ? "; " : "");
                if (n_hidden > 0 && k >= 0 && (size_t) k < sizeof(line)) {
                        k += snprintf(line + k, sizeof(line) - k, "hidden:");
                        for (size_t a = 0; a < N_COL; a++)
                                if (present[a] && !shown[a] && k >= 0 && (size_t) k < sizeof(line))
                                        k += snprintf(line + k, sizeof(line) - k, " %s", watch_columns[a].head);
                }
                put_line(cols, "%s (a larger terminal shows %s)", line, n > n_rows && n_hidden ? "them" : "it");
        }
        if (!any)
                put_line(cols, "(no per-hctx counters for this disk yet: the hctx layout only)");
        fflush(stdout);
        free(vals);
        *ret = cur;
        *ret_n = n;
        return 0;
}

int cmd_watch(int argc, char **argv) {
        int r = disk_arguments(argc, argv, 2, 2, "watch DISK");
        if (r != 0)
                return r;
        const char *disk = argv[1];

        struct sigaction sa = { .sa_handler = on_quit_signal };   /* no SA_RESTART: poll() returns EINTR */
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);

        terminal_setup();
        atexit(terminal_restore);

        Sample *prev = NULL;
        size_t n_prev = 0;
        double last = 0;
        int ret = EXIT_OK;
        for (long it = 0; !quit_signal && (arg_iterations < 0 || it < arg_iterations); it++) {
                Sample *cur = NULL;
                size_t n_cur = 0;
                double t = now_seconds();
                r = watch_frame(disk, prev, n_prev, prev ? t - last : 0, &cur, &n_cur);
                if (r < 0) {
                        ret = EXIT_FAILED;
                        break;
                }
                samples_free(prev, n_prev);
                prev = cur;
                n_prev = n_cur;
                last = t;
                if (arg_iterations >= 0 && it + 1 >= arg_iterations)
                        break;

                /* Wait one second, or until q is pressed or a signal arrives. */
                double deadline = t + 1.0;
                for (;;) {
                        int ms = (int) ((deadline - now_seconds()) * 1000);
                        if (ms <= 0 || quit_signal)
                                break;
                        struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
                        int k = poll(&pfd, termios_saved ? 1 : 0, ms);
                        if (k < 0 && errno != EINTR)
                                break;
                        if (k > 0 && (pfd.revents & POLLIN)) {
                                char c;
                                ssize_t l = read(STDIN_FILENO, &c, 1);
                                if (l == 1 && (c == 'q' || c == 'Q' || c == 3 /* ^C in raw mode */)) {
                                        quit_signal = SIGINT;
                                        break;
                                }
                        }
                }
        }
        samples_free(prev, n_prev);
        terminal_restore();
        return ret;
}
