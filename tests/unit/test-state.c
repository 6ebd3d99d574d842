/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for host/state.c: override files keyed by identity. Save/load round trip with
 * the exact file content, atomic replacement (no temp file left, a new inode each save, a
 * reader of the old file sees it whole), an empty set removes the file, a corrupt file gives
 * -EBADMSG once and is set aside as <name>.corrupt, and identity escaping (no '/', no hidden
 * or dot names, distinct identities never share a file).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "policy.h"
#include "state.h"
#include "strv.h"
#include "tap.h"
#include "test-util.h"

static char tmpdir[] = "/tmp/blkmqd-test-state-XXXXXX";

static int cmp(const void *a, const void *b) {
        return strcmp(*(char * const *) a, *(char * const *) b);
}

/* Names in the overrides directory, sorted, joined by ' '. */
static char *listing(const char *dir) {
        char path[512];
        snprintf(path, sizeof(path), "%s/overrides", dir);
        DIR *d = opendir(path);
        _cleanup_strv_free_ char **l = NULL;
        if (!d)
                return strdup("(no dir)");
        struct dirent *de;
        while ((de = readdir(d)))
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        strv_extend(&l, de->d_name);
        closedir(d);
        qsort(l, strv_length(l), sizeof(char *), cmp);
        return strv_join(l, " ") ?: strdup("");
}

static void put(const char *path, const char *content) {
        if (test_write_file(path, content) < 0)
                TAP_FAIL("cannot write %s", path);
}

static void test_escape(void) {
        struct {
                const char *in, *out;
        } t[] = {
                { "wwid:naa.5000c500a1b2c3d4", "wwid:naa.5000c500a1b2c3d4" },
                { "serial:BTWA1234_5678-x@y", "serial:BTWA1234_5678-x@y" },
                { "loop:/tmp/backing file", "loop:%2ftmp%2fbacking%20file" },
                { "path:/devices/pci0000:00/0000:00:04.0/virtio1/block/vda",
                  "path:%2fdevices%2fpci0000:00%2f0000:00:04.0%2fvirtio1%2fblock%2fvda" },
                { "a%2fb", "a%252fb" },                 /* '%' itself is escaped: no clash with "a/b" */
                { "a/b", "a%2fb" },
                { "x\ny", "x%0ay" },
                { "\xc3\xa9", "%c3%a9" },
                { ".", "%2e" },                 /* never "." / ".." or a hidden file */
                { "..", "%2e." },
                { ".hidden", "%2ehidden" },
                { "_hidden", "_hidden" },       /* and no clash with the escaped ".hidden" */
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                _cleanup_free_ char *e = state_escape_identity(t[i].in);
                CHECK_STR(e, t[i].out);
        }
        /* never a '/', never longer than NAME_MAX with ".tmp"/".corrupt" added */
        char long_id[1200];
        memset(long_id, '/', sizeof(long_id) - 1);
        long_id[sizeof(long_id) - 1] = 0;
        _cleanup_free_ char *e = state_escape_identity(long_id);
        CHECK(e && !strchr(e, '/'));
        CHECK(e && strlen(e) + strlen("..corrupt") <= 255);
}

/*
 * Distinct identities must never share a file (one disk's overrides applied to another).
 * Bug found here (fixed in 3de7685; meson test "state-regressions"): state_escape_identity()
 * cut the escaped name at 200 bytes, so two loop backing files under one long directory collided.
 */
static void test_known_bugs(void) {
        char a[300], b[300];
        snprintf(a, sizeof(a), "loop:/srv/images/customer-environments/production/cluster-eu-west-1/"
                               "node-pool-storage/persistent-volumes/tenant-0042/namespace-billing/statefulset-postgres/"
                               "replica-2/data/disk-a.img");
        snprintf(b, sizeof(b), "loop:/srv/images/customer-environments/production/cluster-eu-west-1/"
                               "node-pool-storage/persistent-volumes/tenant-0042/namespace-billing/statefulset-postgres/"
                               "replica-2/data/disk-b.img");
        _cleanup_free_ char *ea = state_escape_identity(a), *eb = state_escape_identity(b);
        printf("identities of %zu bytes escape to %zu and %zu bytes\n", strlen(a), strlen(ea), strlen(eb));
        tap_checks++;
        if (streq(ea, eb))
                TAP_FAIL("two identities share the file name \"%s\"", ea);
        /* a leading '.' is replaced by '_', so ".x" and "_x" share a file too */
        _cleanup_free_ char *d1 = state_escape_identity(".x"), *d2 = state_escape_identity("_x");
        tap_checks++;
        if (streq(d1, d2))
                TAP_FAIL("\".x\" and \"_x\" share the file name \"%s\"", d1);
}

