
/*
 * nginx-jvm: the constants of the wire protocol between the C module and
 * the Java runtime, the C twin of nginx.jvm.Wire (and, for the shared
 * dictionaries and topics, of nginx.jvm.Shm: NGX_HTTP_JVM_DICT_X is
 * Shm.X).  NGX_HTTP_JVM_X here is Wire.X there, with the same value;
 * tests/test_wire.py fails when the two disagree.  docs/internals.md
 * describes the layouts.
 */


#ifndef _NGX_HTTP_JVM_WIRE_H_INCLUDED_
#define _NGX_HTTP_JVM_WIRE_H_INCLUDED_


/* The wire protocol's version: Wire.PROTOCOL must be equal. */
#define NGX_HTTP_JVM_PROTOCOL         10

/* Request flags, the first int of a described request. */
#define NGX_HTTP_JVM_REQ_HTTPS        1
#define NGX_HTTP_JVM_REQ_HAS_QUERY    2
#define NGX_HTTP_JVM_REQ_WEBSOCKET    4   /* a valid opening handshake */
#define NGX_HTTP_JVM_REQ_BODY_FILE    8   /* a body segment is in a file */
#define NGX_HTTP_JVM_REQ_BODY_STREAM  16  /* the body still arrives */
#define NGX_HTTP_JVM_REQ_HAS_URI      32  /* $uri is not the path: sent too */

/* Worker.upload(): the piece's status (else the HTTP status it failed). */
#define NGX_HTTP_JVM_UPLOAD_GOING     0
#define NGX_HTTP_JVM_UPLOAD_END       1

/* Worker.upload(): read on; Java's pieces are full; nobody reads it. */
#define NGX_HTTP_JVM_UPLOAD_MORE      0
#define NGX_HTTP_JVM_UPLOAD_FULL      1
#define NGX_HTTP_JVM_UPLOAD_DROP      2

/* Worker.wake(): added to a task's id, its body has room again. */
#define NGX_HTTP_JVM_POLL_BODY        1

/* Worker.wake(): the ready buffer's ids at most; added to their count,
 * WebSockets have frames to send or may read again (Worker.wsPoll()). */
#define NGX_HTTP_JVM_READY_MAX        64
#define NGX_HTTP_JVM_WAKE_SOCKETS     65536

/* Body kinds of an encoded response. */
#define NGX_HTTP_JVM_BODY_NONE        0
#define NGX_HTTP_JVM_BODY_INLINE      1
#define NGX_HTTP_JVM_BODY_FILE        2
#define NGX_HTTP_JVM_BODY_STREAM      3
#define NGX_HTTP_JVM_BODY_ERROR       4
#define NGX_HTTP_JVM_BODY_MOVED       5   /* see the new response buffer */
#define NGX_HTTP_JVM_BODY_UPGRADE     6   /* a WebSocket listener's id */
#define NGX_HTTP_JVM_BODY_DECLINED    7   /* a phase handler let it go on */
#define NGX_HTTP_JVM_BODY_EDITS       8   /* a header filter's edits */
#define NGX_HTTP_JVM_BODY_TUNNEL      9   /* a byte tunnel's listener id */

/* The fixed part of an encoded response: status, kind, length, count. */
#define NGX_HTTP_JVM_RESPONSE_HEAD    20

/* Where a handler runs (jvm_mode). */
#define NGX_HTTP_JVM_LOOP             0
#define NGX_HTTP_JVM_POOL             1
#define NGX_HTTP_JVM_VIRTUAL          2
#define NGX_HTTP_JVM_COLOOP           3   /* virtual threads the loop carries */

/* The phase a handler serves. */
#define NGX_HTTP_JVM_PHASE_CONTENT    0
#define NGX_HTTP_JVM_PHASE_REWRITE    1
#define NGX_HTTP_JVM_PHASE_ACCESS     2
#define NGX_HTTP_JVM_PHASE_LOG        3

/* Worker.variable(): the handler's value is null; it failed. */
#define NGX_HTTP_JVM_VAR_NULL         -1
#define NGX_HTTP_JVM_VAR_FAILED       -2

