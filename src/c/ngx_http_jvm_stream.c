
/*
 * nginx-jvm: the request's context, and bodies sent in pieces.
 *
 * A body Java cannot give at once (a seq, an InputStream, a writer, a large
 * byte array) stays in Java under an id; nginx asks for its next piece only
 * when the previous one has left for the client, so a slow client costs a
 * few buffers, not the whole body.  Pieces produced on a JVM thread may not
 * be there yet: the request then waits until Worker.wake() names its task,
 * and ngx_http_jvm_task.c calls r->write_event_handler again.
 */


#include "ngx_http_jvm_module.h"


/* How often the timer of a body waiting for its producer comes round, ms. */
#define NGX_HTTP_JVM_STREAM_HOLD  60000

/*
 * The most one event sends of a body produced on the event loop, in bytes,
 * each piece counting as at least NGX_HTTP_JVM_STREAM_PIECE (a piece costs
 * a call into Java and a write, however small).  A client that reads as
 * fast as the body comes would otherwise keep the loop producing for as
 * long as the body lasts, and the worker's other connections would wait
 * (nginx bounds sendfile the same way, sendfile_max_chunk).  The rest goes
 * on in the next round of the event loop.
 */
#define NGX_HTTP_JVM_STREAM_BUDGET  (128 * 1024)
#define NGX_HTTP_JVM_STREAM_PIECE   (4 * 1024)

/*
 * How long a body whose source gave only empty pieces (an endless seq of
 * "", an InputStream that reads 0 bytes) waits before it is asked again, ms:
 * it neither spins the loop nor keeps it from seeing the client leave.
 */
#define NGX_HTTP_JVM_STREAM_EMPTY  1


static ngx_int_t ngx_http_jvm_stream(ngx_http_request_t *r,
    ngx_http_jvm_ctx_t *ctx);
static ngx_int_t ngx_http_jvm_stream_piece(ngx_http_request_t *r,
    ngx_http_jvm_ctx_t *ctx, size_t n);
static void ngx_http_jvm_stream_writer(ngx_http_request_t *r);
static void ngx_http_jvm_stream_close(ngx_http_jvm_ctx_t *ctx);
static void ngx_http_jvm_cleanup(void *data);
static void ngx_http_jvm_stream_hold(ngx_event_t *ev);
static void ngx_http_jvm_stream_retry(ngx_event_t *ev);


static uint64_t    *ngx_http_jvm_resuming;
static ngx_uint_t   ngx_http_jvm_resuming_n;


/*
 * The request's context, made when the request outlives one call into Java.
 * Its cleanup runs however the request ends: done, failed, timed out or the
 * client gone.
 */

ngx_http_jvm_ctx_t *
ngx_http_jvm_get_ctx(ngx_http_request_t *r)
{
    ngx_pool_cleanup_t  *cln;
    ngx_http_jvm_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_jvm_module);
    if (ctx) {
        return ctx;
    }

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_jvm_ctx_t));
    cln = ngx_pool_cleanup_add(r->pool, 0);

    if (ctx == NULL || cln == NULL) {
        return NULL;
    }

    ctx->request = r;
    ctx->stream = -1;
    ctx->ws = -1;

    cln->handler = ngx_http_jvm_cleanup;
    cln->data = ctx;

    ngx_http_set_ctx(r, ctx, ngx_http_jvm_module);

    return ctx;
}


/*
 * After a call into Java for r: what it measured (nginx.jvm.Meter, into the
 * slots of ngx_http_jvm_variable.c) is added to the request's context, for
 * $jvm_alloc_bytes and $jvm_cpu_us, and the slots cleared for the next call.
 */

void
ngx_http_jvm_cost_take(ngx_http_request_t *r)
{
    int64_t              m[2];
    ngx_http_jvm_ctx_t  *ctx;

    if (ngx_http_jvm_vm.meter == NULL || ngx_http_jvm_vm.meter[0] < 0) {
        return;
    }

    m[0] = ngx_http_jvm_vm.meter[0];
    m[1] = ngx_http_jvm_vm.meter[1];
    ngx_http_jvm_vm.meter[0] = -1;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: call cost %L bytes, %L ns of CPU", m[0], m[1]);

    ctx = ngx_http_jvm_get_ctx(r);
    if (ctx == NULL) {
        return;
    }

    ctx->alloc += m[0];
    ctx->cpu_ns += m[1];
    ctx->metered = 1;
}


