/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for manager/conf.c: every key of blkmqd.conf (conf.h), bad lines reported as
 * "file:line: what" with the right line number, drop-in precedence (config_load with a temp
 * dir: blkmqd.conf + blkmqd.conf.d/10-a.conf, 20-b.conf), a failed load leaving the previous
 * Config untouched, and [Device:] match sections (device_rule_matches, and in policy_evaluate
 * a later rule over an earlier one, admin overrides over both).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "facts.h"
#include "macro.h"
#include "parse.h"
#include "policy.h"
#include "strv.h"
#include "tap.h"

/* Parse text into fresh defaults; returns rc, *ret_error (caller frees). */
static int parse(const char *text, Config *c, char **ret_error) {
        *ret_error = NULL;
        if (config_init(c) < 0)
                abort();
        return config_parse_text(c, "test.conf", text, ret_error);
}

/* text must parse cleanly. */
#define OK(text, c) do {                                                                \
                _cleanup_free_ char *_e = NULL;                                         \
                CHECK_INT(parse(text, c, &_e), 0);                                      \
                if (_e) TAP_FAIL("unexpected error: %s", _e);                           \
        } while (0)

/* text must fail with exactly this "file:line: what" message (prefix match when it ends in '*'). */
static void bad(int line, const char *text, const char *want) {
        Config c;
        _cleanup_free_ char *e = NULL;
        int r = parse(text, &c, &e);
        tap_checks++;
        if (r != -EINVAL)
                TAP_FAIL("line %d: rc %d, expected -EINVAL for:\n%s", line, r, text);
        size_t l = strlen(want);
        bool prefix = l > 0 && want[l - 1] == '*';
        tap_checks++;
        if (!e || (prefix ? strncmp(e, want, l - 1) != 0 : strcmp(e, want) != 0))
                TAP_FAIL("line %d: error\n     got      \"%s\"\n     expected \"%s\"", line, e ?: "(null)", want);
        config_done(&c);
}
#define BAD(text, want) bad(__LINE__, text, want)

static void test_defaults(void) {
        Config c;
        CHECK_INT(config_init(&c), 0);
        CHECK_INT(c.mode, _MODE_INVALID);       /* the command line decides */
        CHECK_NULL(c.devices);
        CHECK(!c.reassert);
        CHECK(!c.module_params_write);          /* default: propose only */
        CHECK_U64(c.rate_window_usec, 1000000);
        CHECK_INT(c.policy.n_rules, 0);
        CHECK_INT(c.policy.n_module_params, 0);
        config_done(&c);

        CHECK_STR(manager_mode_to_string(MODE_AUTO), "auto");
        CHECK_STR(manager_mode_to_string(MODE_DRY_RUN), "dry-run");
        CHECK_STR(manager_mode_to_string(MODE_OFF), "off");
        CHECK_NULL(manager_mode_to_string(_MODE_MAX));
        CHECK_INT(manager_mode_from_string("dry-run"), MODE_DRY_RUN);
        CHECK_INT(manager_mode_from_string("dryrun"), _MODE_INVALID);
        CHECK_INT(manager_mode_from_string(""), _MODE_INVALID);
}

