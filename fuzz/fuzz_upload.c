
/*
 * nginx-jvm fuzzing: a request body handed to Java while it arrives
 * (ngx_http_jvm_upload.c, jvm_request_buffering off).  nginx's reads give
 * chains of buffers of the sizes the fuzzer picks (empty ones among them),
 * or wait, or fail (the client left, a malformed or too large chunked
 * body); Java takes each piece, or is full, or closes the body, or throws;
 * it may take pieces later, or answer before the body's end.  The input is
 * the body from its start and these choices from its end.
 *
 * What is checked: Java gets the body's bytes in order, each once, never
 * an empty piece but the last, the end once and only after every byte;
 * nothing after the end, a failure or a closed body; the request buffer
 * holds each piece (it is grown to the piece, no larger, so an overrun is
 * seen); each piece's buffers are given back to nginx consumed.
 */

#include "ngx_fuzz.h"


#define NGX_FUZZ_UPLOAD_STEPS  1000


static struct {
    ngx_fuzz_input_t         *in;
    const u_char             *body;         /* the whole body */
    size_t                    body_len;
    size_t                    read;         /* of it, by nginx */
    size_t                    passed;       /* of it, to Java */
    ngx_http_request_t       *r;
    ngx_http_jvm_ctx_t       *ctx;
    ngx_uint_t                ended;        /* the end or a failure told */
    ngx_uint_t                dropped;
    ngx_uint_t                threw;        /* Worker.upload() threw */
    ngx_uint_t                responded;
    ngx_uint_t                released;
    ngx_chain_t              *given;        /* the last chain nginx gave */
} u;


static void
ngx_fuzz_fail(const char *what)
{
    fprintf(stderr, "fuzz_upload: %s\n", what);
    abort();
}


/* --- the JVM's side ----------------------------------------------------- */

ngx_int_t
ngx_http_jvm_vm_request_buffer(ngx_log_t *log, size_t size)
{
    if (u.in && ngx_fuzz_choice(u.in) == 0xfe) {
        /* Java could not make a larger buffer */
        return NGX_ERROR;
    }

    free(ngx_http_jvm_vm.req_addr);

    /* exactly the size asked: a write past it is an overrun */
    ngx_http_jvm_vm.req_addr = malloc(size ? size : 1);
    ngx_http_jvm_vm.req_cap = size;

    return NGX_OK;
}


