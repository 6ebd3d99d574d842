/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The kernel command line (/proc/cmdline) as the kernel splits it: kernel/params.c
 * parse_args() and next_arg(). Words are separated by blanks; a value, or the whole word, may
 * be in double quotes (`param="a b"`, `"param=a b"`); "--" ends the kernel's part (the rest
 * goes to init). A name "<module>.<param>" sets a parameter of that module (built in: read at
 * boot; a module: modprobe passes it when the module loads, libkmod
 * kmod_config_parse_kcmdline()). Dashes and underscores in a parameter name are the same
 * (kernel/params.c parameq(), dash2underscore()): names are stored with underscores. Pure.
 */

#include <stdbool.h>
#include <stddef.h>

typedef struct KernelCmdlineParam {
        char *module;           /* "megaraid_sas" for "megaraid_sas.host_tagset_enable=0"; NULL: a bare kernel parameter */
        char *param;            /* "host_tagset_enable", "elevator" (underscores for dashes) */
        char *value;            /* the value without quotes; NULL: the word had no "=" */
        unsigned index;         /* position among the words, from 0 */
} KernelCmdlineParam;

typedef struct KernelCmdline {
        KernelCmdlineParam *params;
        size_t n_params;
} KernelCmdline;

void kernel_cmdline_done(KernelCmdline *c);

/*
 * Parse text (the contents of /proc/cmdline, a trailing newline allowed) into *ret (which
 * must be empty). Returns 0 or -ENOMEM (*ret empty). Never fails on content: a word the
 * kernel would not take is kept as it is.
 */
int kernel_cmdline_parse(const char *text, KernelCmdline *ret);

/*
 * The last setting of module.param (module NULL: a bare kernel parameter; the last one wins,
 * as for the kernel and modprobe), or NULL. param may be spelled with dashes.
 */
const KernelCmdlineParam *kernel_cmdline_find(const KernelCmdline *c, const char *module, const char *param);

/*
 * The value of isolcpus= ("managed_irq,domain,1-3", "2,3") as
 * kernel/sched/isolation.c housekeeping_isolcpus_setup() reads it: leading flags nohz,
 * domain and managed_irq, each with its ','; an unknown flag of letters and '_' is skipped
 * (3662daf02350); then a CPU list. No flag means domain. *ret gets the CPUs (a new set),
 * *ret_managed_irq whether managed_irq is among the flags. Returns 0, -EINVAL when the kernel
 * isolates nothing (a flag with another character, no CPU list) or the list is no cpulist
 * cpuset_parse() reads, -ERANGE, -ENOMEM. Pure.
 */
typedef struct CpuSet CpuSet;
int kernel_isolcpus_parse(const char *value, CpuSet *ret, bool *ret_managed_irq);
