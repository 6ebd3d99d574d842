/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * writer: kernel writes off the event loop.
 *
 * A write to sysfs or procfs can block for as long as the kernel likes: an elevator switch
 * freezes the queue (waits for every request in flight, block/blk-mq.c
 * blk_mq_freeze_queue_wait()) and may load the elevator's module (block/elevator.c
 * elevator_find_get() -> request_module()); a queue with I/O stuck behind a dead path never
 * unfreezes. blkmqd's sd-event loop also answers FUSE, so a write done there freezes the tree.
 *
 * So the loop hands each write to a worker thread as a WriteJob: one or more writes (each
 * optionally read back) done in order by hostfs_write_raw() and hostfs_read(), nothing else.
 * Workers never touch the registry or any state the FUSE renderers see; the outcome comes back
 * to the loop (an eventfd in sd-event), where the job's on_done runs and the write is recorded
 * in hostfs. Besides kernel writes, a job may replace or remove blkmqd's modprobe.d file and
 * store a file of the state directory (WriteOpType): each can wait for a disk's fsync().
 * Jobs of one lane (a disk name, "modules", "overrides") run one at a time in submission
 * order; jobs of other lanes never wait for them: a queued job whose lane is free gets an idle worker or a new
 * one (at most WRITER_THREADS_MAX threads; idle ones exit after 5 s). Each job has a deadline
 * (the writer's timeout): when it passes with the job still running, on_timeout runs on the
 * loop (a job still queued behind WRITER_THREADS_MAX busy workers gets another period: the
 * deadline is for the kernel's answer; a job queued behind a job of its own lane that has not
 * returned times out like it, with lane_blocked set); on_done still runs when the write
 * returns, however late.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "hostfs.h"
#include "state.h"

#define WRITER_THREADS_MAX 64
#define WRITER_TIMEOUT_USEC_DEFAULT (5 * UINT64_C(1000000))

typedef struct Writer Writer;
typedef struct WriteJob WriteJob;

/*
 * What an op does. Every one of them may block on the kernel or a disk, and is therefore done
 * on a worker, never on the loop:
 *   WRITE_OP_WRITE    hostfs_write_raw() of value to path (sysfs, procfs), read back on request;
 *   WRITE_OP_REPLACE  hostfs_replace_file_raw(): path (a file blkmqd owns in kind, modprobe.d)
 *                     replaced by value (temp file, fsync, rename, fsync of the directory);
 *   WRITE_OP_UNLINK   hostfs_unlink_raw() of path (modprobe.d);
 *   WRITE_OP_STATE    state_save_text(): the state directory's file of identity path in section
 *                     set to value, which state_format() made ("" removes it); not recorded in
 *                     hostfs (the state directory is blkmqd's own, not the machine's);
 *   WRITE_OP_TEXTFILE hostfs_textfile_replace(): the file path (absolute, in node_exporter's
 *                     textfile directory) replaced by value; not recorded (blkmqd's own output).
 */
typedef enum WriteOpType {
        WRITE_OP_WRITE,
        WRITE_OP_REPLACE,
        WRITE_OP_UNLINK,
        WRITE_OP_STATE,
        WRITE_OP_TEXTFILE,
        _WRITE_OP_TYPE_MAX,
} WriteOpType;

typedef struct WriteOp {
        WriteOpType type;
        HostFsKind kind;
        State *state;           /* WRITE_OP_STATE: where, and the section */
        StateSection section;
        char *path;
        char *value;
        char *before;           /* the caller's: the value read before (for its log), or NULL */
        bool read_back;         /* hostfs_read() path after a successful write */
        /* results, valid in on_done */
        bool attempted;         /* false: an earlier op failed and the job stops at the first failure */
        int result;             /* of hostfs_write_raw(): 0 or -errno */
        int read_result;        /* of the read back: 0 or -errno */
        char *read;             /* the read back, as read */
} WriteOp;

typedef void (*write_job_handler_t)(WriteJob *job, void *userdata);

struct WriteJob {
        char *lane;             /* jobs with the same lane run one at a time, in order */
        WriteOp *ops;
        size_t n_ops;
        bool stop_on_error;     /* skip the remaining ops after a failed write */
        bool timed_out;         /* the deadline passed before the job finished (loop thread) */
        bool lane_blocked;      /* ... and the job had not started: an earlier job of its lane had not returned */
        uint64_t submitted_usec;        /* CLOCK_MONOTONIC */
        uint64_t done_usec;
        int tag;                /* the caller's */
        /* the disk the job was decided for: its sysfs writes are not done (-ENODEV) once
         * instance_dir ("block/<name>") is gone or has another inode than instance_ino
         * (hostfs_write_raw_instance()); NULL/0: no check */
        char *instance_dir;
        uint64_t instance_ino;
        /* private */
        Writer *writer;
        write_job_handler_t on_done, on_timeout;
        void *userdata;
        sd_event_source *timer;
        bool running, finished;
        WriteJob *next;
};

/* A job for lane with no ops yet. NULL on ENOMEM. */
WriteJob *write_job_new(const char *lane);
/* Append a write of value to path of kind (and a read back when read_back). Returns 0, -ENOMEM. */
int write_job_add(WriteJob *j, HostFsKind kind, const char *path, const char *value, bool read_back);
/* Append a WRITE_OP_REPLACE (content) or WRITE_OP_UNLINK (content NULL) of name in kind. Returns 0, -ENOMEM. */
int write_job_add_file(WriteJob *j, HostFsKind kind, const char *name, const char *content);
/* Append a WRITE_OP_STATE: text (state_format()) stored as identity's file of section in s. Returns 0, -ENOMEM. */
int write_job_add_state(WriteJob *j, State *s, StateSection section, const char *identity, const char *text);
/* Append a WRITE_OP_TEXTFILE: path (absolute) replaced by content. Returns 0, -ENOMEM. */
int write_job_add_textfile(WriteJob *j, const char *path, const char *content);
WriteJob *write_job_free(WriteJob *j);

/*
 * A writer on event's thread (the loop thread), writing through h, with a deadline of
 * timeout_usec per job (0: WRITER_TIMEOUT_USEC_DEFAULT). Returns 0, -ENOMEM, -errno of eventfd().
 */
int writer_new(sd_event *event, HostFs *h, uint64_t timeout_usec, Writer **ret);

/*
 * Stop the workers and free. Jobs still running (a write that never returns) are abandoned:
 * their callbacks never run and their worker keeps its memory until the process exits.
 */
Writer *writer_free(Writer *w);
static inline void writer_freep(Writer **w) {
        writer_free(*w);
}

/*
 * Hand j to the workers (the writer owns it from now on). on_done(j, userdata) runs on the loop
 * thread once every op returned, then j is freed; on_timeout (may be NULL) runs before it when the
 * deadline passes first. Returns 0, -EINVAL for a job without ops, -ENOMEM / -errno when no
 * worker could be started (j is freed then; nothing was written).
 */
int writer_submit(Writer *w, WriteJob *j, write_job_handler_t on_done, write_job_handler_t on_timeout, void *userdata);

/* Do j's ops on this thread, recorded by hostfs_write() (the synchronous path: tests, fixture runs). */
void writer_run_inline(HostFs *h, WriteJob *j);

/* True while a worker is inside a job (e.g. a write the kernel never returns): then writer_free()
 * abandons it, and the HostFs it writes through must outlive the process's exit path. */
bool writer_running(Writer *w);

/* Jobs submitted and not yet delivered (running, queued or awaiting on_done). */
size_t writer_pending(const Writer *w);
/* Jobs past their deadline and not yet returned. */
size_t writer_overdue(const Writer *w);
uint64_t writer_timeout_usec(const Writer *w);

static inline void write_job_freep(WriteJob **j) {
        write_job_free(*j);
}
