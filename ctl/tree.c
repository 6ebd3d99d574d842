/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What blkmqctl's verbs share (ctl/ctl.h): the tree's location and options, reading its files
 * (a file, a directory's entries sorted, a disk's file), whether the daemon runs and lists a
 * disk (check_running(), check_disk(): blkmqd's own not_listed reason when it does not), the
 * disk arguments of a verb, how a value is shown (show(): "-" for a file that cannot be read,
 * "n/a" for one that says "unknown: ..." or "unavailable: ...", show_class()), an applied/
 * line's state word, and the JSON output helpers. It reads only under the tree (no private
 * protocol) and uses lib/ only (libblkmqd-util: strv, parse_u64(), the cleanup macros).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "config.h"
#include "ctl.h"
#include "macro.h"
#include "parse.h"
#include "strv.h"

#define FUSE_SUPER_MAGIC 0x65735546

const char *arg_mountpoint = BLKMQD_DEFAULT_MOUNTPOINT;
bool arg_json = false;
bool arg_wide = false;
long arg_iterations = -1;

void ctl_error(const char *fmt, ...) {
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

/* Every trailing newline goes, not only the one lib/'s strip_newline() drops: a file such as
 * explain, printed with its own "\n" after it, must not end in an empty line. */
int read_text(const char *path, char **ret) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        size_t n = 0, size = 4096;
        _cleanup_free_ char *buf = malloc(size);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                if (n + 1 >= size) {
                        char *nb = realloc(buf, size * 2);
                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                        size *= 2;
                }
                ssize_t k = read(fd, buf + n, size - n - 1);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        buf[n] = '\0';
        while (n > 0 && buf[n - 1] == '\n')
                buf[--n] = '\0';
        *ret = TAKE_PTR(buf);
        return 0;
}

char *read_dev(const char *disk, const char *a, const char *b, const char *c) {
        _cleanup_free_ char *p = path_join("devices", disk, a, b, c, NULL);
        char *v = NULL;
        if (!p || read_text(p, &v) < 0)
                return NULL;
        return v;
}

char *read_top(const char *name) {
        _cleanup_free_ char *p = path_join(name, NULL);
        char *v = NULL;
        if (!p || read_text(p, &v) < 0)
                return NULL;
        return v;
}

bool value_unavailable(const char *v) {
        return !v || startswith(v, "unknown") || startswith(v, "unavailable");
}

/* "-" when the file does not exist, "n/a" when it says unknown/unavailable, else the value. */
const char *show(const char *v) {
        if (!v)
                return "-";
        if (value_unavailable(v))
                return "n/a";
        return v;
}

/* The class file holds a class name, and "unknown" is one (a disk whose untrusted rotational
 * flag waits for a measurement, policies/policy.c): shown as it is, "-" when missing, never
 * show()'s "n/a" for an unavailable value. */
const char *show_class(const char *v) {
        return v ?: "-";
}

bool value_u64(const char *v, uint64_t *ret) {
        return v && parse_u64(v, ret) >= 0;
}

/*
 * Names that are both numbers in numeric order (hctx/ 0 1 2 ... 10), all others in strcmp()
 * order (nvme10n1 < nvme2n1): the order status prints its rows in. lib/ has no such sort; the
 * strverscmp() of host/'s hostfs_list_dir() (nvme2n1 < nvme10n1) would reorder the rows.
 */
static int cmp_natural(const void *a, const void *b) {
        const char *x = *(const char * const *) a, *y = *(const char * const *) b;
        char *ex, *ey;
        long nx = strtol(x, &ex, 10), ny = strtol(y, &ey, 10);
        if (ex != x && !*ex && ey != y && !*ey)
                return nx < ny ? -1 : nx > ny;
        return strcmp(x, y);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);

int list_dir(const char *path, char ***ret) {
        _cleanup_(closedirp) DIR *d = opendir(path);
        if (!d)
                return -errno;
        _cleanup_strv_free_ char **v = NULL;
        struct dirent *de;
        while ((errno = 0, de = readdir(d)))
                if (de->d_name[0] != '.' && strv_extend(&v, de->d_name) < 0)
                        return -ENOMEM;
        if (errno)
                return -errno;
        qsort(v, strv_length(v), sizeof(char *), cmp_natural);
        *ret = TAKE_PTR(v);
        return 0;
}

int list_dev_dir(const char *disk, const char *sub, char ***ret) {
        _cleanup_free_ char *p = path_join("devices", disk, sub, NULL);
        if (!p)
                return -ENOMEM;
        return list_dir(p, ret);
}

int check_running(void) {
        struct statfs sfs;
        if (statfs(arg_mountpoint, &sfs) < 0) {
                if (errno == ENOTCONN)
                        ctl_error("blkmqd is not running: \"%s\" is a dead FUSE mount (Transport endpoint is not connected)",
                            arg_mountpoint);
                else
                        ctl_error("blkmqd is not running: \"%s\": %s", arg_mountpoint, strerror(errno));
                return -EXIT_NOT_RUNNING;
        }
        if ((uint32_t) sfs.f_type != FUSE_SUPER_MAGIC) {
                ctl_error("blkmqd is not running: \"%s\" is not a FUSE mount", arg_mountpoint);
                return -EXIT_NOT_RUNNING;
        }
        _cleanup_free_ char *p = path_join("devices", NULL);
        struct stat st;
        if (!p || stat(p, &st) < 0 || !S_ISDIR(st.st_mode)) {
                ctl_error("\"%s\" is a FUSE mount but not a blkmqd tree (no devices/)", arg_mountpoint);
                return -EXIT_NOT_RUNNING;
        }
        return 0;
}

