/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * blkmqctl explain DISK: why blkmqd decided what it did for DISK. Prints devices/DISK/explain
 * (one decision a line), what the disk's own I/O measured (facts/speed, facts/speed_source,
 * facts/rotational_hint), then per knob of plan/: planned (plan/<knob>), applied
 * (applied/<knob>), policy (policy/<knob>) and owner (owner/<knob>); a knob with one line per
 * tunable (iosched) as a block. --json: class, the explain lines and the facts/, plan/,
 * applied/, policy/ and owner/ files as objects. A disk blkmqd does not list: its reason from
 * not_listed (check_disk()), exit 2.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "macro.h"
#include "strv.h"

/* "<name padded to w> <label> <first line>", then every further line of v under the first. */
static void print_lines(int w, const char *name, const char *label, const char *v) {
        int indent = w + 1 + (int) strlen(label) + 1;
        printf("%-*s %s ", w, name, label);
        for (const char *l = v; *l;) {
                size_t k = strcspn(l, "\n");
                printf("%.*s\n", (int) k, l);
                l += k;
                if (*l == '\n' && *++l)
                        printf("%*s", indent, "");
        }
        if (!*v)
                printf("\n");
}

/* "<sub>":{"<file>":"<value>",...} of devices/<disk>/<sub>/, null when it cannot be listed. */
static void json_dir_object(const char *disk, const char *sub) {
        _cleanup_strv_free_ char **names = NULL;
        printf("\"%s\":", sub);
        if (list_dev_dir(disk, sub, &names) < 0) {
                printf("null");
                return;
        }
        printf("{");
        STRV_FOREACH(name, names) {
                _cleanup_free_ char *v = read_dev(disk, sub, *name, NULL);
                if (name != names)
                        printf(",");
                json_string(stdout, *name);
                printf(":");
                json_string(stdout, v);
        }
        printf("}");
}

int cmd_explain(int argc, char **argv) {
        int r = disk_arguments(argc, argv, 2, 2, "explain DISK");
        if (r != 0)
                return r;
        const char *disk = argv[1];

        _cleanup_free_ char *explain = read_dev(disk, "explain", NULL, NULL), *class = read_dev(disk, "class", NULL, NULL);
        if (!explain) {
                ctl_error("Failed to read %s/devices/%s/explain", arg_mountpoint, disk);
                return EXIT_FAILED;
        }

        if (arg_json) {
                printf("{\"disk\":");
                json_string(stdout, disk);
                json_field("class", class, /* number = */ false);
                printf(",\"explain\":[");
                bool first = true;
                for (char *save = NULL, *l = strtok_r(explain, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                        printf("%s", first ? "" : ",");
                        json_string(stdout, l);
                        first = false;
                }
                printf("]");
                static const char *const dirs[] = { "facts", "plan", "applied", "policy", "owner" };
                for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                        printf(",");
                        json_dir_object(disk, dirs[i]);
                }
                printf("}\n");
        } else {
                _cleanup_strv_free_ char **knobs = NULL;
                printf("%s\n", explain);
                /* what the disk's own I/O measured, and how far its rotational flag is trusted */
                _cleanup_free_ char *speed = read_dev(disk, "facts", "speed", NULL),
                                    *source = read_dev(disk, "facts", "speed_source", NULL),
                                    *hint = read_dev(disk, "facts", "rotational_hint", NULL);
                printf("\nspeed:           %s\nmeasured by:     %s\nrotational flag: %s\n", show(speed), show(source), show(hint));
                if (list_dev_dir(disk, "plan", &knobs) >= 0 && knobs) {
                        int w = 14;     /* the knob column fits the longest name (nic_irq_affinity) */
                        STRV_FOREACH(k, knobs)
                                if ((int) strlen(*k) > w)
                                        w = (int) strlen(*k);
                        printf("\n");
                        STRV_FOREACH(k, knobs) {
                                _cleanup_free_ char *plan = read_dev(disk, "plan", *k, NULL),
                                                    *applied = read_dev(disk, "applied", *k, NULL),
                                                    *policy = read_dev(disk, "policy", *k, NULL),
                                                    *owner = read_dev(disk, "owner", *k, NULL);
                                if ((!plan || !strchr(plan, '\n')) && (!applied || !strchr(applied, '\n')))
                                        printf("%-*s planned %s, applied %s, policy %s, owner %s\n", w, *k, show(plan),
                                               show(applied), show(policy), show(owner));
                                else {
                                        /* one line per tunable (iosched): a block, each line under its label */
                                        print_lines(w, *k, "planned", show(plan));
                                        print_lines(w, "", "applied", show(applied));
                                        print_lines(w, "", "policy", show(policy));
                                }
                        }
                }
        }
        return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAILED;
}
