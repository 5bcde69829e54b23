
/*
 * nginx-jvm: an encoded response from Java into nginx's output chain.
 *
 * nginx.jvm.ResponseEncoder writes the status, the header fields and the
 * body (inline bytes, a file name, or the id of a body sent in pieces) into
 * the response buffer, in the layout docs/internals.md describes.  Inline
 * bodies are copied into the request's pool; files are sent by nginx itself
 * (sendfile, ranges, conditional GET); bodies in pieces are the business of
 * ngx_http_jvm_stream.c.
 */


#include "ngx_http_jvm_module.h"


typedef struct ngx_http_jvm_header_s  ngx_http_jvm_header_t;

typedef ngx_int_t (*ngx_http_jvm_set_header_pt)(ngx_http_request_t *r,
    ngx_http_jvm_header_t *hh, ngx_str_t *name, ngx_str_t *value,
    ngx_uint_t kind);

/*
 * The fields nginx keeps in headers_out of its own: set there, its filters
 * (not modified, range, gzip, charset) see them and it adds no second one.
 */

struct ngx_http_jvm_header_s {
    ngx_str_t                     name;
    ngx_uint_t                    offset;   /* in ngx_http_headers_out_t */
    ngx_http_jvm_set_header_pt    handler;
};


static ngx_int_t ngx_http_jvm_set_headers(ngx_http_request_t *r,
    ngx_http_jvm_reader_t *rd, ngx_uint_t count, ngx_uint_t kind);
static ngx_int_t ngx_http_jvm_set_header(ngx_http_request_t *r,
    ngx_http_jvm_header_t *hh, ngx_str_t *name, ngx_str_t *value,
    ngx_uint_t kind);
static ngx_int_t ngx_http_jvm_set_last_modified(ngx_http_request_t *r,
    ngx_http_jvm_header_t *hh, ngx_str_t *name, ngx_str_t *value,
    ngx_uint_t kind);
static ngx_int_t ngx_http_jvm_set_content_type(ngx_http_request_t *r,
    ngx_http_jvm_header_t *hh, ngx_str_t *name, ngx_str_t *value,
    ngx_uint_t kind);
static ngx_int_t ngx_http_jvm_set_content_length(ngx_http_request_t *r,
    ngx_http_jvm_header_t *hh, ngx_str_t *name, ngx_str_t *value,
    ngx_uint_t kind);
static ngx_int_t ngx_http_jvm_set_connection(ngx_http_request_t *r,
    ngx_http_jvm_header_t *hh, ngx_str_t *name, ngx_str_t *value,
    ngx_uint_t kind);
static ngx_int_t ngx_http_jvm_skip_header(ngx_http_request_t *r,
    ngx_http_jvm_header_t *hh, ngx_str_t *name, ngx_str_t *value,
    ngx_uint_t kind);
static void ngx_http_jvm_remove_header(ngx_http_request_t *r,
    ngx_str_t *name);
static ngx_int_t ngx_http_jvm_header_out_gate(ngx_http_request_t *r,
    ngx_str_t *name, ngx_str_t *value);
static ngx_int_t ngx_http_jvm_send_empty(ngx_http_request_t *r);
static ngx_int_t ngx_http_jvm_send_inline(ngx_http_request_t *r,
    u_char *data, size_t len);
static ngx_int_t ngx_http_jvm_send_file(ngx_http_request_t *r,
    ngx_str_t *path);


static ngx_http_jvm_header_t  ngx_http_jvm_headers[] = {

    { ngx_string("Content-Type"), 0, ngx_http_jvm_set_content_type },

    { ngx_string("Content-Length"), 0, ngx_http_jvm_set_content_length },

    { ngx_string("Date"),
      offsetof(ngx_http_headers_out_t, date),
      ngx_http_jvm_set_header },

    { ngx_string("ETag"),
      offsetof(ngx_http_headers_out_t, etag),
      ngx_http_jvm_set_header },

    { ngx_string("Server"),
      offsetof(ngx_http_headers_out_t, server),
      ngx_http_jvm_set_header },

    { ngx_string("Last-Modified"),
      offsetof(ngx_http_headers_out_t, last_modified),
      ngx_http_jvm_set_last_modified },

    { ngx_string("Content-Encoding"),
      offsetof(ngx_http_headers_out_t, content_encoding),
      ngx_http_jvm_set_header },

    /* hop-by-hop fields are nginx's business */

    { ngx_string("Connection"), 0, ngx_http_jvm_set_connection },

    { ngx_string("Transfer-Encoding"), 0, ngx_http_jvm_skip_header },

    { ngx_null_string, 0, ngx_http_jvm_set_header }
};


