/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for lib/parse.c: the parsers of what the kernel prints. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include "cmdline.h"
#include "macro.h"
#include "parse.h"
#include "strv.h"
#include "tap.h"

static void test_parse_u64(void) {
        uint64_t v = 4242;

        CHECK_INT(parse_u64("0", &v), 0);
        CHECK_U64(v, 0);
        CHECK_INT(parse_u64("256\n", &v), 0);
        CHECK_U64(v, 256);
        CHECK_INT(parse_u64("12\n", &v), 0);
        CHECK_U64(v, 12);
        CHECK_INT(parse_u64("007", &v), 0);
        CHECK_U64(v, 7);
        CHECK_INT(parse_u64("18446744073709551615", &v), 0);
        CHECK_U64(v, UINT64_MAX);

        v = 4242;
        CHECK_INT(parse_u64("18446744073709551616", &v), -ERANGE);
        CHECK_INT(parse_u64("99999999999999999999\n", &v), -ERANGE);
        CHECK_INT(parse_u64("0x2", &v), -EINVAL);
        CHECK_INT(parse_u64("-1", &v), -EINVAL);
        CHECK_INT(parse_u64("+1", &v), -EINVAL);
        CHECK_INT(parse_u64("", &v), -EINVAL);
        CHECK_INT(parse_u64("\n", &v), -EINVAL);
        CHECK_INT(parse_u64(" 1", &v), -EINVAL);
        CHECK_INT(parse_u64("1 ", &v), -EINVAL);
        CHECK_INT(parse_u64("12\n\n", &v), -EINVAL);    /* exactly one newline */
        CHECK_INT(parse_u64("1\n2", &v), -EINVAL);
        CHECK_INT(parse_u64("1.5", &v), -EINVAL);
        CHECK_U64(v, 4242);                             /* failures leave *ret alone */

        CHECK_INT(parse_u64_range("2\n", 0, 2, &v), 0);
        CHECK_U64(v, 2);
        CHECK_INT(parse_u64_range("3\n", 0, 2, &v), -ERANGE);
        CHECK_INT(parse_u64_range("0", 1, 2, &v), -ERANGE);
        CHECK_INT(parse_u64_range("x", 0, 2, &v), -EINVAL);
        /* a negative number is out of range, not "not a number" (policy/nr_requests "-4" was
         * EINVAL while policy/rq_affinity "-1" was ERANGE) */
        CHECK_INT(parse_u64_range("-4", 0, 2, &v), -ERANGE);
        CHECK_INT(parse_u64_range("-4\n", 4, 2048, &v), -ERANGE);
        CHECK_INT(parse_u64_range("-99999999999999999999999", 0, 2, &v), -ERANGE);
        CHECK_INT(parse_u64_range("-0", 0, 2, &v), 0);
        CHECK_U64(v, 0);
        CHECK_INT(parse_u64_range("-", 0, 2, &v), -EINVAL);
        CHECK_INT(parse_u64_range("-x", 0, 2, &v), -EINVAL);
        CHECK_INT(parse_u64_range("--4", 0, 2, &v), -EINVAL);
        CHECK_INT(parse_u64_range("+4", 0, 8, &v), -EINVAL);
}

static void test_parse_int(void) {
        int v = 4242;

        CHECK_INT(parse_int("-1\n", &v), 0);
        CHECK_INT(v, -1);
        CHECK_INT(parse_int("-0", &v), 0);
        CHECK_INT(v, 0);
        CHECK_INT(parse_int("2147483647", &v), 0);
        CHECK_INT(v, INT_MAX);
        CHECK_INT(parse_int("-2147483648", &v), 0);
        CHECK_INT(v, INT_MIN);
        CHECK_INT(parse_int("2147483648", &v), -ERANGE);
        CHECK_INT(parse_int("-2147483649", &v), -ERANGE);
        CHECK_INT(parse_int("99999999999999999999", &v), -ERANGE);
        CHECK_INT(parse_int("-", &v), -EINVAL);
        CHECK_INT(parse_int("--1", &v), -EINVAL);
        CHECK_INT(parse_int("", &v), -EINVAL);
        CHECK_INT(parse_int("0x2", &v), -EINVAL);
        CHECK_INT(parse_int("1 \n", &v), -EINVAL);
}

