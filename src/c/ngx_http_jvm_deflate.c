
/*
 * nginx-jvm: WebSocket compression, permessage-deflate (RFC 7692).
 *
 * The server always answers server_no_context_takeover and
 * client_no_context_takeover (RFC 7692 7.1.1.1 and 7.1.1.2 let it): each
 * message is compressed alone, in both directions.  A socket then keeps no
 * zlib state between messages, so that an idle compressed WebSocket costs
 * what an idle plain one does; the worker keeps one deflate stream per
 * window size it was asked for and one inflate stream, reset after each
 * message (the event loop handles one message at a time).  Keeping the
 * context would cost each socket about 300 KB with zlib's defaults (a
 * deflate stream of 2^(w+2) + 2^(m+9) bytes and an inflate window of 2^w),
 * 3 GB for 10,000 sockets.
 *
 * A message is inflated once it is whole, into at most
 * jvm_websocket_max_message bytes: a small frame that would inflate past
 * it (a decompression bomb) stops there.
 */


#include "ngx_http_jvm_module.h"

#include <zlib.h>


/*
 * nginx's gzip_comp_level default: compression runs on the event loop,
 * and level 1 costs a third of the default level's time for most of its
 * gain on text.
 */
#define NGX_HTTP_JVM_DEFLATE_LEVEL     1
#define NGX_HTTP_JVM_DEFLATE_MEMLEVEL  8

/* an offer's parameters, each allowed once */
#define NGX_HTTP_JVM_PMD_SERVER_NCT    0x01
#define NGX_HTTP_JVM_PMD_CLIENT_NCT    0x02
#define NGX_HTTP_JVM_PMD_SERVER_BITS   0x04
#define NGX_HTTP_JVM_PMD_CLIENT_BITS   0x08


typedef struct {
    u_char     *start;
    u_char     *end;
} ngx_http_jvm_span_t;


static ngx_int_t ngx_http_jvm_deflate_offer(ngx_http_jvm_span_t *ext,
    ngx_uint_t *bits, ngx_uint_t *asked);
static u_char *ngx_http_jvm_deflate_split(u_char *p, u_char *last,
    u_char sep);
static void ngx_http_jvm_deflate_trim(ngx_http_jvm_span_t *s);
static ngx_int_t ngx_http_jvm_deflate_bits(ngx_http_jvm_span_t *value,
    ngx_uint_t *bits);
static z_stream *ngx_http_jvm_deflater(ngx_uint_t bits, ngx_log_t *log);
static ngx_int_t ngx_http_jvm_deflate_message(ngx_uint_t bits, u_char *in,
    size_t len, u_char *out, size_t room, size_t *out_len, ngx_log_t *log);


/* the worker's streams, made on first use, kept for its life */
static z_stream      ngx_http_jvm_deflaters[16];
static ngx_uint_t    ngx_http_jvm_deflaters_made;    /* a bit per size */
static z_stream      ngx_http_jvm_inflater;
static ngx_uint_t    ngx_http_jvm_inflater_made;

static u_char        ngx_http_jvm_deflate_tail[4] = { 0, 0, 0xff, 0xff };


/*
 * An outgoing frame, whole (FIN), in a new buffer from *start to *end: its
 * header, then its payload; when bits is not 0 (permessage-deflate with
 * the window of 2^bits), a text or binary message is compressed, whatever
 * its size (RFC 7692 6 would let small or incompressible ones go as they
 * are, but some clients, kosoku's Autobahn among them, then mistake them;
 * level 1 costs little on either).  Room is made for the longest header,
 * written just before the payload once its length is known.
 */

