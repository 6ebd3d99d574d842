/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Integration test of stats/stats-bpf.c against the running kernel and a real loop device.
 *
 * Needs root. TAP (tests/lib/tap.h); the whole test is skipped ("1..0 # SKIP why") when it
 * cannot run here, which .ci/run counts as a failure on a machine that promises BPF. The loop device is created with LOOP_FLAGS_AUTOCLEAR, so the kernel detaches it
 * when this process exits however it exits; it is also detached explicitly. The tmpfs holding its
 * backing file is mounted in a private mount namespace, so it vanishes with the process too.
 *
 * "test-stats-bpf --hold /dev/<disk>" is a helper for bench/bpf-overhead.sh: attach the provider,
 * print "attached", wait for SIGINT/SIGTERM or EOF on stdin, print that disk's hctx 0 counters.
 */

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/loop.h>
#include <linux/magic.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "stats-bpf.h"
#include "tap.h"

#define EXIT_SKIP 77
#define N_BLOCKS 256
/* Completion events lost with nothing in bpf_prog_info.recursion_misses: measured up to 5 in 80,000
 * on 6.18 under CPU load (docs/BPF.md "Events the counters can lack"); allowed: 1 per 500. */
#define UNEXPLAINED_LOSS ((N_BLOCKS + 499) / 500)
#define IO_SIZE 4096
#define BACKING_SIZE (16u * 1024 * 1024)

