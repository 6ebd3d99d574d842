/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * blkmqctl: the command-line face of blkmqd. It reads and writes files under the FUSE tree
 * (default /run/blkmqd) and nothing else: no private protocol, no library beyond libc.
 *
 * Files a given blkmqd does not serve yet (policy/, restore, hctx counters, stat) are shown as
 * "-"; files that exist but say "unknown: ..." or "unavailable: ..." are shown as "n/a" (but the
 * class, where "unknown" is a class: show_class()).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "blkmqctl.h"
#include "config.h"

#define FUSE_SUPER_MAGIC 0x65735546

const char *arg_mountpoint = BLKMQD_DEFAULT_MOUNTPOINT;
static bool arg_json = false;
static bool arg_wide = false;
static long arg_iterations = -1;

void err(const char *fmt, ...) {
        va_list ap;
        fputs("blkmqctl: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}

char *path_join(const char *first, ...) {
        size_t len = strlen(arg_mountpoint) + 1;
        va_list ap;
        va_start(ap, first);
        for (const char *c = first; c; c = va_arg(ap, const char *))
                len += strlen(c) + 1;
        va_end(ap);
        char *p = malloc(len);
        if (!p)
                return NULL;
        strcpy(p, arg_mountpoint);
        va_start(ap, first);
        for (const char *c = first; c; c = va_arg(ap, const char *)) {
                strcat(p, "/");
                strcat(p, c);
        }
        va_end(ap);
        return p;
}

int read_text(const char *path, char **ret) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        size_t n = 0, size = 4096;
        char *buf = malloc(size);
        if (!buf) {
                close(fd);
                return -ENOMEM;
        }
        for (;;) {
                if (n + 1 >= size) {
                        char *nb = realloc(buf, size * 2);
                        if (!nb) {
                                free(buf);
                                close(fd);
                                return -ENOMEM;
                        }
                        buf = nb;
                        size *= 2;
                }
                ssize_t k = read(fd, buf + n, size - n - 1);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        int r = -errno;
                        free(buf);
                        close(fd);
                        return r;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        close(fd);
        buf[n] = '\0';
        while (n > 0 && buf[n - 1] == '\n')
                buf[--n] = '\0';
        *ret = buf;
        return 0;
}

char *read_dev(const char *disk, const char *a, const char *b, const char *c) {
        char *p = path_join("devices", disk, a, b, c, NULL), *v = NULL;
        if (!p)
                return NULL;
        if (read_text(p, &v) < 0)
                v = NULL;
        free(p);
        return v;
}

static bool value_unavailable(const char *v) {
        return !v || strncmp(v, "unknown", 7) == 0 || strncmp(v, "unavailable", 11) == 0;
}

/* "-" when the file does not exist, "n/a" when it says unknown/unavailable, else the value. */
static const char *show(const char *v) {
        if (!v)
                return "-";
        if (value_unavailable(v))
                return "n/a";
        return v;
}

/* The class file holds a class name, and "unknown" is one (a disk whose untrusted rotational
 * flag waits for a measurement, policies/policy.c): shown as it is, "-" when missing, never
 * show()'s "n/a" for an unavailable value. */
static const char *show_class(const char *v) {
        return v ?: "-";
}

/* "<name padded to w> <label> <first line>", then every further line of v under the first. */
static void print_lines(int w, const char *name, const char *label, const char *v) {
        int indent = w + 1 + (int) strlen(label) + 1;
        printf("%-*s %s ", w, name, label);
        for (const char *l = v; *l;) {
                size_t k = strcspn(l, "\n");
                printf("%.*s\n", (int) k, l);
                l += k;
                if (*l == '\n' && *++l)
                        printf("%*s", indent, "");
        }
        if (!*v)
                printf("\n");
}

static bool parse_u64(const char *v, uint64_t *ret) {
        if (!v || !*v || *v == '-')
                return false;
        char *end;
        errno = 0;
        unsigned long long x = strtoull(v, &end, 10);
        if (errno || end == v)
                return false;
        while (*end == ' ' || *end == '\n')
                end++;
        if (*end)
                return false;
        *ret = x;
        return true;
}

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

static int cmp_natural(const void *a, const void *b) {
        const char *x = *(const char * const *) a, *y = *(const char * const *) b;
        char *ex, *ey;
        long nx = strtol(x, &ex, 10), ny = strtol(y, &ey, 10);
        if (ex != x && !*ex && ey != y && !*ey)
                return nx < ny ? -1 : nx > ny;
        return strcmp(x, y);
}

int list_dir(const char *path, char ***ret, size_t *ret_n) {
        DIR *d = opendir(path);
        if (!d)
                return -errno;
        char **v = NULL;
        size_t n = 0;
        struct dirent *de;
        while ((errno = 0, de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                char **nv = realloc(v, (n + 1) * sizeof(char *));
                if (!nv || !(nv[n] = strdup(de->d_name))) {
                        if (nv)
                                v = nv;
                        FREE_STRV(v, n);
                        closedir(d);
                        return -ENOMEM;
                }
                v = nv;
                n++;
        }
        int r = errno ? -errno : 0;
        closedir(d);
        if (r < 0) {
                FREE_STRV(v, n);
                return r;
        }
        if (n > 1)
                qsort(v, n, sizeof(char *), cmp_natural);
        *ret = v;
        *ret_n = n;
        return 0;
}

int list_dev_dir(const char *disk, const char *sub, char ***ret, size_t *ret_n) {
        char *p = path_join("devices", disk, sub, NULL);
        if (!p)
                return -ENOMEM;
        int r = list_dir(p, ret, ret_n);
        free(p);
        return r;
}

int check_running(void) {
        struct statfs sfs;
        if (statfs(arg_mountpoint, &sfs) < 0) {
                if (errno == ENOTCONN)
                        err("blkmqd is not running: \"%s\" is a dead FUSE mount (Transport endpoint is not connected)",
                            arg_mountpoint);
                else
                        err("blkmqd is not running: \"%s\": %s", arg_mountpoint, strerror(errno));
                return -EXIT_NOT_RUNNING;
        }
        if ((uint32_t) sfs.f_type != FUSE_SUPER_MAGIC) {
                err("blkmqd is not running: \"%s\" is not a FUSE mount", arg_mountpoint);
                return -EXIT_NOT_RUNNING;
        }
        char *p = path_join("devices", NULL);
        struct stat st;
        int r = p && stat(p, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
        free(p);
        if (r < 0) {
                err("\"%s\" is a FUSE mount but not a blkmqd tree (no devices/)", arg_mountpoint);
                return -EXIT_NOT_RUNNING;
        }
        return 0;
}

/*
 * The disk as the tree names it, in place: "/dev/sda" -> "sda", the kernel's "cciss/c0d0"
 * (or "/dev/cciss/c0d0") -> sysfs's "cciss!c0d0", the name under devices/.
 */
static void normalize_disk(char *disk) {
        if (strncmp(disk, "/dev/", 5) == 0)
                memmove(disk, disk + 5, strlen(disk + 5) + 1);
        for (char *c = disk; *c; c++)
                if (*c == '/')
                        *c = '!';
}

/*
 * Why blkmqd does not list disk: its line of the daemon's not_listed file ("<name>: <reason>",
 * manager/pipeline.c). Returns 1 with *ret the reason, 0 when the file has no line for disk,
 * -ENOENT when this blkmqd has no such file (older than the file), -ENOMEM.
 */
static int not_listed_reason(const char *disk, char **ret) {
        char *p = path_join("not_listed", NULL), *text = NULL;
        int r = p ? read_text(p, &text) : -ENOMEM;
        free(p);
        if (r < 0)
                return r == -ENOMEM ? r : -ENOENT;
        size_t len = strlen(disk);
        r = 0;
        for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && r == 0; l = strtok_r(NULL, "\n", &save))
                if (strncmp(l, disk, len) == 0 && strncmp(l + len, ": ", 2) == 0) {
                        *ret = strdup(l + len + 2);
                        r = *ret ? 1 : -ENOMEM;
                }
        free(text);
        return r;
}

int check_disk(char *disk) {
        normalize_disk(disk);
        if (!*disk || strcmp(disk, ".") == 0 || strcmp(disk, "..") == 0) {
                err("Invalid disk name \"%s\"", disk);
                return -EXIT_USAGE;
        }
        char *p = path_join("devices", disk, NULL);
        struct stat st;
        int r = p && stat(p, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
        free(p);
        if (r == 0)
                return 0;
        /* why a block device the kernel has is not listed is the daemon's to say: its
         * not_listed file has one line per block device it saw and does not list */
        char *reason = NULL;
        r = not_listed_reason(disk, &reason);
        if (r > 0)
                err("blkmqd does not list %s: %s", disk, reason);
        else if (r == 0)
                err("No such disk \"%s\": blkmqd saw no block device of that name (%s/not_listed names every one it saw "
                    "and does not list; see blkmqctl status for the disks it lists)", disk, arg_mountpoint);
        else
                err("No such disk \"%s\" under %s/devices (see blkmqctl status). blkmqd lists whole disks with a "
                    "medium that match its --devices/Devices= globs: a disk of size 0 (an unused zram, a drive "
                    "without medium), a partition or a disk outside the globs is not listed (its debug log names "
                    "a disk without medium)", disk, arg_mountpoint);
        free(reason);
        return -EXIT_FAILED;
}

int disk_arguments_or_all(int argc, char **argv, char ***ret, size_t *ret_n, int *ret_missing) {
        char **disks = NULL;
        size_t n = 0;
        int r, missing = 0;

        if (argc <= 1) {
                char *p = path_join("devices", NULL);
                r = p ? list_dir(p, ret, ret_n) : -ENOMEM;
                free(p);
                if (r < 0) {
                        err("Failed to list %s/devices: %s", arg_mountpoint, strerror(-r));
                        return EXIT_FAILED;
                }
                *ret_missing = 0;
                return EXIT_OK;
        }
        disks = calloc(argc - 1, sizeof(char *));
        if (!disks)
                return EXIT_FAILED;
        for (int i = 1; i < argc; i++) {
                r = check_disk(argv[i]);
                if (r == -EXIT_USAGE) {
                        FREE_STRV(disks, n);
                        return EXIT_USAGE;
                }
                if (r < 0)
                        missing++;
                else if (!(disks[n++] = strdup(argv[i]))) {
                        FREE_STRV(disks, n);
                        return EXIT_FAILED;
                }
        }
        if (n == 0) {
                FREE_STRV(disks, n);
                return EXIT_FAILED;
        }
        *ret = disks;
        *ret_n = n;
        *ret_missing = missing;
        return EXIT_OK;
}

/* ---- JSON output ---- */

static void json_string(FILE *f, const char *s) {
        if (!s) {
                fputs("null", f);
                return;
        }
        fputc('"', f);
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                switch (*p) {
                case '"':  fputs("\\\"", f); break;
                case '\\': fputs("\\\\", f); break;
                case '\n': fputs("\\n", f); break;
                case '\t': fputs("\\t", f); break;
                case '\r': fputs("\\r", f); break;
                default:
                        if (*p < 0x20)
                                fprintf(f, "\\u%04x", *p);
                        else
                                fputc(*p, f);
                }
        fputc('"', f);
}

/* A number when the file holds one, null when missing or unavailable, else the string. */
static void json_value(FILE *f, const char *v) {
        uint64_t u;
        if (!v || value_unavailable(v))
                fputs("null", f);
        else if (parse_u64(v, &u))
                fprintf(f, "%" PRIu64, u);
        else
                json_string(f, v);
}

/* ---- status ---- */

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
        for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
                if (strcmp(s, order[i]) == 0)
                        return (int) i;
        return 50;
}

void state_word(char *v) {
        if (strncmp(v, STATE_EXTERNAL, strlen(STATE_EXTERNAL)) == 0)
                v[strlen(STATE_EXTERNAL)] = '\0';
        else
                v[strcspn(v, ":\n")] = '\0';
}

/* The most significant state over applied/<knob>: "error" beats "ok" beats "kept". */
static char *applied_state(const char *disk) {
        char **knobs = NULL, *best = NULL;
        size_t n = 0;
        if (list_dev_dir(disk, "applied", &knobs, &n) < 0)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                char *v = read_dev(disk, "applied", knobs[i], NULL);
                if (!v)
                        continue;
                if (strcmp(knobs[i], "iosched") == 0) {
                        /* one "<elevator>.<tunable> <state>: ..." line per tunable */
                        for (char *save = NULL, *l = strtok_r(v, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                                char *st = strchr(l, ' ');
                                st = st ? st + 1 : l;
                                state_word(st);
                                if (!best || state_rank(st) < state_rank(best)) {
                                        char *c = strdup(st);
                                        if (c) {
                                                free(best);
                                                best = c;
                                        }
                                }
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
        FREE_STRV(knobs, n);
        return best;
}

/* Remote completion share: sum of hctx/<n>/completed_remote over sum of completed_local +
 * completed_remote; else the mean of hctx/<n>/remote_pct. Returns 1 with a value, 0 when the
 * files exist but are unavailable, -ENOENT when this blkmqd has no such files. */
static int remote_pct(const char *disk, double *ret) {
        char **hctx = NULL;
        size_t n = 0;
        uint64_t local = 0, remote = 0;
        double pct_sum = 0;
        size_t pct_n = 0;
        bool any_file = false, counters_ok = true;

        if (list_dev_dir(disk, "hctx", &hctx, &n) < 0)
                return -ENOENT;
        for (size_t i = 0; i < n; i++) {
                char *l = read_dev(disk, "hctx", hctx[i], "completed_local");
                char *r = read_dev(disk, "hctx", hctx[i], "completed_remote");
                char *p = read_dev(disk, "hctx", hctx[i], "remote_pct");
                uint64_t a, b;
                double d;
                if (l || r || p)
                        any_file = true;
                if (parse_u64(l, &a) && parse_u64(r, &b)) {
                        local += a;
                        remote += b;
                } else
                        counters_ok = false;
                if (parse_double(p, &d)) {
                        pct_sum += d;
                        pct_n++;
                }
                free(l);
                free(r);
                free(p);
        }
        FREE_STRV(hctx, n);
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
 * ("deferred elevator,xps"). NULL when the tree has no owner/ (an older blkmqd).
 */
static char *owner_summary(const char *disk) {
        static const char *const order[] = { "deferred", "overridden", "corrected", "agrees", "none" };
        char **knobs = NULL, *out = NULL;
        size_t n = 0, best = sizeof(order) / sizeof(order[0]);
        char list[256] = "";
        if (list_dev_dir(disk, "owner", &knobs, &n) < 0)
                return NULL;
        for (size_t pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < n; i++) {
                        char *v = read_dev(disk, "owner", knobs[i], NULL);
                        if (!v)
                                continue;
                        v[strcspn(v, ":\n")] = '\0';
                        for (size_t o = 0; o < sizeof(order) / sizeof(order[0]); o++)
                                if (strcmp(v, order[o]) == 0) {
                                        if (pass == 0 && o < best)
                                                best = o;
                                        else if (pass == 1 && o == best && best < 3) {
                                                size_t l = strlen(list);
                                                snprintf(list + l, sizeof(list) - l, "%s%s", l ? "," : "", knobs[i]);
                                        }
                                }
                        free(v);
                }
        FREE_STRV(knobs, n);
        if (best >= sizeof(order) / sizeof(order[0]))
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

static int cmd_status(int argc, char **argv) {
        char **disks = NULL;
        size_t n = 0;
        int r, missing = 0;

        r = check_running();
        if (r < 0)
                return -r;
        /* status DISK...: those disks' rows; one not listed says why (check_disk()) */
        r = disk_arguments_or_all(argc, argv, &disks, &n, &missing);
        if (r != EXIT_OK)
                return r;

        Row *rows = calloc(n ? n : 1, sizeof(Row));
        if (!rows) {
                FREE_STRV(disks, n);
                return EXIT_FAILED;
        }
        for (size_t i = 0; i < n; i++)
                (void) row_fill(&rows[i], disks[i]);

        /* the daemon's mode (auto, dry-run, off): the STATE column reads differently in each
         * (after "blkmqctl restore" it is off and nothing is written) */
        char *mode = NULL, *mp = path_join("mode", NULL);
        if (mp && read_text(mp, &mode) >= 0)
                mode[strcspn(mode, "\n")] = '\0';
        else
                mode = NULL;
        free(mp);

        if (arg_json) {
                char *version = NULL;
                char *vp = path_join("version", NULL);
                if (vp)
                        (void) read_text(vp, &version);
                free(vp);
                printf("{\"mountpoint\":");
                json_string(stdout, arg_mountpoint);
                printf(",\"version\":");
                json_string(stdout, version);
                printf(",\"mode\":");
                json_string(stdout, mode);
                printf(",\"devices\":[");
                for (size_t i = 0; i < n; i++) {
                        Row *w = &rows[i];
                        printf("%s{\"disk\":", i ? "," : "");
                        json_string(stdout, w->disk);
                        printf(",\"class\":");
                        json_string(stdout, w->class);
                        printf(",\"nr_hw_queues\":");
                        json_value(stdout, w->hwq);
                        printf(",\"rotational\":");
                        json_value(stdout, w->rot);
                        printf(",\"rotational_hint\":");
                        json_string(stdout, w->hint);
                        printf(",\"speed\":");
                        json_string(stdout, w->speed_word);
                        printf(",\"speed_evidence\":");
                        json_string(stdout, w->speed);
                        printf(",\"elevator\":");
                        json_string(stdout, value_unavailable(w->elev) ? NULL : w->elev);
                        printf(",\"planned_elevator\":");
                        json_string(stdout, w->plan);
                        printf(",\"applied_elevator\":");
                        json_string(stdout, w->applied_elevator);
                        printf(",\"state\":");
                        json_string(stdout, w->state);
                        printf(",\"owner\":");
                        json_string(stdout, w->owner);
                        printf(",\"remote_pct\":");
                        if (w->have_remote)
                                printf("%.2f", w->remote_pct);
                        else
                                printf("null");
                        printf("}");
                }
                printf("]}\n");
                free(version);
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
                for (size_t d = 0; !arg_wide && d < sizeof(drop) / sizeof(drop[0]); d++) {
                        int total = 0;
                        for (int k = 0; k < _C_MAX; k++)
                                total += on[k] ? w[k] + (total ? 2 : 0) : 0;
                        if (total <= (int) cols)
                                break;
                        on[drop[d]] = false;
                }
                printf("mode: %s%s\n", show(mode), mode && strcmp(mode, "off") == 0 ?
                       " (nothing is written: echo auto > mode to manage again)" :
                       mode && strcmp(mode, "dry-run") == 0 ? " (nothing is written; applied/ says what would be)" : "");
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
        free(mode);
        FREE_STRV(disks, n);
        return fflush(stdout) == 0 && missing == 0 ? EXIT_OK : EXIT_FAILED;
}

/* ---- explain ---- */

static void json_dir_object(const char *disk, const char *sub) {
        char **names = NULL;
        size_t n = 0;
        printf("\"%s\":", sub);
        if (list_dev_dir(disk, sub, &names, &n) < 0) {
                printf("null");
                return;
        }
        printf("{");
        for (size_t i = 0; i < n; i++) {
                char *v = read_dev(disk, sub, names[i], NULL);
                if (i)
                        printf(",");
                json_string(stdout, names[i]);
                printf(":");
                json_string(stdout, v);
                free(v);
        }
        printf("}");
        FREE_STRV(names, n);
}

/* The DISK argument (argv[1]) of a disk command taking min_argc..max_argc words: usage, daemon
 * running, disk present. 0 or an exit code. */
static int disk_arguments(int argc, char **argv, int min_argc, int max_argc, const char *usage) {
        if (argc < min_argc || argc > max_argc) {
                err("Usage: blkmqctl %s", usage);
                return EXIT_USAGE;
        }
        int r = check_running();
        if (r == 0)
                r = check_disk(argv[1]);
        return r < 0 ? -r : 0;
}

static int cmd_explain(int argc, char **argv) {
        int r = disk_arguments(argc, argv, 2, 2, "explain DISK");
        if (r != 0)
                return r;
        const char *disk = argv[1];

        char *explain = read_dev(disk, "explain", NULL, NULL);
        char *class = read_dev(disk, "class", NULL, NULL);
        if (!explain) {
                err("Failed to read %s/devices/%s/explain", arg_mountpoint, disk);
                free(class);
                return EXIT_FAILED;
        }

        if (arg_json) {
                printf("{\"disk\":");
                json_string(stdout, disk);
                printf(",\"class\":");
                json_string(stdout, class);
                printf(",\"explain\":[");
                bool first = true;
                for (char *save = NULL, *l = strtok_r(explain, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                        printf("%s", first ? "" : ",");
                        json_string(stdout, l);
                        first = false;
                }
                printf("],");
                json_dir_object(disk, "facts");
                printf(",");
                json_dir_object(disk, "plan");
                printf(",");
                json_dir_object(disk, "applied");
                printf(",");
                json_dir_object(disk, "policy");
                printf(",");
                json_dir_object(disk, "owner");
                printf("}\n");
        } else {
                char **knobs = NULL;
                size_t n = 0;
                printf("%s\n", explain);
                /* what the disk's own I/O measured, and how far its rotational flag is trusted */
                char *speed = read_dev(disk, "facts", "speed", NULL), *source = read_dev(disk, "facts", "speed_source", NULL);
                char *hint = read_dev(disk, "facts", "rotational_hint", NULL);
                printf("\nspeed:           %s\nmeasured by:     %s\nrotational flag: %s\n", show(speed), show(source), show(hint));
                free(speed);
                free(source);
                free(hint);
                if (list_dev_dir(disk, "plan", &knobs, &n) >= 0 && n > 0) {
                        int w = 14;     /* the knob column fits the longest name (nic_irq_affinity) */
                        for (size_t i = 0; i < n; i++)
                                if ((int) strlen(knobs[i]) > w)
                                        w = (int) strlen(knobs[i]);
                        printf("\n");
                        for (size_t i = 0; i < n; i++) {
                                char *plan = read_dev(disk, "plan", knobs[i], NULL);
                                char *applied = read_dev(disk, "applied", knobs[i], NULL);
                                char *policy = read_dev(disk, "policy", knobs[i], NULL);
                                char *owner = read_dev(disk, "owner", knobs[i], NULL);
                                if ((!plan || !strchr(plan, '\n')) && (!applied || !strchr(applied, '\n')))
                                        printf("%-*s planned %s, applied %s, policy %s, owner %s\n", w, knobs[i], show(plan),
                                               show(applied), show(policy), show(owner));
                                else {
                                        /* one line per tunable (iosched): a block, each line under its label */
                                        print_lines(w, knobs[i], "planned", show(plan));
                                        print_lines(w, "", "applied", show(applied));
                                        print_lines(w, "", "policy", show(policy));
                                }
                                free(plan);
                                free(applied);
                                free(policy);
                                free(owner);
                        }
                }
                FREE_STRV(knobs, n);
        }
        free(explain);
        free(class);
        return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAILED;
}

/* ---- watch ---- */

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
#define N_COL (sizeof(watch_columns) / sizeof(watch_columns[0]))
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

static int watch_frame(const char *disk, Sample *prev, size_t n_prev, double dt, Sample **ret, size_t *ret_n) {
        char **hctx = NULL;
        size_t n = 0;
        bool present[N_COL] = {}, shown[N_COL] = {};
        unsigned rows, cols;
        char *class = read_dev(disk, "class", NULL, NULL);
        char *elev = read_dev(disk, "facts", "elevator", NULL);
        char *stat = read_dev(disk, "stat", NULL, NULL);
        char *applied = read_dev(disk, "applied", "elevator", NULL);
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
        free(class);
        free(elev);
        free(stat);
        free(applied);

        if (list_dev_dir(disk, "hctx", &hctx, &n) < 0) {
                put_line(cols, "(disk %s has gone away)", disk);
                fflush(stdout);
                return -ENOENT;
        }

        Sample *cur = calloc(n ? n : 1, sizeof(Sample));
        char ***vals = calloc(n ? n : 1, sizeof(char **));
        if (!cur || !vals) {
                free(cur);
                free(vals);
                FREE_STRV(hctx, n);
                return -ENOMEM;
        }
        unsigned cpus_width = 4;
        for (size_t i = 0; i < n; i++) {
                cur[i].hctx = strdup(hctx[i]);
                vals[i] = calloc(N_COL + 2, sizeof(char *));
                for (size_t a = 0; a < N_COL; a++) {
                        char *v = read_dev(disk, "hctx", hctx[i], watch_columns[a].attr);
                        /* a column whose every value is unavailable is no column: nothing to watch */
                        if (v && (watch_columns[a].rate ? parse_u64(v, &cur[i].v[a]) : strncmp(v, "unavailable", 11) != 0))
                                present[a] = true;
                        cur[i].have[a] = watch_columns[a].rate && parse_u64(v, &cur[i].v[a]);
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
                        if (prev[j].hctx && cur[i].hctx && strcmp(prev[j].hctx, cur[i].hctx) == 0)
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
                                        fit(cell, sizeof(cell), vals[i] && vals[i][a + 2] && strncmp(vals[i][a + 2], "unavailable", 11) != 0 ?
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
                        FREE_STRV(vals[i], N_COL + 2);
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
        FREE_STRV(hctx, n);
        *ret = cur;
        *ret_n = n;
        return 0;
}

static int cmd_watch(int argc, char **argv) {
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

/* ---- set / reset / restore ---- */

/* One write() of "value\n"; errors from write() and close() (FUSE may answer at flush). */
static int write_text(const char *path, const char *value) {
        int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        char *buf = NULL;
        int len = asprintf(&buf, "%s\n", value);
        if (len < 0) {
                close(fd);
                return -ENOMEM;
        }
        ssize_t k = write(fd, buf, (size_t) len);
        int r = k < 0 ? -errno : k != len ? -EIO : 0;
        free(buf);
        if (close(fd) < 0 && r == 0)
                r = -errno;
        return r;
}

/* "iosched/<elevator>/<tunable>": an elevator tunable's policy file (issue 18). */
static bool knob_is_iosched(const char *knob) {
        const char *e = strncmp(knob, "iosched/", 8) == 0 ? knob + 8 : NULL, *t = e ? strchr(e, '/') : NULL;
        return t && t > e && t[1] && !strchr(t + 1, '/') && e[0] != '.' && t[1] != '.';
}

static int write_policy(const char *disk, const char *knob, const char *value) {
        if (!*knob || (strchr(knob, '/') && !knob_is_iosched(knob)) || knob[0] == '.') {
                err("Invalid knob name \"%s\"", knob);
                return EXIT_USAGE;
        }
        char *p = path_join("devices", disk, "policy", knob, NULL);
        if (!p)
                return EXIT_FAILED;
        int r = write_text(p, value);
        if (r == -ENOENT) {
                char **knobs = NULL;
                size_t n = 0;
                if (list_dev_dir(disk, "policy", &knobs, &n) < 0)
                        err("This blkmqd serves no %s/devices/%s/policy/ (writable overrides are not available yet)",
                            arg_mountpoint, disk);
                else {
                        fprintf(stderr, "blkmqctl: Unknown knob \"%s\" for %s; knobs:", knob, disk);
                        for (size_t i = 0; i < n; i++)
                                fprintf(stderr, " %s", knobs[i]);
                        fputc('\n', stderr);
                }
                FREE_STRV(knobs, n);
        } else if (r == -EINVAL || r == -ERANGE)
                /* blkmqd refused the value; its one log line says what it expects */
                err("Failed to write \"%s\" to \"%s\": %s (blkmqd's log says what it expects: journalctl -u blkmqd, or its standard error)",
                    value, p, strerror(-r));
        else if (r < 0)
                err("Failed to write \"%s\" to \"%s\": %s", value, p, strerror(-r));
        free(p);
        return r < 0 ? EXIT_FAILED : EXIT_OK;
}

/*
 * An elevator tunable's state: its line of applied/iosched ("<elevator>.<tunable> <state>"), the
 * state only; NULL when applied/iosched has no line for it (unmanaged).
 */
static char *read_applied_iosched(const char *disk, const char *knob) {
        char *all = read_dev(disk, "applied", "iosched", NULL), *ret = NULL, label[256];
        const char *e = knob + strlen("iosched/"), *t = strchr(e, '/');
        if (!all || !t)
                goto done;
        snprintf(label, sizeof(label), "%.*s.%s ", (int) (t - e), e, t + 1);
        for (char *line = all, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                if (strncmp(line, label, strlen(label)) == 0) {
                        ret = strdup(line + strlen(label));
                        break;
                }
        }
done:
        free(all);
        return ret;
}

/* A policy file (devices/<disk>/<sub>/<file>) that reads "auto" already: no override to reset. */
static bool policy_is_auto(const char *disk, const char *sub, const char *file) {
        char *v = read_dev(disk, sub, file, NULL);     /* read_text() drops the newline */
        bool is_auto = v && strcmp(v, "auto") == 0;
        free(v);
        return is_auto;
}

static int cmd_set(int argc, char **argv) {
        int r = disk_arguments(argc, argv, 4, 4, "set DISK KNOB VALUE");
        if (r != 0)
                return r;
        r = write_policy(argv[1], argv[2], argv[3]);
        if (r == EXIT_OK) {
                char *applied = knob_is_iosched(argv[2]) ? read_applied_iosched(argv[1], argv[2]) : read_dev(argv[1], "applied", argv[2], NULL);
                printf("%s %s = %s%s%s\n", argv[1], argv[2], argv[3], applied ? ", applied: " : "", applied ?: "");
                free(applied);
        }
        return r;
}

/*
 * Every override of disk back to "auto", but only files that are not "auto" already (each
 * write is a log line and an evaluation in blkmqd). policy/elevator goes last: an elevator
 * switch resets nr_requests and the elevator's tunables, so while their overrides are still
 * set blkmqd would write them again after the switch only to put them back at the next file.
 */
/* write_policy(disk, knob, "auto"), and on success say so: "DISK: policy/KNOB -> auto". */
static int reset_knob(const char *disk, const char *knob, unsigned *n_reset) {
        int r = write_policy(disk, knob, "auto");
        if (r == EXIT_OK) {
                printf("%s: policy/%s -> auto\n", disk, knob);
                (*n_reset)++;
        }
        return r;
}

static int cmd_reset(int argc, char **argv) {
        int r = disk_arguments(argc, argv, 2, 3, "reset DISK [KNOB]");
        unsigned n_reset = 0;
        if (r != 0)
                return r;
        if (argc == 3) {
                /* like reset DISK: a file that reads "auto" has no override to give back (the
                 * write would be one more log line and evaluation in blkmqd, and "-> auto" a
                 * change that did not happen) */
                if (policy_is_auto(argv[1], "policy", argv[2])) {
                        printf("%s: no override to reset: policy/%s reads auto\n", argv[1], argv[2]);
                        return EXIT_OK;
                }
                return reset_knob(argv[1], argv[2], &n_reset);
        }

        char **knobs = NULL;
        size_t n = 0;
        if (list_dev_dir(argv[1], "policy", &knobs, &n) < 0) {
                err("This blkmqd serves no %s/devices/%s/policy/ (writable overrides are not available yet)",
                    arg_mountpoint, argv[1]);
                return EXIT_FAILED;
        }
        int ret = EXIT_OK;
        bool elevator = false;
        for (size_t i = 0; i < n; i++) {
                if (strcmp(knobs[i], "iosched") == 0) {
                        /* policy/iosched/<elevator>/<tunable>: each one not auto already */
                        char **elevs = NULL;
                        size_t ne = 0;
                        if (list_dev_dir(argv[1], "policy/iosched", &elevs, &ne) < 0)
                                continue;
                        for (size_t e = 0; e < ne; e++) {
                                char **tun = NULL, sub[512];
                                size_t nt = 0;
                                snprintf(sub, sizeof(sub), "policy/iosched/%s", elevs[e]);
                                if (list_dev_dir(argv[1], sub, &tun, &nt) < 0)
                                        continue;
                                for (size_t t = 0; t < nt; t++) {
                                        char knob[768];
                                        if (policy_is_auto(argv[1], sub, tun[t]))
                                                continue;
                                        snprintf(knob, sizeof(knob), "iosched/%s/%s", elevs[e], tun[t]);
                                        if (reset_knob(argv[1], knob, &n_reset) != EXIT_OK)
                                                ret = EXIT_FAILED;
                                }
                                FREE_STRV(tun, nt);
                        }
                        FREE_STRV(elevs, ne);
                        continue;
                }
                if (strcmp(knobs[i], "elevator") == 0) {
                        elevator = true;
                        continue;
                }
                if (!policy_is_auto(argv[1], "policy", knobs[i]) && reset_knob(argv[1], knobs[i], &n_reset) != EXIT_OK)
                        ret = EXIT_FAILED;
        }
        if (elevator && !policy_is_auto(argv[1], "policy", "elevator") && reset_knob(argv[1], "elevator", &n_reset) != EXIT_OK)
                ret = EXIT_FAILED;
        if (ret == EXIT_OK && n_reset == 0)
                printf("%s: no override to reset: every policy file reads auto\n", argv[1]);
        FREE_STRV(knobs, n);
        return ret;
}

static int cmd_restore(int argc, char **argv) {
        (void) argv;
        if (argc != 1) {
                err("restore takes no arguments");
                return EXIT_USAGE;
        }
        int r = check_running();
        if (r < 0)
                return -r;
        char *p = path_join("restore", NULL);
        if (!p)
                return EXIT_FAILED;
        r = write_text(p, "1");
        if (r == -ENOENT)
                err("This blkmqd serves no %s/restore control file yet", arg_mountpoint);
        else if (r < 0)
                err("Failed to write 1 to \"%s\": %s", p, strerror(-r));
        else {
                /* the write returns once every value is back (or its write failed, which blkmqd
                 * logs); restore then reads how many the last restore put back */
                char *count = NULL, *mode = NULL, *modep = path_join("mode", NULL), *end = NULL;
                unsigned long k = read_text(p, &count) >= 0 ? strtoul(count, &end, 10) : 0;
                if (!end || end == count || *end)
                        printf("Restore done (%s does not say how many values it put back).\n", p);
                else if (k == 0)
                        printf("Nothing to restore: blkmqd had changed no value.\n");
                else
                        printf("Restored %lu original value(s).\n", k);
                if (modep && read_text(modep, &mode) >= 0) {
                        if (strcmp(mode, "off") == 0)
                                printf("mode: off: blkmqd writes nothing until 'echo auto > %s'\n", modep);
                        else
                                printf("mode: %s\n", mode);
                }
                free(count);
                free(mode);
                free(modep);
        }
        free(p);
        return r < 0 ? EXIT_FAILED : EXIT_OK;
}

/* ---- main ---- */

static void help(void) {
        printf("blkmqctl %s - query and steer blkmqd through its FUSE tree\n\n"
               "Usage: blkmqctl [OPTIONS] COMMAND [ARGS]\n\n"
               "Commands:\n"
               "  status [DISK...]        the mode, then one line per disk: class, hctx, elevator, state, remote %%\n"
               "                          (to the terminal's width, 80 columns in a pipe; --wide: every column)\n"
               "  verify [DISK...]        exit 0 when every disk is as planned, else 1 and one line per difference\n"
               "  explain DISK            why blkmqd decided what it did for DISK (or why it does not list DISK)\n"
               "  watch DISK              per-hctx rates, refreshed every second (q to quit)\n"
               "  set DISK KNOB VALUE     override a policy knob (writes devices/DISK/policy/KNOB)\n"
               "  reset DISK [KNOB]       give KNOB (or every knob) back to the policy (\"auto\")\n"
               "  restore                 restore every original value blkmqd changed\n\n"
               "Options:\n"
               "  -m, --mountpoint DIR    blkmqd tree (default $BLKMQD_MOUNTPOINT or %s)\n"
               "  -j, --json              JSON output (status, explain)\n"
               "  -w, --wide              status: every column, whatever the width\n"
               "  -n, --iterations N      watch: stop after N refreshes\n"
               "  -h, --help              this help\n"
               "      --version           print the version\n\n"
               "Exit status: 0 ok, 1 usage error (verify: not as planned), 2 operation failed, 3 blkmqd not running.\n",
               BLKMQD_VERSION, BLKMQD_DEFAULT_MOUNTPOINT);
}

/* --iterations N (watch): a positive number. Returns 0, or -EINVAL after saying why. */
static int parse_iterations(const char *arg) {
        char *end;
        errno = 0;
        long n = strtol(arg, &end, 10);
        if (errno || *end || n < 1) {
                err("Invalid --iterations \"%s\"", arg);
                return -EINVAL;
        }
        arg_iterations = n;
        return 0;
}

int main(int argc, char *argv[]) {
        enum { ARG_VERSION = 0x100 };
        static const struct option options[] = {
                { "mountpoint", required_argument, NULL, 'm' },
                { "json",       no_argument,       NULL, 'j' },
                { "wide",       no_argument,       NULL, 'w' },
                { "iterations", required_argument, NULL, 'n' },
                { "help",       no_argument,       NULL, 'h' },
                { "version",    no_argument,       NULL, ARG_VERSION },
                {}
        };
        static const struct {
                const char *name;
                int (*run)(int argc, char **argv);
        } commands[] = {
                { "status",  cmd_status },
                { "explain", cmd_explain },
                { "watch",   cmd_watch },
                { "set",     cmd_set },
                { "reset",   cmd_reset },
                { "restore", cmd_restore },
                { "verify",  cmd_verify },
        };
        const char *e = getenv("BLKMQD_MOUNTPOINT");
        int c;

        if (e && *e)
                arg_mountpoint = e;

        while ((c = getopt_long(argc, argv, "+m:jwn:h", options, NULL)) >= 0)
                switch (c) {
                case 'm':
                        arg_mountpoint = optarg;
                        break;
                case 'j':
                        arg_json = true;
                        break;
                case 'w':
                        arg_wide = true;
                        break;
                case 'n':
                        if (parse_iterations(optarg) < 0)
                                return EXIT_USAGE;
                        break;
                case 'h':
                        help();
                        return EXIT_OK;
                case ARG_VERSION:
                        printf("blkmqctl %s\n", BLKMQD_VERSION);
                        return EXIT_OK;
                default:        /* getopt said which option */
                        err("See blkmqctl --help for the commands and options.");
                        return EXIT_USAGE;
                }

        if (optind >= argc) {
                err("Missing command, see --help");
                return EXIT_USAGE;
        }
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (strcmp(argv[optind], commands[i].name) == 0) {
                        /* Options may also follow the command: blkmqctl status --json. */
                        int sub_argc = argc - optind;
                        char **sub_argv = argv + optind;
                        optind = 0;
                        while ((c = getopt_long(sub_argc, sub_argv, "m:jwn:h", options, NULL)) >= 0)
                                switch (c) {
                                case 'm': arg_mountpoint = optarg; break;
                                case 'j': arg_json = true; break;
                                case 'w': arg_wide = true; break;
                                case 'n':
                                        if (parse_iterations(optarg) < 0)
                                                return EXIT_USAGE;
                                        break;
                                case 'h': help(); return EXIT_OK;
                                case ARG_VERSION: printf("blkmqctl %s\n", BLKMQD_VERSION); return EXIT_OK;
                                default:
                                        err("See blkmqctl --help for the commands and options.");
                                        return EXIT_USAGE;
                                }
                        /* Rebuild argv as COMMAND ARGS... without the options. */
                        sub_argv[optind - 1] = sub_argv[0];
                        return commands[i].run(sub_argc - optind + 1, sub_argv + optind - 1);
                }
        err("Unknown command \"%s\", see --help", argv[optind]);
        return EXIT_USAGE;
}