/*
 * The ids of the tasks the loop is resuming, one Worker.wake() at a time
 * (ngx_http_jvm_task.c), or none: a context released meanwhile takes its
 * ids out, so that none is resumed after its request's pool is gone.
 */

void
ngx_http_jvm_ctx_resuming(uint64_t *ids, ngx_uint_t n)
{
    ngx_http_jvm_resuming = ids;
    ngx_http_jvm_resuming_n = n;
}


/*
 * What Java holds for the request is let go: its task, body, socket.  A
 * task whose client left before its response was complete (the connection
 * failed or timed out, and nginx never finished the request: r->done is
 * set only by a finalization that sent everything) is aborted: Java tells
 * the handler.  A response timeout (504) or a phase handler that let the
 * request go on is not an abort: its connection is fine.
 */

void
ngx_http_jvm_ctx_release(ngx_http_jvm_ctx_t *ctx)
{
    ngx_uint_t         i;
    ngx_connection_t  *c;

    for (i = 0; i < ngx_http_jvm_resuming_n; i++) {
        if ((ngx_http_jvm_resuming[i] & ~(uint64_t) NGX_HTTP_JVM_POLL_BODY)
            == (uintptr_t) ctx)
        {
            ngx_http_jvm_resuming[i] = 0;
        }
    }

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    if (ctx->sr_run.posted) {
        ngx_delete_posted_event(&ctx->sr_run);
    }

    if (ctx->task) {
        ctx->task = 0;
        c = ctx->request->connection;

        if ((c->error || c->timedout) && !ctx->request->done) {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, c->log, 0,
                           "jvm: task %p aborted: the client left", ctx);

            ngx_http_jvm_vm_abort(ctx, ctx->interrupt);

        } else {
            ngx_http_jvm_vm_cancel(ctx);
        }
    }

    ngx_http_jvm_stream_close(ctx);

    if (ctx->ws != -1) {
        /* the request ended before its 101 left: no WebSocket */
        ngx_http_jvm_vm_ws_abandon(ctx->ws);
        ctx->ws = -1;
    }
}


static void
ngx_http_jvm_cleanup(void *data)
{
    ngx_http_jvm_ctx_t  *ctx = data;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ctx->request->connection->log, 0,
                   "jvm: request context %p released", ctx);

    ngx_http_jvm_ctx_release(ctx);
}


/* Sends the header, then the body with id "id" as far as it goes now. */

ngx_int_t
ngx_http_jvm_send_stream(ngx_http_request_t *r, ngx_int_t id)
{
    ngx_int_t            rc;
    ngx_http_jvm_ctx_t  *ctx;

    ctx = ngx_http_jvm_get_ctx(r);
    if (ctx == NULL) {
        ngx_http_jvm_vm_close(id);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->stream = id;
    ctx->length = r->headers_out.content_length_n;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: body %i sent in pieces", id);

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        ngx_http_jvm_stream_close(ctx);
        return rc;
    }

    rc = ngx_http_jvm_stream(r, ctx);

    if (rc != NGX_AGAIN) {
        return rc;
    }

    /*
     * The rest is sent from the write event handler.  A client that leaves
     * meanwhile ends the request, and with it the body, even while nothing
     * is written to it.
     */

    r->main->count++;
    r->write_event_handler = ngx_http_jvm_stream_writer;
    r->read_event_handler = ngx_http_test_reading;

    return NGX_DONE;
}


/*
 * Sends pieces of the body until it ends (returns what ngx_http_output_filter
 * returned for the last one), fails (NGX_ERROR), the client is slower than
 * the body (NGX_AGAIN, with the write event armed), the body is slower
 * than the client (NGX_AGAIN, waiting for its producer on a JVM thread or,
 * for a source that gave only empty pieces, for a timer), or this event
 * has sent its share (NGX_AGAIN, the write event posted for the next round).
 */

