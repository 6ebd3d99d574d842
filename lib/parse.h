/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Parsers for the values the kernel prints in sysfs, procfs and debugfs, and
 * for what users echo into blkmqd's control files. Pure: no I/O, no logging.
 *
 * Every parser accepts exactly one trailing newline (what `cat` shows and what
 * `echo` sends) and rejects anything else it does not understand with -EINVAL,
 * so a truncated or garbled file is reported rather than misread.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Highest CPU number + 1 we accept (the kernel's NR_CPUS maximum, CONFIG_NR_CPUS_RANGE_END). */
#define BLKMQD_CPUS_MAX 8192

/* Strip one trailing "\n" from s in place; returns s. */
char *strip_newline(char *s);

/*
 * Parse an unsigned decimal number, e.g. sysfs "256\n".
 * No sign, no leading blanks, no base prefix ("0x2" is -EINVAL), optional trailing "\n".
 * Returns 0, -EINVAL (not a number) or -ERANGE (does not fit 64 bits).
 */
int parse_u64(const char *s, uint64_t *ret);

/* As parse_u64() but for a signed int ("-1" allowed); -ERANGE outside INT_MIN..INT_MAX. */
int parse_int(const char *s, int *ret);

/*
 * As parse_u64() with an inclusive range check, for values users write (policy/ files): a
 * number outside [min, max] is -ERANGE, a negative one too ("-4": a number, below any
 * unsigned range; "-0" is 0); something that is not a number is -EINVAL ("-", "-x", "0x2").
 */
int parse_u64_range(const char *s, uint64_t min, uint64_t max, uint64_t *ret);

/*
 * A set of CPU numbers, 0 .. BLKMQD_CPUS_MAX-1.
 */
typedef struct CpuSet {
        uint64_t *bits;
        unsigned n_words;       /* allocated words */
} CpuSet;

void cpuset_done(CpuSet *s);
/* A copy of s into *ret (which must not hold a set). Returns 0 or -ENOMEM. */
int cpuset_copy(const CpuSet *s, CpuSet *ret);
/* Returns 0 or -ENOMEM; -ERANGE if cpu >= BLKMQD_CPUS_MAX. */
int cpuset_add(CpuSet *s, unsigned cpu);
bool cpuset_isset(const CpuSet *s, unsigned cpu);
unsigned cpuset_count(const CpuSet *s);
bool cpuset_equal(const CpuSet *a, const CpuSet *b);
/* True when every CPU of a is in b. */
bool cpuset_is_subset(const CpuSet *a, const CpuSet *b);

/*
 * Parse a CPU list. Accepts the kernel cpulist syntax of
 * /sys/devices/system/cpu/online and /proc/irq/N/smp_affinity_list ("0-3,8,10-11")
 * and the ", "-separated form of /sys/block/X/mq/N/cpu_list ("0, 1, 2";
 * block/blk-mq-sysfs.c blk_mq_hw_sysfs_cpus_show()). An empty string is the empty set.
 * Returns 0, -EINVAL (syntax, descending range), -ERANGE (CPU >= BLKMQD_CPUS_MAX) or -ENOMEM.
 */
int cpuset_parse(const char *s, CpuSet *ret);

/* Format as a kernel cpulist ("0-3,8"); "" for the empty set. Returns NULL on ENOMEM. */
char *cpuset_format(const CpuSet *s);

/*
 * Parse a CPU mask in the kernel's bitmap format, comma-separated 32-bit hex words, most
 * significant first ("00000000,0000000f"; lib/bitmap-str.c bitmap_parse(), what
 * /sys/class/net/<if>/queues/tx-N/xps_cpus and rx-N/rps_cpus show, net/core/net-sysfs.c).
 * A trailing newline is allowed; "0" and all-zero words are the empty set.
 * Returns 0, -EINVAL (not hex, empty, a word longer than 8 digits), -ERANGE, -ENOMEM.
 */
int cpuset_parse_mask(const char *s, CpuSet *ret);

/* Format as a kernel bitmap mask, 32-bit words ("3", "1,00000000"); "0" for the empty set. NULL on ENOMEM. */
char *cpuset_format_mask(const CpuSet *s);

/*
 * Parse /sys/block/X/queue/scheduler, e.g. "[none] mq-deadline kyber bfq\n"
 * (block/elevator.c elv_iosched_show()).
 *   ret_available:    every listed name, brackets removed (NULL-terminated vector)
 *   ret_current:      the bracketed name, or NULL when none is bracketed
 *   ret_configurable: false when the file reads just "none" without brackets, which the
 *                     kernel prints for a queue that cannot take an elevator
 * Any output argument may be NULL. Returns 0, -EINVAL (empty, two bracketed names,
 * unbalanced brackets) or -ENOMEM.
 */
int parse_scheduler(const char *s, char ***ret_available, char **ret_current, bool *ret_configurable);

/*
 * True when the debugfs flags/state text contains the token, tokens being separated by
 * '|', blanks or newlines. E.g. hctx "flags" = "alloc_policy=FIFO SHOULD_MERGE|TAG_HCTX_SHARED\n"
 * contains "TAG_HCTX_SHARED" (block/blk-mq-debugfs.c hctx_flags_show()), queue "state"
 * "SAME_COMP|IO_STAT|SQ_SCHED" contains "SQ_SCHED".
 */
bool flags_has_token(const char *s, const char *token);

/*
 * Validate a disk name as the kernel gives it in /sys/block (no '/', not "." or "..",
 * at most 31 bytes: DISK_NAME_LEN 32 including NUL). Returns true if usable as a path component.
 */
bool disk_name_is_valid(const char *name);

/*
 * The name blkmqd uses for a disk the kernel names kernel_name: sysfs's own (a '/' in a
 * device name is a '!' in sysfs, lib/kobject.c kobject_set_name_vargs(): "cciss/c0d0" ->
 * block/cciss!c0d0), which libudev turns back into '/' in udev_device_get_sysname().
 * Writes at most size bytes (NUL included) into buf; returns buf, or NULL when it does not
 * fit. disk_name_to_kernel() is the reverse ('!' -> '/', the /dev name below /dev).
 */
char *disk_name_from_kernel(const char *kernel_name, char *buf, size_t size);
char *disk_name_to_kernel(const char *name, char *buf, size_t size);

/*
 * The value of key in a "key=value,key=value" list ending at its end or a newline, as
 * /sys/class/nvme/<ctrl>/address has it ("traddr=10.0.0.2,trsvcid=4420,src_addr=10.0.0.1";
 * drivers/nvme/host/fabrics.c nvmf_get_address()): newly allocated, NULL when key is absent
 * (or out of memory). "traddr" does not match "host_traddr=...".
 */
char *keyval_list_get(const char *list, const char *key);

/*
 * The name a block driver registered for major (register_blkdev(), block/genhd.c
 * blkdev_show()) in the text of /proc/devices: the "Block devices:" section's lines
 * "%3d %s\n" ("  7 loop", "252 zram", "259 blkext"). Writes at most size bytes (NUL included)
 * into buf. Returns 0, -ENOENT when the section has no such major, -EINVAL when text has no
 * "Block devices:" section or the name does not fit.
 */
int proc_devices_block_name(const char *text, unsigned major, char *buf, size_t size);
