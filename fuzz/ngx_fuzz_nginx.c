
/*
 * nginx-jvm fuzzing: what the module's files call of nginx, small and
 * strict.  Each pool allocation is a malloc() of its own, so that
 * AddressSanitizer sees every overrun of one (nginx's real pools are big
 * blocks it sees as one); log messages are formatted with nginx's
 * directives, so that every argument a message names is read.
 */

#include <openssl/evp.h>

#include "ngx_fuzz.h"

#include <ngx_sha1.h>


volatile ngx_msec_t   ngx_current_msec;
volatile ngx_cycle_t *ngx_cycle;
ngx_uint_t            ngx_exiting;
sig_atomic_t          ngx_terminate;
ngx_queue_t           ngx_posted_events;
ngx_queue_t           ngx_posted_next_events;
ngx_rbtree_t          ngx_event_timer_rbtree;

/* the modules' indexes: their slots in r->ctx and r->loc_conf */
ngx_module_t          ngx_http_jvm_module = { .ctx_index = 0 };
ngx_module_t          ngx_http_core_module = { .ctx_index = 1 };
ngx_http_jvm_vm_t     ngx_http_jvm_vm;

ngx_log_t             ngx_fuzz_log;
ngx_connection_t     *ngx_fuzz_closed;
ngx_int_t             ngx_fuzz_finalized;
ngx_uint_t            ngx_fuzz_fail_alloc;

static ngx_cycle_t    ngx_fuzz_cycle;
static u_char         ngx_fuzz_line[4096];


u_char
ngx_fuzz_choice(ngx_fuzz_input_t *in)
{
    if (in->ctl_len == 0) {
        return 0;
    }

    in->ctl_len--;

    return in->ctl[in->ctl_len];
}


/* --- pools and lists: every allocation its own block --------------------- */

/* whether this allocation fails: the one ngx_fuzz_fail_alloc counts to */

static ngx_uint_t
ngx_fuzz_alloc_fails(void)
{
    if (ngx_fuzz_fail_alloc == 0) {
        return 0;
    }

    return --ngx_fuzz_fail_alloc == 0;
}


ngx_pool_t *
ngx_fuzz_pool(void)
{
    ngx_pool_t  *pool;

    pool = calloc(1, sizeof(ngx_pool_t));
    if (pool == NULL) {
        abort();
    }

    pool->log = &ngx_fuzz_log;

    /* a new input: no allocation fails until it says so */
    ngx_fuzz_fail_alloc = 0;

    return pool;
}


void
ngx_destroy_pool(ngx_pool_t *pool)
{
    ngx_pool_large_t  *l, *next;

    for (l = pool->large; l; l = next) {
        next = l->next;
        free(l->alloc);
        free(l);
    }

    free(pool);
}


void *
ngx_palloc(ngx_pool_t *pool, size_t size)
{
    ngx_pool_large_t  *l;

    if (ngx_fuzz_alloc_fails()) {
        return NULL;
    }

    l = malloc(sizeof(ngx_pool_large_t));
    if (l == NULL) {
        abort();
    }

    /* never 0 bytes: malloc(0) may answer NULL, a pool never does */
    l->alloc = malloc(size ? size : 1);
    if (l->alloc == NULL) {
        abort();
    }

    l->next = pool->large;
    pool->large = l;

    return l->alloc;
}


void *
ngx_pnalloc(ngx_pool_t *pool, size_t size)
{
    return ngx_palloc(pool, size);
}


void *
ngx_pcalloc(ngx_pool_t *pool, size_t size)
{
    void  *p;

    p = ngx_palloc(pool, size);
    if (p) {
        ngx_memzero(p, size);
    }

    return p;
}


ngx_int_t
ngx_pfree(ngx_pool_t *pool, void *p)
{
    ngx_pool_large_t  *l;

    for (l = pool->large; l; l = l->next) {
        if (p == l->alloc) {
            free(l->alloc);
            l->alloc = NULL;
            return NGX_OK;
        }
    }

    return NGX_DECLINED;
}


void *
ngx_alloc(size_t size, ngx_log_t *log)
{
    return ngx_fuzz_alloc_fails() ? NULL : malloc(size);
}