static void check_cpuset(const char *in, int ret, unsigned count, const char *formatted) {
        _cleanup_(cpuset_done) CpuSet s = {};
        int r = cpuset_parse(in, &s);
        if (r != ret) {
                TAP_FAIL("cpuset_parse(\"%s\") = %d, expected %d", in, r, ret);
                return;
        }
        tap_checks++;
        if (r < 0)
                return;
        CHECK_INT(cpuset_count(&s), count);
        _cleanup_free_ char *f = cpuset_format(&s);
        CHECK_STR(f, formatted);

        /* round trip: parse(format(s)) == s */
        _cleanup_(cpuset_done) CpuSet t = {};
        CHECK_INT(cpuset_parse(f, &t), 0);
        CHECK(cpuset_equal(&s, &t));
        CHECK(cpuset_is_subset(&s, &t) && cpuset_is_subset(&t, &s));
}

static void test_cpuset(void) {
        check_cpuset("0-3,8", 0, 5, "0-3,8");
        check_cpuset("0-3,8\n", 0, 5, "0-3,8");
        check_cpuset("0, 1, 2", 0, 3, "0-2");           /* mq/N/cpu_list */
        check_cpuset("0, 1, 2\n", 0, 3, "0-2");
        check_cpuset("0,2,4", 0, 3, "0,2,4");
        check_cpuset("5", 0, 1, "5");
        check_cpuset("", 0, 0, "");
        check_cpuset("\n", 0, 0, "");
        check_cpuset("3-3", 0, 1, "3");
        check_cpuset("63-64", 0, 2, "63-64");           /* crosses a 64-bit word */
        check_cpuset("0-63,64-127", 0, 128, "0-127");
        check_cpuset("8, 0, 3", 0, 3, "0,3,8");         /* unsorted input is a set */
        check_cpuset("1,1,1", 0, 1, "1");
        check_cpuset("8191", 0, 1, "8191");
        check_cpuset("0-8191", 0, 8192, "0-8191");

        check_cpuset("3-1", -EINVAL, 0, NULL);          /* descending range */
        check_cpuset("0,", -EINVAL, 0, NULL);           /* trailing comma */
        check_cpuset("0, ", -EINVAL, 0, NULL);
        check_cpuset(",0", -EINVAL, 0, NULL);
        check_cpuset("0,,1", -EINVAL, 0, NULL);
        check_cpuset("1-", -EINVAL, 0, NULL);
        check_cpuset("-1", -EINVAL, 0, NULL);
        check_cpuset(" 0", -EINVAL, 0, NULL);
        check_cpuset("0 1", -EINVAL, 0, NULL);
        check_cpuset("0,  1", -EINVAL, 0, NULL);
        check_cpuset("a", -EINVAL, 0, NULL);
        check_cpuset("0-3\n\n", -EINVAL, 0, NULL);
        check_cpuset("8192", -ERANGE, 0, NULL);
        check_cpuset("0-8192", -ERANGE, 0, NULL);
        check_cpuset("99999999999999999999999", -ERANGE, 0, NULL);

        /* membership, equality across different allocation sizes, subset */
        _cleanup_(cpuset_done) CpuSet a = {}, b = {};
        CHECK_INT(cpuset_parse("0-3", &a), 0);
        CHECK_INT(cpuset_parse("0-3,200", &b), 0);
        CHECK(cpuset_isset(&a, 3));
        CHECK(!cpuset_isset(&a, 4));
        CHECK(!cpuset_isset(&a, 100000));
        CHECK(!cpuset_equal(&a, &b));
        CHECK(cpuset_is_subset(&a, &b));
        CHECK(!cpuset_is_subset(&b, &a));
        cpuset_done(&b);
        CHECK_INT(cpuset_add(&b, 199), 0);              /* 4 words allocated, then emptied bits */
        cpuset_done(&b);
        CHECK_INT(cpuset_parse("0-3", &b), 0);
        CHECK_INT(cpuset_add(&b, 300), 0);
        b.bits[300 / 64] = 0;                           /* equal although b has more words */
        CHECK(cpuset_equal(&a, &b));
        CHECK_INT(cpuset_add(&b, 8192), -ERANGE);

        /* a copy is equal and independent; the empty set copies to an empty set */
        _cleanup_(cpuset_done) CpuSet c = {}, e = {}, ec = {};
        CHECK_INT(cpuset_copy(&b, &c), 0);
        CHECK(cpuset_equal(&b, &c));
        CHECK(c.bits != b.bits);
        CHECK_INT(cpuset_add(&c, 5), 0);
        CHECK(!cpuset_isset(&b, 5));
        CHECK_INT(cpuset_copy(&e, &ec), 0);
        CHECK_INT(cpuset_count(&ec), 0);
}

