
/*
 * nginx-jvm: the content handler, and the request described to Java.
 *
 * The request is copied into the worker's request buffer (a direct
 * ByteBuffer shared with Java) in the layout docs/internals.md describes;
 * nginx.jvm.Request decodes it lazily.  A handler on the event loop is
 * called at once; any other becomes a task (ngx_http_jvm_task.c).
 */


#include "ngx_http_jvm_module.h"


#define NGX_HTTP_JVM_FD_PATH_LEN  (sizeof("/proc/self/fd/") - 1 + NGX_INT_T_LEN)


typedef struct {
    ngx_str_t   method;
    ngx_str_t   path;
    ngx_str_t   uri;
    ngx_str_t   query;
    ngx_str_t   protocol;
    ngx_str_t   server;
    ngx_str_t   addr;
    ngx_str_t   cert;
    ngx_str_t   authority;
    ngx_uint_t  flags;
    ngx_uint_t  port;
} ngx_http_jvm_request_t;


static void ngx_http_jvm_body_ready(ngx_http_request_t *r);
static ngx_int_t ngx_http_jvm_call(ngx_http_request_t *r);
static ngx_int_t ngx_http_jvm_describe(ngx_http_request_t *r,
    ngx_http_jvm_request_t *jr);
static size_t ngx_http_jvm_encoded_size(ngx_http_request_t *r,
    ngx_http_jvm_request_t *jr);
static size_t ngx_http_jvm_encode(ngx_http_request_t *r,
    ngx_http_jvm_request_t *jr, u_char *buf);


ngx_int_t
ngx_http_jvm_content_handler(ngx_http_request_t *r)
{
    ngx_int_t                 rc;
    ngx_http_jvm_loc_conf_t  *jlcf;

    if (r->headers_in.content_length_n <= 0 && !r->headers_in.chunked) {
        rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }

        return ngx_http_jvm_call(r);
    }

    jlcf = ngx_http_get_module_loc_conf(r, ngx_http_jvm_module);

    /*
     * jvm_request_buffering off (pool and virtual only, checked at -t):
     * the handler starts with the first piece (ngx_http_jvm_upload.c).
     */

    if (!jlcf->request_buffering) {
        r->request_body_no_buffering = 1;
    }

    rc = ngx_http_read_client_request_body(r, ngx_http_jvm_body_ready);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    return NGX_DONE;
}


static void
ngx_http_jvm_body_ready(ngx_http_request_t *r)
{
    ngx_http_finalize_request(r, ngx_http_jvm_call(r));
}


/*
 * Calls the location's handler and sends what it answered.  Returns what
 * the caller finalizes the request with; NGX_DONE (with the request's count
 * raised) while a streamed body is still being sent.
 */