static void test_round_trip(void) {
        State *s = NULL;
        char dir[512], file[600], path[700];
        struct stat st;

        /* state_open creates nested directories, mode 0700 */
        snprintf(dir, sizeof(dir), "%s/a/b/state", tmpdir);
        CHECK_INT(state_open(dir, &s), 0);
        if (!s)
                return;
        CHECK_STR(state_dir(s), dir);
        CHECK(stat(dir, &st) == 0 && (st.st_mode & 07777) == 0700);
        /* one blkmqd per state directory: a second open is EBUSY while the first lives, and
         * the directory is free again once it is gone (as after a crash) */
        {
                State *t = NULL;
                CHECK_INT(state_open(dir, &t), -EBUSY);
                CHECK(!t);
                State *u = NULL;
                char other[560];
                snprintf(other, sizeof(other), "%s/other", tmpdir);
                CHECK_INT(state_open(other, &u), 0);
                state_free(u);
        }
        snprintf(path, sizeof(path), "%s/overrides", dir);
        CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0700);

        const char *id = "loop:/tmp/backing file";
        _cleanup_free_ char *name = state_escape_identity(id);
        snprintf(file, sizeof(file), "%s/overrides/%s", dir, name);

        /* nothing stored yet */
        char **l = (char **) 0x1;
        CHECK_INT(state_load_overrides(s, id, &l), 0);
        CHECK_NULL(l);

        PolicyOverrides o = {};
        CHECK_INT(policy_overrides_set(&o, KNOB_ELEVATOR, "bfq"), 0);
        CHECK_INT(policy_overrides_set(&o, KNOB_RQ_AFFINITY, "2"), 0);
        CHECK_INT(policy_overrides_set(&o, KNOB_NR_REQUESTS, "64"), 0);
        CHECK_INT(policy_overrides_set(&o, KNOB_IRQ_AFFINITY, "0-1"), 0);
        o.disabled = true;
        CHECK_INT(state_save_overrides(s, id, &o), 0);

        _cleanup_free_ char *content = test_read_file(file);
        CHECK_STR(content, "# blkmqd overrides for loop:/tmp/backing file\n"
                           "elevator=bfq\nrq_affinity=2\nnr_requests=64\nirq_affinity=0-1\nenabled=0\n");
        CHECK(stat(file, &st) == 0 && (st.st_mode & 07777) == 0600);
        _cleanup_free_ char *ls = listing(dir);
        CHECK_STR(ls, name);                    /* no temp file left */

        CHECK_INT(state_load_overrides(s, id, &l), 0);
        CHECK_INT(strv_length(l), 10);
        if (strv_length(l) == 10) {
                const char *want[] = { "elevator", "bfq", "rq_affinity", "2", "nr_requests", "64",
                                       "irq_affinity", "0-1", "enabled", "0" };
                for (size_t i = 0; i < 10; i++)
                        CHECK_STR(l[i], want[i]);
        }
        strv_free(l);

        /* replace: a new file (rename), never rewritten in place; a reader of the old one sees it whole */
        struct stat before;
        CHECK_INT(stat(file, &before), 0);
        int old = open(file, O_RDONLY | O_CLOEXEC);
        CHECK(old >= 0);
        CHECK_INT(policy_overrides_set(&o, KNOB_ELEVATOR, NULL), 0);
        CHECK_INT(policy_overrides_set(&o, KNOB_IRQ_AFFINITY, "hctx"), 0);
        o.disabled = false;
        CHECK_INT(state_save_overrides(s, id, &o), 0);
        CHECK(stat(file, &st) == 0 && st.st_ino != before.st_ino);
        free(content);
        content = test_read_file(file);
        CHECK_STR(content, "# blkmqd overrides for loop:/tmp/backing file\nrq_affinity=2\nnr_requests=64\nirq_affinity=hctx\n");
        /* elevator tunables (issue 18): "iosched.<elevator>.<tunable>", after the knobs */
        CHECK_INT(policy_overrides_set_iosched(&o, IOSCHED_BFQ_SLICE_IDLE, "0"), 0);
        CHECK_INT(policy_overrides_set_iosched(&o, IOSCHED_DEADLINE_WRITES_STARVED, "-2"), 0);
        CHECK_INT(state_save_overrides(s, id, &o), 0);
        free(content);
        content = test_read_file(file);
        CHECK_STR(content, "# blkmqd overrides for loop:/tmp/backing file\nrq_affinity=2\nnr_requests=64\nirq_affinity=hctx\n"
                           "iosched.bfq.slice_idle=0\niosched.mq-deadline.writes_starved=-2\n");
        CHECK_INT(policy_overrides_set_iosched(&o, IOSCHED_BFQ_SLICE_IDLE, NULL), 0);
        CHECK_INT(policy_overrides_set_iosched(&o, IOSCHED_DEADLINE_WRITES_STARVED, NULL), 0);
        CHECK_INT(state_save_overrides(s, id, &o), 0);
        if (old >= 0) {
                char buf[512] = {};
                ssize_t n = read(old, buf, sizeof(buf) - 1);
                CHECK(n > 0 && strstr(buf, "elevator=bfq\n") && strstr(buf, "enabled=0\n"));
                close(old);
        }
        free(ls);
        ls = listing(dir);
        CHECK_STR(ls, name);

        /* a temp file left by a crash does not stop the next save, and does not stay */
        snprintf(path, sizeof(path), "%s/overrides/.%s.tmp", dir, name);
        put(path, "elevator=half-writ");
        CHECK_INT(state_save_overrides(s, id, &o), 0);
        free(ls);
        ls = listing(dir);
        CHECK_STR(ls, name);

        /* a second identity is independent */
        PolicyOverrides o2 = {};
        CHECK_INT(policy_overrides_set(&o2, KNOB_ELEVATOR, "none"), 0);
        CHECK_INT(state_save_overrides(s, "wwid:naa.5000c500a1b2c3d4", &o2), 0);
        CHECK_INT(state_load_overrides(s, "wwid:naa.5000c500a1b2c3d4", &l), 0);
        CHECK(strv_length(l) == 2 && streq(l[1], "none"));
        strv_free(l);

        /* nothing left: the file goes */
        policy_overrides_done(&o);
        CHECK_INT(state_save_overrides(s, id, &o), 0);
        CHECK(access(file, F_OK) < 0 && errno == ENOENT);
        CHECK_INT(state_load_overrides(s, id, &l), 0);
        CHECK_NULL(l);
        CHECK_INT(state_save_overrides(s, id, &o), 0);  /* and again: still fine */
        free(ls);
        ls = listing(dir);
        CHECK_STR(ls, "wwid:naa.5000c500a1b2c3d4");

        /* hand-edited: comments and blank lines are fine */
        put(file, "# edited\n\nelevator=kyber\n# x=y\nnr_requests=32\n");
        CHECK_INT(state_load_overrides(s, id, &l), 0);
        CHECK(strv_length(l) == 4 && streq(l[0], "elevator") && streq(l[1], "kyber") && streq(l[3], "32"));
        strv_free(l);

        /* corrupt: -EBADMSG, renamed to <name>.corrupt, reported once */
        const char *corrupt[] = { "elevator=bfq\ngarbage\n", "=2\n", "elevator bfq\n" };
        for (size_t i = 0; i < ELEMENTSOF(corrupt); i++) {
                put(file, corrupt[i]);
                l = NULL;
                CHECK_INT(state_load_overrides(s, id, &l), -EBADMSG);
                CHECK_NULL(l);
                CHECK(access(file, F_OK) < 0);
                snprintf(path, sizeof(path), "%s.corrupt", file);
                _cleanup_free_ char *kept = test_read_file(path);
                CHECK_STR(kept, corrupt[i]);    /* set aside as it was, for the admin */
                CHECK_INT(state_load_overrides(s, id, &l), 0);
                CHECK_NULL(l);
                (void) unlink(path);
        }

        /* a symlink planted in the state dir is not followed */
        snprintf(path, sizeof(path), "%s/overrides/%s", dir, "wwid:evil");
        CHECK_INT(symlink("/etc/hostname", path), 0);
        l = NULL;
        CHECK(state_load_overrides(s, "wwid:evil", &l) < 0);
        CHECK_NULL(l);

        policy_overrides_done(&o2);
        state_free(s);
        s = NULL;
        CHECK_INT(state_open(dir, &s), 0);      /* the lock went with the first */
        state_free(s);
}

int main(int argc, char *argv[]) {
        if (argc > 1 && streq(argv[1], "--known-bugs")) {
                test_known_bugs();
                return tap_finish("test-state --known-bugs");
        }
        if (!mkdtemp(tmpdir))
                return 1;
        test_escape();
        test_round_trip();
        char *rm[] = { (char *) "rm", (char *) "-rf", tmpdir, NULL };
        (void) test_run(rm);
        return tap_finish("test-state");
}
