/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "writer.h"

#define WRITER_IDLE_SEC 5

struct Writer {
        sd_event *event;
        sd_event_source *efd_source;
        int efd;
        HostFs *hostfs;
        uint64_t timeout_usec;
        size_t n_pending;               /* loop thread only */
        size_t n_overdue;               /* loop thread only */

        /* shared with the workers, under lock */
        pthread_mutex_t lock;
        pthread_cond_t cond;            /* work for an idle worker, or quit */
        WriteJob *queue, **queue_tail;  /* submitted, not started */
        WriteJob *running;              /* started, not finished (their lanes are busy) */
        WriteJob *done;                 /* finished, not delivered (newest first) */
        unsigned n_workers, n_idle, wakeups;
        bool quit;
};

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

WriteJob *write_job_new(const char *lane) {
        WriteJob *j = calloc(1, sizeof(WriteJob));
        if (!j)
                return NULL;
        j->lane = strdup(lane ?: "");
        j->stop_on_error = true;
        if (!j->lane)
                return write_job_free(j);
        return j;
}

int write_job_add(WriteJob *j, HostFsKind kind, const char *path, const char *value, bool read_back) {
        assert(j);
        WriteOp *n = realloc(j->ops, (j->n_ops + 1) * sizeof(WriteOp));
        if (!n)
                return -ENOMEM;
        j->ops = n;
        WriteOp *op = &n[j->n_ops];
        *op = (WriteOp) { .kind = kind, .read_back = read_back, .path = strdup(path), .value = strdup(value) };
        if (!op->path || !op->value) {
                free(op->path);
                free(op->value);
                return -ENOMEM;
        }
        j->n_ops++;
        return 0;
}

static int job_append(WriteJob *j, WriteOp op) {
        WriteOp *n = realloc(j->ops, (j->n_ops + 1) * sizeof(WriteOp));
        if (!n)
                return -ENOMEM;
        j->ops = n;
        n[j->n_ops++] = op;
        return 0;
}

int write_job_add_file(WriteJob *j, HostFsKind kind, const char *name, const char *content) {
        WriteOp op = { .type = content ? WRITE_OP_REPLACE : WRITE_OP_UNLINK, .kind = kind,
                       .path = strdup(name), .value = strdup(content ?: HOSTFS_UNLINK_RECORD) };
        if (!op.path || !op.value || job_append(j, op) < 0) {
                free(op.path);
                free(op.value);
                return -ENOMEM;
        }
        return 0;
}

int write_job_add_textfile(WriteJob *j, const char *path, const char *content) {
        WriteOp op = { .type = WRITE_OP_TEXTFILE, .kind = _HOSTFS_KIND_INVALID, .path = strdup(path), .value = strdup(content) };
        if (!op.path || !op.value || job_append(j, op) < 0) {
                free(op.path);
                free(op.value);
                return -ENOMEM;
        }
        return 0;
}

int write_job_add_state(WriteJob *j, State *s, StateSection section, const char *identity, const char *text) {
        WriteOp op = { .type = WRITE_OP_STATE, .kind = _HOSTFS_KIND_INVALID, .state = s, .section = section,
                       .path = strdup(identity), .value = strdup(text) };
        if (!op.path || !op.value || job_append(j, op) < 0) {
                free(op.path);
                free(op.value);
                return -ENOMEM;
        }
        return 0;
}

WriteJob *write_job_free(WriteJob *j) {
        if (!j)
                return NULL;
        for (size_t i = 0; i < j->n_ops; i++) {
                free(j->ops[i].path);
                free(j->ops[i].value);
                free(j->ops[i].before);
                free(j->ops[i].read);
        }
        sd_event_source_disable_unref(j->timer);
        free(j->instance_dir);
        free(j->ops);
        free(j->lane);
        free(j);
        return NULL;
}

/* Record an op done (hostfs_writes()), on the thread that owns h. */
static void record_op(HostFs *h, const WriteOp *op) {
        switch (op->type) {
        case WRITE_OP_WRITE:
        case WRITE_OP_UNLINK:           /* value is HOSTFS_UNLINK_RECORD */
                hostfs_write_record(h, op->kind, op->path, op->value, op->result);
                break;
        case WRITE_OP_REPLACE:
                hostfs_replace_file_record(h, op->kind, op->path, op->value, op->result);
                break;
        default:
                break;          /* the state directory is not the machine's: not recorded */
        }
}