void *
ngx_calloc(size_t size, ngx_log_t *log)
{
    return ngx_fuzz_alloc_fails() ? NULL : calloc(1, size);
}


void *
ngx_list_push(ngx_list_t *l)
{
    void             *elt;
    ngx_list_part_t  *last;

    last = l->last;

    if (last->nelts == l->nalloc) {
        last = ngx_palloc(l->pool, sizeof(ngx_list_part_t));
        if (last == NULL) {
            return NULL;
        }

        last->elts = ngx_palloc(l->pool, l->nalloc * l->size);
        if (last->elts == NULL) {
            return NULL;
        }

        last->nelts = 0;
        last->next = NULL;

        l->last->next = last;
        l->last = last;
    }

    elt = (char *) last->elts + l->size * last->nelts;
    last->nelts++;

    return elt;
}


ngx_chain_t *
ngx_alloc_chain_link(ngx_pool_t *pool)
{
    ngx_chain_t  *cl;

    cl = pool->chain;

    if (cl) {
        pool->chain = cl->next;
        return cl;
    }

    return ngx_palloc(pool, sizeof(ngx_chain_t));
}


/* --- strings: nginx's format directives --------------------------------- */

ngx_int_t
ngx_strncasecmp(u_char *s1, u_char *s2, size_t n)
{
    ngx_uint_t  c1, c2;

    while (n) {
        c1 = (ngx_uint_t) *s1++;
        c2 = (ngx_uint_t) *s2++;

        c1 = (c1 >= 'A' && c1 <= 'Z') ? (c1 | 0x20) : c1;
        c2 = (c2 >= 'A' && c2 <= 'Z') ? (c2 | 0x20) : c2;

        if (c1 == c2) {
            if (c1) {
                n--;
                continue;
            }

            return 0;
        }

        return c1 - c2;
    }

    return 0;
}


static u_char *
ngx_fuzz_number(u_char *buf, u_char *last, uint64_t n, ngx_uint_t hex)
{
    u_char   tmp[32], *p;
    static u_char  digits[] = "0123456789abcdef";

    p = tmp + sizeof(tmp);

    do {
        *--p = digits[hex ? n & 0xf : n % 10];
        n = hex ? n >> 4 : n / 10;
    } while (n);

    while (p < tmp + sizeof(tmp) && buf < last) {
        *buf++ = *p++;
    }

    return buf;
}


/*
 * ngx_vslprintf()'s directives, each reading the argument nginx reads for
 * it; one it does not know aborts, so that a message this copy cannot
 * check is noticed.
 */

