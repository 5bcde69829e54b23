
/*
 * nginx-jvm: the WebSocket's opening handshake (RFC 6455 section 4).
 *
 * A handler answers an upgrade request with a listener; Java keeps the
 * listener under a socket id, and the response names that id.  Here the
 * handshake is checked and answered (101, with permessage-deflate's answer
 * when jvm_websocket_deflate is on), then the connection leaves HTTP: the
 * request is freed, as nginx frees a keep-alive connection's, and the
 * connection is handed to ngx_http_jvm_websocket.c, which keeps only a
 * small ngx_http_jvm_ws_t for it and reads and writes its frames.
 */


#include "ngx_http_jvm_module.h"
#include "ngx_http_jvm_websocket.h"

#include <ngx_sha1.h>


#define NGX_HTTP_JVM_UPGRADE_REQUIRED  426


static ngx_int_t ngx_http_jvm_ws_handshake(ngx_http_request_t *r,
    ngx_str_t *key);
static ngx_table_elt_t *ngx_http_jvm_ws_header(ngx_http_request_t *r,
    char *name, size_t len);
static ngx_int_t ngx_http_jvm_ws_token(ngx_str_t *value, char *token,
    size_t len);
static ngx_int_t ngx_http_jvm_ws_accept(ngx_http_request_t *r,
    ngx_str_t *key);
static ngx_int_t ngx_http_jvm_ws_add_header(ngx_http_request_t *r,
    char *name, u_char *value, size_t len);
static void ngx_http_jvm_ws_handshake_handler(ngx_event_t *wev);
static void ngx_http_jvm_ws_abort(ngx_http_request_t *r);
static void ngx_http_jvm_ws_detach(ngx_http_request_t *r);
static void ngx_http_jvm_ws_free_request(ngx_http_request_t *r);


/*
 * Whether the request is a valid opening handshake (RFC 6455 4.2.1); told
 * to Java in the request's flags, so that Ring's :websocket? is true.
 */

ngx_uint_t
ngx_http_jvm_ws_request(ngx_http_request_t *r)
{
    ngx_str_t  key;

    if (ngx_http_jvm_ws_header(r, "Upgrade", 7) == NULL) {
        return 0;
    }

    return ngx_http_jvm_ws_handshake(r, &key) == NGX_OK;
}


/*
 * NGX_OK with the client's key, or the status that refuses the handshake:
 * 426 (with Sec-WebSocket-Version) for a version other than 13, else 400.
 */

static ngx_int_t
ngx_http_jvm_ws_handshake(ngx_http_request_t *r, ngx_str_t *key)
{
    ngx_table_elt_t  *h;

    h = ngx_http_jvm_ws_header(r, "Sec-WebSocket-Version", 21);

    if (h == NULL || h->value.len != 2
        || ngx_strncmp(h->value.data, "13", 2) != 0)
    {
        return NGX_HTTP_JVM_UPGRADE_REQUIRED;
    }

    if (r != r->main
        || r->method != NGX_HTTP_GET
        || r->http_version != NGX_HTTP_VERSION_11)
    {
        return NGX_HTTP_BAD_REQUEST;
    }

    /* nginx 1.22 keeps no Upgrade field of its own: the list is searched */

    h = ngx_http_jvm_ws_header(r, "Upgrade", 7);

    if (h == NULL
        || ngx_http_jvm_ws_token(&h->value, "websocket", 9) != NGX_OK)
    {
        return NGX_HTTP_BAD_REQUEST;
    }

    h = ngx_http_jvm_ws_header(r, "Connection", 10);

    if (h == NULL
        || ngx_http_jvm_ws_token(&h->value, "upgrade", 7) != NGX_OK)
    {
        return NGX_HTTP_BAD_REQUEST;
    }

    h = ngx_http_jvm_ws_header(r, "Sec-WebSocket-Key", 17);

    /* base64 of 16 bytes: 22 characters and "==" */

    if (h == NULL || h->value.len != 24
        || h->value.data[22] != '=' || h->value.data[23] != '=')
    {
        return NGX_HTTP_BAD_REQUEST;
    }

    *key = h->value;

    return NGX_OK;
}


static ngx_table_elt_t *
ngx_http_jvm_ws_header(ngx_http_request_t *r, char *name, size_t len)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                return NULL;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].key.len == len
            && ngx_strncasecmp(h[i].key.data, (u_char *) name, len) == 0)
        {
            return &h[i];
        }
    }
}


/* A comma-separated list of tokens holds token, in any case. */

static ngx_int_t
ngx_http_jvm_ws_token(ngx_str_t *value, char *token, size_t len)
{
    u_char  *p, *last, *start, *end;

    p = value->data;
    last = p + value->len;

    while (p < last) {
        while (p < last && (*p == ' ' || *p == '\t' || *p == ',')) {
            p++;
        }

        start = p;

        while (p < last && *p != ',') {
            p++;
        }

        end = p;

        while (end > start && (end[-1] == ' ' || end[-1] == '\t')) {
            end--;
        }

        if ((size_t) (end - start) == len
            && ngx_strncasecmp(start, (u_char *) token, len) == 0)
        {
            return NGX_OK;
        }
    }

    return NGX_DECLINED;
}