/* Worker.filter(): the handler changed nothing. */
#define NGX_HTTP_JVM_FILTER_SAME      -1

/* Worker.body(): the chunk is unchanged; the handler failed. */
#define NGX_HTTP_JVM_CHUNK_SAME       -1
#define NGX_HTTP_JVM_CHUNK_FAILED     -2  /* the message follows */

/* Worker.submit(): the task was accepted (else a response length). */
#define NGX_HTTP_JVM_ACCEPTED         0

/*
 * Worker.take(): added to the response's length, the task is over for Java
 * (a whole content response): no cancel or abort follows.
 */
#define NGX_HTTP_JVM_TAKE_DONE        1073741824  /* 1 << 30 */

/* Worker.next(): besides a piece's length. */
#define NGX_HTTP_JVM_NEXT_END         -1
#define NGX_HTTP_JVM_NEXT_WAIT        -2  /* a JVM thread has not made it */
#define NGX_HTTP_JVM_NEXT_FAILED      -3  /* the message follows */
#define NGX_HTTP_JVM_NEXT_EMPTY       -4  /* only empty pieces this time */

/* Worker.wsOpen(): the C module answers pings; the listener does. */
#define NGX_HTTP_JVM_WS_C_PINGS       0
#define NGX_HTTP_JVM_WS_JAVA_PINGS    1

/* Worker.wsMessage(): go on reading; stop until the socket is polled. */
#define NGX_HTTP_JVM_WS_CONTINUE      0
#define NGX_HTTP_JVM_WS_PAUSE         1

/* Worker.wsTake(): nothing queued; the frame needs the new, larger buffer. */
#define NGX_HTTP_JVM_WS_NONE          0
#define NGX_HTTP_JVM_WS_MOVED         -1

/* Shm: value types of a dictionary entry. */
#define NGX_HTTP_JVM_DICT_STRING      1
#define NGX_HTTP_JVM_DICT_BYTES       2
#define NGX_HTTP_JVM_DICT_NUMBER      3
#define NGX_HTTP_JVM_DICT_LIST        4   /* its values are items */

/* Shm: operations of ngx_http_jvm_dict_set(). */
#define NGX_HTTP_JVM_DICT_SET         0
#define NGX_HTTP_JVM_DICT_ADD         1
#define NGX_HTTP_JVM_DICT_REPLACE     2

/* Shm: the ends of a list, for ngx_http_jvm_dict_push() and _pop(). */
#define NGX_HTTP_JVM_DICT_LEFT        0
#define NGX_HTTP_JVM_DICT_RIGHT       1

/* Shm: what dictionary and topic operations answer. */
#define NGX_HTTP_JVM_DICT_OK          0
#define NGX_HTTP_JVM_DICT_NOT_FOUND   1
#define NGX_HTTP_JVM_DICT_EXISTS      2
#define NGX_HTTP_JVM_DICT_NO_MEMORY   3
#define NGX_HTTP_JVM_DICT_NOT_NUMBER  4
#define NGX_HTTP_JVM_DICT_TOO_LARGE   6
#define NGX_HTTP_JVM_DICT_NOT_LIST    7
#define NGX_HTTP_JVM_DICT_OVERFLOW    8   /* incr: beyond a long */

/* Shm: limits both sides enforce. */
#define NGX_HTTP_JVM_DICT_NAME_MAX    128
#define NGX_HTTP_JVM_DICT_KEY_MAX     65535

/*
 * C only, never crosses to Java: the value did not fit the caller's
 * buffer; *len is its length (ngx_http_jvm_dict_get()).
 */
#define NGX_HTTP_JVM_DICT_AGAIN       5


/*
 * The one writer of the layouts Java reads: native byte order, unaligned.
 * A string is an int length and its bytes.
 */

static ngx_inline u_char *
ngx_http_jvm_put_int(u_char *p, uint32_t n)
{
    return ngx_cpymem(p, &n, sizeof(uint32_t));
}