static ngx_int_t
ngx_http_jvm_stream(ngx_http_request_t *r, ngx_http_jvm_ctx_t *ctx)
{
    size_t                     n;
    ssize_t                    budget;
    ngx_int_t                  rc;
    ngx_connection_t          *c;
    ngx_http_core_loc_conf_t  *clcf;

    c = r->connection;
    budget = NGX_HTTP_JVM_STREAM_BUDGET;

    while (ctx->busy == NULL) {

        if (budget <= 0) {
            /*
             * A timer all the same, as when the client is slower: a
             * graceful quit waits only for requests that have one.
             */
            if (!c->write->timer_set && !c->write->delayed) {
                clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);
                ngx_add_timer(c->write, clcf->send_timeout);
            }

            ngx_post_event(c->write, &ngx_posted_next_events);
            return NGX_AGAIN;
        }

        rc = ngx_http_jvm_vm_next(c->log, ctx->stream, &n);

        if (rc == NGX_DONE) {
            ngx_http_jvm_stream_close(ctx);

            if (ctx->length >= 0 && ctx->sent < ctx->length) {
                ngx_log_error(NGX_LOG_ERR, c->log, 0,
                              "jvm: the response body ended after %O of "
                              "the %O bytes its Content-Length says",
                              ctx->sent, ctx->length);
                return NGX_ERROR;
            }

            return ngx_http_send_special(r, NGX_HTTP_LAST);
        }

        if (rc == NGX_AGAIN) {
            /*
             * A JVM thread has not produced the next piece yet.  No
             * timeout: a long-lived stream (server-sent events, long
             * polling) lasts as long as the client stays, and a client
             * that leaves ends the request (ngx_http_test_reading), which
             * stops the producer.  But a timer all the same: a worker's
             * graceful quit waits only for requests that have one, and
             * would otherwise cut this body short
             * (worker_shutdown_timeout still bounds the wait).
             */
            ctx->waiting = 1;

            if (!ctx->timer.timer_set) {
                ctx->timer.handler = ngx_http_jvm_stream_hold;
                ctx->timer.data = r;
                ctx->timer.log = c->log;
                ngx_add_timer(&ctx->timer, NGX_HTTP_JVM_STREAM_HOLD);
            }

            return NGX_AGAIN;
        }

        if (rc == NGX_DECLINED) {
            ctx->timer.handler = ngx_http_jvm_stream_retry;
            ctx->timer.data = r;
            ctx->timer.log = c->log;
            ngx_add_timer(&ctx->timer, NGX_HTTP_JVM_STREAM_EMPTY);

            return NGX_AGAIN;
        }

        if (rc == NGX_ERROR) {
            /*
             * The body failed half-way: what was sent stays sent, and
             * closing the connection tells the client it was cut short.
             */
            ngx_http_jvm_stream_close(ctx);
            return NGX_ERROR;
        }

        if (ctx->length >= 0 && ctx->sent + (off_t) n > ctx->length) {
            /* more than Content-Length said: what fits, then the end */
            n = (size_t) (ctx->length - ctx->sent);

            if (n == 0) {
                ngx_http_jvm_stream_close(ctx);
                return ngx_http_send_special(r, NGX_HTTP_LAST);
            }
        }

        ctx->sent += n;
        budget -= ngx_max(n, NGX_HTTP_JVM_STREAM_PIECE);

        if (ngx_http_jvm_stream_piece(r, ctx, n) == NGX_ERROR) {
            return NGX_ERROR;
        }
    }

    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    if (!c->write->delayed) {
        ngx_add_timer(c->write, clcf->send_timeout);
    }

    if (ngx_handle_write_event(c->write, clcf->send_lowat) != NGX_OK) {
        return NGX_ERROR;
    }

    return NGX_AGAIN;
}


/*
 * The piece of n bytes Java left in the response buffer, copied into a
 * buffer of the request's (the response buffer is Java's again at once)
 * and sent.
 */

