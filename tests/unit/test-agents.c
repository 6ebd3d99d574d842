/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * facts/agents.c parsers (issue 13 item 13): which udev rules and tuned profile lines set what
 * blkmqd manages (queue/scheduler, nr_requests, rq_affinity, IRQ affinity), with their lines;
 * matches, comments, other attributes and other plugins are not reported.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents.h"
#include "macro.h"
#include "strv.h"
#include "tap.h"

typedef struct Hits {
        char **lines;           /* "LINE KNOB WHAT" */
} Hits;

static void on_hit(void *userdata, unsigned line, Knob knob, const char *what) {
        Hits *h = userdata;
        char *s = NULL;
        if (asprintf(&s, "%u %s %s", line, knob_to_string(knob), what) >= 0) {
                (void) strv_extend(&h->lines, s);
                free(s);
        }
}

static void udev(const char *text, const char * const *want) {
        Hits h = {};
        int n = agents_scan_udev_rules(text, on_hit, &h);
        CHECK_INT(n, (int) strv_length((char **) want));
        for (size_t i = 0; want[i]; i++)
                if (!strv_contains(h.lines, want[i])) {
                        TAP_FAIL("udev: expected hit \"%s\" in:\n%s", want[i], text);
                        STRV_FOREACH(l, h.lines)
                                fprintf(stderr, "     got: %s\n", *l);
                }
        strv_free(h.lines);
}

#define NONE ((const char * const[]) { NULL })
#define HITS(...) ((const char * const[]) { __VA_ARGS__, NULL })

static void test_udev(void) {
        /* Fedora's 60-block-scheduler.rules and openSUSE's 60-io-scheduler.rules, shape of */
        udev("ACTION==\"add\", SUBSYSTEM==\"block\", KERNEL==\"sd*[!0-9]\", ATTR{queue/scheduler}=\"bfq\"\n",
             HITS("1 elevator ATTR{queue/scheduler}=\"bfq\""));
        udev("# comment\n\nACTION!=\"add|change\", GOTO=\"end\"\n"
             "KERNEL==\"nvme*\", \\\n   ATTR{queue/nr_requests}:=\"64\"\n"
             "KERNEL==\"sd*\", ATTR{queue/rq_affinity}=\"2\", ATTR{queue/read_ahead_kb}=\"4096\"\n",
             HITS("4 nr_requests ATTR{queue/nr_requests}=\"64\"", "6 rq_affinity ATTR{queue/rq_affinity}=\"2\""));
        udev("SUBSYSTEM==\"block\", RUN+=\"/bin/sh -c 'echo 2 > /proc/irq/%n/smp_affinity_list'\"\n",
             HITS("1 irq_affinity RUN=\"/bin/sh -c 'echo 2 > /proc/irq/%n/smp_affinity_list'\""));
        udev("KERNEL==\"sd*\", RUN+=\"/usr/bin/sh -c 'echo kyber > /sys$devpath/queue/scheduler'\"\n",
             HITS("1 elevator RUN=\"/usr/bin/sh -c 'echo kyber > /sys$devpath/queue/scheduler'\""));
        /* matches, comments, other attributes: nothing */
        udev("KERNEL==\"sd*\", ATTR{queue/scheduler}==\"none\", ATTR{queue/scheduler}!=\"bfq\"\n", NONE);
        udev("#KERNEL==\"sd*\", ATTR{queue/scheduler}=\"bfq\"\n   # ATTR{queue/nr_requests}=\"4\"\n", NONE);
        udev("KERNEL==\"sd*\", ATTR{queue/iosched/slice_idle}=\"0\", ATTR{queue/max_sectors_kb}=\"512\"\n", NONE);
        udev("KERNEL==\"sd*\", ATTRS{queue/scheduler}==\"bfq\", ENV{ID_SCHED}=\"queue/scheduler\"\n", NONE);
        udev("", NONE);
        udev("garbage without operators\nKERNEL==\"sd*\" ATTR{queue/scheduler}=\"bfq\"\n",
             HITS("2 elevator ATTR{queue/scheduler}=\"bfq\""));
        /* a continued comment-free rule keeps its first line; a trailing backslash at EOF */
        udev("\n\nKERNEL==\"sd*\", \\\n\\\nATTR{queue/scheduler}=\"mq-deadline\"\\", HITS("3 elevator ATTR{queue/scheduler}=\"mq-deadline\""));
}

static void tuned(const char *text, const char *include, const char * const *want) {
        Hits h = {};
        _cleanup_free_ char *inc = NULL;
        int n = agents_scan_tuned(text, on_hit, &h, &inc);
        CHECK_INT(n, (int) strv_length((char **) want));
        if (include)
                CHECK_STR(inc, include);
        else
                CHECK_NULL(inc);
        for (size_t i = 0; want[i]; i++)
                if (!strv_contains(h.lines, want[i])) {
                        TAP_FAIL("tuned: expected hit \"%s\"", want[i]);
                        STRV_FOREACH(l, h.lines)
                                fprintf(stderr, "     got: %s\n", *l);
                }
        strv_free(h.lines);
}

static void test_tuned(void) {
        tuned("[main]\nsummary=test\ninclude=throughput-performance\n\n[disk]\nelevator=mq-deadline\nreadahead=>4096\n\n"
              "[my_sysfs]\ntype=sysfs\n/sys/block/sda/queue/nr_requests=256\n/sys/kernel/mm/ksm/run=0\n\n"
              "[scheduler]\nisolated_cores=2-3\n",
              "throughput-performance",
              HITS("6 elevator [disk] elevator=mq-deadline", "11 nr_requests [my_sysfs] /sys/block/sda/queue/nr_requests=256",
                   "15 irq_affinity [scheduler] isolated_cores=2-3"));
        /* type= names the plugin, also after the option; a disk section without elevator */
        tuned("[sda_disk]\nelevator = bfq\ntype = disk\ndevices=sda\n[disk]\nreadahead=4096\n", NULL,
              HITS("2 elevator [sda_disk] elevator=bfq"));
        /* other plugins, comments, an empty value, keys before any section */
        tuned("elevator=bfq\n[cpu]\ngovernor=performance\n# [disk]\n#elevator=none\n[vm]\ntransparent_hugepages=never\n"
              "[disk]\nelevator=\n[scheduler]\nsched_min_granularity_ns=10000000\n", NULL, NONE);
        tuned("[sysfs]\n/sys/bus/workqueue/devices/writeback/cpumask=1\n/proc/irq/default_smp_affinity=1\n", NULL,
              HITS("3 irq_affinity [sysfs] /proc/irq/default_smp_affinity=1"));
        tuned("", NULL, NONE);
}

int main(void) {
        test_udev();
        test_tuned();
        return tap_finish("test-agents");
}
