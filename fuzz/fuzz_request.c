
/*
 * nginx-jvm fuzzing: a request described to Java
 * (ngx_http_jvm_request.c's encoder, ngx_http_jvm_wire.c's header lists),
 * the one path every byte of a client's request line, header fields and
 * buffered body takes into the JVM.  The input is the request's parts
 * (method, URI as sent, or one a rewrite made, protocol, host, header
 * fields however many and however long, body buffers in memory or in a
 * file), each a length byte and its bytes, in turns the fuzzer picks.
 *
 * What is checked: the request buffer is grown to the size the encoder
 * computes, no larger, so a description longer than its estimate is an
 * overrun; the description, read back with the module's own reader
 * (ngx_http_jvm_wire.h), holds each part as it was, the path and the
 * query split at the first '?', every field in order, every body buffer;
 * its length is what the encoder answered.
 */

#include "ngx_fuzz.h"
#include "ws_world.h"


/* --- what request.c calls beyond describing ---------------------------- */

ngx_int_t
ngx_http_jvm_vm_request_buffer(ngx_log_t *log, size_t size)
{
    free(ngx_http_jvm_vm.req_addr);

    /* exactly the size asked: a write past it is an overrun */
    ngx_http_jvm_vm.req_addr = malloc(size ? size : 1);
    ngx_http_jvm_vm.req_cap = size;

    return NGX_OK;
}


ngx_int_t
ngx_connection_local_sockaddr(ngx_connection_t *c, ngx_str_t *s,
    ngx_uint_t port)
{
    return NGX_OK;
}


in_port_t
ngx_inet_get_port(struct sockaddr *sa)
{
    return ntohs(((struct sockaddr_in *) sa)->sin_port);
}


#if (NGX_HTTP_SSL)
ngx_int_t
ngx_ssl_get_raw_certificate(ngx_connection_t *c, ngx_pool_t *pool,
    ngx_str_t *s)
{
    abort();
}
#endif

/* the content handler's other calls: never reached from here */
ngx_int_t ngx_http_discard_request_body(ngx_http_request_t *r)
    { abort(); }
ngx_int_t ngx_http_read_client_request_body(ngx_http_request_t *r,
    ngx_http_client_body_handler_pt post_handler) { abort(); }
ngx_int_t ngx_http_jvm_upload_submit(ngx_http_request_t *r,
    ngx_int_t handler, size_t len) { abort(); }
ngx_int_t ngx_http_jvm_task_submit(ngx_http_request_t *r, ngx_int_t handler,
    ngx_uint_t phase, size_t len) { abort(); }
ngx_int_t ngx_http_jvm_vm_handle(ngx_http_request_t *r, ngx_int_t handler,
    ngx_uint_t phase, size_t len, size_t *out) { abort(); }
ngx_int_t ngx_http_jvm_send_response(ngx_http_request_t *r, size_t len)
    { abort(); }
void ngx_http_jvm_cost_take(ngx_http_request_t *r) { abort(); }
u_char *ngx_http_time(u_char *buf, time_t t) { abort(); }


/* --- the request -------------------------------------------------------- */

static void
ngx_fuzz_fail(const char *what)
{
    fprintf(stderr, "fuzz_request: %s\n", what);
    abort();
}


/* a part of the request: a length byte, then as many bytes as there are */

static void
ngx_fuzz_part(ngx_fuzz_input_t *in, ngx_pool_t *pool, ngx_str_t *s)
{
    size_t  n;

    n = 0;

    if (in->len) {
        n = ngx_min(in->data[0], in->len - 1);
        in->data++;
        in->len--;
    }

    /* a copy of its own, so that a read past it is seen */
    s->len = n;
    s->data = ngx_pnalloc(pool, n);
    ngx_memcpy(s->data, in->data, n);

    in->data += n;
    in->len -= n;
}


static void
ngx_fuzz_expect_str(ngx_http_jvm_reader_t *rd, u_char *data, size_t len,
    const char *what)
{
    ngx_str_t  s;

    if (ngx_http_jvm_get_str(rd, &s) != NGX_OK || s.len != len
        || (len && ngx_memcmp(s.data, data, len) != 0))
    {
        fprintf(stderr, "fuzz_request: %s\n", what);
        abort();
    }
}