u_char *
ngx_http_jvm_deflate_frame(ngx_uint_t bits, ngx_uint_t opcode, u_char *p,
    size_t len, size_t *start, size_t *end, ngx_log_t *log)
{
    u_char     *out, *h;
    size_t      head, n, room;
    z_stream   *zs;
    ngx_uint_t  rsv;

    zs = NULL;
    room = len;

    if (bits && (opcode == 0x1 || opcode == 0x2)
        && len <= NGX_MAX_INT32_VALUE / 2)
    {
        zs = ngx_http_jvm_deflater(bits, log);

        if (zs) {
            /* and the flush's empty stored block */
            room = ngx_max(len, deflateBound(zs, len) + 16);
        }
    }

    out = ngx_alloc(10 + room, log);
    if (out == NULL) {
        return NULL;
    }

    rsv = 0;
    n = len;

    if (zs
        && ngx_http_jvm_deflate_message(bits, p, len, out + 10, room, &n, log)
           == NGX_OK)
    {
        rsv = 0x40;     /* RSV1: a compressed message */

    } else {
        n = len;
        ngx_memcpy(out + 10, p, len);
    }

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, log, 0,
                   "jvm: websocket frame out: opcode %ui, %uz bytes, "
                   "%uz sent%s", opcode, len, n,
                   rsv ? " compressed" : "");

    head = (n < 126) ? 2 : (n < 65536) ? 4 : 10;
    h = out + 10 - head;

    h[0] = (u_char) (0x80 | rsv | opcode);

    if (n < 126) {
        h[1] = (u_char) n;

    } else if (n < 65536) {
        h[1] = 126;
        h[2] = (u_char) (n >> 8);
        h[3] = (u_char) n;

    } else {
        h[1] = 127;
        h[2] = 0;
        h[3] = 0;
        h[4] = 0;
        h[5] = 0;
        h[6] = (u_char) (n >> 24);
        h[7] = (u_char) (n >> 16);
        h[8] = (u_char) (n >> 8);
        h[9] = (u_char) n;
    }

    *start = 10 - head;
    *end = 10 + n;

    return out;
}


/*
 * The first permessage-deflate offer of the request's
 * Sec-WebSocket-Extensions fields (in order, however many) that the server
 * can honour: NGX_OK with its answer (when answer is not NULL) and the
 * window the server compresses with; NGX_DECLINED, the window 0, when
 * there is none.
 */

ngx_int_t
ngx_http_jvm_deflate_negotiate(ngx_http_request_t *r, ngx_str_t *answer,
    ngx_uint_t *window_bits)
{
    u_char               *p, *last;
    ngx_uint_t            i, bits, asked;
    ngx_list_part_t      *part;
    ngx_table_elt_t      *h;
    ngx_http_jvm_span_t   ext;

    bits = 15;
    asked = 0;

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                               "jvm: websocket: no permessage-deflate "
                               "offer to take");
                *window_bits = 0;
                return NGX_DECLINED;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].key.len != 24
            || ngx_strncasecmp(h[i].key.data,
                               (u_char *) "Sec-WebSocket-Extensions", 24)
               != 0)
        {
            continue;
        }

        p = h[i].value.data;
        last = p + h[i].value.len;

        while (p < last) {
            ext.start = p;
            ext.end = ngx_http_jvm_deflate_split(p, last, ',');
            p = ext.end + 1;

            if (ngx_http_jvm_deflate_offer(&ext, &bits, &asked) == NGX_OK) {
                goto found;
            }
        }
    }

found:

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: websocket: permessage-deflate, window %ui bits%s",
                   bits, asked ? ", as the client asked" : "");

    *window_bits = bits;

    if (answer == NULL) {
        return NGX_OK;
    }

    answer->data = ngx_pnalloc(r->pool, sizeof("permessage-deflate; "
                                               "server_no_context_takeover; "
                                               "client_no_context_takeover; "
                                               "server_max_window_bits=15"));
    if (answer->data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(answer->data, "permessage-deflate; "
                   "server_no_context_takeover; "
                   "client_no_context_takeover",
                   sizeof("permessage-deflate; server_no_context_takeover; "
                          "client_no_context_takeover") - 1);

    if (asked) {
        /* the window the client asked the server to keep to, echoed */
        p = ngx_sprintf(p, "; server_max_window_bits=%ui", bits);
    }

    answer->len = p - answer->data;

    return NGX_OK;
}