static ngx_inline u_char *
ngx_http_jvm_put_long(u_char *p, int64_t n)
{
    return ngx_cpymem(p, &n, sizeof(int64_t));
}


static ngx_inline u_char *
ngx_http_jvm_put_str(u_char *p, u_char *data, size_t len)
{
    p = ngx_http_jvm_put_int(p, (uint32_t) len);

    if (len == 0) {
        /* an absent query or cert has data NULL: memcpy() from NULL is
         * undefined even for no bytes (UBSan, make asan) */
        return p;
    }

    return ngx_cpymem(p, data, len);
}


/*
 * The one reader of the layouts Java writes, over [pos, last).  Each
 * ngx_http_jvm_get_*() answers NGX_ERROR, reading nothing, when the bytes
 * left are fewer than it needs: a short or malformed buffer is then the
 * caller's clear failure, never a read beyond it.  A string's data points
 * into the buffer.
 */

typedef struct {
    u_char                   *pos;
    u_char                   *last;
} ngx_http_jvm_reader_t;


static ngx_inline void
ngx_http_jvm_reader_init(ngx_http_jvm_reader_t *rd, u_char *p, size_t len)
{
    rd->pos = p;
    rd->last = p + len;
}


static ngx_inline ngx_int_t
ngx_http_jvm_get_int(ngx_http_jvm_reader_t *rd, uint32_t *n)
{
    if ((size_t) (rd->last - rd->pos) < sizeof(uint32_t)) {
        return NGX_ERROR;
    }

    ngx_memcpy(n, rd->pos, sizeof(uint32_t));
    rd->pos += sizeof(uint32_t);

    return NGX_OK;
}


static ngx_inline ngx_int_t
ngx_http_jvm_get_long(ngx_http_jvm_reader_t *rd, int64_t *n)
{
    if ((size_t) (rd->last - rd->pos) < sizeof(int64_t)) {
        return NGX_ERROR;
    }

    ngx_memcpy(n, rd->pos, sizeof(int64_t));
    rd->pos += sizeof(int64_t);

    return NGX_OK;
}


static ngx_inline ngx_int_t
ngx_http_jvm_get_str(ngx_http_jvm_reader_t *rd, ngx_str_t *s)
{
    uint32_t  n;

    if ((size_t) (rd->last - rd->pos) < sizeof(uint32_t)) {
        return NGX_ERROR;
    }

    ngx_memcpy(&n, rd->pos, sizeof(uint32_t));

    if (n > (size_t) (rd->last - rd->pos) - sizeof(uint32_t)) {
        return NGX_ERROR;
    }

    s->len = n;
    s->data = rd->pos + sizeof(uint32_t);
    rd->pos = s->data + n;

    return NGX_OK;
}


/*
 * The int that ends the buffer (a streamed body's or a WebSocket's id,
 * after a response's header fields): read first, and taken off its end.
 */

static ngx_inline ngx_int_t
ngx_http_jvm_get_last_int(ngx_http_jvm_reader_t *rd, uint32_t *n)
{
    if ((size_t) (rd->last - rd->pos) < sizeof(uint32_t)) {
        return NGX_ERROR;
    }

    rd->last -= sizeof(uint32_t);
    ngx_memcpy(n, rd->last, sizeof(uint32_t));

    return NGX_OK;
}


/*
 * The one encoder of a list of header fields (ngx_table_elt_t), for the
 * request's and a response's: ngx_http_jvm_header_list_size() is what
 * ngx_http_jvm_put_header_list() writes, at most.
 */

size_t ngx_http_jvm_header_list_size(ngx_list_t *list);
u_char *ngx_http_jvm_put_header_list(u_char *p, ngx_list_t *list,
    ngx_uint_t live, uint32_t *n);

size_t ngx_http_jvm_headers_out_size(ngx_http_request_t *r);
u_char *ngx_http_jvm_put_headers_out(ngx_http_request_t *r, u_char *p);


#endif /* _NGX_HTTP_JVM_WIRE_H_INCLUDED_ */
