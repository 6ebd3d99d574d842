/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdarg.h>

/*
 * Logging in the systemd idiom. Under systemd (stderr connected to the journal,
 * $JOURNAL_STREAM) messages go to sd-journal with structured fields; otherwise to
 * stderr as "<N>message" (sd-daemon priority prefixes, see sd-daemon(3)).
 *
 * log_*_errno(r, ...) log and return r (negative), with ERRNO= and %m set from r.
 * log_device_*(name, ...) add DEVICE=<name> (and the caller's extra fields).
 */

#include <stdbool.h>
#include <syslog.h>

/*
 * Stable MESSAGE_IDs (journalctl MESSAGE_ID=...); units/blkmqd.catalog explains each one
 * (journalctl -x). A record about one knob of one disk (apply/apply.c log_knob()) also has
 * DEVICE=, BLKMQD_KNOB= and, where there are values, BLKMQD_OLD_VALUE= and BLKMQD_NEW_VALUE=.
 */
#define BLKMQD_MESSAGE_START           "8f30db4a3bdf402d801d5850f0a3f47d"
#define BLKMQD_MESSAGE_DECISION        "4857cd2c47454447b8702c80b5468310"
#define BLKMQD_MESSAGE_WRITE           "fc294015e7e541848f4f80885a4f974e"  /* blkmqd wrote a value (notice) */
#define BLKMQD_MESSAGE_RESTORE         "53fd543c75c74a848bae6888d5d6b7c9"  /* blkmqd put an original back (notice) */
#define BLKMQD_MESSAGE_WRITE_FAILED    "0ac495871da64d7993b376d97a3b39c3"
#define BLKMQD_MESSAGE_EXTERNAL_CHANGE "1a6e7eeba9564d58bfb5cd08ccf7907b"
#define BLKMQD_MESSAGE_RELOAD          "f3df3babde7244f3aeadcfdd08a9a1a3"  /* a configuration reload, done or refused */
#define BLKMQD_MESSAGE_STOP            "8cf0e9055a284ea299a480094054eb5a"

/* Set the maximum level logged (LOG_INFO by default, LOG_DEBUG with -v). */
void log_set_max_level(int level);

/*
 * Test seam: every message that passes the level check is also handed to fn (level, DEVICE=
 * or NULL, the formatted text). NULL removes it. Production code never sets one.
 */
typedef void (*log_capture_t)(void *userdata, int level, const char *device, const char *message);
void log_set_capture(log_capture_t fn, void *userdata);

/* Decide between journal and stderr (call once at start). */
void log_open(void);

/*
 * The workhorse. error: 0 or an errno (either sign) that sets ERRNO= and %m.
 * device: disk name for DEVICE= or NULL. message_id: NULL or one of the ids above.
 * extra: NULL-terminated list of additional "FIELD=value" strings, or NULL.
 * Returns -abs(error) (or 0 when error is 0).
 */
int log_full(int level, int error, const char *device, const char *message_id, const char * const *extra,
             const char *file, int line, const char *func, const char *fmt, ...)
        __attribute__((format(printf, 9, 10)));
/* log_full() with the arguments of fmt as a va_list (for helpers that add fields of their own). */
int log_fullv(int level, int error, const char *device, const char *message_id, const char * const *extra,
              const char *file, int line, const char *func, const char *fmt, va_list ap)
        __attribute__((format(printf, 9, 0)));

#define log_full_errno(level, error, ...) \
        log_full(level, error, NULL, NULL, NULL, __FILE__, __LINE__, __func__, __VA_ARGS__)

#define log_debug(...)   log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...)    log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...)  log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...)   log_full_errno(LOG_ERR, 0, __VA_ARGS__)

#define log_debug_errno(e, ...)   log_full_errno(LOG_DEBUG, e, __VA_ARGS__)
#define log_info_errno(e, ...)    log_full_errno(LOG_INFO, e, __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, e, __VA_ARGS__)
#define log_error_errno(e, ...)   log_full_errno(LOG_ERR, e, __VA_ARGS__)

#define log_device_full(level, error, dev, msgid, extra, ...) \
        log_full(level, error, dev, msgid, extra, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_device_debug(dev, ...)   log_device_full(LOG_DEBUG, 0, dev, NULL, NULL, __VA_ARGS__)
#define log_device_info(dev, ...)    log_device_full(LOG_INFO, 0, dev, NULL, NULL, __VA_ARGS__)
#define log_device_warning_errno(dev, e, ...) log_device_full(LOG_WARNING, e, dev, NULL, NULL, __VA_ARGS__)
