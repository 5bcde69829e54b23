
/*
 * nginx-jvm: jvm_body_filter, a handler that sees, and may replace, the
 * body of every response of its location, chunk by chunk as it streams,
 * on the event loop (nginx cannot suspend a body filter).
 *
 * The module is the last one loaded, so its filter is the first nginx
 * calls: it sees what the content handler made, before gzip, chunked and
 * the copy filter.  A buffer in a file (a static file, a proxied body
 * spooled to proxy_temp_path) is read here, through nginx's own
 * ngx_output_chain(), into at most NGX_HTTP_JVM_BODY_BUFS buffers of
 * NGX_HTTP_JVM_BODY_SIZE bytes, as the copy filter reads for gzip: the
 * next piece is read only when one of those buffers has gone to the client.
 *
 * Each buffer in memory is one chunk for the handler, copied into the
 * worker's request buffer after the request's description.  What the
 * handler answers instead goes out in a buffer of this filter's whose
 * shadow is the chunk it replaces: the chunk's producer (the upstream's
 * pipe, ngx_output_chain, a JVM body sent in pieces) sees its buffer as
 * sent only when the replacement has left, so a slow client holds back
 * the producer as it does without the filter, and memory stays bounded.
 */


#include "ngx_http_jvm_module.h"


#define NGX_HTTP_JVM_BODY_BUFS  4
#define NGX_HTTP_JVM_BODY_SIZE  (32 * 1024)


struct ngx_http_jvm_body_s {
    ngx_output_chain_ctx_t    chain;        /* reads file buffers */
    ngx_chain_t              *free;         /* replacements, reusable */
    ngx_chain_t              *busy;         /* replacements not yet sent */
    ngx_int_t                 handler;
    unsigned                  started:1;    /* Java knows it by address */
    unsigned                  last:1;       /* the handler saw the end */
    unsigned                  failed:1;
};


static ngx_int_t ngx_http_jvm_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);
static ngx_int_t ngx_http_jvm_body_chunks(ngx_http_request_t *r,
    ngx_chain_t *in);
static ngx_int_t ngx_http_jvm_body_chunk(ngx_http_request_t *r,
    ngx_http_jvm_body_t *bf, ngx_buf_t *b, ngx_chain_t ***ll,
    ngx_chain_t ***ours);
static ngx_int_t ngx_http_jvm_body_call(ngx_http_request_t *r,
    ngx_http_jvm_body_t *bf, ngx_buf_t *b, ngx_uint_t last, ngx_str_t *out);
static ngx_chain_t *ngx_http_jvm_body_buf(ngx_http_request_t *r,
    ngx_http_jvm_body_t *bf, size_t size);
static void ngx_http_jvm_body_update(ngx_http_jvm_body_t *bf,
    ngx_chain_t *ours);
static void ngx_http_jvm_body_cleanup(void *data);


static ngx_http_output_body_filter_pt  ngx_http_next_body_filter;


/* Postconfiguration: the filter, when some location has jvm_body_filter. */

ngx_int_t
ngx_http_jvm_body_init(ngx_conf_t *cf)
{
    ngx_http_jvm_main_conf_t  *jmcf;

    jmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_jvm_module);

    if (!jmcf->uses_body_filter) {
        return NGX_OK;
    }

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_jvm_body_filter;

    return NGX_OK;
}


/*
 * From the header filter, when the location has a body filter: the body
 * may change length, so the response goes without Content-Length (chunked,
 * or to the connection's close for HTTP/1.0), without ranges, and with a
 * weak ETag, as nginx's own body-changing filters (gzip, sub) do.
 */

