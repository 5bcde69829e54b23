
/*
 * nginx-jvm: a response from Java into nginx's output chain.
 *
 * nginx.jvm.ResponseEncoder writes the status, the header fields and the
 * body (inline bytes, a file name, or "streamed") into the response buffer.
 * Inline bodies are copied into the request's pool; files are sent by nginx
 * itself (sendfile, ranges, conditional GET); streamed bodies are pulled a
 * piece at a time, each piece only after the previous one left.
 */


#include "ngx_http_jvm_module.h"


typedef struct {
    u_char        *pos;
    u_char        *last;
} ngx_http_jvm_reader_t;


static ngx_int_t ngx_http_jvm_set_headers(ngx_http_request_t *r,
    ngx_http_jvm_reader_t *rd, ngx_uint_t count, ngx_uint_t kind);
static ngx_int_t ngx_http_jvm_send_inline(ngx_http_request_t *r,
    u_char *data, size_t len);
static ngx_int_t ngx_http_jvm_send_file(ngx_http_request_t *r,
    ngx_str_t *path);
static ngx_int_t ngx_http_jvm_send_stream(ngx_http_request_t *r);
static void ngx_http_jvm_stream_writer(ngx_http_request_t *r);
static void ngx_http_jvm_stream_close(ngx_http_jvm_ctx_t *ctx);
static void ngx_http_jvm_cleanup(void *data);


static ngx_inline uint32_t
ngx_http_jvm_get_int(ngx_http_jvm_reader_t *rd)
{
    uint32_t  n;

    ngx_memcpy(&n, rd->pos, sizeof(uint32_t));
    rd->pos += sizeof(uint32_t);

    return n;
}


static ngx_inline ngx_int_t
ngx_http_jvm_get_str(ngx_http_jvm_reader_t *rd, ngx_str_t *s)
{
    s->len = ngx_http_jvm_get_int(rd);
    s->data = rd->pos;

    if (s->len > (size_t) (rd->last - rd->pos)) {
        return NGX_ERROR;
    }

    rd->pos += s->len;

    return NGX_OK;
}


ngx_int_t
ngx_http_jvm_send_response(ngx_http_request_t *r, size_t len)
{
    int64_t                 length;
    ngx_int_t               rc;
    ngx_str_t               s;
    ngx_uint_t              status, kind, count;
    ngx_http_jvm_reader_t   rd;

    if (len < 20 || len > ngx_http_jvm_vm.resp_cap) {
        ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                      "jvm: response of invalid length %uz", len);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    rd.pos = ngx_http_jvm_vm.resp_addr;
    rd.last = rd.pos + len;

    status = ngx_http_jvm_get_int(&rd);
    kind = ngx_http_jvm_get_int(&rd);
    ngx_memcpy(&length, rd.pos, sizeof(int64_t));
    rd.pos += sizeof(int64_t);
    count = ngx_http_jvm_get_int(&rd);

    if (kind == NGX_HTTP_JVM_BODY_ERROR) {
        if (ngx_http_jvm_get_str(&rd, &s) == NGX_OK) {
            ngx_http_jvm_log_text(NGX_LOG_ERR, r->connection->log,
                                  s.data, s.len);
        }

        return status == NGX_HTTP_SERVICE_UNAVAILABLE
               ? NGX_HTTP_SERVICE_UNAVAILABLE
               : NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    r->headers_out.status = status;
    r->headers_out.content_length_n = length;

    if (ngx_http_jvm_set_headers(r, &rd, count, kind) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    switch (kind) {

    case NGX_HTTP_JVM_BODY_INLINE:
        if (ngx_http_jvm_get_str(&rd, &s) != NGX_OK) {
            break;
        }

        return ngx_http_jvm_send_inline(r, s.data, s.len);

    case NGX_HTTP_JVM_BODY_FILE:
        if (ngx_http_jvm_get_str(&rd, &s) != NGX_OK) {
            break;
        }

        return ngx_http_jvm_send_file(r, &s);

    case NGX_HTTP_JVM_BODY_STREAM:
        return ngx_http_jvm_send_stream(r);

    default: /* NGX_HTTP_JVM_BODY_NONE */

        /* a HEAD answer without a length says none: it may not know GET's */

        if (r->headers_out.content_length_n < 0
            && r->method != NGX_HTTP_HEAD)
        {
            r->headers_out.content_length_n = 0;
        }

        rc = ngx_http_send_header(r);

        if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
            return rc;
        }

        return ngx_http_send_special(r, NGX_HTTP_LAST);
    }

    ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                  "jvm: malformed response from nginx.jvm.ResponseEncoder");

    return NGX_HTTP_INTERNAL_SERVER_ERROR;
}


