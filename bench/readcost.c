/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * readcost: cost of open+read+close of small files, several paths side by side.
 *
 *   readcost [-n ITERATIONS] [-b BLOCKS] PATH...
 *
 * Every path gets ITERATIONS (default 100000) rounds of open(O_RDONLY) + read(4096) + close,
 * split into BLOCKS (default 20) blocks; blocks of the paths are interleaved (A B C A B C ...)
 * so drift on a shared machine hits all paths alike. Prints per path: mean ns/op over all
 * rounds, median and min of the per-block means, p50/p99 of single rounds (every round is timed
 * with CLOCK_MONOTONIC; the clock read costs ~20 ns and is included for all paths alike), and
 * the ratio of each path to the first one. Exit 1 if a read fails or returns 0 bytes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

typedef struct {
        const char *path;
        uint64_t *samples;      /* one per round */
        double *block_mean;
        size_t n;
        ssize_t bytes;
} Target;

static int one(Target *t) {
        char buf[4096];
        uint64_t a = now_ns();
        int fd = open(t->path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t k = read(fd, buf, sizeof(buf));
        int e = errno;
        close(fd);
        t->samples[t->n++] = now_ns() - a;
        if (k <= 0)
                return k < 0 ? -e : -ENODATA;
        t->bytes = k;
        return 0;
}

int main(int argc, char **argv) {
        long iterations = 100000, blocks = 20;
        int c;

        while ((c = getopt(argc, argv, "n:b:h")) >= 0)
                switch (c) {
                case 'n': iterations = strtol(optarg, NULL, 10); break;
                case 'b': blocks = strtol(optarg, NULL, 10); break;
                default:
                        fprintf(stderr, "usage: %s [-n ITERATIONS] [-b BLOCKS] PATH...\n", argv[0]);
                        return c == 'h' ? 0 : 2;
                }
        if (optind >= argc || iterations < 1 || blocks < 1 || blocks > iterations) {
                fprintf(stderr, "usage: %s [-n ITERATIONS] [-b BLOCKS] PATH...\n", argv[0]);
                return 2;
        }
        size_t nt = (size_t) (argc - optind), per_block = (size_t) (iterations / blocks);
        Target *t = calloc(nt, sizeof(Target));
        if (!t)
                return 1;
        for (size_t i = 0; i < nt; i++) {
                t[i].path = argv[optind + i];
                t[i].samples = calloc((size_t) iterations, sizeof(uint64_t));
                t[i].block_mean = calloc((size_t) blocks, sizeof(double));
                if (!t[i].samples || !t[i].block_mean)
                        return 1;
                /* warm-up: dentries, inode, page of the daemon */
                for (int w = 0; w < 1000; w++) {
                        t[i].n = 0;
                        int r = one(&t[i]);
                        if (r < 0) {
                                fprintf(stderr, "%s: %s\n", t[i].path, strerror(-r));
                                return 1;
                        }
                }
                t[i].n = 0;
        }
        for (long b = 0; b < blocks; b++)
                for (size_t i = 0; i < nt; i++) {
                        size_t start = t[i].n;
                        size_t count = b == blocks - 1 ? (size_t) iterations - start : per_block;
                        uint64_t a = now_ns();
                        for (size_t k = 0; k < count; k++) {
                                int r = one(&t[i]);
                                if (r < 0) {
                                        fprintf(stderr, "%s: %s\n", t[i].path, strerror(-r));
                                        return 1;
                                }
                        }
                        t[i].block_mean[b] = (double) (now_ns() - a) / (double) count;
                }

        printf("%ld iterations per path in %ld interleaved blocks; ns per open+read+close\n", iterations, blocks);
        printf("%-10s %-10s %-10s %-10s %-10s %-10s %-8s %s\n", "mean", "blk-med", "blk-min", "p50", "p99",
               "ratio", "bytes", "path");
        double base = 0;
        for (size_t i = 0; i < nt; i++) {
                uint64_t sum = 0;
                for (size_t k = 0; k < t[i].n; k++)
                        sum += t[i].samples[k];
                double mean = (double) sum / (double) t[i].n;
                qsort(t[i].samples, t[i].n, sizeof(uint64_t), cmp_u64);
                qsort(t[i].block_mean, (size_t) blocks, sizeof(double), cmp_double);
                double bmed = blocks % 2 ? t[i].block_mean[blocks / 2]
                                         : (t[i].block_mean[blocks / 2 - 1] + t[i].block_mean[blocks / 2]) / 2;
                if (i == 0)
                        base = mean;
                printf("%-10.0f %-10.0f %-10.0f %-10" PRIu64 " %-10" PRIu64 " %-10.3f %-8zd %s\n", mean, bmed,
                       t[i].block_mean[0], t[i].samples[t[i].n / 2], t[i].samples[t[i].n * 99 / 100],
                       mean / base, t[i].bytes, t[i].path);
        }
        return 0;
}