/*
 * The disk as the tree names it, in place: "/dev/sda" -> "sda", the kernel's "cciss/c0d0"
 * (or "/dev/cciss/c0d0") -> sysfs's "cciss!c0d0", the name under devices/.
 */
static void normalize_disk(char *disk) {
        const char *d = startswith(disk, "/dev/");
        if (d)
                memmove(disk, d, strlen(d) + 1);
        (void) disk_name_from_kernel(disk, disk, strlen(disk) + 1);    /* in place: never too long */
}

/*
 * Why blkmqd does not list disk: its line of the daemon's not_listed file ("<name>: <reason>",
 * manager/pipeline.c). Returns 1 with *ret the reason, 0 when the file has no line for disk,
 * -errno when the file cannot be read.
 */
static int not_listed_reason(const char *disk, char **ret) {
        _cleanup_free_ char *p = path_join("not_listed", NULL), *text = NULL;
        int r = p ? read_text(p, &text) : -ENOMEM;
        if (r < 0)
                return r;
        for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                const char *after = startswith(l, disk), *reason = after ? startswith(after, ": ") : NULL;
                if (reason) {
                        *ret = strdup(reason);
                        return *ret ? 1 : -ENOMEM;
                }
        }
        return 0;
}

int check_disk(char *disk) {
        normalize_disk(disk);
        /* not lib/'s disk_name_is_valid(), which also refuses a name longer than 31 bytes: such
         * a name is blkmqd's to explain (its not_listed line), exit 2, not a usage error */
        if (!*disk || streq(disk, ".") || streq(disk, "..")) {
                ctl_error("Invalid disk name \"%s\"", disk);
                return -EXIT_USAGE;
        }
        _cleanup_free_ char *p = path_join("devices", disk, NULL), *reason = NULL;
        struct stat st;
        if (p && stat(p, &st) == 0 && S_ISDIR(st.st_mode))
                return 0;
        /* why a block device the kernel has is not listed is the daemon's to say: its
         * not_listed file has one line per block device it saw and does not list */
        int r = not_listed_reason(disk, &reason);
        if (r > 0)
                ctl_error("blkmqd does not list %s: %s", disk, reason);
        else if (r == 0)
                ctl_error("No such disk \"%s\": blkmqd saw no block device of that name (%s/not_listed names every one it saw "
                    "and does not list; see blkmqctl status for the disks it lists)", disk, arg_mountpoint);
        else
                ctl_error("No such disk \"%s\" under %s/devices (see blkmqctl status); %s/not_listed, which says why, "
                    "cannot be read: %s", disk, arg_mountpoint, arg_mountpoint, strerror(-r));
        return -EXIT_FAILED;
}

int disk_arguments_or_all(int argc, char **argv, char ***ret, int *ret_missing) {
        _cleanup_strv_free_ char **disks = NULL;
        int r, missing = 0;

        r = check_running();
        if (r < 0)
                return -r;

        if (argc <= 1) {
                _cleanup_free_ char *p = path_join("devices", NULL);
                r = p ? list_dir(p, ret) : -ENOMEM;
                if (r < 0) {
                        ctl_error("Failed to list %s/devices: %s", arg_mountpoint, strerror(-r));
                        return EXIT_FAILED;
                }
                *ret_missing = 0;
                return EXIT_OK;
        }
        for (int i = 1; i < argc; i++) {
                r = check_disk(argv[i]);
                if (r == -EXIT_USAGE)
                        return EXIT_USAGE;
                if (r < 0)
                        missing++;
                else if (strv_extend(&disks, argv[i]) < 0)
                        return EXIT_FAILED;
        }
        if (!disks)
                return EXIT_FAILED;
        *ret = TAKE_PTR(disks);
        *ret_missing = missing;
        return EXIT_OK;
}

/* ---- JSON output ---- */

void json_field(const char *key, const char *v, bool number) {
        printf(",\"%s\":", key);
        (number ? json_value : json_string)(stdout, v);
}

void json_string(FILE *f, const char *s) {
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
void json_value(FILE *f, const char *v) {
        uint64_t u;
        if (!v || value_unavailable(v))
                fputs("null", f);
        else if (value_u64(v, &u))
                fprintf(f, "%" PRIu64, u);
        else
                json_string(f, v);
}

void state_word(char *v) {
        if (startswith(v, STATE_EXTERNAL))
                v[strlen(STATE_EXTERNAL)] = '\0';
        else
                v[strcspn(v, ":\n")] = '\0';
}

int disk_arguments(int argc, char **argv, int min_argc, int max_argc, const char *usage) {
        if (argc < min_argc || argc > max_argc) {
                ctl_error("Usage: blkmqctl %s", usage);
                return EXIT_USAGE;
        }
        int r = check_running();
        if (r == 0)
                r = check_disk(argv[1]);
        return r < 0 ? -r : 0;
}