/*
 * One element of the extension list: NGX_OK when it is permessage-deflate
 * with parameters the server can honour.  An unknown parameter, one given
 * twice, or a bad value declines the offer (RFC 7692 5); so does
 * server_max_window_bits=8, which zlib cannot compress to (its raw deflate
 * keeps to 512-byte windows at least).
 */

static ngx_int_t
ngx_http_jvm_deflate_offer(ngx_http_jvm_span_t *ext, ngx_uint_t *bits,
    ngx_uint_t *asked)
{
    u_char               *p, *eq, *end;
    ngx_uint_t            seen, client_bits, first;
    ngx_http_jvm_span_t   param, name, value;

    static u_char  pmd[] = "permessage-deflate";

    *bits = 15;
    *asked = 0;
    seen = 0;
    first = 1;

    p = ext->start;

    for ( ;; ) {
        end = ngx_http_jvm_deflate_split(p, ext->end, ';');
        param.start = p;
        param.end = end;
        p = end + 1;

        ngx_http_jvm_deflate_trim(&param);

        if (first) {
            /* the extension's name */
            first = 0;

            if ((size_t) (param.end - param.start) != sizeof(pmd) - 1
                || ngx_strncasecmp(param.start, pmd, sizeof(pmd) - 1) != 0)
            {
                return NGX_DECLINED;
            }

        } else {
            eq = ngx_strlchr(param.start, param.end, '=');

            name.start = param.start;
            name.end = eq ? eq : param.end;
            ngx_http_jvm_deflate_trim(&name);

            value.start = eq ? eq + 1 : param.end;
            value.end = param.end;
            ngx_http_jvm_deflate_trim(&value);

#define ngx_http_jvm_param_is(s)                                              \
    ((size_t) (name.end - name.start) == sizeof(s) - 1                        \
     && ngx_strncasecmp(name.start, (u_char *) s, sizeof(s) - 1) == 0)

            if (ngx_http_jvm_param_is("server_no_context_takeover")
                && !(seen & NGX_HTTP_JVM_PMD_SERVER_NCT) && eq == NULL)
            {
                seen |= NGX_HTTP_JVM_PMD_SERVER_NCT;

            } else if (ngx_http_jvm_param_is("client_no_context_takeover")
                       && !(seen & NGX_HTTP_JVM_PMD_CLIENT_NCT) && eq == NULL)
            {
                seen |= NGX_HTTP_JVM_PMD_CLIENT_NCT;

            } else if (ngx_http_jvm_param_is("server_max_window_bits")
                       && !(seen & NGX_HTTP_JVM_PMD_SERVER_BITS) && eq
                       && ngx_http_jvm_deflate_bits(&value, bits) == NGX_OK)
            {
                seen |= NGX_HTTP_JVM_PMD_SERVER_BITS;
                *asked = 1;

            } else if (ngx_http_jvm_param_is("client_max_window_bits")
                       && !(seen & NGX_HTTP_JVM_PMD_CLIENT_BITS)
                       && (eq == NULL
                           || ngx_http_jvm_deflate_bits(&value, &client_bits)
                              == NGX_OK))
            {
                /* the client's window: any fits the worker's inflater */
                seen |= NGX_HTTP_JVM_PMD_CLIENT_BITS;

            } else {
                return NGX_DECLINED;
            }

#undef ngx_http_jvm_param_is
        }

        if (end >= ext->end) {
            break;
        }
    }

    return (*bits >= 9) ? NGX_OK : NGX_DECLINED;
}


/* The end of what runs up to sep, outside quoted strings, or last. */