static void test_manager(void) {
        Config c;

        OK("[Manager]\nMode=dry-run\nDevices=sd* loop*\tnvme0n1\nReassert=yes\nModuleParams=write\nRateWindowSec=0.5\n", &c);
        CHECK_INT(c.mode, MODE_DRY_RUN);
        CHECK_INT(strv_length(c.devices), 3);
        CHECK(c.devices && streq(c.devices[0], "sd*") && streq(c.devices[1], "loop*") && streq(c.devices[2], "nvme0n1"));
        CHECK(c.reassert);
        CHECK(c.module_params_write);
        CHECK_U64(c.rate_window_usec, 500000);
        config_done(&c);

        /* a later key replaces an earlier one; spaces around '=' are fine; comments */
        OK("# comment\n; another\n[Manager]\nMode = off\nMode=auto\nDevices=a\nDevices=b c\nReassert=true\nReassert=no\n"
           "ModuleParams=write\nModuleParams=propose\nRateWindowSec=3600\n", &c);
        CHECK_INT(c.mode, MODE_AUTO);
        CHECK_INT(strv_length(c.devices), 2);
        CHECK(!c.reassert);
        CHECK(!c.module_params_write);
        CHECK_U64(c.rate_window_usec, 3600000000ULL);
        config_done(&c);

        OK("[Manager]\nRateWindowSec=0.2\nReassert=1\n", &c);
        CHECK_U64(c.rate_window_usec, 200000);
        CHECK(c.reassert);
        config_done(&c);
        OK("[Manager]\nReassert=on\n", &c);
        CHECK(c.reassert);
        config_done(&c);
        OK("[Manager]\nReassert=off\n", &c);
        CHECK(!c.reassert);
        config_done(&c);

        /* an empty text and only comments are fine */
        OK("", &c);
        CHECK_INT(c.mode, _MODE_INVALID);
        config_done(&c);
        OK("\n\n# nothing\n", &c);
        config_done(&c);

        BAD("[Manager]\nMode=fast\n", "test.conf:2: Mode=fast: expected auto, dry-run or off");
        BAD("[Manager]\nMode=\n", "test.conf:2: Mode=: expected auto, dry-run or off");
        BAD("[Manager]\nMode=Auto\n", "test.conf:2: Mode=Auto: expected auto, dry-run or off");
        BAD("[Manager]\nReassert=maybe\n", "test.conf:2: Reassert=maybe: expected yes or no");
        BAD("[Manager]\nModuleParams=yes\n", "test.conf:2: ModuleParams=yes: expected propose or write");
        /* virtual devices: listed only by default, VirtualDevices=manage opts them in */
        OK("", &c);
        CHECK(!c.policy.manage_virtual);
        config_done(&c);
        OK("[Manager]\nVirtualDevices=manage\n", &c);
        CHECK(c.policy.manage_virtual);
        config_done(&c);
        OK("[Manager]\nVirtualDevices=manage\nVirtualDevices=list\n", &c);
        CHECK(!c.policy.manage_virtual);
        config_done(&c);
        BAD("[Manager]\nVirtualDevices=yes\n", "test.conf:2: VirtualDevices=yes: expected list or manage");
        BAD("[Class:stacked]\nVirtualDevices=manage\n", "test.conf:2: unknown key \"VirtualDevices\" in a [Class:] section");

        /* [Speed]: the measured speed's bounds, window and hysteresis, trusted drivers */
        OK("", &c);
        CHECK_U64(c.policy.speed.fast_usec, 2000);
        CHECK_U64(c.policy.speed.slow_usec, 5000);
        CHECK_U64(c.policy.speed.min_ios, 1024);
        CHECK_U64(c.policy.speed.window_usec, 10000000);
        CHECK_U64(c.policy.speed.min_change_usec, 600000000);
        CHECK(c.policy.speed.measure && !c.policy.speed.trust_rotational);
        config_done(&c);
        OK("[Speed]\nSlowMs=20\nFastMs=0.5\nMinIOs=256\nWindowSec=2.5\nMinChangeSec=0\nMeasure=no\n"
           "TrustRotational=virtio_blk vmw_*\nTrustRotational=virtio_scsi\n", &c);
        CHECK_U64(c.policy.speed.fast_usec, 500);
        CHECK_U64(c.policy.speed.slow_usec, 20000);
        CHECK_U64(c.policy.speed.min_ios, 256);
        CHECK_U64(c.policy.speed.window_usec, 2500000);
        CHECK_U64(c.policy.speed.min_change_usec, 0);
        CHECK(!c.policy.speed.measure);
        CHECK(strv_length(c.policy.speed.trust_rotational) == 1 && streq(c.policy.speed.trust_rotational[0], "virtio_scsi"));
        config_done(&c);
        /* the bounds are checked as a pair at the end, whatever their order */
        OK("[Speed]\nFastMs=6\nSlowMs=9\n", &c);
        config_done(&c);
        BAD("[Speed]\nFastMs=5\n", "test.conf:2: [Speed] FastMs= (5 ms) must stay below SlowMs= (5 ms): the margin between "
            "them keeps a disk from switching back and forth");
        BAD("[Speed]\nSlowMs=1\n# x\n", "test.conf:2: [Speed] FastMs= (2 ms) must stay below SlowMs= (1 ms): the margin between "
            "them keeps a disk from switching back and forth");
        BAD("[Speed]\nFastMs=0\n", "test.conf:2: FastMs=0: expected milliseconds from 0.001 to 60000");
        BAD("[Speed]\nSlowMs=fast\n", "test.conf:2: SlowMs=fast: expected milliseconds from 0.001 to 60000");
        BAD("[Speed]\nMinIOs=8\n", "test.conf:2: MinIOs=8: expected a number of I/Os from 16 to 100000000");
        BAD("[Speed]\nMinChangeSec=-1\n", "test.conf:2: MinChangeSec=-1: expected seconds from 0 to 604800");
        BAD("[Speed]\nWindowSec=nan\n", "test.conf:2: WindowSec=nan: expected seconds from 0 to 86400");
        BAD("[Speed]\nMeasure=maybe\n", "test.conf:2: Measure=maybe: expected yes or no");
        BAD("[Speed]\nThreshold=3\n", "test.conf:2: unknown key \"Threshold\" in [Speed]");
        BAD("[Manager]\nRateWindowSec=0.1\n", "test.conf:2: RateWindowSec=0.1: expected seconds from 0.2 to 3600");
        BAD("[Manager]\nRateWindowSec=3601\n", "test.conf:2: RateWindowSec=3601: expected seconds from 0.2 to 3600");
        BAD("[Manager]\nRateWindowSec=1s\n", "test.conf:2: RateWindowSec=1s: expected seconds from 0.2 to 3600");
        BAD("[Manager]\nRateWindowSec=\n", "test.conf:2: RateWindowSec=: expected seconds from 0.2 to 3600");
        BAD("[Manager]\nRateWindowSec=nan\n", "test.conf:2: RateWindowSec=nan: expected seconds from 0.2 to 3600");
        BAD("[Manager]\nRateWindowSec=-1\n", "test.conf:2: RateWindowSec=-1: expected seconds from 0.2 to 3600");
        /* VerifySec= (issue 13 item 13): default 60 s, 0 or off: no periodic verify */
        OK("", &c);
        CHECK_U64(c.verify_usec, 60000000ULL);
        config_done(&c);
        OK("[Manager]\nVerifySec=5\n", &c);
        CHECK_U64(c.verify_usec, 5000000ULL);
        config_done(&c);
        OK("[Manager]\nVerifySec=2.5\nVerifySec=86400\n", &c);
        CHECK_U64(c.verify_usec, 86400000000ULL);
        config_done(&c);
        OK("[Manager]\nVerifySec=0\n", &c);
        CHECK_U64(c.verify_usec, 0);
        config_done(&c);
        OK("[Manager]\nVerifySec=off\n", &c);
        CHECK_U64(c.verify_usec, 0);
        config_done(&c);
        BAD("[Manager]\nVerifySec=0.5\n", "test.conf:2: VerifySec=0.5: expected 0 (off) or seconds from 1 to 86400");
        BAD("[Manager]\nVerifySec=86401\n", "test.conf:2: VerifySec=86401: expected 0 (off) or seconds from 1 to 86400");
        BAD("[Manager]\nVerifySec=1m\n", "test.conf:2: VerifySec=1m: expected 0 (off) or seconds from 1 to 86400");
        BAD("[Manager]\nVerifySec=\n", "test.conf:2: VerifySec=: expected 0 (off) or seconds from 1 to 86400");
        BAD("[Manager]\nVerifySec=nan\n", "test.conf:2: VerifySec=nan: expected 0 (off) or seconds from 1 to 86400");
        BAD("[Manager]\nVerifySec=-1\n", "test.conf:2: VerifySec=-1: expected 0 (off) or seconds from 1 to 86400");
        /* the metrics file: MetricsIntervalSec= default 60 s, 0/off: on change only;
         * TextfileDirectory= unset (the default applies), an absolute path, or off ("") */
        OK("", &c);
        CHECK_U64(c.metrics_interval_usec, 60000000ULL);
        CHECK(c.textfile_dir == NULL);
        config_done(&c);
        OK("[Manager]\nMetricsIntervalSec=off\nTextfileDirectory=/var/lib/node-exporter/\n", &c);
        CHECK_U64(c.metrics_interval_usec, 0);
        CHECK(streq_ptr(c.textfile_dir, "/var/lib/node-exporter/"));
        config_done(&c);
        OK("[Manager]\nMetricsIntervalSec=15\nTextfileDirectory=off\n", &c);
        CHECK_U64(c.metrics_interval_usec, 15000000ULL);
        CHECK(streq_ptr(c.textfile_dir, ""));
        config_done(&c);
        OK("[Manager]\nTextfileDirectory=/a\nTextfileDirectory=\n", &c);
        CHECK(streq_ptr(c.textfile_dir, ""));
        config_done(&c);
        BAD("[Manager]\nMetricsIntervalSec=0.5\n",
            "test.conf:2: MetricsIntervalSec=0.5: expected 0 (on change only) or seconds from 1 to 86400");
        BAD("[Manager]\nMetricsIntervalSec=1h\n",
            "test.conf:2: MetricsIntervalSec=1h: expected 0 (on change only) or seconds from 1 to 86400");
        BAD("[Manager]\nTextfileDirectory=var/lib\n", "test.conf:2: TextfileDirectory=var/lib: expected an absolute directory or off");
        BAD("[Manager]\nTextfileDirectory=/a/../etc\n", "test.conf:2: TextfileDirectory=/a/../etc: expected an absolute directory or off");
        BAD("[Manager]\nTextfileDirectory=/a/..\n", "test.conf:2: TextfileDirectory=/a/..: expected an absolute directory or off");
        BAD("[Manager]\nColour=blue\n", "test.conf:2: unknown key \"Colour\" in [Manager]");
        BAD("[Manager]\nmode=auto\n", "test.conf:2: unknown key \"mode\" in [Manager]");    /* keys are case-sensitive */
}