ngx_int_t
ngx_http_jvm_send_response(ngx_http_request_t *r, size_t len)
{
    int64_t                 length;
    uint32_t                status, kind, count, id;
    ngx_int_t               stream;
    ngx_str_t               s;
    ngx_http_jvm_reader_t   rd;

    if (len < NGX_HTTP_JVM_RESPONSE_HEAD || len > ngx_http_jvm_vm.resp_cap) {
        ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                      "jvm: response of invalid length %uz", len);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_http_jvm_reader_init(&rd, ngx_http_jvm_vm.resp_addr, len);

    ngx_http_jvm_pipeline_cork(r);

    stream = -1;

    if (ngx_http_jvm_get_int(&rd, &status) != NGX_OK
        || ngx_http_jvm_get_int(&rd, &kind) != NGX_OK
        || ngx_http_jvm_get_long(&rd, &length) != NGX_OK
        || ngx_http_jvm_get_int(&rd, &count) != NGX_OK)
    {
        goto malformed;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: response %uD, body kind %uD, %uD header fields",
                   status, kind, count);

    if (kind == NGX_HTTP_JVM_BODY_ERROR) {
        if (ngx_http_jvm_get_str(&rd, &s) == NGX_OK) {
            ngx_http_jvm_log_text(NGX_LOG_ERR, r->connection->log,
                                  s.data, s.len);
        }

        return status == NGX_HTTP_SERVICE_UNAVAILABLE
               ? NGX_HTTP_SERVICE_UNAVAILABLE
               : NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (kind == NGX_HTTP_JVM_BODY_STREAM || kind == NGX_HTTP_JVM_BODY_UPGRADE
        || kind == NGX_HTTP_JVM_BODY_TUNNEL)
    {
        /*
         * The body's (or the socket's) id ends the response.  It is read
         * first: whatever happens to the response, Java must be told the
         * body is over.
         */
        if (ngx_http_jvm_get_last_int(&rd, &id) != NGX_OK) {
            goto malformed;
        }

        stream = id;
    }

    r->headers_out.status = status;
    r->headers_out.content_length_n = length;

    if (ngx_http_jvm_set_headers(r, &rd, count, kind) != NGX_OK) {
        goto failed;
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
        if (rd.pos != rd.last) {
            break;
        }

        return ngx_http_jvm_send_stream(r, stream);

    case NGX_HTTP_JVM_BODY_UPGRADE:
    case NGX_HTTP_JVM_BODY_TUNNEL:
        if (rd.pos != rd.last) {
            break;
        }

        return ngx_http_jvm_ws_upgrade(r, stream,
                                       kind == NGX_HTTP_JVM_BODY_TUNNEL);

    case NGX_HTTP_JVM_BODY_NONE:
        return ngx_http_jvm_send_empty(r);
    }

malformed:

    ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                  "jvm: malformed response from nginx.jvm.ResponseEncoder");

failed:

    if (stream != -1) {
        if (kind == NGX_HTTP_JVM_BODY_UPGRADE
            || kind == NGX_HTTP_JVM_BODY_TUNNEL)
        {
            ngx_http_jvm_vm_ws_abandon(stream);

        } else {
            ngx_http_jvm_vm_close(stream);
        }
    }

    return NGX_HTTP_INTERNAL_SERVER_ERROR;
}


/*
 * No bytes follow: a handler's length is kept only where none are due
 * after it, in a HEAD answer (the GET's length; none when it does not know
 * it) and a 304.  Elsewhere the client would wait for the bytes, or read
 * the next response on the connection as this one's body.
 */

static ngx_int_t
ngx_http_jvm_send_empty(ngx_http_request_t *r)
{
    ngx_int_t  rc;

    if (r->method != NGX_HTTP_HEAD
        && r->headers_out.status != NGX_HTTP_NOT_MODIFIED)
    {
        r->headers_out.content_length_n = 0;
    }

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    return ngx_http_send_special(r, NGX_HTTP_LAST);
}


/* A rewrite or access handler (or a log handler) answered nothing. */

ngx_uint_t
ngx_http_jvm_response_declined(size_t len)
{
    uint32_t               status, kind;
    ngx_http_jvm_reader_t  rd;

    if (len < NGX_HTTP_JVM_RESPONSE_HEAD) {
        return 0;
    }

    ngx_http_jvm_reader_init(&rd, ngx_http_jvm_vm.resp_addr, len);

    return ngx_http_jvm_get_int(&rd, &status) == NGX_OK
           && ngx_http_jvm_get_int(&rd, &kind) == NGX_OK
           && kind == NGX_HTTP_JVM_BODY_DECLINED;
}


