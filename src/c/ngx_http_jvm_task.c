
/*
 * nginx-jvm: handlers off the event loop, and the eventfd that JVM threads
 * wake the loop with (for tasks, WebSockets and Java's loop timers).
 *
 * A request for a pool, virtual-thread or async location becomes a task: the
 * request is described to Java as for the event loop, Java starts the
 * handler on a JVM thread and returns at once.  When the handler answers (or
 * a streamed body has its next piece), a JVM thread queues the task as ready
 * and writes to this module's eventfd; the event loop then takes what is
 * ready and resumes each request through r->write_event_handler, as nginx
 * resumes a request after its own thread pool's work.  No JVM thread ever
 * calls nginx: the eventfd write is all they do.
 *
 * Java knows a task by the address of its request's ngx_http_jvm_ctx_t.
 * When the request ends, however it ends, the context's cleanup cancels the
 * task on the event loop, so Java never names that address again.
 */


#include "ngx_http_jvm_module.h"

#include <sys/eventfd.h>


static void ngx_http_jvm_task_notified(ngx_event_t *ev);
static void ngx_http_jvm_task_resume(uint64_t id);
static void ngx_http_jvm_task_timeout(ngx_event_t *ev);
static void ngx_http_jvm_task_quit_watch(ngx_event_t *ev);


/* How often the loop looks whether the worker began a graceful quit, ms. */
#define NGX_HTTP_JVM_QUIT_WATCH  100


/* like ngx_notify's eventfd */
static ngx_http_jvm_eventfd_t  ngx_http_jvm_notify;
static ngx_event_t             ngx_http_jvm_quit_ev;


ngx_int_t
ngx_http_jvm_tasks_init(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf)
{
    ngx_fd_t   fd;
    ngx_int_t  rc;

    fd = eventfd(0, EFD_NONBLOCK|EFD_CLOEXEC);
    if (fd == -1) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, ngx_errno,
                      "jvm: eventfd() failed");
        return NGX_ERROR;
    }

    if (ngx_http_jvm_eventfd_add(&ngx_http_jvm_notify, fd,
                                 ngx_http_jvm_task_notified, cycle->log)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    /*
     * Java's timers stop when a graceful quit begins (nginx has no hook
     * for that, so a timer looks); cancelable, so that the quit never
     * waits for it.
     */

    ngx_http_jvm_quit_ev.handler = ngx_http_jvm_task_quit_watch;
    ngx_http_jvm_quit_ev.data = &ngx_http_jvm_notify.conn;
    ngx_http_jvm_quit_ev.log = cycle->log;
    ngx_http_jvm_quit_ev.cancelable = 1;

    ngx_add_timer(&ngx_http_jvm_quit_ev, NGX_HTTP_JVM_QUIT_WATCH);

    /*
     * jvm_mode virtual's threads run on jvm_pool_size carriers of the
     * worker's own; coloop's fall back to the JDK's scheduler (a JDK that
     * cannot have coloop lacks the builder those carriers need too)
     */

    rc = ngx_http_jvm_vm_configure(cycle, fd,
                                   jmcf->uses_pool ? jmcf->pool_size : 0,
                                   jmcf->uses_virtual ? jmcf->pool_size : 0,
                                   jmcf->queue,
                                   jmcf->uses_virtual || jmcf->uses_coloop,
                                   jmcf->uses_coloop, jmcf->ws_send_queue);

    if (rc == NGX_DECLINED) {
        /* said once; each request of such a location answers 503 */
        ngx_http_jvm_vm.no_virtual = 1;
        return NGX_OK;
    }

    return rc;
}


/*
 * An eventfd as a read event of the loop (also the topics' wake-up): a
 * connection of its own, as ngx_notify's, so it takes none of
 * worker_connections.
 */

ngx_int_t
ngx_http_jvm_eventfd_add(ngx_http_jvm_eventfd_t *efd, ngx_fd_t fd,
    ngx_event_handler_pt handler, ngx_log_t *log)
{
    efd->conn.fd = fd;
    efd->conn.read = &efd->read;
    efd->conn.write = &efd->write;
    efd->conn.log = log;

    efd->read.data = &efd->conn;
    efd->read.handler = handler;
    efd->read.log = log;
    efd->write.data = &efd->conn;
    efd->write.log = log;

    return ngx_add_event(&efd->read, NGX_READ_EVENT, 0);
}


/*
 * Starts handler "handler" of phase "phase" as a task for the request
 * described in the request buffer.  NGX_DONE: accepted, the request counted
 * and its write_event_handler set to send the response (a phase handler
 * sets its own after this returns); otherwise what to finalize with.
 */