static void
ngx_fuzz_expect_int(ngx_http_jvm_reader_t *rd, uint32_t n, const char *what)
{
    uint32_t  v;

    if (ngx_http_jvm_get_int(rd, &v) != NGX_OK || v != n) {
        fprintf(stderr, "fuzz_request: %s\n", what);
        abort();
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char                    b, *q, *path;
    size_t                    len, path_len;
    int64_t                   l;
    uint32_t                  nfields, nbufs, i, flags;
    ngx_str_t                 s, *query;
    ngx_buf_t                *buf;
    ngx_pool_t               *pool;
    ngx_chain_t              *cl, **last;
    ngx_fuzz_input_t          in;
    ngx_list_part_t          *part;
    ngx_table_elt_t          *h;
    ngx_http_request_t       *r;
    ngx_http_jvm_reader_t     rd;
    ngx_http_jvm_loc_conf_t  *jlcf;
    ngx_http_core_loc_conf_t *clcf;
    ngx_http_core_srv_conf_t *cscf;
    struct sockaddr_in        sin;

    in.data = data;
    in.len = size;
    in.ctl = NULL;
    in.ctl_len = 0;

    pool = ngx_fuzz_pool();
    jlcf = ngx_pcalloc(pool, sizeof(ngx_http_jvm_loc_conf_t));
    clcf = ngx_pcalloc(pool, sizeof(ngx_http_core_loc_conf_t));
    r = ngx_fuzz_request(pool, jlcf, clcf);

    /* the server's name, for a request without a host */
    cscf = ngx_pcalloc(pool, sizeof(ngx_http_core_srv_conf_t));
    ngx_str_set(&cscf->server_name, "default.test");
    r->srv_conf = ngx_pcalloc(pool, 2 * sizeof(void *));
    r->srv_conf[ngx_http_core_module.ctx_index] = cscf;

    /* the request buffer grows from nothing, to the size asked */
    free(ngx_http_jvm_vm.req_addr);
    ngx_http_jvm_vm.req_addr = NULL;
    ngx_http_jvm_vm.req_cap = 0;

    b = in.len ? in.data[0] : 0;
    if (in.len) {
        in.data++;
        in.len--;
    }

    ngx_memzero(&sin, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons(8080);
    r->connection->local_sockaddr = (struct sockaddr *) &sin;
    r->headers_out.status = 200;
    r->connection->sent = 12345;

    ngx_fuzz_part(&in, pool, &r->method_name);
    ngx_fuzz_part(&in, pool, &r->unparsed_uri);
    ngx_fuzz_part(&in, pool, &r->http_protocol);
    ngx_fuzz_part(&in, pool, &r->headers_in.server);
    ngx_fuzz_part(&in, pool, &r->connection->addr_text);

    /* a URI a rewrite made: r->uri and r->args, not what was sent */
    r->valid_unparsed_uri = (b & 1) ? 0 : 1;

    if (!r->valid_unparsed_uri) {
        ngx_fuzz_part(&in, pool, &r->uri);
        ngx_fuzz_part(&in, pool, &r->args);
    }

    if (b & 2) {
        r->request_body = ngx_pcalloc(pool, sizeof(ngx_http_request_body_t));

        /* a body that still arrives goes in pieces, not here */
        r->reading_body = (b & 4) ? 1 : 0;
    }

    /* the header fields, and the body's buffers, in turns */
    last = r->request_body ? &r->request_body->bufs : NULL;

    while (in.len) {
        b = in.data[0];
        in.data++;
        in.len--;

        if (!(b & 1) || last == NULL) {
            ngx_fuzz_part(&in, pool, &s);
            h = ngx_list_push(&r->headers_in.headers);
            ngx_memzero(h, sizeof(ngx_table_elt_t));
            h->key = s;
            ngx_fuzz_part(&in, pool, &h->value);
            h->hash = (b & 2) ? 1 : 0;      /* all go, whatever the hash */
            continue;
        }

        buf = ngx_pcalloc(pool, sizeof(ngx_buf_t));

        if (b & 2) {
            /* a body nginx wrote to a temporary file */
            buf->in_file = 1;
            buf->file = ngx_pcalloc(pool, sizeof(ngx_file_t));
            buf->file->fd = (b & 4) ? 2147483647 : 9;
            buf->file_pos = b >> 3;
            buf->file_last = buf->file_pos + 1000;

        } else {
            ngx_fuzz_part(&in, pool, &s);
            buf->pos = s.data;
            buf->last = s.data + s.len;
            buf->memory = 1;
        }

        cl = ngx_alloc_chain_link(pool);
        cl->buf = buf;
        cl->next = NULL;
        *last = cl;
        last = &cl->next;
    }

    if (ngx_http_jvm_request_encode(r, &len) != NGX_OK) {
        ngx_fuzz_fail("encode failed");
    }

    if (len != ngx_http_jvm_vm.req_cap && len > ngx_http_jvm_vm.req_cap) {
        ngx_fuzz_fail("a description longer than its buffer");
    }

    /* read back, as nginx.jvm.Request does */

    ngx_http_jvm_reader_init(&rd, ngx_http_jvm_vm.req_addr, len);

    if (ngx_http_jvm_get_int(&rd, &flags) != NGX_OK) {
        ngx_fuzz_fail("no flags");
    }

    ngx_fuzz_expect_int(&rd, 8080, "the port");
    ngx_fuzz_expect_int(&rd, 200, "the status");

    if (ngx_http_jvm_get_long(&rd, &l) != NGX_OK || l != 12345) {
        ngx_fuzz_fail("the bytes sent");
    }

    ngx_fuzz_expect_str(&rd, r->method_name.data, r->method_name.len,
                        "the method");

    if (r->valid_unparsed_uri) {
        path = r->unparsed_uri.data;
        path_len = r->unparsed_uri.len;
        q = memchr(path, '?', path_len);
        s.data = q ? q + 1 : NULL;
        s.len = q ? path + path_len - q - 1 : 0;
        path_len = q ? (size_t) (q - path) : path_len;
        query = &s;

    } else {
        path = r->uri.data;
        path_len = r->uri.len;
        query = &r->args;
    }

    ngx_fuzz_expect_str(&rd, path, path_len, "the path");
    ngx_fuzz_expect_str(&rd, query->data, query->len, "the query");

    if (((flags & NGX_HTTP_JVM_REQ_HAS_QUERY) != 0)
        != (r->valid_unparsed_uri ? query->data != NULL : query->len != 0))
    {
        ngx_fuzz_fail("the flag of a query");
    }

    if (r->http_protocol.len) {
        ngx_fuzz_expect_str(&rd, r->http_protocol.data, r->http_protocol.len,
                            "the protocol");
    } else {
        ngx_fuzz_expect_str(&rd, (u_char *) "HTTP/0.9", 8, "HTTP/0.9");
    }

    if (r->headers_in.server.len) {
        ngx_fuzz_expect_str(&rd, r->headers_in.server.data,
                            r->headers_in.server.len, "the server");
    } else {
        ngx_fuzz_expect_str(&rd, cscf->server_name.data,
                            cscf->server_name.len, "the server's name");
    }
    ngx_fuzz_expect_str(&rd, r->connection->addr_text.data,
                        r->connection->addr_text.len, "the address");
    ngx_fuzz_expect_str(&rd, NULL, 0, "no certificate");

    /* $uri, when it is not the path sent above */

    if (((flags & NGX_HTTP_JVM_REQ_HAS_URI) != 0)
        != (r->uri.len != path_len
            || (path_len && ngx_memcmp(r->uri.data, path, path_len) != 0)))
    {
        ngx_fuzz_fail("the flag of $uri");
    }

    if (flags & NGX_HTTP_JVM_REQ_HAS_URI) {
        ngx_fuzz_expect_str(&rd, r->uri.data, r->uri.len, "$uri");
    }

    if (ngx_http_jvm_get_int(&rd, &nfields) != NGX_OK) {
        ngx_fuzz_fail("no field count");
    }

    part = &r->headers_in.headers.part;
    h = part->elts;
    i = 0;

    for (uint32_t k = 0; /* void */ ; k++) {
        if (k >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            k = 0;
        }

        ngx_fuzz_expect_str(&rd, h[k].key.data, h[k].key.len, "a name");
        ngx_fuzz_expect_str(&rd, h[k].value.data, h[k].value.len, "a value");
        i++;
    }

    if (i != nfields) {
        ngx_fuzz_fail("the field count");
    }

    if (ngx_http_jvm_get_int(&rd, &nbufs) != NGX_OK) {
        ngx_fuzz_fail("no body count");
    }

    i = 0;

    if (r->reading_body != ((flags & NGX_HTTP_JVM_REQ_BODY_STREAM) != 0)) {
        ngx_fuzz_fail("the flag of a body that still arrives");
    }

    for (cl = (r->request_body && !r->reading_body)
              ? r->request_body->bufs : NULL;
         cl;
         cl = cl->next)
    {
        buf = cl->buf;

        if (buf->in_file) {
            u_char  fd_path[64];

            ngx_fuzz_expect_int(&rd, 1, "a file's kind");
            len = snprintf((char *) fd_path, sizeof(fd_path),
                           "/proc/self/fd/%d", (int) buf->file->fd);
            ngx_fuzz_expect_str(&rd, fd_path, len, "a file's path");

            if (ngx_http_jvm_get_long(&rd, &l) != NGX_OK
                || l != buf->file_pos
                || ngx_http_jvm_get_long(&rd, &l) != NGX_OK
                || l != buf->file_last - buf->file_pos)
            {
                ngx_fuzz_fail("a file's range");
            }

            if (!(flags & NGX_HTTP_JVM_REQ_BODY_FILE)) {
                ngx_fuzz_fail("a body in a file, without its flag");
            }

        } else {
            ngx_fuzz_expect_int(&rd, 0, "a buffer's kind");
            ngx_fuzz_expect_str(&rd, buf->pos, buf->last - buf->pos,
                                "a body buffer");
        }

        i++;
    }

    if (i != nbufs || rd.pos != rd.last) {
        ngx_fuzz_fail("the body count, or bytes left over");
    }

    ngx_destroy_pool(pool);

    return 0;
}