ngx_int_t
ngx_http_jvm_body_header(ngx_http_request_t *r, ngx_int_t handler)
{
    ngx_pool_cleanup_t        *cln;
    ngx_http_jvm_ctx_t        *ctx;
    ngx_http_jvm_body_t       *bf;
    ngx_http_core_loc_conf_t  *clcf;

    ctx = ngx_http_jvm_get_ctx(r);
    if (ctx == NULL) {
        return NGX_ERROR;
    }

    if (ctx->body) {
        /* the header filter again (error_page after a filter's 500) */
        return NGX_OK;
    }

    bf = ngx_pcalloc(r->pool, sizeof(ngx_http_jvm_body_t));
    cln = ngx_pool_cleanup_add(r->pool, 0);

    if (bf == NULL || cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_jvm_body_cleanup;
    cln->data = bf;

    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    bf->handler = handler;

    /* buffers in files are read into memory, in pieces (as the copy filter) */
    bf->chain.sendfile = 0;
    bf->chain.need_in_memory = 1;
    bf->chain.need_in_temp = 0;
    bf->chain.alignment = clcf->directio_alignment;
    bf->chain.pool = r->pool;
    bf->chain.bufs.num = NGX_HTTP_JVM_BODY_BUFS;
    bf->chain.bufs.size = NGX_HTTP_JVM_BODY_SIZE;
    bf->chain.tag = (ngx_buf_tag_t) &ngx_http_jvm_module;
    bf->chain.output_filter = (ngx_output_chain_filter_pt)
                                  ngx_http_jvm_body_chunks;
    bf->chain.filter_ctx = r;

    ctx->body = bf;

    ngx_http_clear_content_length(r);
    ngx_http_clear_accept_ranges(r);
    ngx_http_weak_etag(r);

    return NGX_OK;
}


static ngx_int_t
ngx_http_jvm_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_int_t             rc;
    ngx_http_jvm_ctx_t   *ctx;
    ngx_http_jvm_body_t  *bf;

    ctx = ngx_http_get_module_ctx(r, ngx_http_jvm_module);

    /* HEAD, 204, 304 and nginx's own error pages: no body to filter */

    if (ctx == NULL || ctx->body == NULL || r->header_only
        || r->filter_finalize)
    {
        return ngx_http_next_body_filter(r, in);
    }

    bf = ctx->body;

    if (bf->failed) {
        return NGX_ERROR;
    }

    rc = ngx_output_chain(&bf->chain, in);

    /*
     * Pieces of a file not read yet keep the request going (nginx's writer
     * calls the filter again when the client has taken what was sent).
     * Below this filter every buffer is in memory, so the copy filter
     * never holds one, and sharing its flag is safe.
     */

    if (bf->chain.in == NULL) {
        r->buffered &= ~NGX_HTTP_COPY_BUFFERED;

    } else {
        r->buffered |= NGX_HTTP_COPY_BUFFERED;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: body filter %i, holds file pieces: %d", rc,
                   bf->chain.in != NULL);

    return rc;
}


/*
 * ngx_output_chain()'s output: buffers in memory (or special ones: flush,
 * last).  Each goes through the handler, and on with its answer.
 */

static ngx_int_t
ngx_http_jvm_body_chunks(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_int_t             rc;
    ngx_chain_t          *out, **ll, *ours, **lo, *cl, *next;
    ngx_http_jvm_ctx_t   *ctx;
    ngx_http_jvm_body_t  *bf;

    ctx = ngx_http_get_module_ctx(r, ngx_http_jvm_module);
    bf = ctx->body;

    out = NULL;
    ll = &out;
    ours = NULL;
    lo = &ours;

    for (cl = in; cl; cl = cl->next) {
        if (ngx_http_jvm_body_chunk(r, bf, cl->buf, &ll, &lo) != NGX_OK) {
            bf->failed = 1;
            return NGX_ERROR;
        }
    }

    rc = ngx_http_next_body_filter(r, out);

    /* the filters below copy the links they keep: these are free again */

    for (cl = out; cl; cl = next) {
        next = cl->next;
        ngx_free_chain(r->pool, cl);
    }

    ngx_http_jvm_body_update(bf, ours);

    return rc;
}


/*
 * One buffer: *ll is where the output chain goes on, *ours where this
 * filter's own buffers are listed (to be reused once sent).
 */

static ngx_int_t
ngx_http_jvm_body_chunk(ngx_http_request_t *r, ngx_http_jvm_body_t *bf,
    ngx_buf_t *b, ngx_chain_t ***ll, ngx_chain_t ***ours)
{
    ngx_int_t     rc;
    ngx_str_t     data;
    ngx_buf_t    *nb;
    ngx_uint_t    last, special;
    ngx_chain_t  *cl, *own;

    last = b->last_buf || b->last_in_chain;
    special = ngx_buf_special(b);
    rc = NGX_DECLINED;
    data.len = 0;
    data.data = NULL;

    if (bf->last || (special && !last)) {
        /* a flush or sync alone, or anything after the end: as it is */

    } else if (!special && !ngx_buf_in_memory(b)) {
        ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                      "jvm: the body filter got a buffer not in memory");
        return NGX_ERROR;

    } else {
        rc = ngx_http_jvm_body_call(r, bf, b, last, &data);

        if (rc == NGX_ERROR) {
            return NGX_ERROR;
        }

        bf->started = 1;
        bf->last = last;
    }

    if (rc == NGX_OK && data.len == 0 && !last && !b->flush && !b->sync) {
        /* dropped, and nothing to carry on: the chunk is consumed */
        b->pos = b->last;
        return NGX_OK;
    }

    if (rc == NGX_OK) {
        own = ngx_http_jvm_body_buf(r, bf, data.len);
        if (own == NULL) {
            return NGX_ERROR;
        }

        nb = own->buf;

        if (data.len) {
            nb->last = ngx_cpymem(nb->pos, data.data, data.len);
            nb->temporary = 1;
        }

        nb->last_buf = b->last_buf;
        nb->last_in_chain = b->last_in_chain;
        nb->flush = b->flush;
        nb->sync = (data.len == 0) ? 1 : b->sync;

        /* the chunk counts as sent when its replacement is */
        nb->shadow = ngx_buf_size(b) ? b : NULL;

        **ours = own;
        *ours = &own->next;

        b = nb;
    }

    cl = ngx_alloc_chain_link(r->pool);
    if (cl == NULL) {
        return NGX_ERROR;
    }

    cl->buf = b;
    cl->next = NULL;
    **ll = cl;
    *ll = &cl->next;

    return NGX_OK;
}