ngx_int_t
ngx_http_jvm_task_submit(ngx_http_request_t *r, ngx_int_t handler,
    ngx_uint_t phase, size_t len)
{
    ngx_int_t                 rc;
    ngx_http_jvm_ctx_t       *ctx;
    ngx_http_jvm_loc_conf_t  *jlcf;

    jlcf = ngx_http_get_module_loc_conf(r, ngx_http_jvm_module);

    if ((jlcf->mode == NGX_HTTP_JVM_VIRTUAL
         || jlcf->mode == NGX_HTTP_JVM_COLOOP)
        && ngx_http_jvm_vm.no_virtual)
    {
        return NGX_HTTP_SERVICE_UNAVAILABLE;
    }

    ctx = ngx_http_jvm_get_ctx(r);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* the timer keeps a quitting worker alive until the task answers */

    ctx->timer.handler = ngx_http_jvm_task_timeout;
    ctx->timer.data = r;
    ctx->timer.log = r->connection->log;

    rc = ngx_http_jvm_vm_submit(r, handler, phase, len, ctx, jlcf->mode,
                                jlcf->async, &len);

    ngx_http_jvm_cost_take(r);

    if (rc == NGX_ERROR) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (rc == NGX_DECLINED) {
        /* refused (503) or failed at once: an encoded error response */
        return ngx_http_jvm_send_response(r, len);
    }

    ctx->task = 1;
    ctx->interrupt = jlcf->abort_interrupt ? 1 : 0;
    ngx_add_timer(&ctx->timer, jlcf->response_timeout);

    r->main->count++;
    r->read_event_handler = ngx_http_test_reading;
    r->write_event_handler = ngx_http_jvm_task_respond;

    /*
     * The client's leaving is seen by ngx_http_test_reading when its
     * connection next has an event; one that half-closed before the task
     * started (its FIN came with the request) has none to come: the read
     * event is posted to look at once.  Pipelined requests waiting in the
     * socket are not a leaving: only the end of the client's input is.
     */

    if (r->connection->read->pending_eof) {
        ngx_post_event(r->connection->read, &ngx_posted_events);
    }

    return NGX_DONE;
}


static void
ngx_http_jvm_task_quit_watch(ngx_event_t *ev)
{
    if (ngx_exiting || ngx_terminate) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, ev->log, 0,
                       "jvm: quitting, Java's timers stop");

        ngx_http_jvm_vm_quitting(ev->log);
        return;
    }

    ngx_add_timer(ev, NGX_HTTP_JVM_QUIT_WATCH);
}


/*
 * The ids of one Worker.wake() while the loop resumes their requests.  A
 * request that ends meanwhile (a parent with its subrequests, or one whose
 * task is named twice: answered, and its body with room again) takes its
 * ids out (ngx_http_jvm_ctx_resuming), so that no context is resumed after
 * its pool is gone.
 */

static uint64_t  ngx_http_jvm_resuming[NGX_HTTP_JVM_READY_MAX];


/* The eventfd is readable: resume every request with something ready. */

static void
ngx_http_jvm_task_notified(ngx_event_t *ev)
{
    uint64_t    count;
    ngx_int_t   rc, id;
    ngx_uint_t  i, n, timers, sockets;

    if (read(ngx_http_jvm_notify.conn.fd, &count, sizeof(uint64_t)) == -1) {
        /* EAGAIN: woken for tasks an earlier pass already took */
    }

    /* Java's timers that run on the loop (nginx.jvm.Timers) first */

    timers = 1;
    sockets = 0;

    do {
        rc = ngx_http_jvm_vm_wake(ev->log, timers);

        if (rc == -1) {
            return;
        }

        timers = 0;
        sockets |= rc & NGX_HTTP_JVM_WAKE_SOCKETS;
        n = rc & (NGX_HTTP_JVM_WAKE_SOCKETS - 1);

        if (n > NGX_HTTP_JVM_READY_MAX) {
            ngx_log_error(NGX_LOG_ALERT, ev->log, 0,
                          "jvm: Worker.wake() named %ui tasks", n);
            return;
        }

        ngx_memcpy(ngx_http_jvm_resuming, ngx_http_jvm_vm.ready_ids,
                   n * sizeof(uint64_t));
        ngx_http_jvm_ctx_resuming(ngx_http_jvm_resuming, n);

        for (i = 0; i < n; i++) {
            if (ngx_http_jvm_resuming[i] != 0) {
                ngx_http_jvm_task_resume(ngx_http_jvm_resuming[i]);
            }
        }

        ngx_http_jvm_ctx_resuming(NULL, 0);

        /* a full buffer: more may wait */

    } while (n == NGX_HTTP_JVM_READY_MAX);

    if (!sockets) {
        return;
    }

    /* WebSockets with frames to send, or room for more messages */

    for ( ;; ) {
        id = ngx_http_jvm_vm_ws_poll(ev->log);

        if (id == -1) {
            return;
        }

        /* -2 - id: the socket may read again, besides what it may send */

        if (id < -1) {
            ngx_http_jvm_ws_ready(-2 - id, 1);

        } else {
            ngx_http_jvm_ws_ready(id, 0);
        }
    }
}