static void test_class(void) {
        Config c;
        ClassPolicy *cp;

        OK("[Class:many-hctx-slow]\nElevator=bfq mq-deadline\nRqAffinity=2\nIrqAffinity=hctx\nHostTagset=disable\n", &c);
        cp = &c.policy.classes[DISK_CLASS_MANY_HCTX_SLOW];
        CHECK_INT(strv_length(cp->elevators), 2);
        CHECK(cp->elevators && streq(cp->elevators[0], "bfq") && streq(cp->elevators[1], "mq-deadline"));
        CHECK_INT(cp->rq_affinity, 2);
        CHECK(cp->irq_follow_hctx);
        CHECK_INT(cp->host_tagset, HOST_TAGSET_DISABLE);
        config_done(&c);

        OK("[Class:fast-multiqueue]\nElevator=keep\nRqAffinity=keep\nIrqAffinity=keep\nHostTagset=keep\n", &c);
        cp = &c.policy.classes[DISK_CLASS_FAST_MULTIQUEUE];
        CHECK_NULL(cp->elevators);
        CHECK_INT(cp->rq_affinity, -1);
        CHECK(!cp->irq_follow_hctx);
        CHECK_INT(cp->host_tagset, HOST_TAGSET_KEEP);
        config_done(&c);

        OK("[Class:stacked]\nRqAffinity=0\nHostTagset=auto\n[Class:shared-tags]\nRqAffinity=1\n"
           "[Class:single-queue-rotational]\nElevator=bfq\n[Class:single-queue-fast]\nElevator=none\n", &c);
        CHECK_INT(c.policy.classes[DISK_CLASS_STACKED].rq_affinity, 0);
        CHECK_INT(c.policy.classes[DISK_CLASS_STACKED].host_tagset, HOST_TAGSET_AUTO);
        CHECK_INT(c.policy.classes[DISK_CLASS_SHARED_TAGS].rq_affinity, 1);
        CHECK(strv_length(c.policy.classes[DISK_CLASS_SINGLE_QUEUE_ROTATIONAL].elevators) == 1 &&
              streq(c.policy.classes[DISK_CLASS_SINGLE_QUEUE_ROTATIONAL].elevators[0], "bfq"));
        CHECK(strv_length(c.policy.classes[DISK_CLASS_SINGLE_QUEUE_FAST].elevators) == 1 &&
              streq(c.policy.classes[DISK_CLASS_SINGLE_QUEUE_FAST].elevators[0], "none"));
        config_done(&c);

        BAD("[Class:many-hctx-slow]\nElevator=\n", "test.conf:2: Elevator= needs at least one name, or \"keep\"");
        BAD("[Class:many-hctx-slow]\nRqAffinity=3\n", "test.conf:2: RqAffinity=3: expected 0, 1, 2 or keep");
        BAD("[Class:many-hctx-slow]\nRqAffinity=-1\n", "test.conf:2: RqAffinity=-1: expected 0, 1, 2 or keep");
        BAD("[Class:many-hctx-slow]\nRqAffinity=0x2\n", "test.conf:2: RqAffinity=0x2: expected 0, 1, 2 or keep");
        BAD("[Class:many-hctx-slow]\nIrqAffinity=0-3\n", "test.conf:2: IrqAffinity=0-3: expected hctx or keep");
        BAD("[Class:many-hctx-slow]\nHostTagset=0\n", "test.conf:2: HostTagset=0: expected auto, disable or keep");
        BAD("[Class:many-hctx-slow]\nNrRequests=64\n", "test.conf:2: unknown key \"NrRequests\" in a [Class:] section");
        BAD("[Class:no-mq]\nElevator=none\n", "test.conf:2: [Class:no-mq]: not a class blkmqd tunes");
        BAD("[Class:unknown]\nElevator=none\n", "test.conf:2: [Class:unknown]: not a class blkmqd tunes");
        BAD("[Class:ssd]\nElevator=none\n", "test.conf:2: [Class:ssd]: not a class blkmqd tunes");

        /* legacy single-queue elevator names: refused at load, with the line and the blk-mq name */
        BAD("[Class:many-hctx-slow]\nElevator=noop deadline\n",
            "test.conf:2: Elevator=noop deadline: \"noop\" is a legacy single-queue elevator name that no blk-mq kernel"
            " (5.0 and later) offers; use \"none\"*");
        BAD("# c\n[Class:single-queue-rotational]\n\nElevator=mq-deadline cfq\n",
            "test.conf:4: Elevator=mq-deadline cfq: \"cfq\" is a legacy single-queue elevator name that no blk-mq kernel (5.0 and later) offers; use \"bfq\" (or another name listed in /sys/block/*/queue/scheduler)");
        BAD("[Class:stacked]\nElevator=deadline\n", "test.conf:2: Elevator=deadline: \"deadline\" is a legacy single-queue elevator name that no blk-mq kernel (5.0 and later) offers; use \"mq-deadline\"*");
        BAD("[Class:stacked]\nElevator=anticipatory\n", "test.conf:2: Elevator=anticipatory: \"anticipatory\" is a legacy*");
        BAD("[Device:x]\nMatchName=sda\nElevator=cfq\n", "test.conf:3: Elevator=cfq: \"cfq\" is a legacy*");
        BAD("[Device:x]\nElevator=noop deadline\n", "test.conf:2: Elevator=noop deadline: \"noop\" is a legacy*");
        /* the same kind: a name no kernel can match, silently accepted before (issue 13 item 16's
         * hidden cases): case (the kernel compares names with strcmp()), a list written with commas
         * or semicolons, quotes, longer than ELV_NAME_MAX - 1, keep/auto inside a list or in [Device:] */
        BAD("[Class:stacked]\nElevator=NOOP\n", "test.conf:2: Elevator=NOOP: \"NOOP\" is a legacy single-queue elevator name that no blk-mq kernel (5.0 and later) offers; use \"none\" (or another name listed in /sys/block/*/queue/scheduler)");
        BAD("[Class:stacked]\nElevator=Deadline\n", "test.conf:2: Elevator=Deadline: \"Deadline\" is a legacy single-queue elevator name that no blk-mq kernel (5.0 and later) offers; use \"mq-deadline\" (or another name listed in /sys/block/*/queue/scheduler)");
        BAD("[Device:x]\nElevator=CFQ\n", "test.conf:2: Elevator=CFQ: \"CFQ\" is a legacy single-queue elevator name that no blk-mq kernel (5.0 and later) offers; use \"bfq\" (or another name listed in /sys/block/*/queue/scheduler)");
        BAD("[Class:single-queue-rotational]\nElevator=mq-deadline BFQ\n",
            "test.conf:2: Elevator=mq-deadline BFQ: \"BFQ\": elevator names are lower case and the kernel compares them exactly; use \"bfq\"");
        BAD("[Device:x]\nElevator=Mq-Deadline\n", "test.conf:2: Elevator=Mq-Deadline: \"Mq-Deadline\": elevator names are lower case and the kernel compares them exactly; use \"mq-deadline\"");
        BAD("[Class:many-hctx-slow]\nElevator=mq-deadline,bfq\n",
            "test.conf:2: Elevator=mq-deadline,bfq: \"mq-deadline,bfq\": not one elevator name: separate the names of a list with spaces");
        BAD("[Class:many-hctx-slow]\nElevator=mq-deadline, bfq\n", "test.conf:2: Elevator=mq-deadline, bfq: \"mq-deadline,\": not one elevator name*");
        BAD("[Device:x]\nElevator=mq-deadline;bfq\n", "test.conf:2: Elevator=mq-deadline;bfq: \"mq-deadline;bfq\": not one elevator name: separate the names of a list with spaces");
        BAD("[Class:stacked]\nElevator=\"none\"\n", "test.conf:2: Elevator=\"none\": \"\"none\"\": not an elevator name*");
        BAD("[Class:stacked]\nElevator=none\\\n", "test.conf:2: Elevator=none\\: \"none\\\": not an elevator name: elevator names are letters, digits, '-' and '_'");
        BAD("[Class:stacked]\nElevator=averyveryverylongname\n", "test.conf:2: Elevator=averyveryverylongname: \"averyveryverylongname\": longer than an elevator name can be (15 bytes, ELV_NAME_MAX in include/linux/elevator.h)");
        BAD("[Class:stacked]\nElevator=keep none\n", "test.conf:2: Elevator=keep none: \"keep\" stands alone, not in a list of elevators");
        BAD("[Class:stacked]\nElevator=none keep\n", "test.conf:2: Elevator=none keep: \"keep\" stands alone*");
        BAD("[Class:stacked]\nElevator=auto\n", "test.conf:2: Elevator=auto: \"auto\" is not an elevator*");
        BAD("[Device:x]\nElevator=keep none\n", "test.conf:2: Elevator=keep none: \"keep\" stands alone*");
        BAD("[Device:x]\nElevator=auto\n", "test.conf:2: Elevator=auto: \"auto\" is not an elevator*");
        /* names that only contain a legacy name are fine */
        Config ok;
        OK("[Class:many-hctx-slow]\nElevator=mq-deadline\n[Class:fast-multiqueue]\nElevator=none kyber\n[Device:y]\nElevator=mq-deadline\n", &ok);
        config_done(&ok);
        /* out-of-tree names (adios, ssg-iosched's ssg, an underscore, 15 bytes) are taken: the kernel may offer them */
        OK("[Class:single-queue-fast]\nElevator=adios ssg my_sched2 abcdefghijklmno none\n", &ok);
        CHECK_INT(strv_length(ok.policy.classes[DISK_CLASS_SINGLE_QUEUE_FAST].elevators), 5);
        config_done(&ok);
}

