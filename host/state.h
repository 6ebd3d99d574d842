/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Persistent state in the state directory (--state-dir, else $STATE_DIRECTORY which
 * systemd's StateDirectory= sets, else /var/lib/blkmqd):
 *   overrides/<identity>   policy/<knob> overrides of one disk, "knob=value" lines
 *   originals/<identity>   values blkmqd changed, as they were before its first write
 *                          ("elevator=mq-deadline", "irq.36=0-3"), so a restart after a crash
 *                          still restores them; removed once restored. First line "boot=<boot_id>":
 *                          a file from an earlier boot is dropped at load (a reboot put the
 *                          kernel's own values back; manager/persist.c). Also
 *                          "nr_requests.before_override=N" while blkmqd's elevator switch stands:
 *                          not an original, what an nr_requests override's "auto" puts back
 *                          (Device.nr_before_override; missing in an older blkmqd's file: unknown),
 *                          and what blkmqd wrote over each original ("written.elevator=kyber",
 *                          "written.irq.36=1", with "instance."/"readback." keys: apply/apply.h
 *                          apply_adopt_written(); missing in an older blkmqd's file: unknown)
 *   measured/<identity>    the class by measurement and the window that made it ("speed=fast",
 *                          "p50_usec=84.000", ...: policies/speed.h speed_state_to_kv()), first
 *                          line "boot=<boot_id>" as in originals/: kept for a restart in the same
 *                          boot, dropped at load after a reboot (manager/persist.c
 *                          manager_load_measured(), docs/DESIGN-NOTES.md "Measured speed")
 * keyed by the disk's stable identity (WWID, serial, loop backing file, device path),
 * never by its kernel name. Files are written atomically: temp file, fsync, rename,
 * fsync of the directory, so a crash leaves the old or the new file, never a torn one.
 */

#include "policy.h"

typedef struct State State;

typedef enum StateSection {
        STATE_OVERRIDES,
        STATE_ORIGINALS,
        STATE_MEASURED,
        _STATE_SECTION_MAX,
} StateSection;

/*
 * Open (creating if needed, mode 0700) the state directory and lock it (flock(2), LOCK_EX on
 * the directory itself, held while the State lives; released by the kernel when the process
 * dies, so a restart after a crash finds it free). Returns 0, -EBUSY when another process
 * (another blkmqd) holds the lock: its originals and overrides are not this one's to load,
 * restore or remove; or -errno.
 */
int state_open(const char *dir, State **ret);
State *state_free(State *s);
static inline void state_freep(State **s) {
        state_free(*s);
}
const char *state_dir(const State *s);

/*
 * Save the overrides of identity; an override set with nothing in it removes the file.
 * Returns 0 or -errno.
 */
int state_save_overrides(State *s, const char *identity, const PolicyOverrides *o);

/*
 * Load the stored "knob=value" lines of identity into a strv of alternating key, value.
 * Returns 0 (ret NULL when there is nothing stored), -EBADMSG for a corrupt file (it is
 * renamed to <name>.corrupt so it is reported once and set aside), -errno.
 */
int state_load_overrides(State *s, const char *identity, char ***ret);

/*
 * Store kv (a strv of alternating key, value; NULL or empty removes the file) for identity
 * in section, atomically. Returns 0 or -errno.
 */
int state_save(State *s, StateSection section, const char *identity, char * const *kv);

/*
 * The two halves of state_save(), for a save done on a writer worker (host/writer.h):
 * state_format() renders kv as the file's text on the loop thread ("" for an empty kv: the
 * file is removed; NULL on ENOMEM); state_save_text() stores it (temp file, fsync, rename,
 * fsync of the directory; "" removes the file). state_save_text() uses only what state_open()
 * set up and its arguments, so a worker may call it while the loop goes on; it blocks as long
 * as the state directory's file system takes (a slow or frozen disk). Returns 0 or -errno.
 */
char *state_format(StateSection section, const char *identity, char * const *kv);
int state_save_text(State *s, StateSection section, const char *identity, const char *text);

/* The overrides as state_save_overrides() stores them: a strv of alternating key, value
 * (NULL when there is nothing to store). Returns 0 or -ENOMEM. */
int state_overrides_kv(const PolicyOverrides *o, char ***ret);

/*
 * Load what state_save() stored: a strv of alternating key, value (NULL when nothing is
 * stored). -EBADMSG for a corrupt file (renamed to <name>.corrupt), -errno.
 */
int state_load(State *s, StateSection section, const char *identity, char ***ret);

/* The file name used for identity ("wwid:naa.5000…" -> "wwid:naa.5000…"; '/' and others %-escaped). NULL on ENOMEM. */
char *state_escape_identity(const char *identity);
