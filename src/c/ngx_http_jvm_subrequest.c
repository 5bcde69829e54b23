
/*
 * nginx-jvm: subrequests for Java, answered in memory.
 *
 * Request#subrequest() asks the event loop (directly, or through
 * nginx.jvm.LoopCalls from a JVM thread) to start a subrequest of the
 * request to a location of the same server, typically an internal one with
 * proxy_pass: nginx's upstreams, keep-alive, TLS and timeouts apply.  Its
 * response is kept in memory (NGX_HTTP_SUBREQUEST_IN_MEMORY, up to
 * subrequest_output_buffer_size); when it is finalized, its status, header
 * fields and body go to Java, which completes the CompletableFuture.  No
 * thread waits meanwhile.  Only a request that is suspended (its handler is
 * a task: jvm_async, or a pool or virtual thread) may start subrequests:
 * Java checks that.
 *
 * The specification Java sends: method, URI, args (strings), an int count
 * of header fields (name and value strings) and the body (a string).
 */


#include "ngx_http_jvm_module.h"


typedef struct {
    ngx_int_t                 id;           /* Java's future */
    unsigned                  done:1;
} ngx_http_jvm_sr_t;


static ngx_int_t ngx_http_jvm_subrequest_done(ngx_http_request_t *sr,
    void *data, ngx_int_t rc);
static ngx_int_t ngx_http_jvm_subrequest_headers(ngx_http_request_t *r,
    ngx_http_request_t *sr, ngx_http_jvm_reader_t *sp, ngx_uint_t n);
static ngx_int_t ngx_http_jvm_subrequest_body(ngx_http_request_t *sr,
    ngx_str_t *body);
static void ngx_http_jvm_subrequest_run(ngx_event_t *ev);
static const char *ngx_http_jvm_subrequest_gate(ngx_str_t *method,
    ngx_str_t *uri, ngx_str_t *args, ngx_http_jvm_reader_t *sp,
    ngx_uint_t n);
static size_t ngx_http_jvm_subrequest_encode(ngx_http_request_t *sr,
    ngx_uint_t status, u_char *buf, size_t cap);


/*
 * Starts subrequest "id" of r; spec is in r's pool (it is kept: the
 * subrequest's strings point into it).  NULL, or why it cannot start.
 */

const char *
ngx_http_jvm_subrequest_start(ngx_http_request_t *r, ngx_int_t id,
    u_char *spec, size_t len)
{
    uint32_t                    n;
    ngx_str_t                   method, uri, args, body;
    const char                 *err;
    ngx_http_jvm_sr_t          *jsr;
    ngx_http_jvm_ctx_t         *ctx;
    ngx_http_request_t         *sr;
    ngx_http_jvm_reader_t       sp;
    ngx_http_post_subrequest_t *ps;

    ngx_http_jvm_reader_init(&sp, spec, len);

    if (ngx_http_jvm_get_str(&sp, &method) != NGX_OK
        || ngx_http_jvm_get_str(&sp, &uri) != NGX_OK
        || ngx_http_jvm_get_str(&sp, &args) != NGX_OK
        || ngx_http_jvm_get_int(&sp, &n) != NGX_OK)
    {
        return "malformed subrequest";
    }

    err = ngx_http_jvm_subrequest_gate(&method, &uri, &args, &sp, n);

    if (err) {
        return err;
    }

    ctx = ngx_http_jvm_get_ctx(r);
    jsr = ngx_pcalloc(r->pool, sizeof(ngx_http_jvm_sr_t));
    ps = ngx_palloc(r->pool, sizeof(ngx_http_post_subrequest_t));

    if (ctx == NULL || jsr == NULL || ps == NULL) {
        return "no memory";
    }

    jsr->id = id;
    ps->handler = ngx_http_jvm_subrequest_done;
    ps->data = jsr;

    if (ngx_http_subrequest(r, &uri, args.len ? &args : NULL, &sr, ps,
                            NGX_HTTP_SUBREQUEST_IN_MEMORY
                            |NGX_HTTP_SUBREQUEST_WAITED)
        != NGX_OK)
    {
        return "ngx_http_subrequest() failed (too many subrequests?)";
    }

    if (method.len) {
        sr->method_name = method;
        sr->method = ngx_http_jvm_method(&method);
    }

    if (ngx_http_jvm_subrequest_headers(r, sr, &sp, n) != NGX_OK
        || ngx_http_jvm_get_str(&sp, &body) != NGX_OK
        || ngx_http_jvm_subrequest_body(sr, &body) != NGX_OK)
    {
        /* nginx runs it anyway; its answer says what it got */
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "jvm: a subrequest's header fields or body could "
                      "not be set");
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: subrequest %i: \"%V?%V\"", id, &uri, &args);

    /*
     * The subrequest waits in the main request's posted requests; a posted
     * event runs them once the loop is done with what it is doing now.
     */

    if (!ctx->sr_run.posted) {
        ctx->sr_run.handler = ngx_http_jvm_subrequest_run;
        ctx->sr_run.data = r;
        ctx->sr_run.log = r->connection->log;
        ngx_post_event(&ctx->sr_run, &ngx_posted_events);
    }

    return NULL;
}