static void test_module(void) {
        Config c;

        OK("[Module:virtio_blk]\nnum_request_queues=1\n[Module:megaraid_sas]\nhost_tagset_enable=0\n"
           "[Module:virtio_blk]\nnum_request_queues=4\n", &c);
        CHECK_INT(c.policy.n_module_params, 2);       /* the later virtio_blk setting replaced the first */
        for (size_t i = 0; i < c.policy.n_module_params; i++) {
                const ModuleWish *w = &c.policy.module_params[i];
                if (streq(w->module, "virtio_blk")) {
                        CHECK_STR(w->param, "num_request_queues");
                        CHECK_STR(w->value, "4");
                        CHECK(!w->load_time_only);
                } else {
                        CHECK_STR(w->module, "megaraid_sas");
                        CHECK_STR(w->value, "0");
                        CHECK(w->load_time_only);
                }
        }
        config_done(&c);

        BAD("[Module:virtio_blk]\nqueue_depth=4\n",
            "test.conf:2: [Module:virtio_blk] queue_depth: not a queue-layout parameter blkmqd manages");
        BAD("[Module:nvme]\nio_queue_depth=64\n",
            "test.conf:2: [Module:nvme] io_queue_depth: not a queue-layout parameter blkmqd manages");
        BAD("[Module:virtio_blk]\nnum_request_queues=one\n",
            "test.conf:2: [Module:virtio_blk] num_request_queues=one: expected a number");
        BAD("[Module:virtio_blk]\nnum_request_queues=-1\n",
            "test.conf:2: [Module:virtio_blk] num_request_queues=-1: expected a number");
}

static void test_device(void) {
        Config c;

        OK("[Device:hba]\nMatchName=sd*\nMatchDriver=megaraid_sas\nMatchTransport=scsi\nMatchIdentity=wwid:naa.5000c5*\n"
           "MatchHwQueues=2-64\nMatchRotational=yes\nElevator=bfq\nRqAffinity=2\nNrRequests=64\nIrqAffinity=0-1\nEnabled=no\n"
           "[Device:one]\nMatchHwQueues=1\nMatchRotational=no\n", &c);
        CHECK_INT(c.policy.n_rules, 2);
        if (c.policy.n_rules == 2) {
                const DeviceRule *r = &c.policy.rules[0];
                CHECK_STR(r->name, "hba");
                CHECK_STR(r->label, "config [Device:hba]");
                CHECK_STR(r->match_name, "sd*");
                CHECK_STR(r->match_driver, "megaraid_sas");
                CHECK_STR(r->match_transport, "scsi");
                CHECK_STR(r->match_identity, "wwid:naa.5000c5*");
                CHECK_INT(r->match_hwq_min, 2);
                CHECK_INT(r->match_hwq_max, 64);
                CHECK_INT(r->match_rotational, TRISTATE_YES);
                CHECK_STR(policy_overrides_get(&r->settings, KNOB_ELEVATOR), "bfq");
                CHECK_STR(policy_overrides_get(&r->settings, KNOB_RQ_AFFINITY), "2");
                CHECK_STR(policy_overrides_get(&r->settings, KNOB_NR_REQUESTS), "64");
                CHECK_STR(policy_overrides_get(&r->settings, KNOB_IRQ_AFFINITY), "0-1");
                CHECK(r->has_enabled && r->settings.disabled);
                CHECK_STR(r->settings.origin[KNOB_ELEVATOR], "config [Device:hba]");
                const DeviceRule *o = &c.policy.rules[1];
                CHECK_STR(o->name, "one");
                CHECK_INT(o->match_hwq_min, 1);
                CHECK_INT(o->match_hwq_max, 1);
                CHECK_INT(o->match_rotational, TRISTATE_NO);
                CHECK_NULL(o->match_name);
                CHECK(!o->has_enabled);
                CHECK_NULL(policy_overrides_get(&o->settings, KNOB_ELEVATOR));
        }
        config_done(&c);

        OK("[Device:x]\nEnabled=yes\nIrqAffinity=hctx\n", &c);
        CHECK(c.policy.n_rules == 1 && c.policy.rules[0].has_enabled && !c.policy.rules[0].settings.disabled);
        CHECK(c.policy.n_rules == 1 && streq(policy_overrides_get(&c.policy.rules[0].settings, KNOB_IRQ_AFFINITY), "hctx"));
        config_done(&c);

        /* keep, for every knob of a [Device:] section (the class sections had it; a first-time
         * user found IrqAffinity=keep refused there and in policy/irq_affinity) */
        OK("[Device:x]\nElevator=keep\nRqAffinity=keep\nNrRequests=keep\nIrqAffinity=keep\nXps=keep\n", &c);
        for (Knob k = KNOB_ELEVATOR; k <= KNOB_IRQ_AFFINITY; k++)
                CHECK(c.policy.n_rules == 1 && streq_ptr(policy_overrides_get(&c.policy.rules[0].settings, k), "keep"));
        config_done(&c);

        BAD("[Device:x]\nMatchHwQueues=64-2\n", "test.conf:2: MatchHwQueues=64-2: expected N or MIN-MAX");
        BAD("[Device:x]\nMatchHwQueues=many\n", "test.conf:2: MatchHwQueues=many: expected N or MIN-MAX");
        BAD("[Device:x]\nMatchHwQueues=2-\n", "test.conf:2: MatchHwQueues=2-: expected N or MIN-MAX");
        BAD("[Device:x]\nMatchRotational=sometimes\n", "test.conf:2: MatchRotational=sometimes: expected yes or no");
        BAD("[Device:x]\nEnabled=2\n", "test.conf:2: Enabled=2: expected yes or no");
        BAD("[Device:x]\nRqAffinity=3\n", "test.conf:2: RqAffinity=3: expected 0, 1, 2 or keep");
        BAD("[Device:x]\nNrRequests=3\n", "test.conf:2: NrRequests=3: expected a number >= 4 or keep");
        BAD("[Device:x]\nNrRequests=0x40\n", "test.conf:2: NrRequests=0x40: expected a number >= 4 or keep");
        BAD("[Device:x]\nIrqAffinity=1-0\n", "test.conf:2: IrqAffinity=1-0: expected hctx, a CPU list or keep");
        BAD("[Device:x]\nIrqAffinity=\n", "test.conf:2: IrqAffinity=: expected hctx, a CPU list or keep");
        BAD("[Device:x]\nElevator=bfq kyber\n", "test.conf:2: Elevator=bfq kyber: one elevator name");
        BAD("[Device:x]\nHostTagset=keep\n", "test.conf:2: unknown key \"HostTagset\" in [Device:x]");
        BAD("[Device:x]\nMatchModel=X*\n", "test.conf:2: unknown key \"MatchModel\" in [Device:x]");
}