static u_char *
ngx_http_jvm_deflate_split(u_char *p, u_char *last, u_char sep)
{
    ngx_uint_t  quoted;

    quoted = 0;

    for ( /* void */ ; p < last; p++) {

        if (quoted) {
            if (*p == '\\' && p + 1 < last) {
                p++;

            } else if (*p == '"') {
                quoted = 0;
            }

            continue;
        }

        if (*p == '"') {
            quoted = 1;

        } else if (*p == sep) {
            return p;
        }
    }

    return last;
}


static void
ngx_http_jvm_deflate_trim(ngx_http_jvm_span_t *s)
{
    while (s->start < s->end && (*s->start == ' ' || *s->start == '\t')) {
        s->start++;
    }

    while (s->end > s->start && (s->end[-1] == ' ' || s->end[-1] == '\t')) {
        s->end--;
    }
}


/* A window size: 8 to 15, in decimal without a leading zero, maybe quoted. */

static ngx_int_t
ngx_http_jvm_deflate_bits(ngx_http_jvm_span_t *value, ngx_uint_t *bits)
{
    size_t   len;
    u_char  *p;

    p = value->start;
    len = value->end - value->start;

    if (len >= 2 && p[0] == '"' && p[len - 1] == '"') {
        p++;
        len -= 2;
    }

    if (len == 1 && (p[0] == '8' || p[0] == '9')) {
        *bits = p[0] - '0';
        return NGX_OK;
    }

    if (len == 2 && p[0] == '1' && p[1] >= '0' && p[1] <= '5') {
        *bits = 10 + p[1] - '0';
        return NGX_OK;
    }

    return NGX_DECLINED;
}


static z_stream *
ngx_http_jvm_deflater(ngx_uint_t bits, ngx_log_t *log)
{
    int        rc;
    z_stream  *zs;

    zs = &ngx_http_jvm_deflaters[bits];

    if (ngx_http_jvm_deflaters_made & (1 << bits)) {
        return zs;
    }

    rc = deflateInit2(zs, NGX_HTTP_JVM_DEFLATE_LEVEL, Z_DEFLATED,
                      - (int) bits, NGX_HTTP_JVM_DEFLATE_MEMLEVEL,
                      Z_DEFAULT_STRATEGY);

    if (rc != Z_OK) {
        ngx_log_error(NGX_LOG_ALERT, log, 0,
                      "jvm: deflateInit2() failed: %d", rc);
        return NULL;
    }

    ngx_http_jvm_deflaters_made |= 1 << bits;

    return zs;
}


/*
 * A message compressed with the window of 2^bits into out, room bytes:
 * NGX_OK with its compressed length; NGX_DECLINED when it did not fit
 * (then it goes as it is).
 */

static ngx_int_t
ngx_http_jvm_deflate_message(ngx_uint_t bits, u_char *in, size_t len,
    u_char *out, size_t room, size_t *out_len, ngx_log_t *log)
{
    int         rc;
    size_t      n;
    z_stream   *zs;
    ngx_int_t   result;

    zs = &ngx_http_jvm_deflaters[bits];

    zs->next_in = in;
    zs->avail_in = (uInt) len;
    zs->next_out = out;
    zs->avail_out = (uInt) room;

    rc = deflate(zs, Z_SYNC_FLUSH);

    /* the flush is complete only when it left room unused */

    n = zs->total_out;

    if (rc != Z_OK || zs->avail_in || zs->avail_out == 0 || n < 4
        || ngx_memcmp(out + n - 4, ngx_http_jvm_deflate_tail, 4) != 0)
    {
        result = NGX_DECLINED;

    } else {
        /* the empty stored block's 00 00 ff ff is left off (RFC 7692 7.2.1) */
        *out_len = n - 4;
        result = NGX_OK;
    }

    if (deflateReset(zs) != Z_OK) {
        ngx_log_error(NGX_LOG_ALERT, log, 0, "jvm: deflateReset() failed");
        deflateEnd(zs);
        ngx_http_jvm_deflaters_made &= ~(1 << bits);
    }

    return result;
}


