
/*
 * nginx-jvm: request bodies handed to the handler while they arrive
 * (jvm_request_buffering off), nginx's unbuffered request body.
 *
 * The content handler reads the body with request_body_no_buffering set:
 * nginx calls it back after the first read, and the handler starts as a
 * task at once (ngx_http_jvm_request.c).  From then on this file is the
 * request's read event handler.  Each pass copies what nginx read (the
 * buffers of r->request_body->bufs) into the request buffer and hands it to
 * Java (Worker.upload()), which copies it into a byte array of its own
 * before the call returns: Java never holds a pointer into nginx's memory,
 * and nginx's buffer is reused for the next read.
 *
 * Back-pressure: Java keeps a few pieces per request (nginx.jvm.UploadBody).
 * When they are full it answers so, and this file stops reading from the
 * client (and stops client_body_timeout: the client is not late, the
 * handler is) until the handler has taken some; its thread then wakes the
 * loop through the eventfd, Worker.wake() names the task with
 * NGX_HTTP_JVM_POLL_BODY, and ngx_http_jvm_task.c calls the read event
 * handler again.  Neither side grows: nginx's one buffer of
 * client_body_buffer_size, Java's few pieces, no temporary file.
 *
 * The ends: a body that fails (the client left, client_body_timeout, a
 * malformed or too large chunked body) is told to Java, whose reads then
 * throw, and the request ends with nginx's status, as a timed-out task does.
 * A handler that answers before the body's end has its response sent at
 * once with "Connection: close", and nginx closes the connection with a
 * lingering close (ngx_http_finalize_connection, as for
 * proxy_request_buffering off): the rest of the body is never read as a
 * request.  A handler that closes the body stream earlier has the rest read
 * and thrown away, so the connection stays usable.
 */


#include "ngx_http_jvm_module.h"


/*
 * The most one event reads of a body, in bytes: a client that sends as
 * fast as the handler reads would otherwise keep the loop on one request.
 * The rest is read in the next round of the event loop.
 */
#define NGX_HTTP_JVM_UPLOAD_BUDGET  (256 * 1024)


static void ngx_http_jvm_upload_read(ngx_http_request_t *r);
static ngx_int_t ngx_http_jvm_upload_pass(ngx_http_request_t *r,
    ngx_http_jvm_ctx_t *ctx, size_t *passed);
static void ngx_http_jvm_upload_respond(ngx_http_request_t *r);
static void ngx_http_jvm_upload_fail(ngx_http_request_t *r,
    ngx_http_jvm_ctx_t *ctx, ngx_int_t status);


/*
 * Starts the location's handler as a task for a request whose body still
 * arrives (r->reading_body), described in the request buffer.  Returns as
 * ngx_http_jvm_task_submit() does.  The first pass of reading is posted: it
 * runs from the event loop, where it may finalize the request.
 */

ngx_int_t
ngx_http_jvm_upload_submit(ngx_http_request_t *r, ngx_int_t handler,
    size_t len)
{
    unsigned             keepalive;
    ngx_int_t            rc;
    ngx_http_jvm_ctx_t  *ctx;

    /* a refusal (503) is sent at once: it says "Connection: close" */

    keepalive = r->keepalive;
    r->keepalive = 0;

    rc = ngx_http_jvm_task_submit(r, handler, NGX_HTTP_JVM_PHASE_CONTENT,
                                  len);

    if (rc != NGX_DONE) {
        /* the rest of the body is never read as a request */
        return rc;
    }

    r->keepalive = keepalive;

    ctx = ngx_http_get_module_ctx(r, ngx_http_jvm_module);

    ctx->upload = 1;

    r->read_event_handler = ngx_http_jvm_upload_read;
    r->write_event_handler = ngx_http_jvm_upload_respond;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: task %p reads its body as it arrives", ctx);

    ngx_post_event(r->connection->read, &ngx_posted_events);

    return NGX_DONE;
}


/*
 * The request's read event handler while its body arrives: what nginx read
 * goes to Java, and more is read while Java has room, within the budget.
 */