static void check_scheduler(const char *in, int ret, const char *available, const char *current, bool configurable) {
        _cleanup_strv_free_ char **avail = NULL;
        _cleanup_free_ char *cur = NULL;
        bool conf = !configurable;

        int r = parse_scheduler(in, &avail, &cur, &conf);
        if (r != ret) {
                TAP_FAIL("parse_scheduler(\"%s\") = %d, expected %d", in, r, ret);
                return;
        }
        tap_checks++;
        if (r < 0)
                return;
        _cleanup_free_ char *j = strv_join(avail, ",");
        CHECK_STR(j, available);
        if (current)
                CHECK_STR(cur, current);
        else
                CHECK_NULL(cur);
        CHECK_INT(conf, configurable);
}

static void test_parse_scheduler(void) {
        check_scheduler("[none] mq-deadline kyber bfq\n", 0, "none,mq-deadline,kyber,bfq", "none", true);
        /* what 6.18 really prints: a blank before the newline */
        check_scheduler("none [mq-deadline] kyber bfq \n", 0, "none,mq-deadline,kyber,bfq", "mq-deadline", true);
        check_scheduler("[mq-deadline] kyber bfq none\n", 0, "mq-deadline,kyber,bfq,none", "mq-deadline", true);
        check_scheduler("[none]\n", 0, "none", "none", true);   /* NVMe without elevator modules */
        check_scheduler("none\n", 0, "none", NULL, false);      /* cannot take an elevator */
        check_scheduler("none", 0, "none", NULL, false);

        check_scheduler("[a] [b]\n", -EINVAL, NULL, NULL, false);
        check_scheduler("[mq-dead", -EINVAL, NULL, NULL, false);
        check_scheduler("none [mq-dead", -EINVAL, NULL, NULL, false);
        check_scheduler("mq-deadline]", -EINVAL, NULL, NULL, false);
        check_scheduler("[]", -EINVAL, NULL, NULL, false);
        check_scheduler("[no]ne", -EINVAL, NULL, NULL, false);
        check_scheduler("[a]b]", -EINVAL, NULL, NULL, false);
        check_scheduler("", -EINVAL, NULL, NULL, false);
        check_scheduler("\n", -EINVAL, NULL, NULL, false);
        check_scheduler("   \n", -EINVAL, NULL, NULL, false);

        /* every output argument may be NULL */
        CHECK_INT(parse_scheduler("[none] bfq", NULL, NULL, NULL), 0);
        CHECK_INT(parse_scheduler("[a] [b]", NULL, NULL, NULL), -EINVAL);
}

static void on_alarm(int sig) {
        static const char m[] = "FAIL: flags_has_token() did not return within 5 s\n";
        (void) !write(STDERR_FILENO, m, sizeof(m) - 1);
        _exit(1);
}