/*
 * A compressed message inflated into a new buffer of at most max bytes:
 * NGX_OK; NGX_DECLINED when it would be larger (1009); NGX_ERROR when it
 * is not valid deflate data (1007); NGX_ABORT when memory ran out.
 */

ngx_int_t
ngx_http_jvm_inflate_message(u_char *in, size_t len, size_t max,
    u_char **out, size_t *out_len, ngx_log_t *log)
{
    int         rc;
    u_char     *buf, *p;
    size_t      cap, size, done;
    ngx_int_t   result;
    ngx_uint_t  tail;

    if (!ngx_http_jvm_inflater_made) {
        rc = inflateInit2(&ngx_http_jvm_inflater, -15);

        if (rc != Z_OK) {
            ngx_log_error(NGX_LOG_ALERT, log, 0,
                          "jvm: inflateInit2() failed: %d", rc);
            return NGX_ABORT;
        }

        ngx_http_jvm_inflater_made = 1;
    }

    /* one byte past max tells that the message is too big */

    cap = ngx_min(ngx_max(4 * len, 4096), max + 1);

    buf = ngx_alloc(cap, log);
    if (buf == NULL) {
        return NGX_ABORT;
    }

    ngx_http_jvm_inflater.next_in = in;
    ngx_http_jvm_inflater.avail_in = (uInt) len;
    ngx_http_jvm_inflater.next_out = buf;
    ngx_http_jvm_inflater.avail_out = (uInt) cap;

    tail = 0;
    result = NGX_OK;

    for ( ;; ) {
        rc = inflate(&ngx_http_jvm_inflater, Z_SYNC_FLUSH);

        if (rc == Z_STREAM_END) {
            /* the client ended the stream (BFINAL): nothing else counts */
            break;
        }

        if (rc != Z_OK && rc != Z_BUF_ERROR) {
            result = (rc == Z_MEM_ERROR) ? NGX_ABORT : NGX_ERROR;
            break;
        }

        done = cap - ngx_http_jvm_inflater.avail_out;

        if (ngx_http_jvm_inflater.avail_out == 0) {

            if (done > max) {
                result = NGX_DECLINED;
                break;
            }

            size = ngx_min(2 * cap, max + 1);

            p = ngx_alloc(size, log);
            if (p == NULL) {
                result = NGX_ABORT;
                break;
            }

            ngx_memcpy(p, buf, done);
            ngx_free(buf);
            buf = p;
            cap = size;

            ngx_http_jvm_inflater.next_out = buf + done;
            ngx_http_jvm_inflater.avail_out = (uInt) (cap - done);
            continue;
        }

        if (ngx_http_jvm_inflater.avail_in) {
            /* room and input left, yet no progress */
            result = NGX_ERROR;
            break;
        }

        if (tail) {
            break;
        }

        /* the 00 00 ff ff the sender left off (RFC 7692 7.2.2) */
        tail = 1;
        ngx_http_jvm_inflater.next_in = ngx_http_jvm_deflate_tail;
        ngx_http_jvm_inflater.avail_in = 4;
    }

    done = cap - ngx_http_jvm_inflater.avail_out;

    if (result == NGX_OK && done > max) {
        result = NGX_DECLINED;
    }

    /* NGX_DECLINED: over the most a message may be (1009), NGX_ERROR: 1007 */

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, log, 0,
                   "jvm: websocket message inflated: %uz bytes to %uz: %i",
                   len, done, result);

    if (inflateReset(&ngx_http_jvm_inflater) != Z_OK) {
        ngx_log_error(NGX_LOG_ALERT, log, 0, "jvm: inflateReset() failed");
        inflateEnd(&ngx_http_jvm_inflater);
        ngx_http_jvm_inflater_made = 0;
    }

    if (result != NGX_OK) {
        ngx_free(buf);
        return result;
    }

    *out = buf;
    *out_len = done;

    return NGX_OK;
}