static void
ngx_http_jvm_upload_read(ngx_http_request_t *r)
{
    size_t                    passed, total;
    ngx_int_t                 rc;
    ngx_connection_t         *c;
    ngx_http_jvm_ctx_t       *ctx;
    ngx_http_jvm_loc_conf_t  *jlcf;

    c = r->connection;
    ctx = ngx_http_get_module_ctx(r, ngx_http_jvm_module);

    if (ctx == NULL || !ctx->upload || ctx->upload_full || ctx->responded) {
        /* Java's pieces are full: it wakes the loop when it has room */
        return;
    }

    jlcf = ngx_http_get_module_loc_conf(r, ngx_http_jvm_module);
    total = 0;

    for ( ;; ) {

        rc = ngx_http_jvm_upload_pass(r, ctx, &passed);

        if (rc != NGX_OK) {
            ngx_http_jvm_upload_fail(r, ctx, NGX_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }

        total += passed;

        if (!r->reading_body || ctx->upload_full) {
            break;
        }

        if (total >= NGX_HTTP_JVM_UPLOAD_BUDGET) {
            ngx_post_event(c->read, &ngx_posted_events);
            return;
        }

        rc = ngx_http_read_unbuffered_request_body(r);

        if (rc == NGX_ERROR || rc >= NGX_HTTP_SPECIAL_RESPONSE) {
            ngx_http_jvm_upload_fail(r, ctx, rc == NGX_ERROR
                                             ? NGX_HTTP_BAD_REQUEST : rc);
            return;
        }

        if (rc == NGX_AGAIN && r->request_body->bufs == NULL) {

            /*
             * nginx waits for the client, under client_body_timeout; the
             * handler, waiting for it too, is not late (jvm_response_timeout
             * counts only while the handler is awaited)
             */

            if (ctx->timer.timer_set && !ctx->upload_drop) {
                ngx_del_timer(&ctx->timer);
            }

            return;
        }
    }

    /* the handler is awaited: to take its pieces, or to answer */

    ngx_add_timer(&ctx->timer, jlcf->response_timeout);

    if (!r->reading_body) {
        /* all of it was read: see the client's leaving, as a task does */
        ctx->upload = 0;
        r->read_event_handler = ngx_http_test_reading;
        return;
    }

    /* the handler is late, not the client: no client_body_timeout */

    if (c->read->timer_set) {
        ngx_del_timer(c->read);
    }
}


/*
 * Hands the buffers nginx read to Java as one piece (with the end of the
 * body when it was read whole) and gives them back to nginx: their bytes
 * consumed, their chain links to the pool's free list, for the next read.
 * *passed: the piece's size.
 */

static ngx_int_t
ngx_http_jvm_upload_pass(ngx_http_request_t *r, ngx_http_jvm_ctx_t *ctx,
    size_t *passed)
{
    u_char                   *p;
    size_t                    len;
    ngx_int_t                 rc;
    ngx_uint_t                status;
    ngx_chain_t              *cl, *next;
    ngx_http_request_body_t  *rb;

    rb = r->request_body;
    status = r->reading_body ? NGX_HTTP_JVM_UPLOAD_GOING
                             : NGX_HTTP_JVM_UPLOAD_END;

    len = 0;

    for (cl = rb->bufs; cl; cl = cl->next) {
        len += ngx_buf_size(cl->buf);
    }

    *passed = len;

    if (len > ngx_http_jvm_vm.req_cap
        && ngx_http_jvm_vm_request_buffer(r->connection->log, len) != NGX_OK)
    {
        return NGX_ERROR;
    }

    p = ngx_http_jvm_vm.req_addr;

    for (cl = rb->bufs; cl; cl = next) {
        next = cl->next;

        /* never in a file: nginx writes none without buffering */

        if (cl->buf->last != cl->buf->pos) {
            p = ngx_cpymem(p, cl->buf->pos, cl->buf->last - cl->buf->pos);
            cl->buf->pos = cl->buf->last;
        }

        ngx_free_chain(r->pool, cl);
    }

    rb->bufs = NULL;

    if (ctx->upload_drop || (len == 0 && status == NGX_HTTP_JVM_UPLOAD_GOING))
    {
        return NGX_OK;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: task %p body piece of %uz bytes%s", ctx, len,
                   status == NGX_HTTP_JVM_UPLOAD_END ? ", the last" : "");

    rc = ngx_http_jvm_vm_upload(r->connection->log, ctx, len, status);

    if (rc == NGX_ERROR) {
        return NGX_ERROR;
    }

    if (rc == NGX_AGAIN) {
        ctx->upload_full = 1;

    } else if (rc == NGX_DECLINED) {
        /* the handler closed the body: the rest is read and dropped */
        ctx->upload_drop = 1;
    }

    return NGX_OK;
}


/*
 * The task has its response: reading stops, and a body not read to its end
 * means the connection closes after the response (it says so).
 */

static void
ngx_http_jvm_upload_respond(ngx_http_request_t *r)
{
    ngx_connection_t    *c;
    ngx_http_jvm_ctx_t  *ctx;

    c = r->connection;
    ctx = ngx_http_get_module_ctx(r, ngx_http_jvm_module);

    if (!ctx->ready) {
        return;
    }

    if (r->reading_body) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, c->log, 0,
                       "jvm: task %p answered before its body's end", ctx);

        r->keepalive = 0;

        if (c->read->timer_set) {
            ngx_del_timer(c->read);
        }

        if (c->read->posted) {
            ngx_delete_posted_event(c->read);
        }
    }

    ctx->upload = 0;
    r->read_event_handler = ngx_http_test_reading;

    ngx_http_jvm_task_respond(r);
}


/*
 * The body failed, or handing it to Java did: Java's reads throw (the
 * status says why), the task is let go, and the request ends with the
 * status, as a timed-out task's does (a closed or timed-out connection
 * is closed, the others get nginx's answer and no keep-alive).
 */

static void
ngx_http_jvm_upload_fail(ngx_http_request_t *r, ngx_http_jvm_ctx_t *ctx,
    ngx_int_t status)
{
    ngx_connection_t  *c;

    c = r->connection;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, c->log, 0,
                   "jvm: task %p body failed: %i", ctx, status);

    if (!ctx->upload_drop) {
        (void) ngx_http_jvm_vm_upload(c->log, ctx, 0, (ngx_uint_t) status);
    }

    ctx->upload = 0;

    /* Java forgets the task (aborts it when the client left): no answer */
    ngx_http_jvm_ctx_release(ctx);

    ctx->responded = 1;
    r->keepalive = 0;
    r->read_event_handler = ngx_http_block_reading;
    r->write_event_handler = ngx_http_request_empty_handler;

    ngx_http_finalize_request(r, status);
}
