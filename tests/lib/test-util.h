/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * File and process helpers shared by the unit, fixture and integration tests (header only, like tap.h):
 *
 *   test_read_file(path), test_read_file_at(root, rel)    a whole file as a string (NULL: cannot open)
 *   test_write_file_at(root, rel, content)                 write (truncate) a file: 0 or -errno
 *   test_put_at(root, rel, content)                        the same, its parent directories made first
 *   test_symlink_at(root, rel, target)                     a symlink, parents made, an old entry replaced
 *   test_put(root, rel, content), test_symlink(...)        the two above as set-up steps: TAP_FAIL on error
 *   test_run(argv)                                         fork/exec/wait: 0 on exit status 0
 *   test_mkdir_p(path, mode)                               mkdir -p without a process
 *   test_restore_tree(root)                                empty directories and modes from TREE
 *   test_copy_fixture(dir)                                 a copy in /tmp/blkmqd-fixture-XXXXXX
 *   test_copy_fixture_as(fixtures, name, label, release)   a copy of one fixture, osrelease set
 *   test_fixtures_arg(argc, argv)                          FIXTURES_DIR, the one argument of a fixture test
 *   test_remove_tree(dir)                                  rm -rf, only below /tmp/blkmqd-fixture-
 *   test_write_at(dirfd, path, text)                       one write() to an existing file: 1 or -errno
 *   test_read_scheduler_at(dirfd, path, value, ...)        queue/scheduler's names and the wanted one
 *   test_write_scheduler_at(dirfd, path, names, want)      queue/scheduler as the kernel shows it
 *                                                          after switching to want: 1 or -errno
 *   test_emulate_scheduler_at(dirfd, path, value, ...)     a scheduler write as the kernel takes it
 *                                                          (a write hook's body): 1 or -errno
 */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "macro.h"
#include "parse.h"
#include "strv.h"
#include "tap.h"

#define TEST_FIXTURE_TMP "/tmp/blkmqd-fixture-"

static inline char *test_read_file(const char *path) {
        FILE *f = fopen(path, "re");
        if (!f)
                return NULL;
        char *buf = NULL;
        size_t size = 0;
        FILE *m = open_memstream(&buf, &size);
        int c;
        while ((c = fgetc(f)) != EOF)
                fputc(c, m);
        fclose(f);
        fclose(m);
        return buf;
}

static inline char *test_read_file_at(const char *root, const char *rel) {
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/%s", root, rel) < 0)
                return NULL;
        return test_read_file(path);
}

static inline int test_write_file(const char *path, const char *content) {
        FILE *f = fopen(path, "we");    /* O_TRUNC, created if needed */
        if (!f)
                return -errno;
        fputs(content, f);
        return fclose(f) == 0 ? 0 : -errno;
}

static inline int test_write_file_at(const char *root, const char *rel, const char *content) {
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/%s", root, rel) < 0)
                return -ENOMEM;
        return test_write_file(path, content);
}

/* argv[0] looked up in PATH; 0 when it exits 0, -EIO otherwise, -errno when it cannot run. */
static inline int test_run(char *const argv[]) {
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                execvp(argv[0], argv);
                _exit(127);
        }
        int status;
        if (waitpid(pid, &status, 0) < 0)
                return -errno;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

/* mkdir -p, without a process per directory: 0 when path is a directory afterwards. */
static inline int test_mkdir_p(const char *path, mode_t mode) {
        char p[PATH_MAX + 64];
        struct stat st;
        snprintf(p, sizeof(p), "%s", path);
        for (char *c = p + 1; ; c++) {
                if (*c != '/' && *c != 0)
                        continue;
                char saved = *c;
                *c = 0;
                (void) mkdir(p, mode);
                *c = saved;
                if (!saved)
                        break;
        }
        if (stat(p, &st) < 0)
                return -errno;
        return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/*
 * Recreate the empty directories and modes git does not keep, from the fixture's TREE file
 * (capture.sh's format: "<d|f|l> <octal mode> <relative path>"; links are left alone).
 * No TREE file is fine.
 */
static inline int test_restore_tree(const char *root) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof(path), "%s/TREE", root);
        FILE *f = fopen(path, "re");
        if (!f)
                return errno == ENOENT ? 0 : -errno;
        char line[PATH_MAX + 32];
        int r = 0;
        while (fgets(line, sizeof(line), f)) {
                char type[4], rel[PATH_MAX];
                unsigned mode;
                if (sscanf(line, "%3s %o %4095[^\n]", type, &mode, rel) != 3)
                        continue;
                snprintf(path, sizeof(path), "%s/%s", root, rel);
                if (streq(type, "d")) {
                        if (test_mkdir_p(path, 0755) < 0) {
                                r = -EIO;
                                break;
                        }
                        (void) chmod(path, mode);
                } else if (streq(type, "f"))
                        (void) chmod(path, mode);
        }
        fclose(f);
        return r;
}