/* IoSched.<elevator>.<tunable>= in [Class:] and [Device:] (issue 18): validated like policy/iosched/. */
static void test_iosched(void) {
        Config c;
        OK("[Class:single-queue-rotational]\nIoSched.bfq.slice_idle=0\nIoSched.mq-deadline.fifo_batch=32\n"
           "IoSched.mq-deadline.writes_starved=-1\nIoSched.kyber.read_lat_nsec=007\n", &c);
        const ClassPolicy *cp = &c.policy.classes[DISK_CLASS_SINGLE_QUEUE_ROTATIONAL];
        CHECK_STR(cp->iosched[IOSCHED_BFQ_SLICE_IDLE], "0");
        CHECK_STR(cp->iosched[IOSCHED_DEADLINE_FIFO_BATCH], "32");
        CHECK_STR(cp->iosched[IOSCHED_DEADLINE_WRITES_STARVED], "-1");
        CHECK_STR(cp->iosched[IOSCHED_KYBER_READ_LAT_NSEC], "7");
        CHECK_NULL(cp->iosched[IOSCHED_BFQ_LOW_LATENCY]);
        CHECK_NULL(c.policy.classes[DISK_CLASS_STACKED].iosched[IOSCHED_BFQ_SLICE_IDLE]);
        config_done(&c);

        /* keep (or auto) clears an earlier file's value */
        OK("[Class:stacked]\nIoSched.bfq.low_latency=0\nIoSched.bfq.low_latency=keep\n", &c);
        CHECK_NULL(c.policy.classes[DISK_CLASS_STACKED].iosched[IOSCHED_BFQ_LOW_LATENCY]);
        config_done(&c);

        OK("[Device:a]\nMatchName=sd*\nIoSched.bfq.slice_idle_us=500\n", &c);
        CHECK_INT(c.policy.n_rules, 1);
        CHECK_STR(c.policy.rules[0].settings.iosched[IOSCHED_BFQ_SLICE_IDLE_US], "500");
        CHECK_STR(c.policy.rules[0].settings.iosched_origin[IOSCHED_BFQ_SLICE_IDLE_US], "config [Device:a]");
        config_done(&c);

        BAD("[Class:stacked]\nIoSched.bfq.low_latency=2\n",
            "test.conf:2: IoSched.bfq.low_latency=2: out of range; expected a decimal number from 0 to 1*");
        BAD("[Class:stacked]\nIoSched.bfq.slice_idle=0x8\n",
            "test.conf:2: IoSched.bfq.slice_idle=0x8: not a decimal number; expected a decimal number from 0 to 2147483647*");
        BAD("[Class:stacked]\nIoSched.bfq.fifo_expire_sync=0\n", "test.conf:2: IoSched.bfq.fifo_expire_sync=0: out of range*");
        BAD("[Class:stacked]\nIoSched.cfq.slice_idle=0\n",
            "test.conf:2: IoSched.cfq.slice_idle=: not an elevator tunable blkmqd knows*");
        BAD("[Class:stacked]\nIoSched.bfq.read_expire=1\n",
            "test.conf:2: IoSched.bfq.read_expire=: not an elevator tunable blkmqd knows*");
        BAD("[Device:x]\nIoSched.kyber.write_lat_nsec=-5\n", "test.conf:2: IoSched.kyber.write_lat_nsec=-5: out of range*");
        BAD("[Manager]\nIoSched.bfq.slice_idle=0\n", "test.conf:2: unknown key*");
}

static void test_line_numbers(void) {
        BAD("[Bogus]\nA=b\n", "test.conf:2: unknown section [Bogus]");
        BAD("A=b\n", "test.conf:1: unknown section []");
        BAD("[Manager]\nthis is not ini\n", "test.conf:2: syntax error (expected [Section] or Key=Value)");
        /* comments, blank lines and good keys before the bad one are counted */
        BAD("# blkmqd.conf\n\n[Manager]\nMode=auto\n; comment\n\n[Class:stacked]\nElevator=none\nRqAffinity=7\nRqAffinity=8\n",
            "test.conf:9: RqAffinity=7: expected 0, 1, 2 or keep");
        /* CRLF line ends count the same */
        BAD("[Manager]\r\nMode=auto\r\nMode=bad\r\n", "test.conf:3: Mode=bad: expected auto, dry-run or off");
        /* no newline at the end of the last line */
        BAD("[Manager]\nMode=auto\n\n\nReassert=x", "test.conf:5: Reassert=x: expected yes or no");
        /* the first bad line is reported, not a later one */
        BAD("[Manager]\nMode=a\nMode=b\n", "test.conf:2: Mode=a: expected auto, dry-run or off");
        /* a syntax error after a semantic one: still the first */
        BAD("[Manager]\nMode=a\ngarbage\n", "test.conf:2: Mode=a: expected auto, dry-run or off");

}


/*
 * Bugs these checks found (docs/TESTING.md), fixed in 3de7685: run with --known-bugs as the
 * meson test "conf-regressions".
 */
static void test_known_bugs(void) {
        /* conf.c config_parse_text(): an error of the handler wins over inih's earlier syntax
         * error, so "[Manager" (no ']') on line 1 is reported as "2: unknown section []" */
        BAD("[Manager\nMode=auto\n", "test.conf:1: syntax error (expected [Section] or Key=Value)");

        BAD("[Manager]\ngarbage\nMode=a\n", "test.conf:2: syntax error (expected [Section] or Key=Value)");

        /* conf.c reader(): a line longer than libinih's INI_MAX_LINE (200) is cut into pieces,
         * each parsed as a line of its own and counted, so the value is truncated, the rest is a
         * syntax error, and every later line number is off */
        char text[2048], *p = text;
        p += sprintf(p, "[Manager]\nDevices=");
        for (int i = 0; i < 40; i++)
                p += sprintf(p, "disk%02d-glob* ", i);
        p += sprintf(p, "\nReassert=yes\n");
        Config c;
        OK(text, &c);
        CHECK_INT(strv_length(c.devices), 40);
        CHECK(c.reassert);
        config_done(&c);
        sprintf(p, "Mode=bad\n");
        BAD(text, "test.conf:4: Mode=bad: expected auto, dry-run or off");
}