/* The ops of j; the only code a worker runs besides the queue handling. */
static void run_ops(HostFs *h, WriteJob *j, bool record) {
        bool failed = false;
        for (size_t i = 0; i < j->n_ops; i++) {
                WriteOp *op = &j->ops[i];
                if (failed && j->stop_on_error)
                        break;
                op->attempted = true;
                /* record: inline, on the thread that owns h, recorded as hostfs_write() would */
                switch (op->type) {
                case WRITE_OP_WRITE:
                        if (j->instance_dir && op->kind == HOSTFS_SYSFS) {
                                op->result = hostfs_write_raw_instance(h, op->kind, op->path, op->value, j->instance_dir,
                                                                       j->instance_ino);
                                if (record)
                                        hostfs_write_record(h, op->kind, op->path, op->value, op->result);
                        } else
                                op->result = record ? hostfs_write(h, op->kind, op->path, op->value) :
                                                      hostfs_write_raw(h, op->kind, op->path, op->value);
                        break;
                case WRITE_OP_REPLACE:
                        op->result = record ? hostfs_replace_file(h, op->kind, op->path, op->value) :
                                              hostfs_replace_file_raw(h, op->kind, op->path, op->value);
                        break;
                case WRITE_OP_UNLINK:
                        op->result = record ? hostfs_unlink(h, op->kind, op->path) : hostfs_unlink_raw(h, op->kind, op->path);
                        break;
                case WRITE_OP_STATE:
                        op->result = state_save_text(op->state, op->section, op->path, op->value);
                        break;
                case WRITE_OP_TEXTFILE:
                        op->result = hostfs_textfile_replace(op->path, op->value);
                        break;
                default:
                        op->result = -EINVAL;
                }
                if (op->result < 0) {
                        failed = true;
                        continue;
                }
                if (op->read_back)
                        op->read_result = hostfs_read(h, op->kind, op->path, &op->read);
        }
}

void writer_run_inline(HostFs *h, WriteJob *j) {
        assert(j);
        j->submitted_usec = now_usec();
        run_ops(h, j, true);
        j->done_usec = now_usec();
}

/* Under lock: the first queued job whose lane no running job holds, unlinked. */
static WriteJob *take_runnable(Writer *w) {
        for (WriteJob **p = &w->queue, *prev = NULL; *p; prev = *p, p = &(*p)->next) {
                WriteJob *j = *p;
                bool busy = false;
                for (WriteJob *r = w->running; r && !busy; r = r->next)
                        busy = streq(r->lane, j->lane);
                if (busy)
                        continue;
                *p = j->next;
                if (w->queue_tail == &j->next)
                        w->queue_tail = prev ? &prev->next : &w->queue;
                j->next = w->running;
                w->running = j;
                j->running = true;
                return j;
        }
        return NULL;
}

static void unlink_running(Writer *w, WriteJob *j) {
        for (WriteJob **p = &w->running; *p; p = &(*p)->next)
                if (*p == j) {
                        *p = j->next;
                        break;
                }
}

static void *worker_main(void *userdata) {
        Writer *w = userdata;

        pthread_mutex_lock(&w->lock);
        for (;;) {
                WriteJob *j = take_runnable(w);
                if (j) {
                        pthread_mutex_unlock(&w->lock);
                        run_ops(w->hostfs, j, false);
                        pthread_mutex_lock(&w->lock);
                        j->done_usec = now_usec();
                        unlink_running(w, j);
                        j->running = false;
                        j->finished = true;
                        j->next = w->done;
                        w->done = j;
                        uint64_t one = 1;
                        (void) !write(w->efd, &one, sizeof(one));
                        continue;
                }
                if (w->quit)
                        break;

                struct timespec until;
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_sec += WRITER_IDLE_SEC;
                w->n_idle++;
                for (;;) {
                        int r = pthread_cond_timedwait(&w->cond, &w->lock, &until);
                        if (w->wakeups > 0) {           /* the waker took us off n_idle */
                                w->wakeups--;
                                break;
                        }
                        if (r == ETIMEDOUT || w->quit) {
                                w->n_idle--;
                                goto out;
                        }
                }
        }
out:
        w->n_workers--;
        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

static int on_efd(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Writer *w = userdata;
        uint64_t n;

        (void) !read(w->efd, &n, sizeof(n));
        pthread_mutex_lock(&w->lock);
        WriteJob *done = w->done;
        w->done = NULL;
        pthread_mutex_unlock(&w->lock);

        /* oldest first */
        WriteJob *fifo = NULL;
        while (done) {
                WriteJob *next = done->next;
                done->next = fifo;
                fifo = done;
                done = next;
        }
        while (fifo) {
                WriteJob *j = fifo;
                fifo = j->next;
                for (size_t i = 0; i < j->n_ops; i++)
                        if (j->ops[i].attempted)
                                record_op(w->hostfs, &j->ops[i]);
                j->timer = sd_event_source_disable_unref(j->timer);
                w->n_pending--;
                if (j->timed_out)
                        w->n_overdue--;
                if (j->on_done)
                        j->on_done(j, j->userdata);
                write_job_free(j);
        }
        return 0;
}

static int on_deadline(sd_event_source *s, uint64_t usec, void *userdata) {
        WriteJob *j = userdata;
        Writer *w = j->writer;

        pthread_mutex_lock(&w->lock);
        bool finished = j->finished, started = j->running, lane_busy = false;
        for (WriteJob *r = w->running; r && !started && !lane_busy; r = r->next)
                lane_busy = streq(r->lane, j->lane);
        pthread_mutex_unlock(&w->lock);
        if (finished)
                return 0;               /* returned just now: on_efd delivers it */
        if (!started && !lane_busy)     /* still queued behind busy workers: the deadline is the kernel's */
                return sd_event_source_set_time_relative(s, w->timeout_usec) < 0 ? 0 :
                       sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        /* running past the deadline, or waiting for its lane's earlier job that is (a disk's
         * write behind the save of its originals to a state directory that does not answer) */
        j->lane_blocked = !started;
        j->timed_out = true;
        w->n_overdue++;
        if (j->on_timeout)
                j->on_timeout(j, j->userdata);
        return 0;
}

int writer_new(sd_event *event, HostFs *h, uint64_t timeout_usec, Writer **ret) {
        assert(ret);
        _cleanup_(writer_freep) Writer *w = calloc(1, sizeof(Writer));
        int r;

        if (!w)
                return -ENOMEM;
        w->event = sd_event_ref(event);
        w->hostfs = h;
        w->timeout_usec = timeout_usec ?: WRITER_TIMEOUT_USEC_DEFAULT;
        w->queue_tail = &w->queue;
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->cond, NULL);
        w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->efd < 0)
                return negative_errno();
        r = sd_event_add_io(event, &w->efd_source, w->efd, EPOLLIN, on_efd, w);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(w);
        return 0;
}

