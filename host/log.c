/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
/* sd_journal_sendv() would add this file's CODE_FILE/CODE_LINE/CODE_FUNC next to the caller's */
#define SD_JOURNAL_SUPPRESS_LOCATION 1
#include <systemd/sd-journal.h>

#include "log.h"
#include "macro.h"

static int max_level = LOG_INFO;
static bool use_journal = false;
static log_capture_t capture = NULL;
static void *capture_userdata = NULL;

void log_set_capture(log_capture_t fn, void *userdata) {
        capture = fn;
        capture_userdata = userdata;
}

void log_set_max_level(int level) {
        max_level = level;
}

void log_open(void) {
        const char *e = getenv("JOURNAL_STREAM");
        struct stat st;
        unsigned long long dev, ino;

        use_journal = e && sscanf(e, "%llu:%llu", &dev, &ino) == 2 &&
                      fstat(STDERR_FILENO, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

int log_full(int level, int error, const char *device, const char *message_id, const char * const *extra,
             const char *file, int line, const char *func, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = log_fullv(level, error, device, message_id, extra, file, line, func, fmt, ap);
        va_end(ap);
        return r;
}

int log_fullv(int level, int error, const char *device, const char *message_id, const char * const *extra,
              const char *file, int line, const char *func, const char *fmt, va_list ap) {
        int saved = errno;
        if (error < 0)
                error = -error;
        if (level > max_level) {
                errno = saved;
                return -error;
        }

        char msg[2048];
        errno = error;                  /* so %m expands to the error */
        vsnprintf(msg, sizeof(msg), fmt, ap);

        if (capture)
                capture(capture_userdata, level, device, msg);

        if (use_journal) {
                char f_msg[2100], f_prio[16], f_file[256], f_line[32], f_func[128], f_errno[32],
                     f_dev[96], f_id[64];
                struct iovec iov[16 + 8];
                size_t n = 0;
#define IOV(s) (iov[n++] = (struct iovec) { .iov_base = (void *) (s), .iov_len = strlen(s) })
                snprintf(f_msg, sizeof(f_msg), "MESSAGE=%s%s%s", device ? device : "", device ? ": " : "", msg);
                IOV(f_msg);
                snprintf(f_prio, sizeof(f_prio), "PRIORITY=%d", level);
                IOV(f_prio);
                snprintf(f_file, sizeof(f_file), "CODE_FILE=%s", file);
                IOV(f_file);
                snprintf(f_line, sizeof(f_line), "CODE_LINE=%d", line);
                IOV(f_line);
                snprintf(f_func, sizeof(f_func), "CODE_FUNC=%s", func);
                IOV(f_func);
                IOV("SYSLOG_IDENTIFIER=blkmqd");
                if (error) {
                        snprintf(f_errno, sizeof(f_errno), "ERRNO=%d", error);
                        IOV(f_errno);
                }
                if (device) {
                        snprintf(f_dev, sizeof(f_dev), "DEVICE=%s", device);
                        IOV(f_dev);
                }
                if (message_id) {
                        snprintf(f_id, sizeof(f_id), "MESSAGE_ID=%s", message_id);
                        IOV(f_id);
                }
                for (size_t i = 0; extra && extra[i] && n < ELEMENTSOF(iov); i++)
                        IOV(extra[i]);
#undef IOV
                sd_journal_sendv(iov, n);
        } else
                fprintf(stderr, "<%d>%s%s%s\n", level, device ? device : "", device ? ": " : "", msg);

        errno = saved;
        return -error;
}