ngx_int_t
ngx_http_jvm_vm_upload(ngx_log_t *log, void *id, size_t len,
    ngx_uint_t status)
{
    u_char  b;

    if (id != u.ctx || !u.ctx->task) {
        ngx_fuzz_fail("a piece for another task");
    }

    if (status != NGX_HTTP_JVM_UPLOAD_GOING
        && status != NGX_HTTP_JVM_UPLOAD_END
        && u.threw)
    {
        /* the failure told after a call that threw, even the last one */
        u.threw = 0;
        u.ended = 0;
    }

    if (u.ended || u.dropped || u.released || u.threw) {
        ngx_fuzz_fail("a piece after the end, a failure or a closed body");
    }

    if (status != NGX_HTTP_JVM_UPLOAD_GOING
        && status != NGX_HTTP_JVM_UPLOAD_END)
    {
        /* a failure: Java's reads throw with this status */
        if (len != 0 || status < NGX_HTTP_BAD_REQUEST) {
            ngx_fuzz_fail("a failure with bytes, or not an error status");
        }

        u.ended = 1;
        return NGX_OK;
    }

    if (len == 0 && status == NGX_HTTP_JVM_UPLOAD_GOING) {
        ngx_fuzz_fail("an empty piece that is not the last");
    }

    if (len > u.read - u.passed
        || (len && ngx_memcmp(ngx_http_jvm_vm.req_addr, u.body + u.passed,
                              len) != 0))
    {
        ngx_fuzz_fail("a piece that is not the body's next bytes");
    }

    u.passed += len;

    if (status == NGX_HTTP_JVM_UPLOAD_END) {
        if (u.passed != u.body_len || u.r->reading_body) {
            ngx_fuzz_fail("the end before the body's end");
        }

        u.ended = 1;
    }

    b = ngx_fuzz_choice(u.in);

    switch (b & 0x0f) {
    case 1:
    case 2:
        return NGX_AGAIN;       /* Java's pieces are full */
    case 3:
        u.dropped = 1;
        return NGX_DECLINED;    /* the handler closed the body */
    case 4:
        if (b & 0x10) {
            u.threw = 1;
            return NGX_ERROR;   /* Worker.upload() threw */
        }
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_jvm_task_submit(ngx_http_request_t *r, ngx_int_t handler,
    ngx_uint_t phase, size_t len)
{
    if (ngx_fuzz_choice(u.in) == 0xff) {
        /* the queue is full */
        return NGX_HTTP_SERVICE_UNAVAILABLE;
    }

    u.ctx = ngx_http_jvm_get_ctx(r);
    u.ctx->task = 1;
    u.ctx->timer.log = r->connection->log;
    u.ctx->timer.data = r;              /* as ngx_http_jvm_task.c sets it */

    return NGX_DONE;
}


void
ngx_http_jvm_task_respond(ngx_http_request_t *r)
{
    u.responded = 1;
}


void
ngx_http_jvm_ctx_release(ngx_http_jvm_ctx_t *ctx)
{
    u.released = 1;
    ctx->task = 0;
}


/* --- nginx's reading ---------------------------------------------------- */

/* a chain of buffers holding what the client sent next, some empty */

static ngx_chain_t *
ngx_fuzz_read_chain(ngx_pool_t *pool)
{
    u_char        b;
    size_t        n;
    ngx_buf_t    *buf;
    ngx_uint_t    k, i;
    ngx_chain_t  *head, **last, *cl;

    b = ngx_fuzz_choice(u.in);
    k = 1 + (b & 3);
    head = NULL;
    last = &head;

    for (i = 0; i < k; i++) {
        b = ngx_fuzz_choice(u.in);
        n = (b & 0x80) ? u.body_len - u.read : (size_t) (b & 0x7f);
        n = ngx_min(n, u.body_len - u.read);

        buf = ngx_pcalloc(pool, sizeof(ngx_buf_t));
        buf->start = ngx_pnalloc(pool, n + 16);
        buf->pos = buf->start + (b & 0x0f);     /* what nginx consumed */
        ngx_memcpy(buf->pos, u.body + u.read, n);
        buf->last = buf->pos + n;
        buf->end = buf->start + n + 16;
        buf->memory = 1;
        buf->temporary = 1;

        u.read += n;

        cl = ngx_alloc_chain_link(pool);
        cl->buf = buf;
        cl->next = NULL;
        *last = cl;
        last = &cl->next;
    }

    u.given = head;

    return head;
}


static void
ngx_fuzz_check_given(void)
{
    ngx_chain_t  *cl;

    /* the links went back to the pool's free list, their bytes consumed */
    for (cl = u.given; cl; cl = cl->next) {
        if (cl->buf->pos != cl->buf->last) {
            ngx_fuzz_fail("a buffer given back unread");
        }
    }
}


ngx_int_t
ngx_http_read_unbuffered_request_body(ngx_http_request_t *r)
{
    u_char  b;

    if (r->request_body->bufs) {
        ngx_fuzz_fail("read on before the last buffers were passed");
    }

    ngx_fuzz_check_given();
    u.given = NULL;

    if (u.read == u.body_len && u.in->ctl_len == 0) {
        r->reading_body = 0;
        return NGX_OK;
    }

    b = ngx_fuzz_choice(u.in);

    switch (b & 0x0f) {
    case 0:
        return NGX_ERROR;                       /* the client left */
    case 1:
        return NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;
    case 2:
        return NGX_HTTP_BAD_REQUEST;            /* malformed chunked */
    case 3:
    case 4:
    case 5:
        /* nothing yet: client_body_timeout runs, as nginx sets it */
        ngx_add_timer(r->connection->read, 60000);
        return NGX_AGAIN;
    }

    r->request_body->bufs = ngx_fuzz_read_chain(r->pool);

    if (u.read == u.body_len && (b & 0x10)) {
        r->reading_body = 0;
        return NGX_OK;
    }

    ngx_add_timer(r->connection->read, 60000);

    if (b & 0x20) {
        /* more is ready: the read event is posted again */
        ngx_post_event(r->connection->read, &ngx_posted_events);
    }

    return NGX_AGAIN;
}


static void
ngx_fuzz_request_handler(ngx_event_t *ev)
{
    ngx_connection_t  *c;

    c = ev->data;
    u.r->read_event_handler(u.r);
    (void) c;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char                     b;
    ngx_int_t                  rc;
    ngx_uint_t                 step;
    ngx_pool_t                *pool;
    ngx_fuzz_input_t           in;
    ngx_http_request_t        *r;
    ngx_http_jvm_loc_conf_t   *jlcf;
    ngx_http_core_loc_conf_t  *clcf;

    in.ctl_len = ngx_min(size / 2, 128);
    in.data = data;
    in.len = size - in.ctl_len;
    in.ctl = data + in.len;

    if (ngx_http_jvm_vm.req_addr == NULL) {
        /* small, so that pieces grow it */
        (void) ngx_http_jvm_vm_request_buffer(NULL, 16);
    }

    ngx_memzero(&u, sizeof(u));
    u.in = &in;
    u.body = in.data;
    u.body_len = in.len;

    pool = ngx_fuzz_pool();
    jlcf = ngx_pcalloc(pool, sizeof(ngx_http_jvm_loc_conf_t));
    jlcf->response_timeout = 60000;
    clcf = ngx_pcalloc(pool, sizeof(ngx_http_core_loc_conf_t));

    r = ngx_fuzz_request(pool, jlcf, clcf);
    u.r = r;
    r->connection->read->handler = ngx_fuzz_request_handler;
    r->request_body = ngx_pcalloc(pool, sizeof(ngx_http_request_body_t));
    r->reading_body = 1;
    r->keepalive = 1;

    /* what came with the header, read before the handler started */
    r->request_body->bufs = ngx_fuzz_read_chain(pool);

    rc = ngx_http_jvm_upload_submit(r, 0, 0);

    if (rc != NGX_DONE) {
        if (rc != NGX_HTTP_SERVICE_UNAVAILABLE || r->keepalive) {
            ngx_fuzz_fail("a refusal that keeps the connection");
        }

        goto done;
    }

    for (step = 0; step < NGX_FUZZ_UPLOAD_STEPS; step++) {

        if (ngx_fuzz_run_posted() != NGX_OK) {
            ngx_fuzz_fail("events posted without end");
        }

        if (ngx_fuzz_finalized != NGX_DECLINED || u.responded) {
            break;
        }

        b = ngx_fuzz_choice(&in);

        if ((b & 3) == 1 || u.ended || u.dropped || in.ctl_len == 0) {
            /* the handler answers, before the body's end or after it */
            u.ctx->ready = 1;
            r->write_event_handler(r);
            continue;
        }

        if (u.ctx->upload_full && (b & 3) == 2) {
            /* Java took some: ngx_http_jvm_task.c reads on */
            if (u.ctx->upload) {
                u.ctx->upload_full = 0;
                r->read_event_handler(r);
            }

            continue;
        }

        /* the client sent more: the connection's read event */
        r->read_event_handler(r);
    }

    if (step == NGX_FUZZ_UPLOAD_STEPS) {
        ngx_fuzz_fail("the request neither ends nor is answered");
    }

    if (ngx_fuzz_finalized != NGX_DECLINED) {
        /* a failure: told to Java unless it had closed the body */
        if (!u.released || (!u.ended && !u.dropped)) {
            ngx_fuzz_fail("a failed body not told to Java, or the task kept");
        }

        if (r->keepalive) {
            ngx_fuzz_fail("a failed body, and the connection kept");
        }
    }

    if (u.responded && r->reading_body && r->keepalive) {
        ngx_fuzz_fail("answered before the body's end, and kept alive");
    }

    if (r->request_body->bufs == NULL) {
        ngx_fuzz_check_given();
    }

done:

    if (r->connection->read->posted) {
        ngx_delete_posted_event(r->connection->read);
    }

    u.in = NULL;
    ngx_destroy_pool(pool);

    return 0;
}