static ngx_int_t
ngx_http_jvm_stream_piece(ngx_http_request_t *r, ngx_http_jvm_ctx_t *ctx,
    size_t n)
{
    ngx_int_t     rc;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    cl = ngx_chain_get_free_buf(r->pool, &ctx->free);
    if (cl == NULL) {
        return NGX_ERROR;
    }

    b = cl->buf;

    if (b->start == NULL || (size_t) (b->end - b->start) < n) {
        b->start = ngx_palloc(r->pool, ngx_http_jvm_vm.resp_cap);
        if (b->start == NULL) {
            return NGX_ERROR;
        }

        b->end = b->start + ngx_http_jvm_vm.resp_cap;
    }

    b->pos = b->start;
    b->last = ngx_cpymem(b->start, ngx_http_jvm_vm.resp_addr, n);
    b->temporary = 1;
    b->flush = 1;
    b->tag = (ngx_buf_tag_t) &ngx_http_jvm_module;

    rc = ngx_http_output_filter(r, cl);

    ngx_chain_update_chains(r->pool, &ctx->free, &ctx->busy, &cl,
                            (ngx_buf_tag_t) &ngx_http_jvm_module);

    return rc == NGX_ERROR ? NGX_ERROR : NGX_OK;
}


/* The timer of a body waiting for its producer: it only has to be there. */

static void
ngx_http_jvm_stream_hold(ngx_event_t *ev)
{
    ngx_http_request_t  *r = ev->data;
    ngx_http_jvm_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_jvm_module);

    if (ctx->waiting) {
        ngx_add_timer(ev, NGX_HTTP_JVM_STREAM_HOLD);
    }
}


/* A body whose source gave only empty pieces is asked again. */

static void
ngx_http_jvm_stream_retry(ngx_event_t *ev)
{
    ngx_connection_t    *c;
    ngx_http_request_t  *r;

    r = ev->data;
    c = r->connection;

    ngx_http_set_log_request(c->log, r);

    r->write_event_handler(r);
    ngx_http_run_posted_requests(c);
}


/*
 * The write event handler while a body is sent in pieces: called when the
 * client can take more, and when a JVM thread produced the next piece.
 */

static void
ngx_http_jvm_stream_writer(ngx_http_request_t *r)
{
    ngx_int_t            rc;
    ngx_chain_t         *out;
    ngx_event_t         *wev;
    ngx_connection_t    *c;
    ngx_http_jvm_ctx_t  *ctx;

    c = r->connection;
    wev = c->write;
    ctx = ngx_http_get_module_ctx(r, ngx_http_jvm_module);

    if (ctx->ready) {
        ctx->ready = 0;

        if (!ctx->waiting) {
            /* the body waits for the client, not for Java */
            return;
        }

        ctx->waiting = 0;

        /* the hold timer is for a body waiting for Java: none now */

        if (ctx->timer.timer_set
            && ctx->timer.handler == ngx_http_jvm_stream_hold)
        {
            ngx_del_timer(&ctx->timer);
        }

    } else {
        if (wev->timedout) {
            ngx_log_error(NGX_LOG_INFO, c->log, NGX_ETIMEDOUT,
                          "client timed out");
            c->timedout = 1;
            ngx_http_finalize_request(r, NGX_HTTP_REQUEST_TIME_OUT);
            return;
        }

        if (wev->timer_set) {
            ngx_del_timer(wev);
        }

        rc = ngx_http_output_filter(r, NULL);

        out = NULL;
        ngx_chain_update_chains(r->pool, &ctx->free, &ctx->busy, &out,
                                (ngx_buf_tag_t) &ngx_http_jvm_module);

        if (rc == NGX_ERROR) {
            ngx_http_finalize_request(r, NGX_ERROR);
            return;
        }
    }

    rc = ngx_http_jvm_stream(r, ctx);

    if (rc == NGX_AGAIN) {
        return;
    }

    ngx_http_finalize_request(r, rc);
}


static void
ngx_http_jvm_stream_close(ngx_http_jvm_ctx_t *ctx)
{
    if (ctx->stream == -1) {
        return;
    }

    if (ctx->timer.timer_set
        && ctx->timer.handler == ngx_http_jvm_stream_retry)
    {
        ngx_del_timer(&ctx->timer);
    }

    ngx_http_jvm_vm_close(ctx->stream);
    ctx->stream = -1;
}