u_char *
ngx_vslprintf(u_char *buf, u_char *last, const char *fmt, va_list args)
{
    u_char      *s;
    size_t       len;
    int64_t      i64;
    uint64_t     u64;
    ngx_str_t   *v;
    ngx_uint_t   sign, hex, star;

    while (*fmt && buf < last) {

        if (*fmt != '%') {
            *buf++ = (u_char) *fmt++;
            continue;
        }

        fmt++;
        sign = 1;
        hex = 0;
        star = 0;
        len = (size_t) -1;

        while (*fmt == '0' || (*fmt >= '1' && *fmt <= '9')) {
            fmt++;
        }

        for ( ;; ) {
            if (*fmt == 'u') {
                sign = 0;
            } else if (*fmt == 'x' || *fmt == 'X') {
                hex = 1;
                sign = 0;
            } else if (*fmt == '*') {
                star = 1;
                len = va_arg(args, size_t);
            } else {
                break;
            }

            fmt++;
        }

        switch (*fmt) {

        case 'V':
            v = va_arg(args, ngx_str_t *);
            for (len = 0; len < v->len && buf < last; len++) {
                *buf++ = v->data[len];
            }
            break;

        case 's':
            s = va_arg(args, u_char *);
            while ((star ? len-- > 0 : *s != '\0') && buf < last) {
                *buf++ = *s++;
            }
            break;

        case 'p':
            u64 = (uintptr_t) va_arg(args, void *);
            buf = ngx_fuzz_number(buf, last, u64, 1);
            break;

        case 'c':
            *buf++ = (u_char) va_arg(args, int);
            break;

        case '%':
            *buf++ = '%';
            break;

        default:
            switch (*fmt) {
            case 'i':
                i64 = (int64_t) va_arg(args, ngx_int_t);
                u64 = sign ? (uint64_t) i64 : (uint64_t) (ngx_uint_t) i64;
                break;
            case 'z':
                i64 = (int64_t) va_arg(args, ssize_t);
                u64 = sign ? (uint64_t) i64 : (uint64_t) (size_t) i64;
                break;
            case 'd':
                i64 = (int64_t) va_arg(args, int);
                u64 = sign ? (uint64_t) i64 : (uint64_t) (u_int) i64;
                break;
            case 'D':
                i64 = (int64_t) va_arg(args, int32_t);
                u64 = sign ? (uint64_t) i64 : (uint64_t) (uint32_t) i64;
                break;
            case 'L':
                i64 = va_arg(args, int64_t);
                u64 = (uint64_t) i64;
                break;
            case 'O':
                i64 = (int64_t) va_arg(args, off_t);
                u64 = (uint64_t) i64;
                break;
            case 'M':
                i64 = (int64_t) va_arg(args, ngx_msec_t);
                u64 = (uint64_t) i64;
                sign = 0;
                break;
            case 'l':
                i64 = (int64_t) va_arg(args, long);
                u64 = (uint64_t) i64;
                break;
            default:
                fprintf(stderr, "ngx_fuzz: an unknown directive in \"%s\"\n",
                        fmt);
                abort();
            }

            if (sign && i64 < 0) {
                *buf++ = '-';
                u64 = (uint64_t) -(i64 + 1) + 1;
            }

            if (buf < last) {
                buf = ngx_fuzz_number(buf, last, u64, hex);
            }
        }

        fmt++;
    }

    return buf;
}


u_char * ngx_cdecl
ngx_sprintf(u_char *buf, const char *fmt, ...)
{
    u_char   *p;
    va_list   args;

    va_start(args, fmt);
    p = ngx_vslprintf(buf, (void *) -1, fmt, args);
    va_end(args);

    return p;
}


void ngx_cdecl
ngx_log_error_core(ngx_uint_t level, ngx_log_t *log, ngx_err_t err,
    const char *fmt, ...)
{
    u_char   *p;
    va_list   args;

    va_start(args, fmt);
    p = ngx_vslprintf(ngx_fuzz_line, ngx_fuzz_line + sizeof(ngx_fuzz_line),
                      fmt, args);
    va_end(args);

    if (getenv("NGX_FUZZ_LOG")) {
        fprintf(stderr, "[%lu] %.*s\n", (unsigned long) level,
                (int) (p - ngx_fuzz_line), ngx_fuzz_line);
    }
}