static inline int test_remove_tree(const char *dir) {
        if (!dir || !startswith(dir, TEST_FIXTURE_TMP))
                return -EPERM;
        char *argv[] = { (char *) "rm", (char *) "-rf", (char *) dir, NULL };
        return test_run(argv);
}

/* A copy of the fixture tree at dir (cp -a, then its TREE), freshly allocated; NULL and a failed check if not. */
static inline char *test_copy_fixture(const char *dir) {
        char tmpl[] = TEST_FIXTURE_TMP "XXXXXX";
        _cleanup_free_ char *src = NULL;
        if (!mkdtemp(tmpl)) {
                TAP_FAIL("mkdtemp %s: %s", tmpl, strerror(errno));
                return NULL;
        }
        if (asprintf(&src, "%s/.", dir) < 0) {
                TAP_FAIL("out of memory");
                (void) test_remove_tree(tmpl);
                return NULL;
        }
        char *argv[] = { (char *) "cp", (char *) "-a", src, tmpl, NULL };
        if (test_run(argv) < 0 || test_restore_tree(tmpl) < 0) {
                TAP_FAIL("cannot copy %s to %s", dir, tmpl);
                (void) test_remove_tree(tmpl);
                return NULL;
        }
        return strdup(tmpl);
}

/* root/rel's parent directories (0755): 0 or -errno. */
static inline int test_mkdir_parent_at(const char *root, const char *rel) {
        char dir[PATH_MAX + 64];
        snprintf(dir, sizeof(dir), "%s/%s", root, rel);
        *strrchr(dir, '/') = 0;
        return test_mkdir_p(dir, 0755);
}

static inline int test_put_at(const char *root, const char *rel, const char *content) {
        int r = test_mkdir_parent_at(root, rel);
        return r < 0 ? r : test_write_file_at(root, rel, content);
}

/* root/rel -> target (a relative target counts from rel's directory, as sysfs links do). */
static inline int test_symlink_at(const char *root, const char *rel, const char *target) {
        char path[PATH_MAX + 64];
        int r = test_mkdir_parent_at(root, rel);
        if (r < 0)
                return r;
        snprintf(path, sizeof(path), "%s/%s", root, rel);
        (void) unlink(path);
        return symlink(target, path) < 0 ? -errno : 0;
}

/* Set-up edits of a fixture copy (not blkmqd writes): a failure is a failed check. */
static inline void test_put(const char *root, const char *rel, const char *content) {
        int r = test_put_at(root, rel, content);
        if (r < 0)
                TAP_FAIL("cannot write %s/%s: %s", root, rel, strerror(-r));
}

static inline void test_symlink(const char *root, const char *rel, const char *target) {
        int r = test_symlink_at(root, rel, target);
        if (r < 0)
                TAP_FAIL("symlink %s/%s -> %s: %s", root, rel, target, strerror(-r));
}

/*
 * A copy of fixtures/name (test_copy_fixture()), its proc/sys/kernel/osrelease set to release
 * when release is not NULL. NULL when it cannot be made (a failed check naming label).
 */
static inline char *test_copy_fixture_as(const char *fixtures, const char *name, const char *label, const char *release) {
        char src[PATH_MAX];
        snprintf(src, sizeof(src), "%s/%s", fixtures, name);
        char *root = test_copy_fixture(src);
        if (!root)
                TAP_FAIL("%s: no copy of %s", label, name);
        else if (release)
                test_put(root, "proc/sys/kernel/osrelease", release);
        return root;
}

/* argv[1] of a fixture test run as "PROGRAM FIXTURES_DIR" (tests/fixtures); NULL, the usage
 * printed, without it. */
static inline const char *test_fixtures_arg(int argc, char *argv[]) {
        if (argc < 2) {
                fprintf(stderr, "usage: %s FIXTURES_DIR\n", argv[0]);
                return NULL;
        }
        return argv[1];
}