/* ---- config_load with a temp dir ------------------------------------------------------------ */

static char tmpdir[] = "/tmp/blkmqd-test-conf-XXXXXX";

static void put(const char *rel, const char *content) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
        FILE *f = fopen(path, "we");
        if (!f) {
                TAP_FAIL("cannot write %s: %m", path);
                return;
        }
        fputs(content, f);
        fclose(f);
}

static void rm(const char *rel) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
        (void) unlink(path);
}

static void test_load(void) {
        char main_path[512], dropin[512], want[1024];
        Config c;
        _cleanup_free_ char *e = NULL;

        if (!mkdtemp(tmpdir)) {
                TAP_FAIL("mkdtemp: %m");
                return;
        }
        snprintf(main_path, sizeof(main_path), "%s/blkmqd.conf", tmpdir);
        snprintf(dropin, sizeof(dropin), "%s/blkmqd.conf.d", tmpdir);

        /* nothing at all: the defaults */
        CHECK_INT(config_load(main_path, &c, &e), 0);
        CHECK_NULL(e);
        CHECK_INT(c.mode, _MODE_INVALID);
        CHECK(c.policy.classes[DISK_CLASS_STACKED].elevators != NULL);      /* shipped defaults are there */
        config_done(&c);

        /* main file + drop-ins: later files win key by key; untouched keys survive */
        put("blkmqd.conf", "[Manager]\nMode=off\nReassert=yes\nRateWindowSec=2\n[Class:many-hctx-slow]\nElevator=bfq\nRqAffinity=2\n");
        CHECK_INT(mkdir(dropin, 0755), 0);
        put("blkmqd.conf.d/10-a.conf", "[Manager]\nMode=dry-run\n[Class:many-hctx-slow]\nElevator=kyber\n[Device:a]\nMatchName=sd*\nElevator=bfq\n");
        put("blkmqd.conf.d/20-b.conf", "[Manager]\nMode=auto\nReassert=no\n[Device:b]\nMatchName=sda\nElevator=none\n");
        put("blkmqd.conf.d/20-b.conf.bak", "[Manager]\nMode=garbage\n");        /* not *.conf: ignored */
        put("blkmqd.conf.d/.30-hidden.conf", "[Manager]\nMode=garbage\n");     /* hidden: ignored */
        put("blkmqd.conf.d/README", "not ini at all\n");
        CHECK_INT(config_load(main_path, &c, &e), 0);
        if (e)
                TAP_FAIL("unexpected error %s", e);
        CHECK_INT(c.mode, MODE_AUTO);                   /* 20-b over 10-a over main */
        CHECK(!c.reassert);                             /* 20-b */
        CHECK_U64(c.rate_window_usec, 2000000);         /* main only */
        const ClassPolicy *cp = &c.policy.classes[DISK_CLASS_MANY_HCTX_SLOW];
        CHECK(strv_length(cp->elevators) == 1 && streq(cp->elevators[0], "kyber"));   /* 10-a */
        CHECK_INT(cp->rq_affinity, 2);                  /* main only */
        CHECK_INT(c.policy.n_rules, 2);
        CHECK(c.policy.n_rules == 2 && streq(c.policy.rules[0].name, "a") && streq(c.policy.rules[1].name, "b"));
        config_done(&c);

        /* lexical order, not numeric: 9-z.conf sorts after 20-b.conf */
        put("blkmqd.conf.d/9-z.conf", "[Manager]\nMode=off\n");
        CHECK_INT(config_load(main_path, &c, &e), 0);
        CHECK_INT(c.mode, MODE_OFF);
        config_done(&c);
        rm("blkmqd.conf.d/9-z.conf");

        /* drop-ins apply without the main file too */
        rm("blkmqd.conf");
        CHECK_INT(config_load(main_path, &c, &e), 0);
        CHECK_INT(c.mode, MODE_AUTO);
        CHECK_U64(c.rate_window_usec, 1000000);
        config_done(&c);

        /* a bad line in a drop-in: -EINVAL, "path:line: what", and the previous Config untouched */
        Config good;
        put("blkmqd.conf", "[Manager]\nMode=dry-run\n");
        CHECK_INT(config_load(main_path, &good, &e), 0);
        CHECK_INT(good.mode, MODE_AUTO);
        Config before = good;
        put("blkmqd.conf.d/20-b.conf", "[Manager]\nMode=auto\n\n# the bad one:\nReassert=perhaps\n");
        Config out = good;
        CHECK_INT(config_load(main_path, &out, &e), -EINVAL);
        snprintf(want, sizeof(want), "%s/20-b.conf:5: Reassert=perhaps: expected yes or no", dropin);
        CHECK_STR(e, want);
        CHECK(memcmp(&out, &before, sizeof(Config)) == 0);      /* not a byte of ret changed */
        CHECK_INT(out.mode, MODE_AUTO);
        e = mfree_str(e);

        /* a bad line in the main file: named with the main path */
        put("blkmqd.conf", "[Manager]\nMode=sometimes\n");
        CHECK_INT(config_load(main_path, &out, &e), -EINVAL);
        snprintf(want, sizeof(want), "%s:2: Mode=sometimes: expected auto, dry-run or off", main_path);
        CHECK_STR(e, want);
        CHECK(memcmp(&out, &before, sizeof(Config)) == 0);
        e = mfree_str(e);

        /* an unreadable main file (a directory): an error, ret untouched */
        rm("blkmqd.conf");
        CHECK_INT(mkdir(main_path, 0755), 0);
        int r = config_load(main_path, &out, &e);
        CHECK(r < 0);
        CHECK(e && strstr(e, main_path));
        CHECK(memcmp(&out, &before, sizeof(Config)) == 0);
        e = mfree_str(e);
        (void) rmdir(main_path);
        config_done(&good);

        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        (void) system(cmd);
}

/* ---- match sections -------------------------------------------------------------------------- */

static DiskFacts *disk(const char *name, const char *driver, const char *transport, const char *identity,
                       size_t n_hctx, Tristate rot) {
        DiskFacts *f = disk_facts_new(name);
        f->has_mq = true;
        f->n_hctx = n_hctx;
        f->hctx = calloc(n_hctx ?: 1, sizeof(HctxFacts));
        for (size_t i = 0; i < n_hctx; i++)
                f->hctx[i] = (HctxFacts) { .index = i, .nr_tags = 256, .shared_tags = TRISTATE_NO, .irq = -1 };
        f->rotational = rot;
        f->shared_tags = TRISTATE_NO;
        f->driver = driver ? strdup(driver) : NULL;
        f->transport = transport ? strdup(transport) : NULL;
        f->identity = identity ? strdup(identity) : NULL;
        /* a physical disk that reports its rotation rate (VPD page B1h), on channel 0: its flag is trusted */
        f->rotation_rate = rot == TRISTATE_YES ? 7200 : 1;
        f->scsi_channel = 0;
        (void) parse_scheduler("[mq-deadline] kyber bfq none\n", &f->elevators, &f->elevator, &f->elevator_configurable);
        return f;
}

