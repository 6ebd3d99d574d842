/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * facts/agents.c parsers: which udev rules, tuned profile lines, .link files, kernel command
 * line words and irqbalance arguments set what blkmqd manages (queue knobs, elevator
 * tunables, IRQ affinity, XPS, a NIC's channels, module parameters), with their lines and the
 * devices they are for; matches, comments, other attributes and other plugins are not
 * reported.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents.h"
#include "log.h"
#include "macro.h"
#include "strv.h"
#include "tap.h"

/* "LINE WHAT-IT-SETS WHAT [value=V] [match=a,b] [nomatch=c] [rot=R] [unevaluated=U]" */
static char *describe(const Source *s) {
        char sets[96];
        switch (s->sets) {
        case SOURCE_SETS_KNOB:
                snprintf(sets, sizeof(sets), "%s", knob_to_string(s->knob));
                break;
        case SOURCE_SETS_TUNABLE:
                snprintf(sets, sizeof(sets), "iosched/%s", s->name);
                break;
        case SOURCE_SETS_MODULE_PARAM:
                snprintf(sets, sizeof(sets), "module %s.%s", s->module, s->name);
                break;
        case SOURCE_SETS_CHANNELS:
                snprintf(sets, sizeof(sets), "channels");
                break;
        default:
                snprintf(sets, sizeof(sets), "nothing");
        }
        _cleanup_free_ char *m = s->match ? strv_join(s->match, ",") : NULL, *nm = s->nomatch ? strv_join(s->nomatch, ",") : NULL,
                            *drv = s->match_driver ? strv_join(s->match_driver, ",") : NULL;
        char rot[16] = "";
        if (s->match_rotational >= 0)
                snprintf(rot, sizeof(rot), " rot=%d", s->match_rotational);
        char *out = NULL;
        if (asprintf(&out, "%u %s %s%s%s%s%s%s%s%s%s%s%s%s", s->line, sets, s->what, s->value ? " value=" : "", strempty(s->value),
                     m ? " match=" : "", strempty(m), nm ? " nomatch=" : "", strempty(nm), drv ? " driver=" : "", strempty(drv), rot,
                     s->match_unevaluated ? " unevaluated=" : "", strempty(s->match_unevaluated)) < 0)
                return NULL;
        return out;
}

static void expect(const char *what, const Sources *s, int n, const char * const *want) {
        _cleanup_strv_free_ char **got = NULL;
        for (size_t i = 0; i < s->n; i++) {
                _cleanup_free_ char *d = describe(&s->v[i]);
                if (d)
                        (void) strv_extend(&got, d);
        }
        CHECK_INT(n, (int) strv_length((char **) want));
        for (size_t i = 0; want[i]; i++)
                if (!strv_contains(got, want[i])) {
                        TAP_FAIL("%s: expected \"%s\"", what, want[i]);
                        STRV_FOREACH(l, got)
                                fprintf(stderr, "     got: %s\n", *l);
                }
}

static const AgentFile etc_rule = { .file = "/etc/udev/rules.d/60-x.rules", .label = "udev rule", .admin = true };

static void udev(const char *text, const char * const *want) {
        _cleanup_(sources_done) Sources s = {};
        int n = agents_scan_udev_rules(text, &etc_rule, &s);
        expect(text, &s, n, want);
        for (size_t i = 0; i < s.n; i++) {
                CHECK(s.v[i].admin);
                CHECK_STR(s.v[i].file, "/etc/udev/rules.d/60-x.rules");
        }
}

#define NONE ((const char * const[]) { NULL })
#define HITS(...) ((const char * const[]) { __VA_ARGS__, NULL })

static void test_udev(void) {
        /* Fedora's 60-block-scheduler.rules: the KERNEL== alternatives are the disks it is for */
        udev("ACTION==\"add\", SUBSYSTEM==\"block\", KERNEL==\"mmcblk*[0-9]|msblk*[0-9]|mspblk*[0-9]|sd*[!0-9]\", ATTR{queue/scheduler}=\"bfq\"\n",
             HITS("1 elevator ATTR{queue/scheduler}=\"bfq\" value=bfq match=mmcblk*[0-9],msblk*[0-9],mspblk*[0-9],sd*[!0-9]"));
        udev("# comment\n\nACTION!=\"add|change\", GOTO=\"end\"\n"
             "KERNEL==\"nvme*\", \\\n   ATTR{queue/nr_requests}:=\"64\"\n"
             "KERNEL!=\"sda\", ATTR{queue/rotational}==\"0\", ATTR{queue/rq_affinity}=\"2\", ATTR{queue/read_ahead_kb}=\"4096\"\n",
             HITS("4 nr_requests ATTR{queue/nr_requests}=\"64\" value=64 match=nvme*",
                  "6 rq_affinity ATTR{queue/rq_affinity}=\"2\" value=2 nomatch=sda rot=0"));
        udev("SUBSYSTEM==\"block\", RUN+=\"/bin/sh -c 'echo 2 > /proc/irq/%n/smp_affinity_list'\"\n",
             HITS("1 irq_affinity RUN=\"/bin/sh -c 'echo 2 > /proc/irq/%n/smp_affinity_list'\" value=2"));
        /* a RUN program: its echoed value; a legacy name as the blk-mq one */
        udev("KERNEL==\"sd*\", RUN+=\"/usr/bin/sh -c 'echo kyber > /sys$devpath/queue/scheduler'\"\n",
             HITS("1 elevator RUN=\"/usr/bin/sh -c 'echo kyber > /sys$devpath/queue/scheduler'\" value=kyber match=sd*"));
        udev("KERNEL==\"sd[a-z]\", ATTR{queue/scheduler}=\"deadline\"\n",
             HITS("1 elevator ATTR{queue/scheduler}=\"deadline\" value=mq-deadline match=sd[a-z]"));
        /* a match blkmqd does not evaluate is recorded */
        udev("KERNEL==\"sd*\", ATTRS{model}==\"ST4000*\", ATTR{queue/scheduler}=\"bfq\"\n",
             HITS("1 elevator ATTR{queue/scheduler}=\"bfq\" value=bfq match=sd* unevaluated=ATTRS{model}==\"ST4000*\""));
        /* elevator tunables, XPS of a NIC, ethtool -L */
        udev("KERNEL==\"sd*\", ATTR{queue/iosched/slice_idle}=\"0\", ATTR{queue/max_sectors_kb}=\"512\"\n",
             HITS("1 iosched/slice_idle ATTR{queue/iosched/slice_idle}=\"0\" value=0 match=sd*"));
        udev("SUBSYSTEM==\"net\", KERNEL==\"eth1\", ATTR{queues/tx-0/xps_cpus}=\"1\"\n"
             "SUBSYSTEM==\"net\", ACTION==\"add\", KERNEL==\"eth*\", RUN+=\"/usr/sbin/ethtool -L $name combined 2\"\n",
             HITS("1 xps ATTR{queues/tx-0/xps_cpus}=\"1\" value=1 match=eth1",
                  "2 channels RUN=\"/usr/sbin/ethtool -L $name combined 2\" match=eth*"));
        /* matches, comments, other attributes: nothing */
        udev("KERNEL==\"sd*\", ATTR{queue/scheduler}==\"none\", ATTR{queue/scheduler}!=\"bfq\"\n", NONE);
        udev("#KERNEL==\"sd*\", ATTR{queue/scheduler}=\"bfq\"\n   # ATTR{queue/nr_requests}=\"4\"\n", NONE);
        udev("KERNEL==\"sd*\", ATTR{queue/max_sectors_kb}=\"512\"\n", NONE);
        udev("KERNEL==\"sd*\", ATTRS{queue/scheduler}==\"bfq\", ENV{ID_SCHED}=\"queue/scheduler\"\n", NONE);
        udev("", NONE);
        udev("garbage without operators\nKERNEL==\"sd*\" ATTR{queue/scheduler}=\"bfq\"\n",
             HITS("2 elevator ATTR{queue/scheduler}=\"bfq\" value=bfq match=sd*"));
        /* a continued comment-free rule keeps its first line; a trailing backslash at EOF */
        udev("\n\nKERNEL==\"sd*\", \\\n\\\nATTR{queue/scheduler}=\"mq-deadline\"\\",
             HITS("3 elevator ATTR{queue/scheduler}=\"mq-deadline\" value=mq-deadline match=sd*"));
}

static void tuned(const char *text, const char *include, const char * const *want) {
        _cleanup_(sources_done) Sources s = {};
        _cleanup_free_ char *inc = NULL;
        int n = agents_scan_tuned(text, &(AgentFile) { .file = "/etc/tuned/x/tuned.conf", .label = "tuned profile \"x\"", .admin = true },
                                  &s, &inc);
        if (include)
                CHECK_STR(inc, include);
        else
                CHECK_NULL(inc);
        expect(text, &s, n, want);
}

static void test_tuned(void) {
        tuned("[main]\nsummary=test\ninclude=throughput-performance\n\n[disk]\nelevator=mq-deadline\nreadahead=>4096\n\n"
              "[my_sysfs]\ntype=sysfs\n/sys/block/sda/queue/nr_requests=256\n/sys/kernel/mm/ksm/run=0\n\n"
              "[scheduler]\nisolated_cores=2-3\n",
              "throughput-performance",
              HITS("6 elevator [disk] elevator=mq-deadline value=mq-deadline",
                   "11 nr_requests [my_sysfs] /sys/block/sda/queue/nr_requests=256 value=256 match=sda",
                   "15 irq_affinity [scheduler] isolated_cores=2-3"));
        /* type= names the plugin, devices= the disks (also after the option, "!" excludes) */
        tuned("[sda_disk]\nelevator = bfq\ntype = disk\ndevices=sd*, !sdb\n[disk]\nreadahead=4096\n", NULL,
              HITS("2 elevator [sda_disk] elevator=bfq value=bfq match=sd* nomatch=sdb"));
        /* [net] channels, XPS and tunables through [sysfs] */
        tuned("[net]\ndevices=eth1\nchannels=combined 2\n[sysfs]\n/sys/class/net/eth*/queues/tx-0/xps_cpus=3\n"
              "/sys/block/sd*/queue/iosched/fifo_batch=32\n", NULL,
              HITS("3 channels [net] channels=combined 2 value=combined 2 match=eth1",
                   "5 xps [sysfs] /sys/class/net/eth*/queues/tx-0/xps_cpus=3 value=3 match=eth*",
                   "6 iosched/fifo_batch [sysfs] /sys/block/sd*/queue/iosched/fifo_batch=32 value=32 match=sd*"));
        /* other plugins, comments, an empty value, keys before any section */
        tuned("elevator=bfq\n[cpu]\ngovernor=performance\n# [disk]\n#elevator=none\n[vm]\ntransparent_hugepages=never\n"
              "[disk]\nelevator=\n[scheduler]\nsched_min_granularity_ns=10000000\n", NULL, NONE);
        tuned("[sysfs]\n/sys/bus/workqueue/devices/writeback/cpumask=1\n/proc/irq/default_smp_affinity=1\n", NULL,
              HITS("3 irq_affinity [sysfs] /proc/irq/default_smp_affinity=1"));
        tuned("", NULL, NONE);
}

static void test_link(void) {
        _cleanup_(sources_done) Sources s = {};
        AgentFile af = { .file = "/etc/systemd/network/10-eth1.link", .label = ".link file", .admin = true, .group = 3 };
        int n = agents_scan_link("[Match]\nOriginalName=eth1 eth2\nDriver=virtio_net\n\n[Link]\nNamePolicy=kernel\n"
                                 "IRQAffinityPolicy=spread\nCombinedChannels=2\n", &af, &s);
        expect("link", &s, n, HITS("7 nic_irq_affinity [Link] IRQAffinityPolicy=spread value=spread match=eth1,eth2 driver=virtio_net",
                                   "8 channels [Link] CombinedChannels=2 value=2 match=eth1,eth2 driver=virtio_net"));
        CHECK_INT(s.v[0].group, 3);
        CHECK_INT(s.v[0].target, SOURCE_TARGET_NIC);
        sources_done(&s);
        /* Debian's 99-default.link: no setting, still a match (it hides later files) */
        n = agents_scan_link("[Match]\nOriginalName=*\n\n[Link]\nNamePolicy=keep kernel database onboard slot path\n"
                             "MACAddressPolicy=persistent\n", &af, &s);
        expect("99-default.link", &s, n, HITS("0 nothing (no setting blkmqd knows; it still hides later .link files) match=*"));
        sources_done(&s);
        n = agents_scan_link("[Match]\nMACAddress=52:54:00:12:34:56\n[Link]\nRxChannels=4\n", &af, &s);
        expect("MACAddress match", &s, n, HITS("4 channels [Link] RxChannels=4 value=4 unevaluated=MACAddress=52:54:00:12:34:56"));
}

static void test_cmdline(void) {
        _cleanup_(sources_done) Sources s = {};
        int n = agents_scan_cmdline("BOOT_IMAGE=/vmlinuz root=UUID=x ro elevator=noop megaraid_sas.host_tagset_enable=0 "
                                    "nvme-core.multipath=N \"dyndbg=file x +p\" quiet -- single\n", &s);
        expect("cmdline", &s, n, HITS("0 elevator elevator=noop value=none",
                                      "0 module megaraid_sas.host_tagset_enable megaraid_sas.host_tagset_enable=0 value=0",
                                      "0 module nvme_core.multipath nvme_core.multipath=N value=N"));
        CHECK(s.n > 0 && s.v[0].admin);
        CHECK_NULL(sources_find_module_param(&s, "megaraid_sas", "host_tagset"));
        CHECK(sources_find_module_param(&s, "megaraid_sas", "host_tagset_enable") != NULL);
}

/* modprobe.d: every "options" line's parameters (continued lines joined, quotes, dashes in the
 * module name as underscores), nothing else; whose choice and which one wins: the admin's
 * (/etc) over a distribution's (/usr/lib), the command line over both (modprobe passes it last) */
static void test_modprobe(void) {
        static const AgentFile etc = { .file = "/etc/modprobe.d/nvme.conf", .label = "modprobe.d file", .admin = true };
        static const AgentFile dist = { .file = "/usr/lib/modprobe.d/50-nvme.conf", .label = "modprobe.d file", .admin = false };
        _cleanup_(sources_done) Sources s = {};
        int n = agents_scan_modprobe("# options nvme poll_queues=9\n"
                                     "blacklist nvme\n"
                                     "  options nvme-core multipath=N\n"
                                     "options nvme poll_queues=2 \\\n  write_queues=1 io_queue_depth\n"
                                     "options dummy x=\"a b\"\n"
                                     "optionsfoo nvme poll_queues=7\n"
                                     "install nvme /bin/true\n", &dist, &s);
        expect("modprobe", &s, n, HITS("3 module nvme_core.multipath options nvme_core multipath=N value=N",
                                       "4 module nvme.poll_queues options nvme poll_queues=2 value=2",
                                       "4 module nvme.write_queues options nvme write_queues=1 value=1",
                                       "6 module dummy.x options dummy x=\"a b\" value=a b"));
        const Source *src = sources_find_module_param(&s, "nvme", "poll_queues");
        CHECK(src && !src->admin && streq_ptr(src->value, "2"));
        CHECK_INT(agents_scan_modprobe("options nvme poll_queues=3\n", &etc, &s), 1);
        CHECK_INT(agents_scan_modprobe("options nvme poll_queues=4\n", &dist, &s), 1);
        src = sources_find_module_param(&s, "nvme", "poll_queues");
        CHECK(src && src->admin && streq_ptr(src->value, "3"));         /* the admin's, though a distribution's comes later */
        CHECK_INT(agents_scan_cmdline("quiet nvme.poll_queues=5\n", &s), 1);
        src = sources_find_module_param(&s, "nvme", "poll_queues");
        CHECK(src && src->tool == SOURCE_CMDLINE && streq_ptr(src->value, "5"));
}

static void test_irqbalance(void) {
        IrqbalanceFacts ib = {};
        CHECK_INT(agents_scan_irqbalance("# comment\n#IRQBALANCE_ARGS=--banirq=1\nIRQBALANCE_ARGS=\"--banirq=45 -i 46 -i47 "
                                         "--policyscript=/etc/irqbalance.d/policy.sh\"\n", "/etc/default/irqbalance", &ib), 0);
        CHECK_INT(ib.n_banned_irqs, 3);
        if (ib.n_banned_irqs == 3) {
                CHECK_INT(ib.banned_irqs[0], 45);
                CHECK_INT(ib.banned_irqs[1], 46);
                CHECK_INT(ib.banned_irqs[2], 47);
        }
        CHECK_STR(ib.policy_script, "/etc/irqbalance.d/policy.sh");
        CHECK_INT(ib.args_line, 3);
        CHECK(!ib.oneshot);
        Sources s = { .irqbalance = ib };
        sources_done(&s);
        ib = (IrqbalanceFacts) {};
        CHECK_INT(agents_scan_irqbalance("IRQBALANCE_ONESHOT=yes\n", "/etc/sysconfig/irqbalance", &ib), 0);
        CHECK(ib.oneshot);
        CHECK_INT(ib.n_banned_irqs, 0);
        s = (Sources) { .irqbalance = ib };
        sources_done(&s);
}

/* agents_warn() at a reload: only places new or changed since the last warnings, all of them
 * again when DeferTo= changed; the line count is what it logs. */
static unsigned n_warned;
static void count_warning(void *userdata, int level, const char *device, const char *message) {
        (void) userdata, (void) device, (void) message;
        n_warned += level == LOG_WARNING;
}

static void scan(Sources *s, const char *rules) {
        static const AgentFile dist = { .file = "/usr/lib/udev/rules.d/60-block-scheduler.rules", .label = "udev rule" };
        static const AgentFile etc = { .file = "/etc/modprobe.d/nvme.conf", .label = "modprobe.d file", .admin = true };
        CHECK_INT(agents_scan_udev_rules(rules, &dist, s), 1);
        CHECK_INT(agents_scan_modprobe("options nvme poll_queues=2\n", &etc, s), 1);
        s->irqbalance.running = true;
        s->irqbalance.pid = 77;
}

static void test_warn(void) {
        static const char rule[] = "KERNEL==\"sd*\", ATTR{queue/scheduler}=\"bfq\"\n";
        _cleanup_(sources_done) Sources start = {}, same = {}, moved = {};
        log_set_capture(count_warning, NULL);
        scan(&start, rule);
        n_warned = 0;
        CHECK_INT(agents_warn(&start, DEFER_TO_ADMIN, NULL, DEFER_TO_ADMIN), 3);
        CHECK_INT(n_warned, 3);                         /* the rule, the options line, irqbalance */
        scan(&same, rule);
        n_warned = 0;
        CHECK_INT(agents_warn(&same, DEFER_TO_ADMIN, &start, DEFER_TO_ADMIN), 0);
        CHECK_INT(n_warned, 0);                         /* a reload with nothing changed: no line */
        scan(&moved, "# a comment line first\n" "KERNEL==\"sd*\", ATTR{queue/scheduler}=\"bfq\"\n");
        moved.irqbalance.pid = 78;                      /* irqbalance restarted */
        n_warned = 0;
        CHECK_INT(agents_warn(&moved, DEFER_TO_ADMIN, &same, DEFER_TO_ADMIN), 2);
        CHECK_INT(n_warned, 2);                         /* the rule at its new line, the new irqbalance */
        n_warned = 0;
        CHECK_INT(agents_warn(&moved, DEFER_TO_NONE, &moved, DEFER_TO_ADMIN), 3);
        CHECK_INT(n_warned, 3);                         /* DeferTo= changed what blkmqd does: all again */
        log_set_capture(NULL, NULL);
}

int main(void) {
        test_udev();
        test_tuned();
        test_link();
        test_cmdline();
        test_modprobe();
        test_irqbalance();
        test_warn();
        return tap_finish("test-agents");
}