/* A response that cannot be sent (a log handler's): its error is logged. */

void
ngx_http_jvm_response_log(ngx_http_request_t *r, size_t len)
{
    int64_t                length;
    uint32_t               status, kind, count;
    ngx_str_t              s;
    ngx_http_jvm_reader_t  rd;

    if (len > ngx_http_jvm_vm.resp_cap) {
        return;
    }

    ngx_http_jvm_reader_init(&rd, ngx_http_jvm_vm.resp_addr, len);

    if (ngx_http_jvm_get_int(&rd, &status) != NGX_OK
        || ngx_http_jvm_get_int(&rd, &kind) != NGX_OK
        || ngx_http_jvm_get_long(&rd, &length) != NGX_OK
        || ngx_http_jvm_get_int(&rd, &count) != NGX_OK
        || status == 0 || kind != NGX_HTTP_JVM_BODY_ERROR)
    {
        return;
    }

    if (ngx_http_jvm_get_str(&rd, &s) == NGX_OK) {
        ngx_http_jvm_log_text(NGX_LOG_ERR, r->connection->log, s.data, s.len);
    }
}


/*
 * A header filter's edits: an int status (0: unchanged), an int kind
 * (EDITS, or ERROR as in a response), a long and an int count of names;
 * then each name, an int n and n values.  Every field of a name is removed
 * before its new values (none: it is only removed) are set as a handler's
 * response sets them.
 */

ngx_int_t
ngx_http_jvm_edit_headers(ngx_http_request_t *r, size_t len)
{
    u_char                 *copy;
    int64_t                 length;
    uint32_t                status, kind, count, n, i, j;
    ngx_str_t               name, value;
    ngx_http_jvm_header_t  *hh;
    ngx_http_jvm_reader_t   rd;

    if (len < NGX_HTTP_JVM_RESPONSE_HEAD || len > ngx_http_jvm_vm.resp_cap) {
        return NGX_ERROR;
    }

    ngx_http_jvm_reader_init(&rd, ngx_http_jvm_vm.resp_addr, len);

    if (ngx_http_jvm_get_int(&rd, &status) != NGX_OK
        || ngx_http_jvm_get_int(&rd, &kind) != NGX_OK
        || ngx_http_jvm_get_long(&rd, &length) != NGX_OK
        || ngx_http_jvm_get_int(&rd, &count) != NGX_OK)
    {
        goto malformed;
    }

    if (kind == NGX_HTTP_JVM_BODY_ERROR) {
        if (ngx_http_jvm_get_str(&rd, &value) == NGX_OK) {
            ngx_http_jvm_log_text(NGX_LOG_ERR, r->connection->log,
                                  value.data, value.len);
        }

        return NGX_ERROR;
    }

    /* the strings stay in the request's pool: the buffer is reused */

    copy = ngx_pnalloc(r->pool, rd.last - rd.pos);
    if (copy == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(copy, rd.pos, rd.last - rd.pos);
    rd.last = copy + (rd.last - rd.pos);
    rd.pos = copy;

    if (status) {
        r->headers_out.status = status;
        r->headers_out.status_line.len = 0;
    }

    for (i = 0; i < count; i++) {
        if (ngx_http_jvm_get_str(&rd, &name) != NGX_OK
            || ngx_http_jvm_get_int(&rd, &n) != NGX_OK)
        {
            goto malformed;
        }

        if (ngx_http_jvm_header_out_gate(r, &name, NULL) != NGX_OK) {
            return NGX_ERROR;
        }

        ngx_http_jvm_remove_header(r, &name);

        for (hh = ngx_http_jvm_headers; hh->name.len; hh++) {
            if (hh->name.len == name.len
                && ngx_strncasecmp(hh->name.data, name.data, name.len) == 0)
            {
                break;
            }
        }

        for (j = 0; j < n; j++) {
            if (ngx_http_jvm_get_str(&rd, &value) != NGX_OK) {
                goto malformed;
            }

            if (ngx_http_jvm_header_out_gate(r, &name, &value) != NGX_OK) {
                return NGX_ERROR;
            }

            if (hh->handler(r, hh, &name, &value, NGX_HTTP_JVM_BODY_NONE)
                != NGX_OK)
            {
                return NGX_ERROR;
            }
        }
    }

    return NGX_OK;

malformed:

    ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                  "jvm: malformed header edits from nginx.jvm.Worker");

    return NGX_ERROR;
}