static void
ngx_http_jvm_task_resume(uint64_t id)
{
    ngx_connection_t    *c;
    ngx_http_request_t  *r;
    ngx_http_jvm_ctx_t  *ctx;

    ctx = (ngx_http_jvm_ctx_t *) (uintptr_t)
              (id & ~(uint64_t) NGX_HTTP_JVM_POLL_BODY);
    r = ctx->request;
    c = r->connection;

    ngx_http_set_log_request(c->log, r);

    if (id & NGX_HTTP_JVM_POLL_BODY) {

        /*
         * Its handler took pieces of a body that still arrives (see
         * ngx_http_jvm_upload.c): the request reads on from the client,
         * not once the upload is over (answered, failed, or read).
         */

        if (ctx->upload) {
            ctx->upload_full = 0;
            r->read_event_handler(r);

            ngx_http_run_posted_requests(c);
        }

        return;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, c->log, 0,
                   "jvm: task %p is ready", ctx);

    ctx->ready = 1;
    r->write_event_handler(r);

    ngx_http_run_posted_requests(c);
}


/*
 * A task's answer, for a content handler's task (below) and a phase
 * handler's (ngx_http_jvm_phase.c): NGX_AGAIN while the task has not
 * answered (a write event of the connection came first); else the task's
 * timer and the write handler are put back and Java's answer is taken, its
 * length in *len, and *done (when asked for) set when Java is through with
 * the task; what the call cost goes to the request ($jvm_alloc_bytes).
 */

ngx_int_t
ngx_http_jvm_task_take(ngx_http_request_t *r, size_t *len, ngx_uint_t *done)
{
    ngx_int_t            rc;
    ngx_uint_t           ignored;
    ngx_http_jvm_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_jvm_module);

    if (!ctx->ready) {
        return NGX_AGAIN;
    }

    ctx->ready = 0;

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    r->write_event_handler = ngx_http_request_empty_handler;

    rc = ngx_http_jvm_vm_take(r->connection->log, ctx, len,
                              done ? done : &ignored);

    /* what the take measured counts whatever the answer */
    ngx_http_jvm_cost_take(r);

    return rc;
}


/*
 * The handler answered: its response goes out (also for ngx_http_jvm_upload.c,
 * which stops reading the body first).
 */

void
ngx_http_jvm_task_respond(ngx_http_request_t *r)
{
    size_t               len;
    ngx_int_t            rc;
    ngx_uint_t           done;
    ngx_http_jvm_ctx_t  *ctx;

    rc = ngx_http_jvm_task_take(r, &len, &done);

    if (rc == NGX_AGAIN) {
        return;
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_jvm_module);
    ctx->responded = 1;

    if (rc != NGX_OK) {
        rc = NGX_HTTP_INTERNAL_SERVER_ERROR;

    } else {
        if (done) {
            /* its cleanup calls Java no more: one call a request less */
            ctx->task = 0;
        }

        rc = ngx_http_jvm_send_response(r, len);
    }

    ngx_http_finalize_request(r, rc);
}


static void
ngx_http_jvm_task_timeout(ngx_event_t *ev)
{
    int64_t                    n;
    ngx_connection_t          *c;
    ngx_http_request_t        *r;
    ngx_http_jvm_ctx_t        *ctx;
    ngx_http_jvm_loc_conf_t   *jlcf;
    ngx_http_jvm_main_conf_t  *jmcf;

    r = ev->data;
    c = r->connection;
    ctx = ngx_http_get_module_ctx(r, ngx_http_jvm_module);
    jlcf = ngx_http_get_module_loc_conf(r, ngx_http_jvm_module);

    ngx_http_set_log_request(c->log, r);

    /* Java forgets the task: a late answer goes nowhere */
    ngx_http_jvm_ctx_release(ctx);

    ngx_log_error(NGX_LOG_ERR, c->log, 0,
                  "jvm: the handler gave no response within "
                  "jvm_response_timeout (%M ms)", jlcf->response_timeout);

    /* jvm_status counts the 504s of all workers here: Java never sees them */

    jmcf = ngx_http_get_module_main_conf(r, ngx_http_jvm_module);

    if (jmcf->status) {
        (void) ngx_http_jvm_dict_incr(jmcf->status,
                                      (u_char *) NGX_HTTP_JVM_STATUS_504,
                                      sizeof(NGX_HTTP_JVM_STATUS_504) - 1,
                                      1, 0, 0, &n);
    }

    ctx->responded = 1;

    if (r->reading_body) {
        /* the rest of a body read as it arrives is not read: no keep-alive */
        r->keepalive = 0;
    }

    ngx_http_finalize_request(r, NGX_HTTP_GATEWAY_TIME_OUT);

    ngx_http_run_posted_requests(c);
}
