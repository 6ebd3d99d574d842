/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The metrics file for node_exporter's textfile collector: <TextfileDirectory=>/blkmqd.prom,
 * the exposition /metrics renders, written by a writer worker (host/writer.h: nothing on this
 * loop touches the file system) through hostfs_textfile_replace() (temporary name, rename).
 *
 * node_exporter reads a regular file, so neither a frozen (SIGSTOP) nor a stopped blkmqd can
 * hold up its scrape, and the file's mtime (node_textfile_mtime_seconds) is the time of the last
 * write: a blkmqd that stopped writing shows as an age, which the shipped alert
 * (monitoring/alerts.yml BlkmqdMetricsStale) catches. It is written
 *   - when something it shows changed (manager_metrics_changed(): a run's outcome, an
 *     evaluation, a verify's finding, a disk gone, module parameters, a reload), at most once a
 *     second (TEXTFILE_COALESCE_USEC) so that coldplug of 4,096 disks is a few writes, not
 *     thousands;
 *   - every MetricsIntervalSec= (default 60 s), for the counters and the file's age; with 0 there
 *     is no timer at all and a quiet blkmqd never wakes up for it.
 * One write at a time: a write still in the kernel (a frozen file system) is not queued behind;
 * the next one is made when it returns. The file stays when blkmqd stops (its age then says so).
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "macro.h"
#include "manager-internal.h"
#include "render.h"

#define TEXTFILE_NAME "blkmqd.prom"
#define TEXTFILE_LANE "textfile"
#define TEXTFILE_COALESCE_USEC (UINT64_C(1000000))

static void textfile_write(Manager *m);

static void on_textfile_done(WriteJob *j, void *userdata) {
        Manager *m = userdata;
        int r = j->ops[0].result;

        m->textfile_busy = false;
        if (r < 0 && r != m->textfile_error)
                log_full(r == -ENOENT ? LOG_NOTICE : LOG_WARNING, r, NULL, NULL, NULL, __FILE__, __LINE__, __func__,
                         "Failed to write the metrics file \"%s\"%s, ignoring: %m", j->ops[0].path,
                         r == -ENOENT ? " (no such directory: is prometheus-node-exporter installed? TextfileDirectory=off "
                                        "turns the file off)" : "");
        else if (r >= 0 && m->textfile_error < 0)
                log_info("Metrics file \"%s\" written again", j->ops[0].path);
        m->textfile_error = r < 0 ? r : 0;
        m->textfile_writes += r >= 0;
        if (m->textfile_dirty)
                textfile_write(m);
}

static void textfile_write(Manager *m) {
        _cleanup_(write_job_freep) WriteJob *j = NULL;
        _cleanup_free_ char *text = NULL;
        FuseFsContext ctx;
        int r;

        if (!m->textfile_path)
                return;
        if (m->textfile_busy) {
                m->textfile_dirty = true;       /* written when the one in flight returns */
                return;
        }
        m->textfile_dirty = false;
        manager_fuse_context(m, &ctx);
        ctx.metrics_cache = m->textfile_cache;
        r = render_metrics(&ctx, &text);
        if (r >= 0)
                r = (j = write_job_new(TEXTFILE_LANE)) ? write_job_add_textfile(j, m->textfile_path, text) : -ENOMEM;
        if (r >= 0)
                r = writer_submit(m->writer, TAKE_PTR(j), on_textfile_done, NULL, m);
        if (r < 0) {
                log_warning_errno(r, "Failed to write the metrics file \"%s\", ignoring: %m", m->textfile_path);
                return;
        }
        m->textfile_busy = true;
}

static int on_textfile_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        textfile_write(m);
        return 0;
}

static int on_metrics_interval(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        textfile_write(m);
        if (m->config.metrics_interval_usec > 0) {
                (void) sd_event_source_set_time_relative(s, m->config.metrics_interval_usec);
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        }
        return 0;
}

void manager_metrics_changed(Manager *m) {
        int r;

        if (!m->textfile_path || !m->started || m->ready_pending)
                return;         /* the first write is the ready one (manager_textfile_update()) */
        if (m->textfile_timer) {
                r = sd_event_source_get_enabled(m->textfile_timer, NULL);
                if (r > 0)
                        return;         /* a write is already due */
                r = sd_event_source_set_time_relative(m->textfile_timer, TEXTFILE_COALESCE_USEC);
                if (r >= 0)
                        r = sd_event_source_set_enabled(m->textfile_timer, SD_EVENT_ONESHOT);
        } else
                r = sd_event_add_time_relative(m->event, &m->textfile_timer, CLOCK_MONOTONIC, TEXTFILE_COALESCE_USEC,
                                               TEXTFILE_COALESCE_USEC / 4, on_textfile_timer, m);
        if (r < 0)
                log_warning_errno(r, "Failed to schedule the metrics file's write, ignoring: %m");
}

/* The file blkmqd writes: TextfileDirectory= when set ("" off), else the default directory for
 * the blkmqd on the machine's own root with the default state directory (the service), so a
 * test run or a --dry-run preview with a state directory of its own never writes the node's file. */
static char *textfile_path(const Manager *m) {
        const char *dir = m->config.textfile_dir;
        char *p = NULL;

        if (!dir && m->default_state && m->state && hostfs_is_live(m->hostfs))
                dir = CONFIG_TEXTFILE_DIR_DEFAULT;
        if (isempty(dir))
                return NULL;
        return asprintf(&p, "%s%s" TEXTFILE_NAME, dir, dir[strlen(dir) - 1] == '/' ? "" : "/") < 0 ? NULL : p;
}

void manager_textfile_update(Manager *m) {
        _cleanup_free_ char *path = textfile_path(m);
        uint64_t usec = m->config.metrics_interval_usec;
        int r = 0;

        if (!streq_ptr(path, m->textfile_path)) {
                if (path)
                        log_info("Metrics for node_exporter's textfile collector: \"%s\"%s", path,
                                 usec ? "" : " (written when something changes, MetricsIntervalSec=0)");
                else if (m->textfile_path)
                        log_info("Metrics file \"%s\" no longer written (TextfileDirectory=off); it stays as it is",
                                 m->textfile_path);
                free(m->textfile_path);
                m->textfile_path = TAKE_PTR(path);
                m->textfile_error = 0;
        }
        if (m->textfile_path && !m->textfile_cache && metrics_cache_new(&m->textfile_cache) < 0)
                m->textfile_path = mfree_str(m->textfile_path);

        if (!m->textfile_path || usec == 0)
                m->metrics_interval = sd_event_source_disable_unref(m->metrics_interval);
        else
                r = manager_arm_period(m, &m->metrics_interval, usec, on_metrics_interval);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the metrics file's interval timer, ignoring: %m");
        textfile_write(m);
}

void manager_textfile_done(Manager *m) {
        m->textfile_timer = sd_event_source_disable_unref(m->textfile_timer);
        m->metrics_interval = sd_event_source_disable_unref(m->metrics_interval);
        m->textfile_cache = metrics_cache_free(m->textfile_cache);
        m->textfile_path = mfree_str(m->textfile_path);
}

void manager_daemon_counters(void *userdata, DaemonCounters *ret) {
        assert(ret);
        const Manager *m = userdata;
        *ret = (DaemonCounters) {
                .reloads = m->reloads > 0 ? m->reloads - 1 : 0,
                .reload_failures = m->reload_failures,
                .last_reload_success = m->reload_ok,
                .last_reload_time = m->reload_time,
                .start_time = m->start_time,
                .last_verify_time = m->verify_time,
                .metrics_interval_usec = m->textfile_path ? m->config.metrics_interval_usec : 0,
        };
}