static ngx_int_t
ngx_http_jvm_call(ngx_http_request_t *r)
{
    size_t                    len;
    ngx_int_t                 rc;
    ngx_http_jvm_loc_conf_t  *jlcf;

    if (!ngx_http_jvm_vm.ready) {
        /* the reason was logged once, when the worker started */
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    jlcf = ngx_http_get_module_loc_conf(r, ngx_http_jvm_module);

    if (ngx_http_jvm_request_encode(r, &len) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (r->reading_body) {
        /* the rest of the body arrives while the handler runs */
        return ngx_http_jvm_upload_submit(r, jlcf->handler, len);
    }

    if (jlcf->mode != NGX_HTTP_JVM_LOOP || jlcf->async) {
        return ngx_http_jvm_task_submit(r, jlcf->handler,
                                        NGX_HTTP_JVM_PHASE_CONTENT, len);
    }

    rc = ngx_http_jvm_vm_handle(r, jlcf->handler, NGX_HTTP_JVM_PHASE_CONTENT,
                                len, &len);

    /* whatever the answer: a figure left would go to the next call's */
    ngx_http_jvm_cost_take(r);

    if (rc != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_jvm_send_response(r, len);
}


/*
 * Describes the request into the worker's request buffer (growing it if
 * needed); *len is the length of the description.  Every handler, of any
 * phase, gets its request this way.
 */

ngx_int_t
ngx_http_jvm_request_encode(ngx_http_request_t *r, size_t *len)
{
    size_t                  n;
    ngx_http_jvm_request_t  jr;

    if (ngx_http_jvm_describe(r, &jr) != NGX_OK) {
        return NGX_ERROR;
    }

    n = ngx_http_jvm_encoded_size(r, &jr);

    if (n > ngx_http_jvm_vm.req_cap
        && ngx_http_jvm_vm_request_buffer(r->connection->log, n) != NGX_OK)
    {
        return NGX_ERROR;
    }

    *len = ngx_http_jvm_encode(r, &jr, ngx_http_jvm_vm.req_addr);

    return NGX_OK;
}


static ngx_int_t
ngx_http_jvm_describe(ngx_http_request_t *r, ngx_http_jvm_request_t *jr)
{
    u_char                    *q;
    ngx_connection_t          *c;
    ngx_http_core_srv_conf_t  *cscf;

    c = r->connection;

    jr->flags = 0;
    jr->method = r->method_name;

    /* Ring's :uri is the path as sent, so it comes from the request line */

    jr->path = r->unparsed_uri;
    ngx_str_null(&jr->query);

    if (!r->valid_unparsed_uri) {
        /* a rewrite handler or an internal redirect changed the URI */
        jr->path = r->uri;

        if (r->args.len) {
            jr->query = r->args;
            jr->flags |= NGX_HTTP_JVM_REQ_HAS_QUERY;
        }

        goto uri;
    }

    q = ngx_strlchr(r->unparsed_uri.data,
                    r->unparsed_uri.data + r->unparsed_uri.len, '?');

    if (q) {
        jr->path.len = q - r->unparsed_uri.data;
        jr->query.data = q + 1;
        jr->query.len = r->unparsed_uri.data + r->unparsed_uri.len - q - 1;
        jr->flags |= NGX_HTTP_JVM_REQ_HAS_QUERY;
    }

uri:

    /*
     * nginx's $uri (decoded, normalised, after a rewrite or an internal
     * redirect), so that Java reads it on any thread; usually it is the
     * path, and then only the flag's absence says so
     */

    if (r->uri.len != jr->path.len
        || (r->uri.len && ngx_memcmp(r->uri.data, jr->path.data, r->uri.len)))
    {
        jr->uri = r->uri;
        jr->flags |= NGX_HTTP_JVM_REQ_HAS_URI;

    } else {
        ngx_str_null(&jr->uri);
    }

    if (r->http_protocol.len) {
        jr->protocol = r->http_protocol;

    } else {
        ngx_str_set(&jr->protocol, "HTTP/0.9");
    }

    if (r->headers_in.server.len) {
        jr->server = r->headers_in.server;

    } else {
        cscf = ngx_http_get_module_srv_conf(r, ngx_http_core_module);
        jr->server = cscf->server_name;
    }

    ngx_str_null(&jr->authority);

#if (NGX_HTTP_V3)

    /*
     * An HTTP/3 client names the host in :authority and sends no Host, and
     * nginx's HTTP/3 (1.25 to 1.30 at least), unlike its HTTP/2, makes no
     * Host field of it: the handler gets one, as over HTTP/1.1 and HTTP/2,
     * from the raw value nginx keeps in host_start (its server name is
     * that value validated: lowercased, without the port).
     */

    if (r->http_version == NGX_HTTP_VERSION_30
        && r->headers_in.host == NULL
        && r->host_start && r->host_end > r->host_start)
    {
        jr->authority.data = r->host_start;
        jr->authority.len = r->host_end - r->host_start;
    }

#endif

    if (ngx_connection_local_sockaddr(c, NULL, 0) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_jvm_ws_request(r)) {
        jr->flags |= NGX_HTTP_JVM_REQ_WEBSOCKET;
    }

    jr->port = ngx_inet_get_port(c->local_sockaddr);
    jr->addr = c->addr_text;
    ngx_str_null(&jr->cert);

#if (NGX_HTTP_SSL)

    if (c->ssl) {
        jr->flags |= NGX_HTTP_JVM_REQ_HTTPS;

        if (ngx_ssl_get_raw_certificate(c, r->pool, &jr->cert) != NGX_OK) {
            return NGX_ERROR;
        }
    }

#endif

    return NGX_OK;
}


static size_t
ngx_http_jvm_encoded_size(ngx_http_request_t *r, ngx_http_jvm_request_t *jr)
{
    size_t        len;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    len = 4 * 4 + 4 + 8 + 8 * 4
          + jr->method.len + jr->path.len + jr->query.len + jr->protocol.len
          + jr->server.len + jr->addr.len + jr->cert.len + jr->uri.len
          + ngx_http_jvm_header_list_size(&r->headers_in.headers)
          + 2 * 4 + sizeof("host") - 1 + jr->authority.len;

    /* a body still arriving goes to Java in pieces (ngx_http_jvm_upload.c) */

    if (r->request_body && !r->reading_body) {
        for (cl = r->request_body->bufs; cl; cl = cl->next) {
            b = cl->buf;

            if (b->in_file) {
                len += 8 + NGX_HTTP_JVM_FD_PATH_LEN + 16;

            } else {
                len += 8 + (b->last - b->pos);
            }
        }
    }

    return len;
}


static size_t
ngx_http_jvm_encode(ngx_http_request_t *r, ngx_http_jvm_request_t *jr,
    u_char *buf)
{
    u_char       *p, *count, *path;
    u_char        fd_path[NGX_HTTP_JVM_FD_PATH_LEN];
    uint32_t      n;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;
#if (NGX_DEBUG)
    uint32_t      headers;
    ngx_uint_t    in_file;
#endif

    p = buf;
    p = ngx_http_jvm_put_int(p, (uint32_t) jr->flags);
    p = ngx_http_jvm_put_int(p, (uint32_t) jr->port);

    /* for log handlers: what was answered, and the bytes sent */
    p = ngx_http_jvm_put_int(p, (uint32_t) r->headers_out.status);
    p = ngx_http_jvm_put_long(p, r->connection->sent);
    p = ngx_http_jvm_put_str(p, jr->method.data, jr->method.len);
    p = ngx_http_jvm_put_str(p, jr->path.data, jr->path.len);
    p = ngx_http_jvm_put_str(p, jr->query.data, jr->query.len);
    p = ngx_http_jvm_put_str(p, jr->protocol.data, jr->protocol.len);
    p = ngx_http_jvm_put_str(p, jr->server.data, jr->server.len);
    p = ngx_http_jvm_put_str(p, jr->addr.data, jr->addr.len);
    p = ngx_http_jvm_put_str(p, jr->cert.data, jr->cert.len);

    if (jr->flags & NGX_HTTP_JVM_REQ_HAS_URI) {
        p = ngx_http_jvm_put_str(p, jr->uri.data, jr->uri.len);
    }

    count = p;
    p = ngx_http_jvm_put_int(p, 0);
    n = 0;

    p = ngx_http_jvm_put_header_list(p, &r->headers_in.headers, 0, &n);

    /* last, where nginx's HTTP/2 puts the Host it makes of :authority */

    if (jr->authority.len) {
        p = ngx_http_jvm_put_str(p, (u_char *) "host", sizeof("host") - 1);
        p = ngx_http_jvm_put_str(p, jr->authority.data, jr->authority.len);
        n++;
    }

    (void) ngx_http_jvm_put_int(count, n);

#if (NGX_DEBUG)
    headers = n;
    in_file = 0;
#endif

    count = p;
    p = ngx_http_jvm_put_int(p, 0);
    n = 0;

    if (r->reading_body) {
        (void) ngx_http_jvm_put_int(buf, (uint32_t) (jr->flags
                                    | NGX_HTTP_JVM_REQ_BODY_STREAM));

    } else if (r->request_body) {
        for (cl = r->request_body->bufs; cl; cl = cl->next) {
            b = cl->buf;

            if (b->in_file) {
                /*
                 * nginx unlinks its temp files as soon as it creates them:
                 * Java reopens the file through the descriptor nginx holds.
                 */
                path = ngx_sprintf(fd_path, "/proc/self/fd/%d",
                                   (int) b->file->fd);

                /*
                 * Java opens the file while it is described, on the loop,
                 * while N is still this request's: nginx closes N when the
                 * request ends and N may then be another request's file.
                 */
                (void) ngx_http_jvm_put_int(buf, (uint32_t) (jr->flags
                                            | NGX_HTTP_JVM_REQ_BODY_FILE));
                p = ngx_http_jvm_put_int(p, 1);
                p = ngx_http_jvm_put_str(p, fd_path, path - fd_path);
                p = ngx_http_jvm_put_long(p, b->file_pos);
                p = ngx_http_jvm_put_long(p, b->file_last - b->file_pos);
#if (NGX_DEBUG)
                in_file++;
#endif

            } else {
                p = ngx_http_jvm_put_int(p, 0);
                p = ngx_http_jvm_put_str(p, b->pos, b->last - b->pos);
            }

            n++;
        }
    }

    (void) ngx_http_jvm_put_int(count, n);

    ngx_log_debug5(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: request described in %uz bytes, flags %ui, "
                   "%uD header fields, body in %uD segments, %ui in a file",
                   (size_t) (p - buf), jr->flags, headers, n, in_file);

    return p - buf;
}