void
ngx_encode_base64(ngx_str_t *dst, ngx_str_t *src)
{
    u_char         *d, *s;
    size_t          len;
    static u_char   basis[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

    len = src->len;
    s = src->data;
    d = dst->data;

    while (len > 2) {
        *d++ = basis[(s[0] >> 2) & 0x3f];
        *d++ = basis[((s[0] & 3) << 4) | (s[1] >> 4)];
        *d++ = basis[((s[1] & 0x0f) << 2) | (s[2] >> 6)];
        *d++ = basis[s[2] & 0x3f];
        s += 3;
        len -= 3;
    }

    if (len) {
        *d++ = basis[(s[0] >> 2) & 0x3f];

        if (len == 1) {
            *d++ = basis[(s[0] & 3) << 4];
            *d++ = '=';

        } else {
            *d++ = basis[((s[0] & 3) << 4) | (s[1] >> 4)];
            *d++ = basis[(s[1] & 0x0f) << 2];
        }

        *d++ = '=';
    }

    dst->len = d - dst->data;
}


/* SHA-1 of what was given (the handshake's 60 bytes), by OpenSSL */

void
ngx_sha1_init(ngx_sha1_t *ctx)
{
    ctx->bytes = 0;
}


void
ngx_sha1_update(ngx_sha1_t *ctx, const void *data, size_t size)
{
    if (ctx->bytes + size > sizeof(ctx->buffer)) {
        abort();
    }

    ngx_memcpy(ctx->buffer + ctx->bytes, data, size);
    ctx->bytes += size;
}


void
ngx_sha1_final(u_char result[20], ngx_sha1_t *ctx)
{
    if (EVP_Digest(ctx->buffer, ctx->bytes, result, NULL, EVP_sha1(), NULL)
        != 1)
    {
        abort();
    }
}


/* --- events ------------------------------------------------------------- */

void
ngx_rbtree_insert(ngx_rbtree_t *tree, ngx_rbtree_node_t *node)
{
}


void
ngx_rbtree_delete(ngx_rbtree_t *tree, ngx_rbtree_node_t *node)
{
}


ngx_int_t
ngx_handle_read_event(ngx_event_t *rev, ngx_uint_t flags)
{
    return NGX_OK;
}


ngx_int_t
ngx_handle_write_event(ngx_event_t *wev, size_t lowat)
{
    return NGX_OK;
}


ngx_int_t
ngx_fuzz_run_posted(void)
{
    ngx_uint_t    n;
    ngx_queue_t  *q;
    ngx_event_t  *ev;

    for (n = 0; !ngx_queue_empty(&ngx_posted_events); n++) {

        if (n == 100000) {
            return NGX_ERROR;
        }

        q = ngx_queue_head(&ngx_posted_events);
        ev = ngx_queue_data(q, ngx_event_t, queue);

        ngx_delete_posted_event(ev);

        ev->handler(ev);
    }

    /* the next round's events are this round's now */
    if (!ngx_queue_empty(&ngx_posted_next_events)) {
        ngx_queue_add(&ngx_posted_events, &ngx_posted_next_events);
        ngx_queue_init(&ngx_posted_next_events);
    }

    return NGX_OK;
}


ngx_int_t
ngx_tcp_nodelay(ngx_connection_t *c)
{
    /* as nginx's: the WebSocket's cork (websocket.c) is reached */
    c->tcp_nodelay = NGX_TCP_NODELAY_SET;
    return NGX_OK;
}


/* pipeline.c's, for websocket.c: nothing to cork here */
void
ngx_http_jvm_pipeline_cork_frames(ngx_connection_t *c)
{
}


#if (NGX_HTTP_SSL)
void
ngx_ssl_free_buffer(ngx_connection_t *c)
{
}
#endif


/* --- the HTTP core ------------------------------------------------------ */

ngx_http_request_t *
ngx_fuzz_request(ngx_pool_t *pool, ngx_http_jvm_loc_conf_t *jlcf,
    ngx_http_core_loc_conf_t *clcf)
{
    ngx_connection_t    *c;
    ngx_http_request_t  *r;

    if (ngx_cycle == NULL) {
        ngx_fuzz_log.log_level = NGX_LOG_DEBUG_ALL | NGX_LOG_DEBUG;
        ngx_fuzz_cycle.log = &ngx_fuzz_log;
        ngx_fuzz_cycle.connection_n = 64;
        ngx_cycle = &ngx_fuzz_cycle;
        ngx_queue_init(&ngx_posted_events);
        ngx_queue_init(&ngx_posted_next_events);
    }

    ngx_fuzz_closed = NULL;
    ngx_fuzz_finalized = NGX_DECLINED;
    ngx_fuzz_fail_alloc = 0;

    c = ngx_pcalloc(pool, sizeof(ngx_connection_t));
    c->pool = pool;
    c->log = &ngx_fuzz_log;
    c->read = ngx_pcalloc(pool, sizeof(ngx_event_t));
    c->write = ngx_pcalloc(pool, sizeof(ngx_event_t));
    c->read->data = c;
    c->write->data = c;
    c->read->log = c->log;
    c->write->log = c->log;
    c->write->write = 1;
    c->fd = 3;

    r = ngx_pcalloc(pool, sizeof(ngx_http_request_t));
    r->connection = c;
    r->pool = pool;
    r->main = r;
    r->count = 1;
    r->method = NGX_HTTP_GET;
    r->http_version = NGX_HTTP_VERSION_11;
    r->http_connection = ngx_pcalloc(pool, sizeof(ngx_http_connection_t));
    r->header_in = ngx_pcalloc(pool, sizeof(ngx_buf_t));
    c->data = r;

    r->ctx = ngx_pcalloc(pool, 2 * sizeof(void *));
    r->loc_conf = ngx_pcalloc(pool, 2 * sizeof(void *));
    r->loc_conf[ngx_http_jvm_module.ctx_index] = jlcf;
    r->loc_conf[ngx_http_core_module.ctx_index] = clcf;

    if (ngx_list_init(&r->headers_in.headers, pool, 2,
                      sizeof(ngx_table_elt_t))
        != NGX_OK
        || ngx_list_init(&r->headers_out.headers, pool, 2,
                         sizeof(ngx_table_elt_t))
           != NGX_OK)
    {
        abort();
    }

    return r;
}


void
ngx_fuzz_header(ngx_http_request_t *r, u_char *name, size_t name_len,
    u_char *value, size_t value_len)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_in.headers);

    ngx_memzero(h, sizeof(ngx_table_elt_t));
    h->hash = 1;

    /* copies of their own, so that a read past either is seen */
    h->key.len = name_len;
    h->key.data = ngx_pnalloc(r->pool, name_len);
    ngx_memcpy(h->key.data, name, name_len);
    h->value.len = value_len;
    h->value.data = ngx_pnalloc(r->pool, value_len);
    ngx_memcpy(h->value.data, value, value_len);
}