/*
 * Every part of the subrequest through the gate before nginx makes it:
 * the method and the header fields' names are tokens, the values hold no
 * control but HTAB, the args (sent as they are) no control or space, the
 * URI ("/" first, decoded: nginx escapes it on its way out) no control and
 * no ".." segment.  NULL, or the refusal.
 */

static const char *
ngx_http_jvm_subrequest_gate(ngx_str_t *method, ngx_str_t *uri,
    ngx_str_t *args, ngx_http_jvm_reader_t *sp, ngx_uint_t n)
{
    ngx_str_t              name, value;
    ngx_uint_t             i;
    const char            *err;
    ngx_http_jvm_reader_t  rd;

    err = NULL;

    if (method->len) {
        err = ngx_http_jvm_gate(NGX_HTTP_JVM_DOOR_SUB_METHOD, NULL, method);
    }

    if (err == NULL) {
        err = ngx_http_jvm_gate(NGX_HTTP_JVM_DOOR_SUB_URI, NULL, uri);
    }

    if (err == NULL && args->len) {
        err = ngx_http_jvm_gate(NGX_HTTP_JVM_DOOR_SUB_ARGS, NULL, args);
    }

    rd = *sp;

    for (i = 0; err == NULL && i < n; i++) {
        if (ngx_http_jvm_get_str(&rd, &name) != NGX_OK
            || ngx_http_jvm_get_str(&rd, &value) != NGX_OK)
        {
            return "malformed subrequest";
        }

        err = ngx_http_jvm_gate(NGX_HTTP_JVM_DOOR_SUB_NAME, NULL, &name);

        if (err == NULL) {
            err = ngx_http_jvm_gate(NGX_HTTP_JVM_DOOR_SUB_VALUE, &name,
                                    &value);
        }
    }

    return err;
}


static void
ngx_http_jvm_subrequest_run(ngx_event_t *ev)
{
    ngx_http_request_t  *r;

    r = ev->data;

    ngx_http_run_posted_requests(r->connection);
}


/* nginx's method bit for a name, as its request parser sets it. */

ngx_uint_t
ngx_http_jvm_method(ngx_str_t *name)
{
    ngx_uint_t  i;

    static struct {
        ngx_str_t   name;
        ngx_uint_t  method;
    } methods[] = {
        { ngx_string("GET"), NGX_HTTP_GET },
        { ngx_string("HEAD"), NGX_HTTP_HEAD },
        { ngx_string("POST"), NGX_HTTP_POST },
        { ngx_string("PUT"), NGX_HTTP_PUT },
        { ngx_string("DELETE"), NGX_HTTP_DELETE },
        { ngx_string("PATCH"), NGX_HTTP_PATCH },
        { ngx_string("OPTIONS"), NGX_HTTP_OPTIONS },
        { ngx_null_string, NGX_HTTP_UNKNOWN }
    };

    for (i = 0; methods[i].name.len; i++) {
        if (methods[i].name.len == name->len
            && ngx_strncmp(methods[i].name.data, name->data, name->len) == 0)
        {
            break;
        }
    }

    return methods[i].method;
}


/*
 * The subrequest gets its own list of header fields: the parent's, less
 * those Java names, plus Java's; and no body unless Java gives one.
 */

static ngx_int_t
ngx_http_jvm_subrequest_headers(ngx_http_request_t *r, ngx_http_request_t *sr,
    ngx_http_jvm_reader_t *sp, ngx_uint_t n)
{
    u_char           *save;
    ngx_str_t         name, value;
    ngx_uint_t        i, j, skip;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h, *nh;

    if (ngx_list_init(&sr->headers_in.headers, r->pool, 8 + n,
                      sizeof(ngx_table_elt_t))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        /* the parent's body is not the subrequest's */

        skip = (h[i].key.len == sizeof("Content-Length") - 1
                && ngx_strncasecmp(h[i].key.data,
                                   (u_char *) "Content-Length",
                                   h[i].key.len) == 0)
               || (h[i].key.len == sizeof("Transfer-Encoding") - 1
                   && ngx_strncasecmp(h[i].key.data,
                                      (u_char *) "Transfer-Encoding",
                                      h[i].key.len) == 0);

        save = sp->pos;

        for (j = 0; j < n && !skip; j++) {
            if (ngx_http_jvm_get_str(sp, &name) != NGX_OK
                || ngx_http_jvm_get_str(sp, &value) != NGX_OK)
            {
                return NGX_ERROR;
            }

            skip = name.len == h[i].key.len
                   && ngx_strncasecmp(name.data, h[i].key.data,
                                      name.len) == 0;
        }

        sp->pos = save;

        if (skip) {
            continue;
        }

        nh = ngx_list_push(&sr->headers_in.headers);
        if (nh == NULL) {
            return NGX_ERROR;
        }

        *nh = h[i];
    }

    for (j = 0; j < n; j++) {
        if (ngx_http_jvm_get_str(sp, &name) != NGX_OK
            || ngx_http_jvm_get_str(sp, &value) != NGX_OK)
        {
            return NGX_ERROR;
        }

        nh = ngx_list_push(&sr->headers_in.headers);
        if (nh == NULL) {
            return NGX_ERROR;
        }

        nh->hash = 1;
        nh->key = name;
        nh->value = value;
#if (nginx_version >= 1023000)
        nh->next = NULL;
#endif
        nh->lowcase_key = ngx_pnalloc(r->pool, name.len);
        if (nh->lowcase_key == NULL) {
            return NGX_ERROR;
        }

        ngx_strlow(nh->lowcase_key, name.data, name.len);
    }

    sr->headers_in.content_length = NULL;
    sr->headers_in.transfer_encoding = NULL;
    sr->headers_in.chunked = 0;
    sr->headers_in.content_length_n = -1;

    return NGX_OK;
}