/* text to path below dirfd in one write(), truncating, never creating (as hostfs writes). */
static inline int test_write_at(int dirfd, const char *path, const char *text) {
        int fd = openat(dirfd, path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = write(fd, text, strlen(text));
        close(fd);
        return n == (ssize_t) strlen(text) ? 1 : -EIO;
}

/*
 * For the fixture hooks that emulate a scheduler switch: the names queue/scheduler (path below
 * dirfd) lists and the one value asks for (up to its newline). Returns 0, -EINVAL when the file
 * does not parse or takes no elevator (no brackets), -errno.
 */
static inline int test_read_scheduler_at(int dirfd, const char *path, const char *value, char ***ret_names, char **ret_want) {
        char buf[512] = {};
        int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n < 0)
                return -EIO;
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *cur = NULL;
        bool configurable;
        if (parse_scheduler(buf, &names, &cur, &configurable) < 0 || !configurable)
                return -EINVAL;
        char *want = strndup(value, strcspn(value, "\n"));
        if (!want)
                return -ENOMEM;
        *ret_names = TAKE_PTR(names);
        *ret_want = want;
        return 0;
}

/* Write queue/scheduler (path below dirfd) as block/elevator.c's elv_iosched_show() prints it
 * with want selected: the names space-separated, want in brackets. For the fixture hooks that
 * emulate a scheduler switch. Returns 1 (written) or -errno. */
static inline int test_write_scheduler_at(int dirfd, const char *path, char **names, const char *want) {
        char out[512], *o = out;
        STRV_FOREACH(s, names)
                o += snprintf(o, sizeof(out) - (o - out), streq(*s, want) ? "%s[%s]" : "%s%s",
                              s == names ? "" : " ", *s);
        snprintf(o, sizeof(out) - (o - out), "\n");
        return test_write_at(dirfd, path, out);
}

/*
 * The kernel resets nr_requests on an elevator switch (block/elevator.c, block/blk-mq-sched.c): to the tag set
 * depth without an elevator (elevator_disable()), to 2 * min(depth, BLKDEV_DEFAULT_RQ) when
 * one is attached (blk_mq_init_sched()). dir: "block/<disk>" relative to dirfd.
 */
static inline void test_reset_nr_requests_at(int dirfd, const char *dir, const char *elevator) {
        char path[PATH_MAX], buf[32] = {}, out[32];
        snprintf(path, sizeof(path), "%s/mq/0/nr_tags", dir);
        int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        long depth = n > 0 ? strtol(buf, NULL, 10) : 0;
        if (depth <= 0)
                return;
        snprintf(out, sizeof(out), "%ld\n", streq(elevator, "none") ? depth : 2 * (depth < 128 ? depth : 128));
        snprintf(path, sizeof(path), "%s/queue/nr_requests", dir);
        (void) test_write_at(dirfd, path, out);
}

/*
 * A write of value to queue/scheduler (path below dirfd, ".../queue/scheduler") as the kernel
 * takes it, for the fixture tests' write hooks: an elevator the file does not list is switched
 * to when it is in loadable (elv_iosched_load_module(): request_module("%s-iosched") registers
 * it), else refused (elevator_switch(): -EINVAL); the file then reads as elv_iosched_show()
 * prints it; with reset_nr_requests, queue/nr_requests is reset as the switch does. Returns 1
 * (written), -EINVAL (unknown name, a file without brackets), -errno.
 */
static inline int test_emulate_scheduler_at(int dirfd, const char *path, const char *value, char * const *loadable,
                                            bool reset_nr_requests) {
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *want = NULL;
        int r = test_read_scheduler_at(dirfd, path, value, &names, &want);
        if (r < 0)
                return r;
        if (!strv_contains(names, want)) {
                if (!strv_contains(loadable, want))
                        return -EINVAL;
                if (strv_extend(&names, want) < 0)
                        return -ENOMEM;
        }
        r = test_write_scheduler_at(dirfd, path, names, want);
        if (r < 0)
                return r;
        if (reset_nr_requests) {
                _cleanup_free_ char *dir = strndup(path, strlen(path) - strlen("/queue/scheduler"));
                if (dir)
                        test_reset_nr_requests_at(dirfd, dir, want);
        }
        return 1;
}