void
ngx_http_close_connection(ngx_connection_t *c)
{
    ngx_fuzz_closed = c;

    if (c->read->posted) {
        ngx_delete_posted_event(c->read);
    }

    if (c->write->posted) {
        ngx_delete_posted_event(c->write);
    }
}


void
ngx_http_free_request(ngx_http_request_t *r, ngx_int_t rc)
{
    /* its memory goes with the harness's pool; it must not be used now */
    r->pool = NULL;
}


void
ngx_http_clean_header(ngx_http_request_t *r)
{
    /* as nginx does it: the fields after the lists, then the lists */
    ngx_memzero(&r->headers_out.status,
                sizeof(ngx_http_headers_out_t)
                - offsetof(ngx_http_headers_out_t, status));

    r->headers_out.headers.part.nelts = 0;
    r->headers_out.headers.part.next = NULL;
    r->headers_out.headers.last = &r->headers_out.headers.part;

    r->headers_out.content_length_n = -1;
    r->headers_out.last_modified_time = -1;
}


ngx_int_t
ngx_http_send_header(ngx_http_request_t *r)
{
    r->header_sent = 1;
    return NGX_OK;
}


ngx_int_t
ngx_http_send_special(ngx_http_request_t *r, ngx_uint_t flags)
{
    return NGX_OK;
}


ngx_int_t
ngx_http_output_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    /* what was buffered leaves, or part of it does: once in two calls */
    r->connection->buffered = (r->connection->buffered == 1) ? 2 : 0;

    return NGX_OK;
}


void
ngx_http_finalize_request(ngx_http_request_t *r, ngx_int_t rc)
{
    ngx_fuzz_finalized = rc;
}


void
ngx_http_run_posted_requests(ngx_connection_t *c)
{
}


void
ngx_http_test_reading(ngx_http_request_t *r)
{
}


void
ngx_http_block_reading(ngx_http_request_t *r)
{
}


void
ngx_http_request_empty_handler(ngx_http_request_t *r)
{
}


ngx_http_jvm_ctx_t *
ngx_http_jvm_get_ctx(ngx_http_request_t *r)
{
    ngx_http_jvm_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_jvm_module);

    if (ctx == NULL) {
        ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_jvm_ctx_t));
        if (ctx == NULL) {
            return NULL;
        }

        ctx->request = r;
        ctx->stream = -1;
        ctx->ws = -1;
        ngx_http_set_ctx(r, ctx, ngx_http_jvm_module);
    }

    return ctx;
}