/*
 * The handler answered with a listener, kept by Java as socket id: the
 * handshake is answered, and once the 101 has left, the connection is a
 * WebSocket.  Returns what the request is finalized with.
 */

ngx_int_t
ngx_http_jvm_ws_upgrade(ngx_http_request_t *r, ngx_int_t id, ngx_uint_t raw)
{
    ngx_int_t            rc;
    ngx_str_t            key;
    ngx_connection_t    *c;
    ngx_http_jvm_ctx_t  *ctx;

    c = r->connection;

    if (raw) {
        /*
         * A byte tunnel: the application (a servlet engine's WebSocket)
         * answered the handshake itself, and its 101 goes out with its own
         * header fields.  Only an HTTP/1.1 connection can leave HTTP.
         */

        if (r->http_version != NGX_HTTP_VERSION_11 || r != r->main
            || ngx_http_jvm_ws_header(r, "Upgrade", 7) == NULL)
        {
            ngx_http_jvm_vm_ws_abandon(id);

            ngx_log_error(NGX_LOG_INFO, c->log, 0,
                          "jvm: the handler answered an upgrade to a "
                          "request that cannot upgrade (HTTP/1.1 only)");

            ngx_http_clean_header(r);

            return NGX_HTTP_BAD_REQUEST;
        }

        rc = NGX_OK;

    } else {
        rc = ngx_http_jvm_ws_handshake(r, &key);
    }

    if (rc != NGX_OK) {
        ngx_http_jvm_vm_ws_abandon(id);

        ngx_log_error(NGX_LOG_INFO, c->log, 0,
                      "jvm: the handler answered a WebSocket listener to a "
                      "request that is not a valid WebSocket handshake");

        ngx_http_clean_header(r);

        if (rc == NGX_HTTP_JVM_UPGRADE_REQUIRED
            && ngx_http_jvm_ws_add_header(r, "Sec-WebSocket-Version",
                                          (u_char *) "13", 2)
               != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        return rc;
    }

    ctx = ngx_http_jvm_get_ctx(r);
    if (ctx == NULL) {
        ngx_http_jvm_vm_ws_abandon(id);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* the request's cleanup abandons the socket until the 101 has left */
    ctx->ws = id;
    ctx->ws_raw = raw ? 1 : 0;

    r->headers_out.status = NGX_HTTP_SWITCHING_PROTOCOLS;
    ngx_str_set(&r->headers_out.status_line, "101 Switching Protocols");
    r->headers_out.content_length_n = -1;
    r->headers_out.content_type.len = 0;
    r->headers_out.content_type_len = 0;
    r->keepalive = 0;

    if (!raw && ngx_http_jvm_ws_accept(r, &key) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, c->log, 0,
                   "jvm: websocket %i: 101 to the handshake%s", id,
                   raw ? ", a byte tunnel" : "");

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK) {
        return rc;
    }

    if (ngx_http_send_special(r, NGX_HTTP_FLUSH) == NGX_ERROR) {
        return NGX_ERROR;
    }

    /*
     * The request is freed once the 101 has left, from the connection's
     * own write event, outside the request's call chain.
     */

    r->main->count++;
    ctx->read_handler = c->read->handler;
    ctx->write_handler = c->write->handler;
    c->read->handler = ngx_http_jvm_ws_empty_handler;
    c->write->handler = ngx_http_jvm_ws_handshake_handler;

    ngx_post_event(c->write, &ngx_posted_events);

    return NGX_DONE;
}


/*
 * The 101's own fields for a WebSocket of nginx-jvm's: Upgrade, the key's
 * Sec-WebSocket-Accept (RFC 6455, 4.2.2), and permessage-deflate's when
 * jvm_websocket_deflate is on and the client offered it.
 */

static ngx_int_t
ngx_http_jvm_ws_accept(ngx_http_request_t *r, ngx_str_t *key)
{
    u_char                   *accept;
    ngx_int_t                 rc;
    ngx_str_t                 encoded, digest, extensions;
    ngx_uint_t                bits;
    ngx_sha1_t                sha1;
    ngx_http_jvm_loc_conf_t  *jlcf;
    u_char                    hash[20];

    ngx_sha1_init(&sha1);
    ngx_sha1_update(&sha1, key->data, key->len);
    ngx_sha1_update(&sha1, "258EAFA5-E914-47DA-95CA-C5AB0DC85B11", 36);
    ngx_sha1_final(hash, &sha1);

    accept = ngx_pnalloc(r->pool, ngx_base64_encoded_length(20));
    if (accept == NULL) {
        return NGX_ERROR;
    }

    digest.data = hash;
    digest.len = 20;
    encoded.data = accept;
    ngx_encode_base64(&encoded, &digest);

    if (ngx_http_jvm_ws_add_header(r, "Upgrade", (u_char *) "websocket", 9)
        != NGX_OK
        || ngx_http_jvm_ws_add_header(r, "Sec-WebSocket-Accept",
                                      encoded.data, encoded.len)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    jlcf = ngx_http_get_module_loc_conf(r, ngx_http_jvm_module);

    if (jlcf->ws_deflate) {
        rc = ngx_http_jvm_deflate_negotiate(r, &extensions, &bits);

        if (rc == NGX_ERROR
            || (rc == NGX_OK
                && ngx_http_jvm_ws_add_header(r, "Sec-WebSocket-Extensions",
                                              extensions.data,
                                              extensions.len)
                   != NGX_OK))
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_jvm_ws_add_header(ngx_http_request_t *r, char *name, u_char *value,
    size_t len)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    h->key.data = (u_char *) name;
    h->key.len = ngx_strlen(name);
    h->value.data = value;
    h->value.len = len;
    h->lowcase_key = NULL;
#if (nginx_version >= 1023000)
    h->next = NULL;
#endif

    return NGX_OK;
}


static void
ngx_http_jvm_ws_handshake_handler(ngx_event_t *wev)
{
    ngx_connection_t          *c;
    ngx_http_request_t        *r;
    ngx_http_core_loc_conf_t  *clcf;

    c = wev->data;
    r = c->data;

    if (wev->timedout) {
        c->timedout = 1;
        goto failed;
    }

    if (c->buffered) {
        /* the 101 has not all left yet */

        if (ngx_http_output_filter(r, NULL) == NGX_ERROR) {
            goto failed;
        }

        if (c->buffered) {
            clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

            ngx_add_timer(wev, clcf->send_timeout);

            if (ngx_handle_write_event(wev, clcf->send_lowat) != NGX_OK) {
                goto failed;
            }

            return;
        }
    }

    if (wev->timer_set) {
        ngx_del_timer(wev);
    }

    ngx_http_jvm_ws_detach(r);
    return;

failed:

    ngx_http_jvm_ws_abort(r);
}


/* The 101 could not be sent: the request ends, its cleanup abandons it. */

static void
ngx_http_jvm_ws_abort(ngx_http_request_t *r)
{
    ngx_connection_t    *c;
    ngx_http_jvm_ctx_t  *ctx;

    c = r->connection;
    ctx = ngx_http_get_module_ctx(r, ngx_http_jvm_module);

    c->read->handler = ctx->read_handler;
    c->write->handler = ctx->write_handler;

    ngx_http_finalize_request(r, NGX_ERROR);
    ngx_http_run_posted_requests(c);
}


/*
 * The 101 has left: the connection becomes the WebSocket's, and the
 * request, which it no longer needs, is freed.
 */

static void
ngx_http_jvm_ws_detach(ngx_http_request_t *r)
{
    ngx_http_jvm_ws_t         *ws;
    ngx_http_jvm_ctx_t        *ctx;
    ngx_http_core_loc_conf_t  *clcf;

    ctx = ngx_http_get_module_ctx(r, ngx_http_jvm_module);
    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    ws = ngx_http_jvm_ws_create(r, ctx->ws, ctx->ws_raw);
    if (ws == NULL) {
        ngx_http_jvm_ws_abort(r);
        return;
    }

    ctx->ws = -1;

    ngx_http_jvm_ws_free_request(r);

    ngx_http_jvm_ws_open(ws, clcf->tcp_nodelay);
}


/*
 * As for a keep-alive connection: the request and its buffers go, the
 * connection stays.
 */

static void
ngx_http_jvm_ws_free_request(ngx_http_request_t *r)
{
    ngx_buf_t              *b;
    ngx_chain_t            *cl, *ln;
    ngx_connection_t       *c;
    ngx_http_connection_t  *hc;

    c = r->connection;
    hc = r->http_connection;

    r->keepalive = 0;
    r->count = 1;
    ngx_http_free_request(r, 0);

    c->destroyed = 0;

    b = c->buffer;

    if (b && b->start && ngx_pfree(c->pool, b->start) == NGX_OK) {
        b->pos = NULL;
    }

    for (cl = hc->free; cl; /* void */) {
        ln = cl;
        cl = cl->next;
        ngx_pfree(c->pool, ln->buf->start);
        ngx_free_chain(c->pool, ln);
    }

    hc->free = NULL;

    for (cl = hc->busy; cl; /* void */) {
        ln = cl;
        cl = cl->next;
        ngx_pfree(c->pool, ln->buf->start);
        ngx_free_chain(c->pool, ln);
    }

    hc->busy = NULL;
    hc->nbusy = 0;

#if (NGX_HTTP_SSL)
    if (c->ssl) {
        ngx_ssl_free_buffer(c);
    }
#endif
}