/* tap.h's checks with a message: the condition and, on failure, why */
#define CHECK_MSG(cond, ...)                                                    \
        do {                                                                    \
                tap_checks++;                                                   \
                if (!(cond)) {                                                  \
                        TAP_FAIL("%s", #cond);                                  \
                        fprintf(stderr, "     ");                               \
                        fprintf(stderr, __VA_ARGS__);                           \
                        fputc('\n', stderr);                                    \
                }                                                               \
        } while (0)

static void on_log(const char *message, void *userdata) {
        fprintf(stderr, "debug: %s\n", message);
}

static void freep(void *p) {
        free(*(void **) p);
}

typedef struct Loop {
        char dir[64];        /* our tmpfs mount point, "" if none */
        char file[128];      /* backing file, "" if none */
        int ctl_fd;          /* configured loop device fd, holds the AUTOCLEAR reference */
        int nr;
        dev_t devnum;
} Loop;

static void loop_teardown(Loop *l) {
        if (l->ctl_fd >= 0) {
                if (ioctl(l->ctl_fd, LOOP_CLR_FD, 0) < 0 && errno != ENXIO)
                        fprintf(stderr, "LOOP_CLR_FD on loop%d: %m (AUTOCLEAR detaches on close)\n",
                                l->nr);
                close(l->ctl_fd);
                l->ctl_fd = -1;
        }
        if (l->file[0]) {
                (void) unlink(l->file);
                l->file[0] = 0;
        }
        if (l->dir[0]) {
                (void) umount2(l->dir, MNT_DETACH);
                (void) rmdir(l->dir);
                l->dir[0] = 0;
        }
}

/* A 16 MiB file on a tmpfs only we see. Returns 0, or -errno (then the test is skipped). */
static int make_backing_file(Loop *l) {
        struct statfs sfs;
        int fd, r;

        if (unshare(CLONE_NEWNS) >= 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) >= 0) {
                strcpy(l->dir, "/tmp/test-stats-bpf.XXXXXX");
                if (!mkdtemp(l->dir))
                        return -errno;
                if (mount("tmpfs", l->dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=32m,mode=0700") < 0) {
                        r = -errno;
                        (void) rmdir(l->dir);
                        l->dir[0] = 0;
                        return r;
                }
                snprintf(l->file, sizeof(l->file), "%s/backing", l->dir);
        } else if (statfs("/dev/shm", &sfs) >= 0 && sfs.f_type == TMPFS_MAGIC)
                snprintf(l->file, sizeof(l->file), "/dev/shm/test-stats-bpf.%d", (int) getpid());
        else
                return -EOPNOTSUPP;

        fd = open(l->file, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) {
                r = -errno;
                l->file[0] = 0;
                return r;
        }
        r = posix_fallocate(fd, 0, BACKING_SIZE);
        close(fd);
        return -r;
}

/* Attach the backing file to a free loop device (LOOP_CTL_GET_FREE + LOOP_CONFIGURE). */
static int make_loop(Loop *l) {
        int ctl, backing, r = -EBUSY;

        ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
        if (ctl < 0)
                return -errno;
        backing = open(l->file, O_RDWR | O_CLOEXEC);
        if (backing < 0) {
                r = -errno;
                close(ctl);
                return r;
        }

        for (int attempt = 0; attempt < 10; attempt++) {
                struct loop_config config = {
                        .fd = (uint32_t) backing,
                        .block_size = IO_SIZE,
                        .info.lo_flags = LO_FLAGS_AUTOCLEAR,
                };
                char path[32];
                int nr, fd;

                nr = ioctl(ctl, LOOP_CTL_GET_FREE);
                if (nr < 0) {
                        r = -errno;
                        break;
                }
                snprintf(path, sizeof(path), "/dev/loop%d", nr);
                fd = open(path, O_RDWR | O_CLOEXEC);
                if (fd < 0) {
                        r = -errno;
                        break;
                }
                if (ioctl(fd, LOOP_CONFIGURE, &config) < 0) {
                        r = -errno;
                        close(fd);
                        if (r == -EBUSY)
                                continue; /* raced with another losetup: take the next one */
                        break;
                }
                l->ctl_fd = fd;
                l->nr = nr;
                struct stat st;
                if (fstat(fd, &st) < 0) {
                        r = -errno;
                        break;
                }
                l->devnum = st.st_rdev;
                r = 0;
                break;
        }
        close(backing);
        close(ctl);
        return r;
}

static int read_or_zero(StatsBpf *s, dev_t devnum, unsigned hctx, HctxBpfCounters *ret) {
        int r = blkmqd_stats_bpf_read(s, devnum, hctx, ret);
        if (r == -ENOENT) {
                *ret = (HctxBpfCounters) {};
                return 0;
        }
        return r;
}

/* Counters of hctx 0 of devnum once every request dispatched since base (all zero: ever) has
 * completed, polled for up to 5 s: udev's (or blkid's) probe of the new loop device may still be
 * in flight. 0, or the read's error. */
static int read_settled(StatsBpf *s, dev_t devnum, const HctxBpfCounters *base, HctxBpfCounters *ret) {
        int r = 0;
        for (int i = 0; i < 500; i++) {
                r = read_or_zero(s, devnum, 0, ret);
                if (r < 0 || ret->dispatched - base->dispatched ==
                                     (ret->completed_local + ret->completed_remote) -
                                             (base->completed_local + base->completed_remote))
                        break;
                nanosleep(&(struct timespec) { .tv_nsec = 10 * 1000 * 1000 }, NULL);
        }
        return r;
}

static void print_counters(const char *what, const HctxBpfCounters *c) {
        printf("%s: dispatched=%" PRIu64 " completed_local=%" PRIu64 " completed_remote=%" PRIu64
               " runs=%" PRIu64 "\n",
               what, c->dispatched, c->completed_local, c->completed_remote, c->runs);
}

static void on_service_event(dev_t devnum, void *userdata) {
        unsigned *n = userdata;
        (*n)++;
}

static void on_signal(int sig) {
}

static int hold(const char *disk) {
        __attribute__((cleanup(blkmqd_stats_bpf_freep))) StatsBpf *s = NULL;
        HctxBpfCounters c;
        struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
        struct stat st;
        sigset_t mask;
        char b[64];
        int r;

        if (stat(disk, &st) < 0 || !S_ISBLK(st.st_mode)) {
                fprintf(stderr, "%s: not a block device\n", disk);
                return EXIT_FAILURE;
        }
        r = blkmqd_stats_bpf_new(&s);
        if (r < 0) {
                printf("SKIP: BPF stats provider cannot load here: %s\n", strerror(-r));
                return EXIT_SKIP;
        }
        /* time the disk's requests too (the measured speed's programs, as the daemon watches a
         * disk it lists): bench/bpf-overhead.sh then costs the whole provider */
        r = blkmqd_stats_bpf_service_watch(s, st.st_rdev, true);
        if (r < 0 && r != -EOPNOTSUPP)
                fprintf(stderr, "service times not watched: %s\n", strerror(-r));
        /* Block the signals and poll stdin: SIGINT/SIGTERM (delivered only inside ppoll(), to a
         * no-op handler, so it returns EINTR) or EOF end the wait. */
        sigaction(SIGINT, &(struct sigaction) { .sa_handler = on_signal }, NULL);
        sigaction(SIGTERM, &(struct sigaction) { .sa_handler = on_signal }, NULL);
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        sigdelset(&mask, SIGINT);
        sigdelset(&mask, SIGTERM);
        printf("attached\n");
        for (;;) {
                r = ppoll(&p, 1, NULL, &mask);
                if (r < 0)
                        break; /* EINTR: signal */
                if (p.revents & (POLLHUP | POLLERR))
                        break;
                if ((p.revents & POLLIN) && read(STDIN_FILENO, b, sizeof(b)) <= 0)
                        break;
        }
        r = blkmqd_stats_bpf_read(s, st.st_rdev, 0, &c);
        if (r == -ENOENT)
                c = (HctxBpfCounters) {};
        else if (r < 0) {
                fprintf(stderr, "read: %s\n", strerror(-r));
                return EXIT_FAILURE;
        }
        print_counters(disk, &c);
        return EXIT_SUCCESS;
}

int main(int argc, char *argv[]) {
        __attribute__((cleanup(blkmqd_stats_bpf_freep))) StatsBpf *s = NULL;
        __attribute__((cleanup(freep))) void *buf = NULL;
        Loop loop = { .ctl_fd = -1, .nr = -1 };
        HctxBpfCounters before, after, other;
        uint64_t d_disp, d_local, d_remote, m_issue, m_complete;
        StatsBpfMissed missed_before = {}, missed_after = {};
        int r, fd = -1;

        setvbuf(stdout, NULL, _IOLBF, 0);

        if (argc == 3 && strcmp(argv[1], "--hold") == 0) {
                tap_plain_stdout();             /* a helper, no test: its lines are read as they are */
                return hold(argv[2]);
        }

        if (geteuid() != 0)
                return tap_skip_all("needs root (BPF load, loop devices)");
        if (getenv("BLKMQD_TEST_DEBUG"))
                blkmqd_stats_bpf_set_log_func(on_log, NULL);

        r = blkmqd_stats_bpf_new(&s);
        if (r < 0) {
                char why[256];
                snprintf(why, sizeof(why), "BPF stats provider cannot load here: %s%s", strerror(-r),
                         r == -EOPNOTSUPP && !HAVE_BPF ? " (built without BPF)" : "");
                return tap_skip_all(why);
        }
        printf("runs: %s\n", blkmqd_stats_bpf_has_runs(s)
                                     ? "counted"
                                     : blkmqd_stats_bpf_runs_unavailable_reason(s));
        CHECK_MSG(blkmqd_stats_bpf_has_runs(s) == !blkmqd_stats_bpf_runs_unavailable_reason(s),
              "has_runs and reason disagree");

        r = make_backing_file(&loop);
        if (r < 0) {
                TAP_FAIL("cannot create a tmpfs backing file: %s", strerror(-r));
                loop_teardown(&loop);
                return tap_finish("stats-bpf");
        }
        r = make_loop(&loop);
        if (r < 0) {
                TAP_FAIL("cannot set up a loop device: %s", strerror(-r));
                loop_teardown(&loop);
                return tap_finish("stats-bpf");
        }
        printf("loop%d is %u:%u\n", loop.nr, major(loop.devnum), minor(loop.devnum));

        /* Impossible device numbers are refused, unknown ones are "nothing seen". */
        CHECK_MSG(blkmqd_stats_bpf_read(s, makedev(4096, 0), 0, &other) == -EINVAL, "major 4096");
        CHECK_MSG(blkmqd_stats_bpf_read(s, makedev(4095, 0xfffff), 0, &other) == -ENOENT,
              "unused devnum");

        /* Baseline at a quiescent moment: a request dispatched before the baseline but completed
         * after it would make completions exceed dispatches. */
        r = read_settled(s, loop.devnum, &(const HctxBpfCounters) {}, &before);
        CHECK_MSG(r == 0, "read before: %s", strerror(-r));
        print_counters("before", &before);
        r = blkmqd_stats_bpf_missed(s, &missed_before);
        CHECK_MSG(r == 0, "missed before: %s", strerror(-r));
        SpeedHistogram svc_before = {}, svc_after = {};
        bool svc = blkmqd_stats_bpf_has_service(s);
        printf("service times: %s\n", svc ? "measured" : blkmqd_stats_bpf_service_unavailable_reason(s));
        CHECK_MSG(svc == !blkmqd_stats_bpf_service_unavailable_reason(s), "service: has() and the reason agree");
        if (svc) {
                /* only watched disks are timed */
                CHECK_MSG(blkmqd_stats_bpf_service_watch(s, loop.devnum, true) == 0, "service: watch the loop device");
                r = blkmqd_stats_bpf_read_service(s, loop.devnum, &svc_before);
                CHECK_MSG(r == 0 || r == -ENOENT, "service before: %s", strerror(-r));
                CHECK_MSG(blkmqd_stats_bpf_service_fd(s) >= 0, "the ring buffer has an epoll fd");
        }

        {
                char path[32];
                snprintf(path, sizeof(path), "/dev/loop%d", loop.nr);
                fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
        }
        CHECK_MSG(fd >= 0, "open O_DIRECT: %m");
        if (fd < 0)
                goto finish;
        if (posix_memalign(&buf, IO_SIZE, IO_SIZE) != 0) {
                CHECK_MSG(false, "posix_memalign");
                goto finish;
        }
        for (int i = 0; i < N_BLOCKS; i++) {
                /* Spread over the device, every read a separate 4 KiB request. */
                off_t off = (off_t) ((i * 13) % (BACKING_SIZE / IO_SIZE)) * IO_SIZE;
                ssize_t n = pread(fd, buf, IO_SIZE, off);
                if (n != IO_SIZE) {
                        CHECK_MSG(n == IO_SIZE, "pread #%d at %jd: %zd %m", i, (intmax_t) off, n);
                        goto finish;
                }
        }

        /* Our reads are done (pread returns after block_rq_complete), but udev's probe may still be
         * in flight: every request dispatched since the baseline completed. */
        r = read_settled(s, loop.devnum, &before, &after);
        CHECK_MSG(r == 0, "read after: %s", strerror(-r));
        print_counters("after", &after);
        r = blkmqd_stats_bpf_missed(s, &missed_after);
        CHECK_MSG(r == 0, "missed after: %s", strerror(-r));
        /* Host-wide events the counters lack during our reads (all disks, so an upper bound). */
        m_issue = missed_after.issue_recursion - missed_before.issue_recursion + missed_after.map_full - missed_before.map_full;
        m_complete = missed_after.complete_recursion - missed_before.complete_recursion + missed_after.map_full -
                     missed_before.map_full;
        printf("missed: recursion known %d, dispatched %" PRIu64 ", completed %" PRIu64 " (incl. map full)\n",
               missed_after.recursion_known, m_issue, m_complete);

        d_disp = after.dispatched - before.dispatched;
        d_local = after.completed_local - before.completed_local;
        d_remote = after.completed_remote - before.completed_remote;
        printf("delta: dispatched=%" PRIu64 " completed_local=%" PRIu64 " completed_remote=%" PRIu64
               "\n", d_disp, d_local, d_remote);

        CHECK_MSG(d_disp + m_issue + UNEXPLAINED_LOSS >= N_BLOCKS, "dispatched rose by %" PRIu64 " < %d", d_disp, N_BLOCKS);
        CHECK_MSG(d_local + d_remote + m_complete + UNEXPLAINED_LOSS >= N_BLOCKS, "completed rose by %" PRIu64 " < %d",
              d_local + d_remote, N_BLOCKS);
        /* Each loop request is issued once and completed once (no requeue, no partial completion):
         * a provider counting partial completions or missing one side would differ here by far more
         * than the events the kernel reports as missed plus UNEXPLAINED_LOSS. */
        CHECK_MSG(d_local + d_remote + m_complete + UNEXPLAINED_LOSS >= d_disp &&
              d_disp + m_issue + UNEXPLAINED_LOSS >= d_local + d_remote,
              "completed %" PRIu64 " != dispatched %" PRIu64 " beyond the %" PRIu64 "/%" PRIu64
              " events reported missed and %d unexplained", d_local + d_remote, d_disp, m_complete, m_issue,
              UNEXPLAINED_LOSS);
        /* The loop device has a single hctx: nothing may be filed under hctx 1. */
        r = blkmqd_stats_bpf_read(s, loop.devnum, 1, &other);
        CHECK_MSG(r == -ENOENT, "hctx 1 of a single-queue loop device: %s", strerror(-r));
        if (blkmqd_stats_bpf_has_runs(s))
                CHECK_MSG(after.runs > before.runs, "runs did not rise");
        else
                CHECK_MSG(after.runs == 0, "runs counted although unavailable");

        /* One copy of the whole map (BPF_MAP_LOOKUP_BATCH, what a metrics scrape reads): the
         * counters of a lookup of the key, at least those read before and at most those read
         * after (they only grow); a key the map lacks is ENOENT, as the map itself says. */
        r = blkmqd_stats_bpf_snapshot(s);
        CHECK_MSG(r == 0, "snapshot (BPF_MAP_LOOKUP_BATCH): %s", strerror(-r));
        if (r == 0) {
                HctxBpfCounters snap = {}, direct = {};
                r = blkmqd_stats_bpf_read(s, loop.devnum, 0, &snap);
                CHECK_MSG(r == 0, "read from the snapshot: %s", strerror(-r));
                CHECK_MSG(blkmqd_stats_bpf_read(s, loop.devnum, 1, &other) == -ENOENT, "snapshot: hctx 1 is ENOENT");
                blkmqd_stats_bpf_snapshot_drop(s);
                r = blkmqd_stats_bpf_read(s, loop.devnum, 0, &direct);
                CHECK_MSG(r == 0, "read after the snapshot: %s", strerror(-r));
                print_counters("snapshot", &snap);
                CHECK_MSG(after.dispatched <= snap.dispatched && snap.dispatched <= direct.dispatched &&
                      after.completed_local <= snap.completed_local && snap.completed_local <= direct.completed_local &&
                      after.completed_remote <= snap.completed_remote && snap.completed_remote <= direct.completed_remote &&
                      after.runs <= snap.runs && snap.runs <= direct.runs,
                      "snapshot counters not between the lookups before and after it");
        }

        /* Service times: every one of our 4 KiB reads timed (udev's probe may add a few), the
         * buckets add up to the count, a loop device on a file answers in well under a second,
         * and the 256th request of the disk sent one event through the ring buffer. */
        if (svc) {
                r = blkmqd_stats_bpf_read_service(s, loop.devnum, &svc_after);
                CHECK_MSG(r == 0, "service after: %s", strerror(-r));
                uint64_t n = svc_after.count - svc_before.count, sum = 0;
                for (unsigned i = 0; i < SPEED_BUCKETS; i++)
                        sum += svc_after.buckets[i];
                double p50 = speed_histogram_quantile(&svc_after, 0.5), p99 = speed_histogram_quantile(&svc_after, 0.99);
                printf("service: %" PRIu64 " requests timed, p50 %.0f us, p99 %.0f us, mean %.0f us\n", n, p50, p99,
                       svc_after.count ? (double) svc_after.sum_usec / (double) svc_after.count : 0.0);
                CHECK_MSG(n + UNEXPLAINED_LOSS >= N_BLOCKS && n <= d_disp + m_issue, "service: %" PRIu64 " timed for %d reads", n,
                          N_BLOCKS);
                CHECK_MSG(sum == svc_after.count, "service: buckets add up to %" PRIu64 ", count %" PRIu64, sum, svc_after.count);
                CHECK_MSG(p50 > 0 && p50 < 1e6 && p99 >= p50, "service: p50 %.0f us, p99 %.0f us", p50, p99);
                unsigned events = 0;
                r = blkmqd_stats_bpf_service_consume(s, on_service_event, &events);
                CHECK_MSG(r >= 1 && events >= 1, "service: %d ring buffer event(s) for %u request(s) (one per 256)", r,
                          (unsigned) svc_after.count);
                /* Measure=no: the programs detach, nothing is timed any more */
                CHECK_MSG(blkmqd_stats_bpf_service_enable(s, false) == 0 && !blkmqd_stats_bpf_has_service(s),
                          "service: switched off");
                for (int i = 0; i < 32; i++)
                        (void) !pread(fd, buf, IO_SIZE, (off_t) i * IO_SIZE);
                SpeedHistogram off = {};
                r = blkmqd_stats_bpf_read_service(s, loop.devnum, &off);
                CHECK_MSG(r == 0 && off.count == svc_after.count, "service: nothing timed while off (%" PRIu64 " -> %" PRIu64 ")",
                          svc_after.count, off.count);
                CHECK_MSG(blkmqd_stats_bpf_service_enable(s, true) == 0 && blkmqd_stats_bpf_has_service(s), "service: on again");
        }

        r = blkmqd_stats_bpf_forget(s, loop.devnum);
        CHECK_MSG(r >= 1, "forget returned %d", r);
        if (svc)
                CHECK_MSG(blkmqd_stats_bpf_read_service(s, loop.devnum, &svc_after) == -ENOENT, "service: forgotten");
        r = blkmqd_stats_bpf_read(s, loop.devnum, 0, &other);
        CHECK_MSG(r == -ENOENT, "read after forget: %s", strerror(-r));

finish:
        if (fd >= 0)
                close(fd);
        loop_teardown(&loop);
        return tap_finish("stats-bpf");
}