/*
 * Every field of a name goes: from the list, from its headers_out slot,
 * and the values nginx keeps apart from the list.
 */

static void
ngx_http_jvm_remove_header(ngx_http_request_t *r, ngx_str_t *name)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h, **slot;

    static ngx_str_t  slots[] = {
        ngx_string("Location"),
        ngx_string("Refresh"),
        ngx_string("Expires"),
        ngx_string("WWW-Authenticate"),
        ngx_null_string
    };
    static ngx_uint_t  offsets[] = {
        offsetof(ngx_http_headers_out_t, location),
        offsetof(ngx_http_headers_out_t, refresh),
        offsetof(ngx_http_headers_out_t, expires),
        offsetof(ngx_http_headers_out_t, www_authenticate),
    };

#define ngx_http_jvm_is(s)                                                    \
    (name->len == sizeof(s) - 1                                               \
     && ngx_strncasecmp(name->data, (u_char *) s, sizeof(s) - 1) == 0)

    if (ngx_http_jvm_is("Content-Type")) {
        r->headers_out.content_type.len = 0;
        r->headers_out.content_type_len = 0;
        r->headers_out.charset.len = 0;
        return;
    }

    if (ngx_http_jvm_is("Content-Length")) {
        r->headers_out.content_length_n = -1;

        if (r->headers_out.content_length) {
            r->headers_out.content_length->hash = 0;
            r->headers_out.content_length = NULL;
        }

        return;
    }

    if (ngx_http_jvm_is("Last-Modified")) {
        r->headers_out.last_modified_time = -1;
        r->headers_out.last_modified = NULL;
    }

    for (i = 0; slots[i].len; i++) {
        if (name->len == slots[i].len
            && ngx_strncasecmp(name->data, slots[i].data, name->len) == 0)
        {
            slot = (ngx_table_elt_t **) ((char *) &r->headers_out
                                         + offsets[i]);
            *slot = NULL;
        }
    }

    for (i = 0; ngx_http_jvm_headers[i].name.len; i++) {
        if (ngx_http_jvm_headers[i].offset
            && name->len == ngx_http_jvm_headers[i].name.len
            && ngx_strncasecmp(name->data, ngx_http_jvm_headers[i].name.data,
                               name->len) == 0)
        {
            slot = (ngx_table_elt_t **) ((char *) &r->headers_out
                                         + ngx_http_jvm_headers[i].offset);
            *slot = NULL;
        }
    }

#undef ngx_http_jvm_is

    part = &r->headers_out.headers.part;
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

        if (h[i].hash != 0
            && h[i].key.len == name->len
            && ngx_strncasecmp(h[i].key.data, name->data, name->len) == 0)
        {
            h[i].hash = 0;
        }
    }
}


/*
 * The header fields are copied into the request's pool in one block (the
 * response buffer is reused by the next request), then each is set by the
 * handler of its name in ngx_http_jvm_headers, or as an ordinary field.
 */