/*
 * The handler on one chunk.  NGX_DECLINED: unchanged; NGX_OK: *out is what
 * replaces it (in the response buffer, until the next call into Java).
 */

static ngx_int_t
ngx_http_jvm_body_call(ngx_http_request_t *r, ngx_http_jvm_body_t *bf,
    ngx_buf_t *b, ngx_uint_t last, ngx_str_t *out)
{
    size_t  len, size;

    size = ngx_buf_in_memory(b) ? (size_t) (b->last - b->pos) : 0;

    if (ngx_http_jvm_request_encode(r, &len) != NGX_OK) {
        return NGX_ERROR;
    }

    if (len + size > ngx_http_jvm_vm.req_cap) {
        /* a larger buffer is a new one: the request is described again */
        if (ngx_http_jvm_vm_request_buffer(r->connection->log, len + size)
            != NGX_OK
            || ngx_http_jvm_request_encode(r, &len) != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if (size) {
        ngx_memcpy(ngx_http_jvm_vm.req_addr + len, b->pos, size);
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: body filter chunk of %uz bytes, last: %ui",
                   size, last);

    return ngx_http_jvm_vm_body(r, bf->handler, bf, len, size, last, out);
}


/*
 * The response is over.  A body cut short (the client left, the upstream
 * failed, the filter threw) never got to its last chunk: Java forgets the
 * filter it started for the response.
 */

static void
ngx_http_jvm_body_cleanup(void *data)
{
    ngx_http_jvm_body_t  *bf = data;

    if (bf->started && !bf->last && ngx_http_jvm_vm.ready) {
        ngx_http_jvm_vm_body_end(bf);
    }
}


/*
 * A buffer of this filter's for "size" bytes: a sent one again when there
 * is one, its memory replaced when too small (every such memory is a large
 * allocation of the request's pool, which ngx_pfree() gives back).
 */

static ngx_chain_t *
ngx_http_jvm_body_buf(ngx_http_request_t *r, ngx_http_jvm_body_t *bf,
    size_t size)
{
    u_char       *start, *end;
    size_t        cap;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    cl = bf->free;

    if (cl) {
        bf->free = cl->next;
        b = cl->buf;

    } else {
        cl = ngx_alloc_chain_link(r->pool);
        b = ngx_calloc_buf(r->pool);

        if (cl == NULL || b == NULL) {
            return NULL;
        }

        cl->buf = b;
    }

    cl->next = NULL;
    start = b->start;
    end = b->end;

    if ((size_t) (end - start) < size) {
        if (start) {
            ngx_pfree(r->pool, start);
        }

        cap = ngx_max(size, NGX_HTTP_JVM_BODY_SIZE);

        start = ngx_palloc(r->pool, cap);
        if (start == NULL) {
            return NULL;
        }

        end = start + cap;
    }

    ngx_memzero(b, sizeof(ngx_buf_t));

    b->start = start;
    b->end = end;
    b->pos = start;
    b->last = start;
    b->tag = (ngx_buf_tag_t) &ngx_http_jvm_body_buf;

    return cl;
}


/*
 * After the filters below took the output: this filter's buffers the
 * client has taken are free again, and so are the chunks they replaced.
 */

static void
ngx_http_jvm_body_update(ngx_http_jvm_body_t *bf, ngx_chain_t *ours)
{
    ngx_buf_t    *b;
    ngx_chain_t  *cl, **ll;

    for (ll = &bf->busy; *ll; ll = &(*ll)->next) { /* void */ }

    *ll = ours;

    while (bf->busy) {
        cl = bf->busy;
        b = cl->buf;

        if (ngx_buf_size(b) != 0) {
            break;
        }

        if (b->shadow) {
            b->shadow->pos = b->shadow->last;
            b->shadow = NULL;
        }

        bf->busy = cl->next;
        cl->next = bf->free;
        bf->free = cl;
    }
}
