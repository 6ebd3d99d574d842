/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kread-floor: what the kernel's side of a metrics scrape costs on a machine, without FUSE and
 * without any rendering (P4 in docs/BENCHMARKS.md).
 *
 *   kread-floor [--seconds S] [--burst N] FILE...
 *
 * Opens every FILE once (blkmqd keeps its statistics files open the same way) and then, once a
 * second for S seconds (default 30), reads each with one pread() of up to 4 KiB at offset 0: a
 * sysfs attribute or a blk-mq debugfs file renders its whole value in that first read, which is
 * how blkmqd reads them. Then N cycles back to back (default 1000; 0 skips them).
 *
 * Prints the process's CPU time (CLOCK_PROCESS_CPUTIME_ID: the scheduler's run time, ns) per
 * cycle, for the cycles a second apart (each starts with a wake-up from idle, as a scrape a second
 * does) and for the back-to-back ones (the work alone). Whatever a scraper that reads these
 * values needs at one scrape a second, it cannot need less than the first figure: it is the
 * floor of P4 for that set of files on this kernel and machine.
 *
 * bench/idle.py --kread-floor runs it on exactly the files blkmqd holds open after its scrapes
 * (from /proc/PID/fd), so both figures come from one run. Not a product: no error is fatal
 * except an open that fails.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(clockid_t c) {
        struct timespec ts;

        clock_gettime(c, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/* One cycle: a pread() of every file; returns the bytes read. */
static size_t cycle(const int *fds, int n, char *buf, size_t bufsz) {
        size_t total = 0;

        for (int i = 0; i < n; i++) {
                ssize_t r = pread(fds[i], buf, bufsz, 0);
                if (r > 0)
                        total += (size_t) r;
        }
        return total;
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "seconds", required_argument, NULL, 's' },
                { "burst",   required_argument, NULL, 'b' },
                { "help",    no_argument,       NULL, 'h' },
                {}
        };
        double seconds = 30;
        long burst = 1000;
        static char buf[4096];
        int c;

        while ((c = getopt_long(argc, argv, "s:b:h", opts, NULL)) >= 0)
                switch (c) {
                case 's': seconds = strtod(optarg, NULL); break;
                case 'b': burst = strtol(optarg, NULL, 10); break;
                default:
                        fprintf(stderr, "usage: %s [--seconds S] [--burst N] FILE...\n", argv[0]);
                        return c == 'h' ? 0 : 2;
                }
        int n = argc - optind;
        if (n <= 0) {
                fprintf(stderr, "%s: no files\n", argv[0]);
                return 2;
        }
        int *fds = calloc((size_t) n, sizeof(int));
        if (!fds)
                return 1;
        for (int i = 0; i < n; i++) {
                fds[i] = open(argv[optind + i], O_RDONLY | O_CLOEXEC);
                if (fds[i] < 0) {
                        fprintf(stderr, "%s: %s: %s\n", argv[0], argv[optind + i], strerror(errno));
                        return 1;
                }
        }

        size_t bytes = cycle(fds, n, buf, sizeof buf);  /* warm the paths once, not counted */
        uint64_t t0 = now_ns(CLOCK_MONOTONIC), cpu0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
        long cycles = 0;
        while (now_ns(CLOCK_MONOTONIC) - t0 < (uint64_t) (seconds * 1e9)) {
                cycle(fds, n, buf, sizeof buf);
                cycles++;
                uint64_t next = t0 + (uint64_t) cycles * 1000000000ULL;
                struct timespec ts = { .tv_sec = (time_t) (next / 1000000000ULL),
                                       .tv_nsec = (long) (next % 1000000000ULL) };
                while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                        ;
        }
        uint64_t cpu1 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
        printf("files: %d, %zu bytes a cycle\n", n, bytes);
        printf("once a second: %ld cycles, %.3f ms CPU per cycle = %.4f %% of a core\n", cycles,
               (double) (cpu1 - cpu0) / 1e6 / (double) (cycles ? cycles : 1),
               100.0 * (double) (cpu1 - cpu0) / 1e9 / seconds);
        if (burst > 0) {
                cpu0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
                for (long i = 0; i < burst; i++)
                        cycle(fds, n, buf, sizeof buf);
                cpu1 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
                printf("back to back: %ld cycles, %.3f ms CPU per cycle\n", burst,
                       (double) (cpu1 - cpu0) / 1e6 / (double) burst);
        }
        return 0;
}