static void test_flags_has_token(void) {
        /* 6.1 (Debian 12) hctx flags: alloc_policy first, SHOULD_MERGE (6.1's block/blk-mq-debugfs.c hctx_flags_show()) */
        const char *f61_shared = "alloc_policy=FIFO SHOULD_MERGE|TAG_HCTX_SHARED\n";
        const char *f61_plain = "alloc_policy=FIFO SHOULD_MERGE\n";
        const char *f61_rr = "alloc_policy=RR SHOULD_MERGE|TAG_QUEUE_SHARED|TAG_HCTX_SHARED\n";
        /* 6.18 hctx flags: no alloc_policy; virtio-blk prints an empty line, loop STACKING|... */
        const char *f618_shared = "TAG_HCTX_SHARED\n";
        const char *f618_loop = "STACKING|NO_SCHED_BY_DEFAULT\n";
        const char *f618_empty = "\n";
        const char *f618_qshared = "TAG_QUEUE_SHARED|TAG_RR\n";
        /* queue state */
        const char *state61 = "SAME_COMP|IO_STAT|INIT_DONE|STATS|REGISTERED|NOWAIT|SQ_SCHED\n";
        const char *state618 = "SAME_COMP|SAME_FORCE|IO_STAT|INIT_DONE|REGISTERED\n";

        CHECK(flags_has_token(f61_shared, "TAG_HCTX_SHARED"));
        CHECK(flags_has_token(f61_shared, "SHOULD_MERGE"));
        CHECK(!flags_has_token(f61_shared, "FIFO"));            /* "=FIFO" is not a token */
        CHECK(!flags_has_token(f61_shared, "TAG_HCTX"));
        CHECK(!flags_has_token(f61_shared, "SHARED"));
        CHECK(!flags_has_token(f61_plain, "TAG_HCTX_SHARED"));
        CHECK(flags_has_token(f61_rr, "TAG_HCTX_SHARED"));
        CHECK(flags_has_token(f61_rr, "TAG_QUEUE_SHARED"));
        CHECK(flags_has_token(f618_shared, "TAG_HCTX_SHARED"));
        CHECK(!flags_has_token(f618_loop, "TAG_HCTX_SHARED"));
        CHECK(flags_has_token(f618_loop, "STACKING"));
        CHECK(flags_has_token(f618_loop, "NO_SCHED_BY_DEFAULT"));
        CHECK(!flags_has_token(f618_empty, "TAG_HCTX_SHARED"));
        CHECK(!flags_has_token("", "TAG_HCTX_SHARED"));
        CHECK(!flags_has_token(f618_qshared, "TAG_HCTX_SHARED"));      /* QUEUE_SHARED is not HCTX_SHARED */
        CHECK(flags_has_token(state61, "SQ_SCHED"));
        CHECK(flags_has_token(state61, "SAME_COMP"));
        CHECK(!flags_has_token(state618, "SQ_SCHED"));
        CHECK(!flags_has_token(state618, "SAME"));
        CHECK(flags_has_token("SQ_SCHED", "SQ_SCHED"));                /* no newline */
        CHECK(flags_has_token("SQ_SCHED\tX", "SQ_SCHED"));
        CHECK(!flags_has_token("XSQ_SCHED", "SQ_SCHED"));
        CHECK(!flags_has_token("SQ_SCHED_X", "SQ_SCHED"));
        /* a partial match first must not hide a full one later */
        CHECK(flags_has_token("TAG_HCTX_SHARED_X|TAG_HCTX_SHARED", "TAG_HCTX_SHARED"));
        CHECK(flags_has_token("XTAG_HCTX_SHARED TAG_HCTX_SHARED\n", "TAG_HCTX_SHARED"));

        /* an empty token is in nothing, and must not loop forever */
        signal(SIGALRM, on_alarm);
        alarm(5);
        CHECK(!flags_has_token("abc", ""));
        CHECK(!flags_has_token("", ""));
        alarm(0);
}