static ngx_int_t
ngx_http_jvm_set_headers(ngx_http_request_t *r, ngx_http_jvm_reader_t *rd,
    ngx_uint_t count, ngx_uint_t kind)
{
    u_char                 *copy, *start, *last;
    size_t                  size;
    ngx_str_t               name, value;
    ngx_uint_t              i;
    ngx_http_jvm_header_t  *hh;

    start = rd->pos;
    last = rd->last;

    /* find the end of the header fields to copy them at once */

    for (i = 0; i < 2 * count; i++) {
        if (ngx_http_jvm_get_str(rd, &name) != NGX_OK) {
            ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                          "jvm: malformed header fields from "
                          "nginx.jvm.ResponseEncoder");
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
    rd->last = copy + size;

    for (i = 0; i < count; i++) {
        (void) ngx_http_jvm_get_str(rd, &name);
        (void) ngx_http_jvm_get_str(rd, &value);

        if (ngx_http_jvm_header_out_gate(r, &name, &value) != NGX_OK) {
            return NGX_ERROR;
        }

        for (hh = ngx_http_jvm_headers; hh->name.len; hh++) {
            if (hh->name.len == name.len
                && ngx_strncasecmp(hh->name.data, name.data, name.len) == 0)
            {
                break;
            }
        }

        if (hh->handler(r, hh, &name, &value, kind) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    rd->pos = start + size;
    rd->last = last;

    if (kind != NGX_HTTP_JVM_BODY_FILE) {
        /*
         * Like Ring's servlet adapter, answer what the handler built:
         * conditional requests are the business of Ring middleware.
         */
        r->disable_not_modified = 1;
    }

    return NGX_OK;
}


/*
 * A field of the handler's (or a header filter's) through the gate: the
 * name an HTTP token, the value (unless NULL) without controls but HTAB.
 * Java refuses them first (nginx.jvm.ResponseEncoder); this holds whatever
 * it does.  A refusal is logged; the caller answers 500.
 */

static ngx_int_t
ngx_http_jvm_header_out_gate(ngx_http_request_t *r, ngx_str_t *name,
    ngx_str_t *value)
{
    if (ngx_http_jvm_gate_log(r->connection->log,
                              NGX_HTTP_JVM_DOOR_RESPONSE_NAME, NULL, name)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (value == NULL) {
        return NGX_OK;
    }

    return ngx_http_jvm_gate_log(r->connection->log,
                                 NGX_HTTP_JVM_DOOR_RESPONSE_VALUE, name,
                                 value) == NGX_OK ? NGX_OK : NGX_ERROR;
}


/* A field kept in the list; a builtin one also in its headers_out slot. */

static ngx_int_t
ngx_http_jvm_set_header(ngx_http_request_t *r, ngx_http_jvm_header_t *hh,
    ngx_str_t *name, ngx_str_t *value, ngx_uint_t kind)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    h->key = *name;
    h->value = *value;
    h->lowcase_key = NULL;
#if (nginx_version >= 1023000)
    h->next = NULL;
#endif

    if (hh->offset) {
        *(ngx_table_elt_t **) ((char *) &r->headers_out + hh->offset) = h;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_jvm_set_last_modified(ngx_http_request_t *r,
    ngx_http_jvm_header_t *hh, ngx_str_t *name, ngx_str_t *value,
    ngx_uint_t kind)
{
    r->headers_out.last_modified_time = ngx_parse_http_time(value->data,
                                                            value->len);

    return ngx_http_jvm_set_header(r, hh, name, value, kind);
}


static ngx_int_t
ngx_http_jvm_set_content_type(ngx_http_request_t *r,
    ngx_http_jvm_header_t *hh, ngx_str_t *name, ngx_str_t *value,
    ngx_uint_t kind)
{
    size_t  n;

    r->headers_out.content_type = *value;
    r->headers_out.content_type_len = value->len;

    for (n = 0; n < value->len; n++) {
        if (value->data[n] == ';' || value->data[n] == ' ') {
            r->headers_out.content_type_len = n;
            break;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_jvm_set_content_length(ngx_http_request_t *r,
    ngx_http_jvm_header_t *hh, ngx_str_t *name, ngx_str_t *value,
    ngx_uint_t kind)
{
    off_t  n;

    n = ngx_atoof(value->data, value->len);

    if (n == NGX_ERROR) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "jvm: the handler answered an invalid "
                      "Content-Length \"%V\"", value);
        return NGX_ERROR;
    }

    /*
     * A length Java counted (bytes sent in pieces) is the body's own; a
     * file's is the file's, set when nginx opens it.
     */

    if (kind != NGX_HTTP_JVM_BODY_FILE
        && r->headers_out.content_length_n < 0)
    {
        r->headers_out.content_length_n = n;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_jvm_set_connection(ngx_http_request_t *r,
    ngx_http_jvm_header_t *hh, ngx_str_t *name, ngx_str_t *value,
    ngx_uint_t kind)
{
    if (ngx_strlcasestrn(value->data, value->data + value->len,
                         (u_char *) "close", 5 - 1)
        != NULL)
    {
        r->keepalive = 0;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_jvm_skip_header(ngx_http_request_t *r, ngx_http_jvm_header_t *hh,
    ngx_str_t *name, ngx_str_t *value, ngx_uint_t kind)
{
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

    /*
     * Copied before the header goes: a jvm_header_filter reuses the
     * response buffer the body is in.
     */

    b = NULL;

    if (len) {
        b = ngx_create_temp_buf(r->pool, len);
        if (b == NULL) {
            return NGX_ERROR;
        }

        b->last = ngx_cpymem(b->pos, data, len);
        b->last_buf = (r == r->main) ? 1 : 0;
        b->last_in_chain = 1;
    }

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    if (b == NULL) {
        return ngx_http_send_special(r, NGX_HTTP_LAST);
    }

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

    /*
     * Java refuses such a path; this holds whatever it does: nginx opens a
     * C string, which would end at the NUL, naming another file.
     */

    if (ngx_strlchr(path->data, path->data + path->len, '\0') != NULL) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "jvm: the handler answered a file path holding a NUL");
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

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
