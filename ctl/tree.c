/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What blkmqctl's verbs share (ctl/ctl.h): the tree's location and options, reading its files
 * (a file, a directory's entries sorted, a disk's file), whether the daemon runs and lists a
 * disk (check_running(), check_disk(): blkmqd's own not_listed reason when it does not), the
 * disk arguments of a verb, how a value is shown (show(): "-" for a file that cannot be read,
 * "n/a" for one that says "unknown: ..." or "unavailable: ...", show_class()), an applied/
 * line's state word, and the JSON output helpers. It reads only under the tree: no private
 * protocol, no library beyond libc.
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

#define FUSE_SUPER_MAGIC 0x65735546

const char *arg_mountpoint = BLKMQD_DEFAULT_MOUNTPOINT;
bool arg_json = false;
bool arg_wide = false;
long arg_iterations = -1;

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

bool value_unavailable(const char *v) {
        return !v || strncmp(v, "unknown", 7) == 0 || strncmp(v, "unavailable", 11) == 0;
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


bool parse_u64(const char *v, uint64_t *ret) {
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
        else if (parse_u64(v, &u))
                fprintf(f, "%" PRIu64, u);
        else
                json_string(f, v);
}

void state_word(char *v) {
        if (strncmp(v, STATE_EXTERNAL, strlen(STATE_EXTERNAL)) == 0)
                v[strlen(STATE_EXTERNAL)] = '\0';
        else
                v[strcspn(v, ":\n")] = '\0';
}


/* The DISK argument (argv[1]) of a disk command taking min_argc..max_argc words: usage, daemon
 * running, disk present. 0 or an exit code. */
int disk_arguments(int argc, char **argv, int min_argc, int max_argc, const char *usage) {
        if (argc < min_argc || argc > max_argc) {
                err("Usage: blkmqctl %s", usage);
                return EXIT_USAGE;
        }
        int r = check_running();
        if (r == 0)
                r = check_disk(argv[1]);
        return r < 0 ? -r : 0;
}