static ngx_int_t
ngx_http_jvm_subrequest_body(ngx_http_request_t *sr, ngx_str_t *body)
{
    ngx_buf_t                *b;
    ngx_http_request_body_t  *rb;

    rb = ngx_pcalloc(sr->pool, sizeof(ngx_http_request_body_t));
    if (rb == NULL) {
        return NGX_ERROR;
    }

    sr->request_body = rb;
    sr->headers_in.content_length_n = body->len;

    if (body->len == 0) {
        if (sr->method == NGX_HTTP_GET || sr->method == NGX_HTTP_HEAD) {
            sr->headers_in.content_length_n = -1;
        }

        return NGX_OK;
    }

    b = ngx_calloc_buf(sr->pool);
    rb->bufs = ngx_alloc_chain_link(sr->pool);

    if (b == NULL || rb->bufs == NULL) {
        return NGX_ERROR;
    }

    b->temporary = 1;
    b->start = body->data;
    b->pos = body->data;
    b->last = body->data + body->len;
    b->end = b->last;
    b->last_buf = 1;

    rb->bufs->buf = b;
    rb->bufs->next = NULL;
    rb->buf = b;

    return NGX_OK;
}


/*
 * The subrequest is finalized (nginx may call this more than once): its
 * answer, or the error it ended with (rc: 502 refused, 504 timed out, 404
 * no such file...), goes to Java once.
 */

static ngx_int_t
ngx_http_jvm_subrequest_done(ngx_http_request_t *sr, void *data,
    ngx_int_t rc)
{
    size_t              len, need;
    ngx_uint_t          status;
    ngx_http_jvm_sr_t  *jsr = data;

    if (jsr->done) {
        return rc;
    }

    jsr->done = 1;

    if (rc == NGX_ERROR || rc == NGX_HTTP_CLIENT_CLOSED_REQUEST
        || rc == NGX_HTTP_REQUEST_TIME_OUT)
    {
        status = 0;     /* failed: Java completes exceptionally */

    } else if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        status = rc;

    } else {
        status = sr->headers_out.status ? sr->headers_out.status
                                        : NGX_HTTP_OK;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, sr->connection->log, 0,
                   "jvm: subrequest %i done: rc %i, status %ui",
                   jsr->id, rc, status);

    if (!ngx_http_jvm_vm.ready) {
        return rc;
    }

    need = ngx_http_jvm_subrequest_encode(sr, status, NULL, 0);

    if (need > ngx_http_jvm_vm.req_cap
        && ngx_http_jvm_vm_request_buffer(sr->connection->log, need)
           != NGX_OK)
    {
        status = 0;
        need = ngx_http_jvm_subrequest_encode(sr, status, NULL, 0);
    }

    len = ngx_http_jvm_subrequest_encode(sr, status, ngx_http_jvm_vm.req_addr,
                                         ngx_http_jvm_vm.req_cap);

    ngx_http_jvm_vm_subrequest_done(sr->connection->log, jsr->id, len);

    return rc;
}


/*
 * int status (0: failed), the response's header fields as a phase handler
 * sees them (ngx_http_jvm_put_headers_out(); none when failed), then the
 * body as a string.  With buf NULL: the length it needs.
 */

static size_t
ngx_http_jvm_subrequest_encode(ngx_http_request_t *sr, ngx_uint_t status,
    u_char *buf, size_t cap)
{
    u_char     *p;
    size_t      size;
    ngx_buf_t  *b;

    b = (status && sr->out) ? sr->out->buf : NULL;

    size = 4 + (status ? ngx_http_jvm_headers_out_size(sr) : 4)
           + 4 + (b ? (size_t) (b->last - b->pos) : 0);

    if (buf == NULL || size > cap) {
        return size;
    }

    p = ngx_http_jvm_put_int(buf, (uint32_t) status);

    if (status) {
        p = ngx_http_jvm_put_headers_out(sr, p);

    } else {
        p = ngx_http_jvm_put_int(p, 0);
    }

    if (b) {
        p = ngx_http_jvm_put_str(p, b->pos, b->last - b->pos);

    } else {
        p = ngx_http_jvm_put_int(p, 0);
    }

    return p - buf;
}