Writer *writer_free(Writer *w) {
        if (!w)
                return NULL;
        pthread_mutex_lock(&w->lock);
        w->quit = true;
        /* queued jobs never start */
        while (w->queue) {
                WriteJob *j = w->queue;
                w->queue = j->next;
                write_job_free(j);
        }
        w->queue_tail = &w->queue;
        pthread_cond_broadcast(&w->cond);
        /* idle workers leave at once; a worker inside a write is waited for only briefly */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        while (w->n_workers > 0 && !w->running)
                if (pthread_cond_timedwait(&w->cond, &w->lock, &until) == ETIMEDOUT)
                        break;
        bool abandoned = w->n_workers > 0;
        WriteJob *done = w->done;
        w->done = NULL;
        pthread_mutex_unlock(&w->lock);
        while (done) {
                WriteJob *next = done->next;
                write_job_free(done);
                done = next;
        }
        w->efd_source = sd_event_source_disable_unref(w->efd_source);
        if (abandoned) {
                /* a worker is stuck in the kernel: it still uses w; the process exits soon */
                for (WriteJob *j = w->running; j; j = j->next)
                        j->timer = sd_event_source_disable_unref(j->timer);
                w->event = sd_event_unref(w->event);
                return NULL;
        }
        closep(&w->efd);
        sd_event_unref(w->event);
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
}

int writer_submit(Writer *w, WriteJob *j, write_job_handler_t on_done, write_job_handler_t on_timeout, void *userdata) {
        assert(w);
        int r;

        if (j->n_ops == 0) {
                write_job_free(j);
                return -EINVAL;
        }
        j->writer = w;
        j->on_done = on_done;
        j->on_timeout = on_timeout;
        j->userdata = userdata;
        j->submitted_usec = now_usec();
        r = sd_event_add_time_relative(w->event, &j->timer, CLOCK_MONOTONIC, w->timeout_usec, 0, on_deadline, j);
        if (r < 0) {
                write_job_free(j);
                return r;
        }

        pthread_mutex_lock(&w->lock);
        if (w->n_idle > 0) {
                w->n_idle--;
                w->wakeups++;
                pthread_cond_signal(&w->cond);
        } else if (w->n_workers < WRITER_THREADS_MAX) {
                pthread_t t;
                pthread_attr_t attr;
                pthread_attr_init(&attr);
                pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                pthread_attr_setstacksize(&attr, 256 * 1024);
                r = -pthread_create(&t, &attr, worker_main, w);
                pthread_attr_destroy(&attr);
                if (r < 0 && w->n_workers == 0) {
                        pthread_mutex_unlock(&w->lock);
                        write_job_free(j);
                        return r;
                }
                if (r == 0)
                        w->n_workers++;
        }
        /* else: every worker busy; the job waits for the first to finish */
        j->next = NULL;
        *w->queue_tail = j;
        w->queue_tail = &j->next;
        pthread_mutex_unlock(&w->lock);
        w->n_pending++;
        return 0;
}

bool writer_running(Writer *w) {
        if (!w)
                return false;
        pthread_mutex_lock(&w->lock);
        bool r = w->running;
        pthread_mutex_unlock(&w->lock);
        return r;
}

size_t writer_pending(const Writer *w) {
        return w ? w->n_pending : 0;
}

size_t writer_overdue(const Writer *w) {
        return w ? w->n_overdue : 0;
}

uint64_t writer_timeout_usec(const Writer *w) {
        assert(w);
        return w->timeout_usec;
}