static void test_misc(void) {
        char a[] = "x\n", b[] = "x\n\n", c[] = "";
        CHECK_STR(strip_newline(a), "x");
        CHECK_STR(strip_newline(b), "x\n");
        CHECK_STR(strip_newline(c), "");

        CHECK(disk_name_is_valid("sda"));
        CHECK(disk_name_is_valid("nvme0n1"));
        CHECK(disk_name_is_valid("0123456789012345678901234567890"));    /* 31 */
        CHECK(!disk_name_is_valid("01234567890123456789012345678901"));  /* 32 */
        CHECK(!disk_name_is_valid(""));
        CHECK(!disk_name_is_valid("."));
        CHECK(!disk_name_is_valid(".."));
        CHECK(!disk_name_is_valid("../sda"));
        CHECK(!disk_name_is_valid("a/b"));

        /* issue 13 item 11: libudev's sysname "cciss/c0d0" is sysfs's block/cciss!c0d0 */
        char buf[32];
        CHECK_STR(disk_name_from_kernel("cciss/c0d0", buf, sizeof(buf)), "cciss!c0d0");
        CHECK(disk_name_is_valid(buf));
        CHECK_STR(disk_name_to_kernel(buf, buf, sizeof(buf)), "cciss/c0d0");
        CHECK_STR(disk_name_from_kernel("rd/c0d0p1", buf, sizeof(buf)), "rd!c0d0p1");   /* DAC960 */
        CHECK_STR(disk_name_from_kernel("ida/c1d15", buf, sizeof(buf)), "ida!c1d15");  /* cpqarray */
        CHECK_STR(disk_name_from_kernel("sda", buf, sizeof(buf)), "sda");
        CHECK_STR(disk_name_to_kernel("nvme0n1", buf, sizeof(buf)), "nvme0n1");
        CHECK_STR(disk_name_from_kernel("a/b/c", buf, sizeof(buf)), "a!b!c");
        CHECK_NULL(disk_name_from_kernel("cciss/c0d0", buf, 10));                        /* 10 bytes + NUL */
        CHECK_STR(disk_name_from_kernel("cciss/c0d", buf, 10), "cciss!c0d");
}

/* DEFINE_STRING_TABLE_LOOKUP (lib/macro.h): range, holes, NULL, exact match */
typedef enum Colour { COLOUR_RED, COLOUR_HOLE, COLOUR_BLUE, _COLOUR_MAX, _COLOUR_INVALID = -22 } Colour;
static const char * const colour_table[_COLOUR_MAX] = { [COLOUR_RED] = "red", [COLOUR_BLUE] = "blue" };
static const char *colour_to_string(Colour c);
static Colour colour_from_string(const char *s);
DEFINE_STRING_TABLE_LOOKUP(colour, Colour, colour_table, _COLOUR_MAX, _COLOUR_INVALID)

static void test_string_table(void) {
        CHECK(streq_ptr(colour_to_string(COLOUR_RED), "red"));
        CHECK(streq_ptr(colour_to_string(COLOUR_BLUE), "blue"));
        CHECK(colour_to_string(COLOUR_HOLE) == NULL);
        CHECK(colour_to_string(_COLOUR_MAX) == NULL);
        CHECK(colour_to_string((Colour) -1) == NULL);
        CHECK(colour_from_string("blue") == COLOUR_BLUE);
        CHECK(colour_from_string("red") == COLOUR_RED);
        CHECK(colour_from_string("Blue") == _COLOUR_INVALID);
        CHECK(colour_from_string("blue ") == _COLOUR_INVALID);
        CHECK(colour_from_string("") == _COLOUR_INVALID);
        CHECK(colour_from_string(NULL) == _COLOUR_INVALID);
}

/* IN_SET() (lib/macro.h): one value among several, x evaluated once. */
static void test_in_set(void) {
        int calls = 0;
        CHECK(IN_SET(COLOUR_BLUE, COLOUR_RED, COLOUR_BLUE));
        CHECK(!IN_SET(COLOUR_HOLE, COLOUR_RED, COLOUR_BLUE));
        CHECK(IN_SET(3, 3));
        CHECK(!IN_SET(4, 1, 2, 3));
        CHECK(IN_SET((calls++, 2), 1, 2, 3));
        CHECK_INT(calls, 1);
}

/* keyval_list_get() on nvme controller "address" strings (6.1 nvme-tcp, with a newline). */
static void test_keyval_list(void) {
        static const char *addr = "traddr=10.77.0.2,trsvcid=4420,src_addr=10.77.0.1\n";
        _cleanup_free_ char *a = keyval_list_get(addr, "traddr"), *b = keyval_list_get(addr, "trsvcid"),
                            *c = keyval_list_get(addr, "src_addr"), *d = keyval_list_get(addr, "host_iface"),
                            *e = keyval_list_get("host_traddr=10.0.0.1,traddr=10.0.0.2", "traddr"),
                            *g = keyval_list_get("traddr=1\ntrsvcid=2", "trsvcid"),
                            *h = keyval_list_get("traddr=,trsvcid=2", "traddr"), *i = keyval_list_get("", "traddr");
        CHECK_STR(a, "10.77.0.2");
        CHECK_STR(b, "4420");
        CHECK_STR(c, "10.77.0.1");      /* the newline is not part of the value */
        CHECK_NULL(d);
        CHECK_STR(e, "10.0.0.2");       /* host_traddr= is not traddr= */
        CHECK_NULL(g);                  /* the list ends at the first newline */
        CHECK_STR(h, "");
        CHECK_NULL(i);
        CHECK_NULL(keyval_list_get(NULL, "traddr"));
}