/*
 * The header fields are copied into the request's pool in one block (the
 * response buffer is reused by the next request).  Fields that nginx keeps
 * in headers_out of its own are set there, so that its filters (not
 * modified, range, gzip, charset) see them and it does not add a second one.
 */

static ngx_int_t
ngx_http_jvm_set_headers(ngx_http_request_t *r, ngx_http_jvm_reader_t *rd,
    ngx_uint_t count, ngx_uint_t kind)
{
    u_char           *copy, *start;
    off_t             n;
    size_t            size;
    ngx_str_t         name, value;
    ngx_uint_t        i;
    ngx_table_elt_t  *h;

    start = rd->pos;

    /* find the end of the header fields to copy them at once */

    for (i = 0; i < 2 * count; i++) {
        if (ngx_http_jvm_get_str(rd, &name) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    size = rd->pos - start;

    copy = ngx_pnalloc(r->pool, size);
    if (copy == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(copy, start, size);

    rd->pos = copy;

    for (i = 0; i < count; i++) {
        (void) ngx_http_jvm_get_str(rd, &name);
        (void) ngx_http_jvm_get_str(rd, &value);

        if (name.len == 12
            && ngx_strncasecmp(name.data, (u_char *) "Content-Type", 12) == 0)
        {
            r->headers_out.content_type = value;
            r->headers_out.content_type_len = value.len;

            for (n = 0; n < (off_t) value.len; n++) {
                if (value.data[n] == ';' || value.data[n] == ' ') {
                    r->headers_out.content_type_len = n;
                    break;
                }
            }

            continue;
        }

        if (name.len == 14
            && ngx_strncasecmp(name.data, (u_char *) "Content-Length", 14)
               == 0)
        {
            n = ngx_atoof(value.data, value.len);

            if (n == NGX_ERROR) {
                ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                              "jvm: the handler answered an invalid "
                              "Content-Length \"%V\"", &value);
                return NGX_ERROR;
            }

            if (kind != NGX_HTTP_JVM_BODY_FILE) {
                r->headers_out.content_length_n = n;
            }

            continue;
        }

        /* hop-by-hop fields are nginx's business */

        if (name.len == 17
            && ngx_strncasecmp(name.data, (u_char *) "Transfer-Encoding", 17)
               == 0)
        {
            continue;
        }

        if (name.len == 10
            && ngx_strncasecmp(name.data, (u_char *) "Connection", 10) == 0)
        {
            if (ngx_strlcasestrn(value.data, value.data + value.len,
                                 (u_char *) "close", 5 - 1)
                != NULL)
            {
                r->keepalive = 0;
            }

            continue;
        }

        h = ngx_list_push(&r->headers_out.headers);
        if (h == NULL) {
            return NGX_ERROR;
        }

        h->hash = 1;
        h->key = name;
        h->value = value;
        h->lowcase_key = NULL;
#if (nginx_version >= 1023000)
        h->next = NULL;
#endif

        switch (name.len) {

        case 4:
            if (ngx_strncasecmp(name.data, (u_char *) "Date", 4) == 0) {
                r->headers_out.date = h;

            } else if (ngx_strncasecmp(name.data, (u_char *) "ETag", 4) == 0)
            {
                r->headers_out.etag = h;
            }

            break;

        case 6:
            if (ngx_strncasecmp(name.data, (u_char *) "Server", 6) == 0) {
                r->headers_out.server = h;
            }

            break;

        case 13:
            if (ngx_strncasecmp(name.data, (u_char *) "Last-Modified", 13)
                == 0)
            {
                r->headers_out.last_modified = h;
                r->headers_out.last_modified_time =
                                ngx_parse_http_time(value.data, value.len);
            }

            break;

        case 16:
            if (ngx_strncasecmp(name.data, (u_char *) "Content-Encoding", 16)
                == 0)
            {
                r->headers_out.content_encoding = h;
            }

            break;
        }
    }

    rd->pos = start + size;

    if (kind != NGX_HTTP_JVM_BODY_FILE) {
        /*
         * Like Ring's servlet adapter, answer what the handler built:
         * conditional requests are the business of Ring middleware.
         */
        r->disable_not_modified = 1;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_jvm_send_inline(ngx_http_request_t *r, u_char *data, size_t len)
{
    ngx_int_t     rc;
    ngx_buf_t    *b;
    ngx_chain_t   out;

    /* the body's own length: a wrong Content-Length would break framing */
    r->headers_out.content_length_n = len;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    if (len == 0) {
        return ngx_http_send_special(r, NGX_HTTP_LAST);
    }

    b = ngx_create_temp_buf(r->pool, len);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->last = ngx_cpymem(b->pos, data, len);
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


/* A java.io.File body: sent the way nginx's static module sends a file. */

static ngx_int_t
ngx_http_jvm_send_file(ngx_http_request_t *r, ngx_str_t *path)
{
    ngx_int_t                  rc;
    ngx_buf_t                 *b;
    ngx_str_t                  name;
    ngx_uint_t                 level;
    ngx_chain_t                out;
    ngx_open_file_info_t       of;
    ngx_http_core_loc_conf_t  *clcf;

    name.len = path->len;
    name.data = ngx_pnalloc(r->pool, path->len + 1);
    if (name.data == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_cpystrn(name.data, path->data, path->len + 1);

    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    ngx_memzero(&of, sizeof(ngx_open_file_info_t));

    of.read_ahead = clcf->read_ahead;
    of.directio = clcf->directio;
    of.valid = clcf->open_file_cache_valid;
    of.min_uses = clcf->open_file_cache_min_uses;
    of.errors = clcf->open_file_cache_errors;
    of.events = clcf->open_file_cache_events;

    if (ngx_open_cached_file(clcf->open_file_cache, &name, &of, r->pool)
        != NGX_OK)
    {
        level = (of.err == NGX_ENOENT || of.err == NGX_ENOTDIR)
                ? NGX_LOG_ERR : NGX_LOG_CRIT;

        ngx_log_error(level, r->connection->log, of.err,
                      "jvm: the handler answered the file \"%V\", which "
                      "cannot be opened", &name);

        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (!of.is_file) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "jvm: the handler answered \"%V\", which is not a "
                      "regular file", &name);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    r->root_tested = !r->error_page;
    r->allow_ranges = 1;
    r->headers_out.content_length_n = of.size;

    if (r->headers_out.last_modified == NULL) {
        r->headers_out.last_modified_time = of.mtime;
    }

    if (r->headers_out.etag == NULL && ngx_http_set_etag(r) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (of.size == 0) {
        r->header_only = r->header_only || r->method == NGX_HTTP_HEAD;
        rc = ngx_http_send_header(r);

        if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
            return rc;
        }

        return ngx_http_send_special(r, NGX_HTTP_LAST);
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->file = ngx_pcalloc(r->pool, sizeof(ngx_file_t));
    if (b->file == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    b->file_pos = 0;
    b->file_last = of.size;

    b->in_file = 1;
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    b->file->fd = of.fd;
    b->file->name = name;
    b->file->log = r->connection->log;
    b->file->directio = of.is_directio;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


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

    cln->handler = ngx_http_jvm_cleanup;
    cln->data = ctx;

    ngx_http_set_ctx(r, ctx, ngx_http_jvm_module);

    return ctx;
}


static ngx_int_t
ngx_http_jvm_send_stream(ngx_http_request_t *r)
{
    jobject              body;
    JNIEnv              *env;
    ngx_int_t            rc;
    ngx_http_jvm_ctx_t  *ctx;

    env = ngx_http_jvm_vm.env;

    body = (*env)->GetStaticObjectField(env, ngx_http_jvm_vm.worker,
                                        ngx_http_jvm_vm.pending);
    if (body == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx = ngx_http_jvm_get_ctx(r);
    if (ctx == NULL) {
        (*env)->DeleteLocalRef(env, body);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->body = (*env)->NewGlobalRef(env, body);
    (*env)->DeleteLocalRef(env, body);

    ctx->length = r->headers_out.content_length_n;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        ngx_http_jvm_stream_close(ctx);
        return rc;
    }

    rc = ngx_http_jvm_stream(r, ctx);

    if (rc != NGX_AGAIN) {
        return rc;
    }

    /* the rest is sent from the write event handler */

    r->main->count++;
    r->write_event_handler = ngx_http_jvm_stream_writer;

    return NGX_DONE;
}


/*
 * Sends pieces of the body until it ends (returns what ngx_http_output_filter
 * returned for the last one), fails (NGX_ERROR), the client is slower than
 * the body (NGX_AGAIN, with the write event armed), or the body is slower
 * than the client (NGX_AGAIN, waiting for its producer on a JVM thread).
 */

ngx_int_t
ngx_http_jvm_stream(ngx_http_request_t *r, ngx_http_jvm_ctx_t *ctx)
{
    jint                       n;
    JNIEnv                    *env;
    ngx_int_t                  rc;
    ngx_buf_t                 *b;
    ngx_chain_t               *cl;
    ngx_http_jvm_vm_t         *jvm;
    ngx_http_core_loc_conf_t  *clcf;

    jvm = &ngx_http_jvm_vm;
    env = jvm->env;

    while (ctx->busy == NULL) {

        n = (*env)->CallStaticIntMethod(env, jvm->worker, jvm->next,
                                        ctx->body);

        if ((*env)->ExceptionCheck(env)) {
            ngx_http_jvm_stream_close(ctx);
            return ngx_http_jvm_vm_failed(r->connection->log,
                                          "Worker.next()");
        }

        if (n == -1) {
            ngx_http_jvm_stream_close(ctx);

            if (ctx->length >= 0 && ctx->sent < ctx->length) {
                ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                              "jvm: the response body ended after %O of "
                              "the %O bytes its Content-Length says",
                              ctx->sent, ctx->length);
                return NGX_ERROR;
            }

            return ngx_http_send_special(r, NGX_HTTP_LAST);
        }

        if (n == -2) {
            /* a JVM thread has not produced the next piece yet */
            ngx_http_jvm_task_wait(r, ctx);
            return NGX_AGAIN;
        }

        if (n < -2) {
            /*
             * The body failed half-way: what was sent stays sent, and
             * closing the connection tells the client it was cut short.
             */
            ngx_http_jvm_log_text(NGX_LOG_ERR, r->connection->log,
                                  jvm->resp_addr, (size_t) (-3 - n));
            ngx_http_jvm_stream_close(ctx);
            return NGX_ERROR;
        }

        if (ctx->length >= 0 && ctx->sent + n > ctx->length) {
            /* more than Content-Length said: what fits, then the end */
            n = (jint) (ctx->length - ctx->sent);

            if (n == 0) {
                ngx_http_jvm_stream_close(ctx);
                return ngx_http_send_special(r, NGX_HTTP_LAST);
            }
        }

        ctx->sent += n;

        cl = ngx_chain_get_free_buf(r->pool, &ctx->free);
        if (cl == NULL) {
            return NGX_ERROR;
        }

        b = cl->buf;

        if (b->start == NULL || (size_t) (b->end - b->start) < (size_t) n) {
            b->start = ngx_palloc(r->pool, jvm->resp_cap);
            if (b->start == NULL) {
                return NGX_ERROR;
            }

            b->end = b->start + jvm->resp_cap;
        }

        b->pos = b->start;
        b->last = ngx_cpymem(b->start, jvm->resp_addr, n);
        b->temporary = 1;
        b->flush = 1;
        b->tag = (ngx_buf_tag_t) &ngx_http_jvm_module;

        rc = ngx_http_output_filter(r, cl);

        ngx_chain_update_chains(r->pool, &ctx->free, &ctx->busy, &cl,
                                (ngx_buf_tag_t) &ngx_http_jvm_module);

        if (rc == NGX_ERROR) {
            return NGX_ERROR;
        }
    }

    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    if (!r->connection->write->delayed) {
        ngx_add_timer(r->connection->write, clcf->send_timeout);
    }

    if (ngx_handle_write_event(r->connection->write, clcf->send_lowat)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_AGAIN;
}


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

    rc = ngx_http_jvm_stream(r, ctx);

    if (rc == NGX_AGAIN) {
        return;
    }

    ngx_http_finalize_request(r, rc);
}


static void
ngx_http_jvm_stream_close(ngx_http_jvm_ctx_t *ctx)
{
    JNIEnv  *env;

    if (ctx->body == NULL) {
        return;
    }

    env = ngx_http_jvm_vm.env;

    (*env)->CallStaticVoidMethod(env, ngx_http_jvm_vm.worker,
                                 ngx_http_jvm_vm.close, ctx->body);

    if ((*env)->ExceptionCheck(env)) {
        (*env)->ExceptionClear(env);
    }

    (*env)->DeleteGlobalRef(env, ctx->body);
    ctx->body = NULL;
}


static void
ngx_http_jvm_cleanup(void *data)
{
    ngx_http_jvm_ctx_t  *ctx = data;

    ngx_http_jvm_task_cancel(ctx);
    ngx_http_jvm_stream_close(ctx);
}