static void test_matches(void) {
        _cleanup_(disk_facts_freep) DiskFacts *sda = disk("sda", "megaraid_sas", "scsi", "wwid:naa.5000c500a1b2c3d4", 64, TRISTATE_YES);
        _cleanup_(disk_facts_freep) DiskFacts *nvme = disk("nvme0n1", "nvme", "nvme", "wwid:eui.0025388b91c2e3f4", 2, TRISTATE_NO);
        _cleanup_(disk_facts_freep) DiskFacts *anon = disk("sdz", NULL, NULL, NULL, 1, TRISTATE_UNKNOWN);

        DeviceRule r = { .match_hwq_min = -1, .match_hwq_max = -1, .match_rotational = TRISTATE_UNKNOWN };
        CHECK(device_rule_matches(&r, sda));            /* no Match key: everything */
        CHECK(device_rule_matches(&r, anon));

        r.match_name = (char *) "sd*";
        CHECK(device_rule_matches(&r, sda) && !device_rule_matches(&r, nvme) && device_rule_matches(&r, anon));
        r.match_name = (char *) "sd[a-c]";
        CHECK(device_rule_matches(&r, sda) && !device_rule_matches(&r, anon));
        r.match_name = NULL;

        r.match_driver = (char *) "megaraid_*";
        CHECK(device_rule_matches(&r, sda) && !device_rule_matches(&r, nvme));
        CHECK(!device_rule_matches(&r, anon));          /* unknown driver never matches a glob */
        r.match_driver = (char *) "*";
        CHECK(!device_rule_matches(&r, anon));
        r.match_driver = NULL;

        r.match_transport = (char *) "nvme";
        CHECK(!device_rule_matches(&r, sda) && device_rule_matches(&r, nvme));
        r.match_transport = NULL;

        r.match_identity = (char *) "wwid:naa.5000c5*";
        CHECK(device_rule_matches(&r, sda) && !device_rule_matches(&r, nvme) && !device_rule_matches(&r, anon));
        r.match_identity = NULL;

        r.match_hwq_min = 2, r.match_hwq_max = 64;
        CHECK(device_rule_matches(&r, sda) && device_rule_matches(&r, nvme) && !device_rule_matches(&r, anon));
        r.match_hwq_min = 65, r.match_hwq_max = 128;
        CHECK(!device_rule_matches(&r, sda));
        r.match_hwq_min = 1, r.match_hwq_max = 1;
        CHECK(!device_rule_matches(&r, nvme) && device_rule_matches(&r, anon));
        r.match_hwq_min = r.match_hwq_max = -1;

        r.match_rotational = TRISTATE_YES;
        CHECK(device_rule_matches(&r, sda) && !device_rule_matches(&r, nvme) && !device_rule_matches(&r, anon));
        r.match_rotational = TRISTATE_NO;
        CHECK(!device_rule_matches(&r, sda) && device_rule_matches(&r, nvme) && !device_rule_matches(&r, anon));

        /* every key must hold */
        r.match_name = (char *) "nvme*";
        r.match_driver = (char *) "megaraid_sas";
        CHECK(!device_rule_matches(&r, nvme) && !device_rule_matches(&r, sda));

        /* through the parser and policy_evaluate: a later matching rule wins; admin overrides win over rules */
        Config c;
        OK("[Device:all-sd]\nMatchName=sd*\nElevator=bfq\nRqAffinity=0\n"
           "[Device:big-hba]\nMatchDriver=megaraid_sas\nMatchHwQueues=32-128\nElevator=kyber\n"
           "[Device:ssd]\nMatchRotational=no\nEnabled=no\n", &c);
        {
                _cleanup_(plan_done) Plan p = {};
                CHECK_INT(policy_evaluate(sda, NULL, &c.policy, NULL, &p), 0);
                CHECK_STR(p.elevator, "kyber");         /* big-hba, later than all-sd */
                CHECK_STR(p.rq_affinity, "0");          /* all-sd: the only rule setting it */
                bool seen = false;
                PLAN_FOREACH_ENTRY(l, &p)
                        seen = seen || strstr(l->text, "[Device:big-hba] applies");
                CHECK(seen);
        }
        {
                PolicyOverrides admin = {};
                CHECK_INT(policy_overrides_set(&admin, KNOB_ELEVATOR, "mq-deadline"), 0);
                _cleanup_(plan_done) Plan p = {};
                CHECK_INT(policy_evaluate(sda, NULL, &c.policy, &admin, &p), 0);
                CHECK_STR(p.elevator, "mq-deadline");
                policy_overrides_done(&admin);
        }
        {
                _cleanup_(plan_done) Plan p = {};
                CHECK_INT(policy_evaluate(nvme, NULL, &c.policy, NULL, &p), 0);
                CHECK(!p.manage);                       /* [Device:ssd] Enabled=no */
                CHECK_NULL(p.elevator);
        }
        config_done(&c);

        /* A section name may hold "(rule x)" (the config takes any name): each entry keeps its own
         * rule, which ends its line; the text before it quotes the name (issue 17 item 3: the
         * journal's BLKMQD_RULE= was strstr(line, "(rule ") and said "spoof" for these lines). */
        OK("[Device:x (rule spoof)]\nMatchName=sd*\nElevator=bfq\n", &c);
        {
                _cleanup_(plan_done) Plan p = {};
                CHECK_INT(policy_evaluate(sda, NULL, &c.policy, NULL, &p), 0);
                CHECK_STR(p.elevator, "bfq");
                size_t quoting = 0;
                PLAN_FOREACH_ENTRY(e, &p) {
                        if (!strstr(e->text, "(rule spoof)"))
                                continue;
                        quoting++;
                        CHECK(e->rule && !streq(e->rule, "spoof"));
                        _cleanup_free_ char *end = NULL;
                        CHECK(asprintf(&end, " (rule %s)", strna(e->rule)) > 0 && strlen(e->text) > strlen(end) &&
                              streq(e->text + strlen(e->text) - strlen(end), end));
                }
                CHECK_INT(quoting, 2);                  /* config-match and the elevator line */
                const PlanEntry *e = plan_decision(&p, KNOB_ELEVATOR);
                CHECK(e && streq_ptr(e->rule, "config") && e->outcome == PLAN_OUTCOME_PLANNED &&
                      strstr(e->text, "config [Device:x (rule spoof)] elevator=bfq"));
        }
        config_done(&c);
}