/* /proc/devices as this machine (6.18) has it: block majors after the character ones. */
static void test_proc_devices(void) {
        static const char text[] =
                "Character devices:\n  1 mem\n  4 /dev/vc/0\n  7 vcs\n254 gpiochip\n\n"
                "Block devices:\n  7 loop\n  8 sd\n  9 md\n 11 sr\n 65 sd\n253 device-mapper\n254 virtblk\n259 blkext\n";
        char buf[64];
        CHECK_INT(proc_devices_block_name(text, 7, buf, sizeof(buf)), 0);
        CHECK_STR(buf, "loop");                 /* not char major 7 "vcs" */
        CHECK_INT(proc_devices_block_name(text, 253, buf, sizeof(buf)), 0);
        CHECK_STR(buf, "device-mapper");
        CHECK_INT(proc_devices_block_name(text, 259, buf, sizeof(buf)), 0);
        CHECK_STR(buf, "blkext");
        CHECK_INT(proc_devices_block_name(text, 1, buf, sizeof(buf)), -ENOENT);    /* char major only */
        CHECK_INT(proc_devices_block_name(text, 252, buf, sizeof(buf)), -ENOENT);
        CHECK_INT(proc_devices_block_name(text, 253, buf, 4), -EINVAL);             /* does not fit */
        CHECK_INT(proc_devices_block_name("Character devices:\n  1 mem\n", 1, buf, sizeof(buf)), -EINVAL);
        CHECK_INT(proc_devices_block_name(NULL, 7, buf, sizeof(buf)), -EINVAL);
        CHECK_INT(proc_devices_block_name("Block devices:\n  7\n  8 sd\n", 7, buf, sizeof(buf)), -ENOENT);
        CHECK_INT(proc_devices_block_name("Block devices:\n  7 loop", 7, buf, sizeof(buf)), 0);   /* no last newline */
        CHECK_STR(buf, "loop");
}

/* isolcpus= as kernel/sched/isolation.c housekeeping_isolcpus_setup() reads it. */
static void test_isolcpus(void) {
        static const struct {
                const char *value;
                int r;
                const char *cpus;
                bool managed;
        } cases[] = {
                { "1-3", 0, "1-3", false },
                { "domain,2,3", 0, "2-3", false },
                { "managed_irq,domain,1", 0, "1", true },
                { "nohz,managed_irq,0-1,5", 0, "0-1,5", true },
                { "future_flag,4", 0, "4", false },     /* unknown flags are skipped (3662daf02350) */
                { "bad!,1", -EINVAL, NULL, false },     /* another character: the kernel drops it */
                { "managed_irq,", -EINVAL, NULL, false },
                { "domain", -EINVAL, NULL, false },
                { "", -EINVAL, NULL, false },
                { "1-x", -EINVAL, NULL, false },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                CpuSet s = {};
                bool managed = !cases[i].managed;
                int r = kernel_isolcpus_parse(cases[i].value, &s, &managed);
                CHECK_INT_CASE(r, cases[i].r, "isolcpus=%s", cases[i].value);
                if (r == 0) {
                        _cleanup_free_ char *l = cpuset_format(&s);
                        CHECK_STR(l, cases[i].cpus);
                        CHECK_INT_CASE(managed, cases[i].managed, "isolcpus=%s", cases[i].value);
                }
                cpuset_done(&s);
        }
}

int main(void) {
        test_parse_u64();
        test_parse_int();
        test_cpuset();
        test_parse_scheduler();
        test_flags_has_token();
        test_misc();
        test_string_table();
        test_in_set();
        test_keyval_list();
        test_isolcpus();
        test_proc_devices();
        return tap_finish("test-parse");
}