static void test_network(void) {
        Config c;

        CHECK_INT(config_init(&c), 0);
        CHECK(c.policy.net.nic_irq_follow_hctx && c.policy.net.xps_follow_hctx && c.policy.net.propose_nr_io_queues &&
              c.policy.net.propose_nic_channels);
        config_done(&c);
        OK("[Network]\nNicIrqAffinity=keep\nXps=keep\nNrIoQueues=keep\nNicChannels=keep\n", &c);
        CHECK(!c.policy.net.nic_irq_follow_hctx && !c.policy.net.xps_follow_hctx && !c.policy.net.propose_nr_io_queues &&
              !c.policy.net.propose_nic_channels);
        config_done(&c);
        OK("[Device:tcp]\nMatchName=nvme*\nNicIrqAffinity=keep\nXps=hctx\nNrIoQueues=4\n", &c);
        CHECK_STR(policy_overrides_get(&c.policy.rules[0].settings, KNOB_NIC_IRQ_AFFINITY), "keep");
        CHECK_STR(policy_overrides_get(&c.policy.rules[0].settings, KNOB_NR_IO_QUEUES), "4");
        config_done(&c);
        BAD("[Network]\nXps=0-3\n", "test.conf:2: Xps=0-3: expected hctx or keep");
        BAD("[Network]\nNicIrqAffinity=yes\n", "test.conf:2: NicIrqAffinity=yes: expected hctx or keep");
        BAD("[Network]\nNrIoQueues=2\n", "test.conf:2: NrIoQueues=2: expected propose or keep");
        BAD("[Network]\nNicChannels=4\n", "test.conf:2: NicChannels=4: expected propose or keep");
        BAD("[Network]\nChannels=2\n", "test.conf:2: unknown key \"Channels\" in [Network]");
        BAD("[Device:x]\nNrIoQueues=0\n", "test.conf:2: NrIoQueues=0: expected keep or a number from 1 to 65535");
        BAD("[Device:x]\nXps=all\n", "test.conf:2: Xps=all: expected hctx or keep");
}

/* config_check_elevators(): a name no kernel has fails the load with its line; an in-tree name
 * this kernel lacks, or an out-of-tree one it offers, does not. */
static void check_elev(int line, const char *text, char * const *offered, const char *want) {
        Config c;
        _cleanup_free_ char *e = NULL, *pe = NULL;
        tap_checks++;
        if (parse(text, &c, &pe) != 0) {
                TAP_FAIL("line %d: does not parse: %s", line, strna(pe));
                return;
        }
        int r = config_check_elevators(&c, offered, &e);
        tap_checks++;
        if (want ? r != -EINVAL || !e || strcmp(e, want) != 0 : r != 0)
                TAP_FAIL("line %d: rc %d\n     got      \"%s\"\n     expected \"%s\"", line, r, strna(e), strna(want));
        config_done(&c);
}
#define CHECK_ELEV(text, offered, want) check_elev(__LINE__, text, offered, want)

static void test_elevator_names(void) {
        char *here[] = { "none", "mq-deadline", "bfq", "ssg", NULL };      /* this kernel: no kyber, an out-of-tree ssg */
        char *nothing[] = { NULL };

        CHECK_ELEV("[Class:many-hctx-slow]\nElevator=mq_deadline\n", here,
                   "test.conf:2: [Class:many-hctx-slow] Elevator=: no kernel has an elevator \"mq_deadline\" (mainline has none, "
                   "mq-deadline, kyber and bfq; this kernel offers none mq-deadline bfq ssg, and no module for it); did you mean "
                   "\"mq-deadline\"?");
        CHECK_ELEV("[Manager]\nMode=auto\n\n[Class:many-hctx-slow]\nElevator=nosuchelevator\n", here,
                   "test.conf:5: [Class:many-hctx-slow] Elevator=: no kernel has an elevator \"nosuchelevator\" (mainline has "
                   "none, mq-deadline, kyber and bfq; this kernel offers none mq-deadline bfq ssg, and no module for it)");
        /* the second name of a list, a [Device:] section, the alias the kernel requests, a typo */
        CHECK_ELEV("[Class:shared-tags]\nElevator=mq-deadline bfq-iosched\n", nothing,
                   "test.conf:2: [Class:shared-tags] Elevator=: no kernel has an elevator \"bfq-iosched\" (mainline has none, "
                   "mq-deadline, kyber and bfq; this kernel offers no other, and no module for it); did you mean \"bfq\"?");
        CHECK_ELEV("[Device:hba]\nMatchDriver=megaraid_sas\nElevator=kyber_iosched\n", nothing,
                   "test.conf:3: [Device:hba] Elevator=: no kernel has an elevator \"kyber_iosched\" (mainline has none, "
                   "mq-deadline, kyber and bfq; this kernel offers no other, and no module for it); did you mean \"kyber\"?");
        CHECK_ELEV("[Class:stacked]\nElevator=mq-dedline\n", here, "test.conf:2: [Class:stacked] Elevator=: no kernel has an "
                   "elevator \"mq-dedline\" (mainline has none, mq-deadline, kyber and bfq; this kernel offers none mq-deadline bfq "
                   "ssg, and no module for it); did you mean \"mq-deadline\"?");
        /* in tree though this kernel lacks it (the manager warns, naming the disks); out of tree and offered */
        CHECK_ELEV("[Class:fast-multiqueue]\nElevator=kyber none\n", here, NULL);
        CHECK_ELEV("[Class:fast-multiqueue]\nElevator=ssg\n[Device:x]\nElevator=ssg\n", here, NULL);
        CHECK_ELEV("[Class:fast-multiqueue]\nElevator=ssg\n", nothing,
                   "test.conf:2: [Class:fast-multiqueue] Elevator=: no kernel has an elevator \"ssg\" (mainline has none, "
                   "mq-deadline, kyber and bfq; this kernel offers no other, and no module for it)");
        CHECK_ELEV("[Class:stacked]\nElevator=keep\n", nothing, NULL);

        /* where each name was, for the warnings */
        Config c;
        OK("[Class:many-hctx-slow]\nElevator=kyber mq-deadline\n[Device:x]\nElevator=bfq\n", &c);
        CHECK_INT(c.n_elevators, 3);
        if (c.n_elevators == 3) {
                CHECK_STR(c.elevators[0].name, "kyber");
                CHECK_STR(c.elevators[0].where, "test.conf:2");
                CHECK_STR(c.elevators[0].section, "[Class:many-hctx-slow]");
                CHECK_INT(c.elevators[0].cls, DISK_CLASS_MANY_HCTX_SLOW);
                CHECK_STR(c.elevators[2].where, "test.conf:4");
                CHECK_STR(c.elevators[2].section, "[Device:x]");
                CHECK_INT(c.elevators[2].cls, _DISK_CLASS_INVALID);
        }
        config_done(&c);

        CHECK_STR(elevator_name_suggest("mq_deadline"), "mq-deadline");
        CHECK_STR(elevator_name_suggest("BFQ"), "bfq");
        CHECK_STR(elevator_name_suggest("kybr"), "kyber");
        CHECK_STR(elevator_name_suggest("bfw"), "bfq");
        CHECK_NULL(elevator_name_suggest("bfq"));
        CHECK_NULL(elevator_name_suggest("nosuchelevator"));
        CHECK_NULL(elevator_name_suggest("ssg"));
        CHECK(elevator_name_in_tree("kyber") && elevator_name_in_tree("none") && !elevator_name_in_tree("mq_deadline"));
}

int main(int argc, char *argv[]) {
        if (argc > 1 && streq(argv[1], "--known-bugs")) {
                test_known_bugs();
                return tap_finish("test-conf --known-bugs");
        }
        test_defaults();
        test_network();
        test_iosched();
        test_manager();
        test_class();
        test_module();
        test_device();
        test_line_numbers();
        test_load();
        test_matches();
        test_elevator_names();
        return tap_finish("test-conf");
}
