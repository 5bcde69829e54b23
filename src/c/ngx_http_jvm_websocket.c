
/*
 * nginx-jvm: WebSocket connections (RFC 6455), once their 101 has left.
 *
 * The handshake (ngx_http_jvm_ws_handshake.c) frees the request, and the
 * connection keeps only a small ngx_http_jvm_ws_t, made here, so that an
 * idle WebSocket holds no buffer.  Frames are parsed, unmasked and checked
 * here (UTF-8 of text, control frames, close codes, the message size), on
 * the event loop; Java gets whole messages, and gives whole frames to send
 * (Worker.wsTake), one at a time, each only once the one before has left,
 * so a slow client fills the socket's bounded queue in Java, not memory.
 * With permessage-deflate (jvm_websocket_deflate), messages are inflated
 * and deflated here too (ngx_http_jvm_deflate.c): Java sees none of it.
 */


#include "ngx_http_jvm_module.h"
#include "ngx_http_jvm_websocket.h"


#define NGX_HTTP_JVM_WS_CONT      0x0
#define NGX_HTTP_JVM_WS_TEXT      0x1
#define NGX_HTTP_JVM_WS_BINARY    0x2
#define NGX_HTTP_JVM_WS_CLOSE     0x8
#define NGX_HTTP_JVM_WS_PING      0x9
#define NGX_HTTP_JVM_WS_PONG      0xa

#define NGX_HTTP_JVM_WS_RSV1      0x40      /* a compressed message */

#define NGX_HTTP_JVM_WS_READ      16384     /* the worker's read buffer */
#define NGX_HTTP_JVM_WS_CLOSE_WAIT  2000    /* for the peer's close frame */
#define NGX_HTTP_JVM_WS_MAX_OUT   (1024 * 1024)   /* C's own frames */

/* What one event sends of Java's frames, each costing at least a little */
#define NGX_HTTP_JVM_WS_BUDGET      (128 * 1024)
#define NGX_HTTP_JVM_WS_FRAME_COST  1024


struct ngx_http_jvm_ws_s {
    ngx_connection_t         *connection;
    ngx_http_jvm_loc_conf_t  *conf;
    ngx_http_jvm_ws_t        *next;         /* in its id's hash bucket */
    ngx_int_t                 id;           /* Java's socket id */

    u_char                   *msg;          /* the message being received */
    size_t                    msg_len;
    size_t                    msg_cap;
    u_char                   *ctl;          /* a control frame's payload */
    size_t                    ctl_len;

    u_char                   *in;           /* bytes read, not yet parsed */
    size_t                    in_len;

    u_char                   *out;          /* bytes to send, in order */
    size_t                    out_pos;
    size_t                    out_len;

    uint64_t                  left;         /* of the frame's payload */
    ngx_msec_t                active;       /* when a byte last came in */
    ngx_uint_t                close_code;   /* the close frame we sent */
    ngx_msec_t                send_timeout;

    u_char                    head[14];     /* a frame header, so far */
    u_char                    mask[4];
    uint8_t                   head_len;
    uint8_t                   mask_at;
    uint8_t                   opcode;       /* of the frame */
    uint8_t                   message;      /* opcode of the message, or 0 */
    uint8_t                   utf8_need;    /* the message's UTF-8 state */
    uint8_t                   utf8_first;
    uint8_t                   deflate_bits; /* permessage-deflate's server
                                               window, or 0: it is off */

    unsigned                  compressed:1; /* the message being received */
    unsigned                  fin:1;
    unsigned                  in_payload:1;
    unsigned                  java_pings:1; /* the listener answers pings */
    unsigned                  paused:1;     /* Java's queues are full */
    unsigned                  closing:1;    /* a close frame is queued */
    unsigned                  close_sent:1;
    unsigned                  reported:1;   /* Java was told it closed */
    unsigned                  pinged:1;
    unsigned                  done:1;       /* the connection is closing */
    unsigned                  raw:1;        /* a byte tunnel: no frames */
};


static ngx_int_t ngx_http_jvm_ws_hash_add(ngx_http_jvm_ws_t *ws);
static void ngx_http_jvm_ws_close_handler(ngx_event_t *ev);
static void ngx_http_jvm_ws_read_handler(ngx_event_t *rev);
static void ngx_http_jvm_ws_write_handler(ngx_event_t *wev);
static ngx_int_t ngx_http_jvm_ws_parse(ngx_http_jvm_ws_t *ws, u_char *p,
    u_char *last, size_t *used);
static ngx_int_t ngx_http_jvm_ws_frame_head(ngx_http_jvm_ws_t *ws);
static ngx_int_t ngx_http_jvm_ws_message_room(ngx_http_jvm_ws_t *ws,
    uint64_t len);
static ngx_int_t ngx_http_jvm_ws_frame_done(ngx_http_jvm_ws_t *ws);
static ngx_int_t ngx_http_jvm_ws_closed_by_peer(ngx_http_jvm_ws_t *ws);
static ngx_int_t ngx_http_jvm_ws_inflate(ngx_http_jvm_ws_t *ws);
static void ngx_http_jvm_ws_send(ngx_http_jvm_ws_t *ws);
static ngx_int_t ngx_http_jvm_ws_queue(ngx_http_jvm_ws_t *ws,
    ngx_uint_t opcode, u_char *data, size_t len);
static void ngx_http_jvm_ws_fail(ngx_http_jvm_ws_t *ws, ngx_uint_t code,
    char *reason);
static void ngx_http_jvm_ws_timer(ngx_http_jvm_ws_t *ws);
static void ngx_http_jvm_ws_set_timer(ngx_http_jvm_ws_t *ws);
static void ngx_http_jvm_ws_report(ngx_http_jvm_ws_t *ws, ngx_uint_t code,
    u_char *reason, size_t len);
static void ngx_http_jvm_ws_finish(ngx_http_jvm_ws_t *ws, ngx_uint_t code);
static ngx_int_t ngx_http_jvm_ws_resume(ngx_http_jvm_ws_t *ws);
static ngx_int_t ngx_http_jvm_ws_flush(ngx_http_jvm_ws_t *ws);


/* open sockets by id, for Worker.wsPoll(); sized at the first upgrade */
static ngx_http_jvm_ws_t  **ngx_http_jvm_ws_hash;
static ngx_uint_t           ngx_http_jvm_ws_hash_mask;

static u_char               ngx_http_jvm_ws_buffer[NGX_HTTP_JVM_WS_READ];



/*
 * The WebSocket of a request whose 101 has left, made before the request
 * is freed (ngx_http_jvm_ws_handshake.c): what it needs of the request is
 * taken now.
 */

ngx_http_jvm_ws_t *
ngx_http_jvm_ws_create(ngx_http_request_t *r, ngx_int_t id, ngx_uint_t raw)
{
    size_t                     n;
    ngx_buf_t                 *b;
    ngx_uint_t                 bits;
    ngx_connection_t          *c;
    ngx_http_jvm_ws_t         *ws;
    ngx_http_core_loc_conf_t  *clcf;

    c = r->connection;
    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    ws = ngx_pcalloc(c->pool, sizeof(ngx_http_jvm_ws_t));
    if (ws == NULL) {
        return NULL;
    }

    ws->connection = c;
    ws->conf = ngx_http_get_module_loc_conf(r, ngx_http_jvm_module);
    ws->id = id;
    ws->active = ngx_current_msec;
    ws->send_timeout = clcf->send_timeout;
    ws->raw = raw ? 1 : 0;

    /* what the 101 answered, found again from the same offers */

    if (ws->conf->ws_deflate && !raw) {
        (void) ngx_http_jvm_deflate_negotiate(r, NULL, &bits);
        ws->deflate_bits = (uint8_t) bits;
    }

    /* frames the client sent right after its handshake */

    b = r->header_in;
    n = b->last - b->pos;

    if (n) {
        ws->in = ngx_alloc(n, c->log);
        if (ws->in) {
            ngx_memcpy(ws->in, b->pos, n);
            ws->in_len = n;
        }
    }

    return ws;
}


/*
 * The connection, freed of its request, is the WebSocket's: it is found by
 * its id, reads and writes frames, and Java is told it is open.
 */

void
ngx_http_jvm_ws_open(ngx_http_jvm_ws_t *ws, ngx_uint_t nodelay)
{
    ngx_int_t          rc;
    ngx_connection_t  *c;

    c = ws->connection;

    c->data = ws;
    c->log->action = "in a WebSocket";

    if (nodelay && ngx_tcp_nodelay(c) != NGX_OK) {
        ngx_http_jvm_ws_finish(ws, NGX_HTTP_JVM_CLOSE_ABNORMAL);
        return;
    }

    if (ngx_http_jvm_ws_hash_add(ws) != NGX_OK) {
        ngx_http_jvm_ws_finish(ws, NGX_HTTP_JVM_CLOSE_INTERNAL_ERROR);
        return;
    }

    c->read->handler = ngx_http_jvm_ws_read_handler;
    c->write->handler = ngx_http_jvm_ws_write_handler;

    /* a quitting worker closes it, as an idle keep-alive connection */
    c->idle = 1;

    rc = ngx_http_jvm_vm_ws_open(c->log, ws->id);

    if (rc == NGX_ERROR) {
        ngx_http_jvm_ws_fail(ws, NGX_HTTP_JVM_CLOSE_INTERNAL_ERROR, "");
        return;
    }

    ws->java_pings = (rc == NGX_OK) ? 0 : 1;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, c->log, 0,
                   "jvm: websocket %i open", ws->id);

    if (ngx_exiting || ngx_terminate) {
        ngx_http_jvm_ws_fail(ws, NGX_HTTP_JVM_CLOSE_GOING_AWAY, "");
        return;
    }

    ngx_http_jvm_ws_set_timer(ws);

    /* what came with the handshake, then what waits in the socket */
    ngx_post_event(c->read, &ngx_posted_events);
}


/*
 * For an event the connection waits out: a read while the 101 is sent (the
 * frames wait), a write once the connection is closing.
 */

void
ngx_http_jvm_ws_empty_handler(ngx_event_t *ev)
{
    ngx_log_debug0(NGX_LOG_DEBUG_EVENT, ev->log, 0,
                   "jvm: websocket event waited out");
}


/* The socket in the table of open sockets by id, made at the first. */

static ngx_int_t
ngx_http_jvm_ws_hash_add(ngx_http_jvm_ws_t *ws)
{
    ngx_uint_t           size;
    ngx_http_jvm_ws_t  **slot;

    if (ngx_http_jvm_ws_hash == NULL) {
        size = 1;

        while (size < ngx_cycle->connection_n) {
            size <<= 1;
        }

        ngx_http_jvm_ws_hash = ngx_calloc(size * sizeof(ngx_http_jvm_ws_t *),
                                          ngx_cycle->log);
        if (ngx_http_jvm_ws_hash == NULL) {
            return NGX_ERROR;
        }

        ngx_http_jvm_ws_hash_mask = size - 1;
    }

    slot = &ngx_http_jvm_ws_hash[ws->id & ngx_http_jvm_ws_hash_mask];
    ws->next = *slot;
    *slot = ws;

    return NGX_OK;
}




static void
ngx_http_jvm_ws_read_handler(ngx_event_t *rev)
{
    size_t              used;
    ssize_t             n;
    ngx_int_t           rc;
    ngx_connection_t   *c;
    ngx_http_jvm_ws_t  *ws;

    c = rev->data;
    ws = c->data;

    if (ws->done) {
        return;
    }

    if (rev->timedout) {
        rev->timedout = 0;
        ngx_http_jvm_ws_timer(ws);
        return;
    }

    if (c->close) {
        /* the worker quits */
        c->close = 0;
        c->idle = 0;

        if (!ws->closing) {
            ngx_http_jvm_ws_fail(ws, NGX_HTTP_JVM_CLOSE_GOING_AWAY, "");
        }

        return;
    }

    if (ws->paused) {
        return;
    }

    if (ws->in_len) {
        rc = ngx_http_jvm_ws_resume(ws);

        if (rc != NGX_OK) {
            return;
        }
    }

    for ( ;; ) {
        if (ws->done) {
            return;
        }

        n = c->recv(c, ngx_http_jvm_ws_buffer, NGX_HTTP_JVM_WS_READ);

        if (n == NGX_AGAIN) {
            if (ngx_handle_read_event(rev, 0) != NGX_OK) {
                ngx_http_jvm_ws_finish(ws, NGX_HTTP_JVM_CLOSE_ABNORMAL);
            }

            return;
        }

        if (n == 0 || n == NGX_ERROR) {
            /* gone: after its close frame, or without one (1006) */
            ngx_http_jvm_ws_finish(ws, NGX_HTTP_JVM_CLOSE_ABNORMAL);
            return;
        }

        ws->active = ngx_current_msec;

        rc = ngx_http_jvm_ws_parse(ws, ngx_http_jvm_ws_buffer,
                                   ngx_http_jvm_ws_buffer + n, &used);

        if (rc == NGX_AGAIN) {
            /* Java's inbound queue is full: keep the rest for later */

            if ((size_t) n > used) {
                ws->in = ngx_alloc(n - used, c->log);
                if (ws->in == NULL) {
                    ngx_http_jvm_ws_finish(ws,
                                           NGX_HTTP_JVM_CLOSE_INTERNAL_ERROR);
                    return;
                }

                ngx_memcpy(ws->in, ngx_http_jvm_ws_buffer + used, n - used);
                ws->in_len = n - used;
            }

            return;
        }

        if (rc != NGX_OK) {
            return;
        }
    }
}


/* Parses what was kept from an earlier read; NGX_OK when all is used. */

static ngx_int_t
ngx_http_jvm_ws_resume(ngx_http_jvm_ws_t *ws)
{
    u_char     *in;
    size_t      used, len;
    ngx_int_t   rc;

    in = ws->in;
    len = ws->in_len;

    rc = ngx_http_jvm_ws_parse(ws, in, in + len, &used);

    if (ws->done) {
        return NGX_DONE;
    }

    if (rc == NGX_AGAIN && used < len) {
        /* still paused: keep the rest */
        ngx_memmove(in, in + used, len - used);
        ws->in_len = len - used;
        return NGX_AGAIN;
    }

    ngx_free(in);
    ws->in = NULL;
    ws->in_len = 0;

    return rc;
}


/*
 * Feeds bytes to the frame parser.  NGX_OK: all used; NGX_AGAIN: paused
 * after *used bytes (Java's queue is full); NGX_DECLINED: the connection
 * is closing (a close frame was sent); NGX_DONE: it is closed.
 */

static ngx_int_t
ngx_http_jvm_ws_parse(ngx_http_jvm_ws_t *ws, u_char *p, u_char *last,
    size_t *used)
{
    u_char     *start, *dst;
    size_t      need, k, i;
    ngx_int_t   rc;

    if (ws->raw) {
        /*
         * A byte tunnel: what was read goes to Java as it is, one message;
         * the application (a servlet engine's WebSocket) parses it.
         */

        *used = last - p;

        if (p == last) {
            return NGX_OK;
        }

        rc = ngx_http_jvm_vm_ws_message(ws->connection->log, ws->id,
                                        NGX_HTTP_JVM_WS_BINARY, p, last - p);

        if (rc == NGX_ERROR) {
            ngx_http_jvm_ws_finish(ws, NGX_HTTP_JVM_CLOSE_INTERNAL_ERROR);
            return NGX_DONE;
        }

        if (rc == NGX_AGAIN) {
            ws->paused = 1;
        }

        return rc;
    }

    start = p;

    while (p < last) {

        if (ws->done) {
            *used = p - start;
            return NGX_DONE;
        }

        if (!ws->in_payload) {

            /* the frame header: 2 bytes, then the length and the mask */

            need = 2;

            if (ws->head_len >= 2) {
                need += (ws->head[1] & 0x7f) == 126 ? 2
                        : (ws->head[1] & 0x7f) == 127 ? 8 : 0;
                need += (ws->head[1] & 0x80) ? 4 : 0;
            }

            while (p < last && ws->head_len < need) {
                ws->head[ws->head_len++] = *p++;

                if (ws->head_len == 2) {
                    need += (ws->head[1] & 0x7f) == 126 ? 2
                            : (ws->head[1] & 0x7f) == 127 ? 8 : 0;
                    need += (ws->head[1] & 0x80) ? 4 : 0;
                }
            }

            if (ws->head_len < need) {
                break;
            }

            rc = ngx_http_jvm_ws_frame_head(ws);

            if (rc != NGX_OK) {
                *used = p - start;
                return rc;
            }

            if (ws->left == 0) {
                rc = ngx_http_jvm_ws_frame_done(ws);

                if (rc != NGX_OK) {
                    *used = p - start;
                    return rc;
                }
            }

            continue;
        }

        /* the payload, unmasked where it belongs */

        k = ngx_min((uint64_t) (last - p), ws->left);

        if (ws->opcode >= NGX_HTTP_JVM_WS_CLOSE) {
            dst = ws->ctl + ws->ctl_len;
            ws->ctl_len += k;

        } else {
            dst = ws->msg + ws->msg_len;
            ws->msg_len += k;
        }

        for (i = 0; i < k; i++) {
            dst[i] = p[i] ^ ws->mask[ws->mask_at];
            ws->mask_at = (ws->mask_at + 1) & 3;
        }

        p += k;
        ws->left -= k;

        if (ws->opcode < NGX_HTTP_JVM_WS_CLOSE
            && ws->message == NGX_HTTP_JVM_WS_TEXT
            && !ws->compressed
            && ngx_http_jvm_utf8(&ws->utf8_need, &ws->utf8_first, dst, k)
               != NGX_OK)
        {
            /* failing fast, before the message ends */
            ngx_http_jvm_ws_fail(ws, NGX_HTTP_JVM_CLOSE_INVALID_DATA,
                                 "invalid UTF-8 in a text message");
            *used = p - start;
            return NGX_DECLINED;
        }

        if (ws->left == 0) {
            rc = ngx_http_jvm_ws_frame_done(ws);

            if (rc != NGX_OK) {
                *used = p - start;
                return rc;
            }
        }
    }

    *used = p - start;

    return NGX_OK;
}


/* A whole frame header: checked, and room made for its payload. */

static ngx_int_t
ngx_http_jvm_ws_frame_head(ngx_http_jvm_ws_t *ws)
{
    u_char      *h;
    uint64_t     len;
    ngx_int_t    rc;
    ngx_uint_t   i, at, opcode;

    h = ws->head;
    ws->head_len = 0;

    opcode = h[0] & 0x0f;
    ws->fin = (h[0] & 0x80) ? 1 : 0;

    len = h[1] & 0x7f;
    at = 2;

    if (len == 126) {
        len = ((uint64_t) h[2] << 8) | h[3];
        at = 4;

    } else if (len == 127) {
        len = 0;

        for (i = 0; i < 8; i++) {
            len = (len << 8) | h[2 + i];
        }

        at = 10;
    }

    /* RSV1 marks a compressed message's first frame, when negotiated */

    if ((h[0] & 0x30)
        || ((h[0] & NGX_HTTP_JVM_WS_RSV1)
            && (ws->deflate_bits == 0
                || (opcode != NGX_HTTP_JVM_WS_TEXT
                    && opcode != NGX_HTTP_JVM_WS_BINARY))))
    {
        ngx_http_jvm_ws_fail(ws, NGX_HTTP_JVM_CLOSE_PROTOCOL_ERROR,
                             "reserved bits set");
        return NGX_DECLINED;
    }

    if (!(h[1] & 0x80)) {
        ngx_http_jvm_ws_fail(ws, NGX_HTTP_JVM_CLOSE_PROTOCOL_ERROR,
                             "unmasked frame");
        return NGX_DECLINED;
    }

    ngx_memcpy(ws->mask, &h[at], 4);
    ws->mask_at = 0;

    switch (opcode) {

    case NGX_HTTP_JVM_WS_CLOSE:
    case NGX_HTTP_JVM_WS_PING:
    case NGX_HTTP_JVM_WS_PONG:

        if (!ws->fin || len > 125) {
            ngx_http_jvm_ws_fail(ws, NGX_HTTP_JVM_CLOSE_PROTOCOL_ERROR,
                                 "invalid control frame");
            return NGX_DECLINED;
        }

        if (ws->ctl == NULL) {
            ws->ctl = ngx_alloc(125, ws->connection->log);
            if (ws->ctl == NULL) {
                ngx_http_jvm_ws_finish(ws, NGX_HTTP_JVM_CLOSE_INTERNAL_ERROR);
                return NGX_DONE;
            }
        }

        ws->ctl_len = 0;
        break;

    case NGX_HTTP_JVM_WS_TEXT:
    case NGX_HTTP_JVM_WS_BINARY:

        if (ws->message) {
            ngx_http_jvm_ws_fail(ws, NGX_HTTP_JVM_CLOSE_PROTOCOL_ERROR,
                                 "a new message before the end "
                                 "of the last");
            return NGX_DECLINED;
        }

        ws->message = (uint8_t) opcode;
        ws->compressed = (h[0] & NGX_HTTP_JVM_WS_RSV1) ? 1 : 0;
        ws->utf8_need = 0;
        ws->utf8_first = 0;
        ws->msg_len = 0;
        break;

    case NGX_HTTP_JVM_WS_CONT:

        if (!ws->message) {
            ngx_http_jvm_ws_fail(ws, NGX_HTTP_JVM_CLOSE_PROTOCOL_ERROR,
                                 "a continuation frame without "
                                 "a message");
            return NGX_DECLINED;
        }

        break;

    default:
        ngx_http_jvm_ws_fail(ws, NGX_HTTP_JVM_CLOSE_PROTOCOL_ERROR,
                             "reserved opcode");
        return NGX_DECLINED;
    }

    ws->opcode = (uint8_t) opcode;
    ws->left = len;

    if (opcode < NGX_HTTP_JVM_WS_CLOSE) {
        rc = ngx_http_jvm_ws_message_room(ws, len);

        if (rc != NGX_OK) {
            return rc;
        }
    }

    ws->in_payload = (len > 0);

    return NGX_OK;
}


/*
 * A data frame's payload of len bytes will join the message: refused when
 * the message would pass jvm_websocket_max_message, else room made for it.
 */

static ngx_int_t
ngx_http_jvm_ws_message_room(ngx_http_jvm_ws_t *ws, uint64_t len)
{
    u_char  *msg;
    size_t   size;

    if (len > (uint64_t) ws->conf->ws_max_message
        || ws->msg_len + len > (uint64_t) ws->conf->ws_max_message)
    {
        /* refused before a byte of it is kept */
        ngx_http_jvm_ws_fail(ws, NGX_HTTP_JVM_CLOSE_TOO_BIG,
                             "message too big");
        return NGX_DECLINED;
    }

    if (ws->msg_len + len <= ws->msg_cap) {
        return NGX_OK;
    }

    size = ngx_max(ws->msg_len + len, 2 * ws->msg_cap);
    size = ngx_min(size, (size_t) ws->conf->ws_max_message);
    size = ngx_max(size, 64);

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ws->connection->log, 0,
                   "jvm: websocket %i: message buffer grows to %uz bytes",
                   ws->id, size);

    msg = ngx_alloc(size, ws->connection->log);
    if (msg == NULL) {
        ngx_http_jvm_ws_finish(ws, NGX_HTTP_JVM_CLOSE_INTERNAL_ERROR);
        return NGX_DONE;
    }

    if (ws->msg) {
        ngx_memcpy(msg, ws->msg, ws->msg_len);
        ngx_free(ws->msg);
    }

    ws->msg = msg;
    ws->msg_cap = size;

    return NGX_OK;
}


/* A whole frame: a control frame handled, or a message's end delivered. */

static ngx_int_t
ngx_http_jvm_ws_frame_done(ngx_http_jvm_ws_t *ws)
{
    ngx_int_t  rc;

    ws->in_payload = 0;

    switch (ws->opcode) {

    case NGX_HTTP_JVM_WS_CLOSE:
        return ngx_http_jvm_ws_closed_by_peer(ws);

    case NGX_HTTP_JVM_WS_PING:

        if (ws->closing) {
            return NGX_OK;
        }

        if (!ws->java_pings) {
            if (ngx_http_jvm_ws_queue(ws, NGX_HTTP_JVM_WS_PONG, ws->ctl,
                                      ws->ctl_len)
                != NGX_OK)
            {
                ngx_http_jvm_ws_finish(ws, NGX_HTTP_JVM_CLOSE_INTERNAL_ERROR);
                return NGX_DONE;
            }

            ngx_http_jvm_ws_send(ws);

            return ws->done ? NGX_DONE : NGX_OK;
        }

        /* fall through */

    case NGX_HTTP_JVM_WS_PONG:

        if (ws->closing) {
            return NGX_OK;
        }

        ws->pinged = 0;

        rc = ngx_http_jvm_vm_ws_message(ws->connection->log, ws->id,
                                        ws->opcode, ws->ctl, ws->ctl_len);
        break;

    default:

        if (!ws->fin) {
            return NGX_OK;
        }

        if (ws->compressed && !ws->closing
            && ngx_http_jvm_ws_inflate(ws) != NGX_OK)
        {
            return ws->done ? NGX_DONE : NGX_DECLINED;
        }

        if (ws->message == NGX_HTTP_JVM_WS_TEXT && ws->utf8_need)
        {
            ngx_http_jvm_ws_fail(ws, NGX_HTTP_JVM_CLOSE_INVALID_DATA,
                                 "invalid UTF-8 in a text message");
            return NGX_DECLINED;
        }

        if (ws->closing) {
            /* after our close frame, messages are not delivered */
            rc = NGX_OK;

        } else {
            rc = ngx_http_jvm_vm_ws_message(ws->connection->log, ws->id,
                                            ws->message, ws->msg, ws->msg_len);
        }

        ws->message = 0;
        ws->msg_len = 0;

        /* a large message's buffer is not kept while idle */

        if (ws->msg) {
            ngx_free(ws->msg);
            ws->msg = NULL;
            ws->msg_cap = 0;
        }

        break;
    }

    if (rc == NGX_ERROR) {
        ngx_http_jvm_ws_fail(ws, NGX_HTTP_JVM_CLOSE_INTERNAL_ERROR, "");
        return NGX_DECLINED;
    }

    if (rc == NGX_AGAIN) {
        /* Java's queue is full: no more reading until it drains */
        ws->paused = 1;
        return NGX_AGAIN;
    }

    return NGX_OK;
}


/*
 * A whole compressed message, inflated in place of what came, within
 * jvm_websocket_max_message (what it inflates to counts, not what came),
 * then checked as UTF-8 if it is text.
 */

static ngx_int_t
ngx_http_jvm_ws_inflate(ngx_http_jvm_ws_t *ws)
{
    u_char     *out;
    size_t      len;
    ngx_int_t   rc;

    rc = ngx_http_jvm_inflate_message(ws->msg, ws->msg_len,
                                      ws->conf->ws_max_message, &out, &len,
                                      ws->connection->log);

    switch (rc) {

    case NGX_OK:
        break;

    case NGX_DECLINED:
        ngx_http_jvm_ws_fail(ws, NGX_HTTP_JVM_CLOSE_TOO_BIG,
                             "message too big once inflated");
        return NGX_DECLINED;

    case NGX_ERROR:
        ngx_http_jvm_ws_fail(ws, NGX_HTTP_JVM_CLOSE_INVALID_DATA,
                             "invalid compressed data");
        return NGX_DECLINED;

    default:
        ngx_http_jvm_ws_finish(ws, NGX_HTTP_JVM_CLOSE_INTERNAL_ERROR);
        return NGX_DONE;
    }

    ngx_free(ws->msg);
    ws->msg = out;
    ws->msg_len = len;
    ws->msg_cap = len;

    if (ws->message == NGX_HTTP_JVM_WS_TEXT
        && ngx_http_jvm_utf8(&ws->utf8_need, &ws->utf8_first, out, len)
           != NGX_OK)
    {
        ngx_http_jvm_ws_fail(ws, NGX_HTTP_JVM_CLOSE_INVALID_DATA,
                             "invalid UTF-8 in a text message");
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/* The peer's close frame: checked, told to Java, answered. */

static ngx_int_t
ngx_http_jvm_ws_closed_by_peer(ngx_http_jvm_ws_t *ws)
{
    u_char      *reason;
    size_t       len;
    uint8_t      need, first;
    ngx_uint_t   code;

    if (ws->ctl_len == 1) {
        ngx_http_jvm_ws_fail(ws, NGX_HTTP_JVM_CLOSE_PROTOCOL_ERROR,
                             "close frame of one byte");
        return NGX_DECLINED;
    }

    code = NGX_HTTP_JVM_CLOSE_NO_STATUS;
    reason = NULL;
    len = 0;

    if (ws->ctl_len >= 2) {
        code = (ws->ctl[0] << 8) | ws->ctl[1];
        reason = ws->ctl + 2;
        len = ws->ctl_len - 2;

        if (!ngx_http_jvm_ws_valid_close_code(code)) {
            ngx_http_jvm_ws_fail(ws, NGX_HTTP_JVM_CLOSE_PROTOCOL_ERROR,
                                 "invalid close code");
            return NGX_DECLINED;
        }

        need = 0;
        first = 0;

        if (ngx_http_jvm_utf8(&need, &first, reason, len) != NGX_OK
            || need)
        {
            ngx_http_jvm_ws_fail(ws, NGX_HTTP_JVM_CLOSE_INVALID_DATA,
                                 "invalid UTF-8 in a close reason");
            return NGX_DECLINED;
        }
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ws->connection->log, 0,
                   "jvm: websocket %i: the peer closed with %ui", ws->id, code);

    if (!ws->closing) {
        /* what the listener sent before the close frame came goes first */
        ngx_http_jvm_ws_send(ws);

        if (ws->done) {
            return NGX_DONE;
        }
    }

    ngx_http_jvm_ws_report(ws, code, reason, len);

    if (ws->close_sent) {
        /* the handshake is complete: the server closes the connection */
        ngx_http_jvm_ws_finish(ws, code);
        return NGX_DONE;
    }

    if (!ws->closing) {
        ws->closing = 1;
        ws->close_code = code;

        if (ngx_http_jvm_ws_queue(ws, NGX_HTTP_JVM_WS_CLOSE, ws->ctl,
                                  code == NGX_HTTP_JVM_CLOSE_NO_STATUS ? 0 : 2)
            != NGX_OK)
        {
            ngx_http_jvm_ws_finish(ws, code);
            return NGX_DONE;
        }
    }

    ngx_http_jvm_ws_send(ws);

    return NGX_DONE;
}


/*
 * Fails the connection: the close frame with code and reason goes out
 * before anything else Java may have queued, then the connection waits a
 * moment for the peer's close frame.
 */

static void
ngx_http_jvm_ws_fail(ngx_http_jvm_ws_t *ws, ngx_uint_t code, char *reason)
{
    size_t   len;
    u_char   frame[125];

    if (ws->closing) {
        return;
    }

    ngx_log_error(NGX_LOG_INFO, ws->connection->log, 0,
                  "jvm: websocket %i closed with %ui%s%s", ws->id, code,
                  reason[0] ? ": " : "", reason);

    if (ws->raw) {
        /* a byte tunnel has no close frame: the connection just closes */
        ngx_http_jvm_ws_finish(ws, code);
        return;
    }

    ws->closing = 1;
    ws->close_code = code;

    len = ngx_min(ngx_strlen(reason), 123);
    frame[0] = (u_char) (code >> 8);
    frame[1] = (u_char) code;
    ngx_memcpy(frame + 2, reason, len);

    if (ngx_http_jvm_ws_queue(ws, NGX_HTTP_JVM_WS_CLOSE, frame, 2 + len)
        != NGX_OK)
    {
        ngx_http_jvm_ws_finish(ws, code);
        return;
    }

    ngx_http_jvm_ws_send(ws);
}


/* Appends a frame of C's own (a pong, a close) to what is to be sent. */

static ngx_int_t
ngx_http_jvm_ws_queue(ngx_http_jvm_ws_t *ws, ngx_uint_t opcode, u_char *data,
    size_t len)
{
    u_char  *out;
    size_t   rest;

    rest = ws->out_len - ws->out_pos;

    if (rest + len + 2 > NGX_HTTP_JVM_WS_MAX_OUT) {
        /* a peer that pings but never reads: its pongs are dropped */
        return opcode == NGX_HTTP_JVM_WS_PONG ? NGX_OK : NGX_ERROR;
    }

    out = ngx_alloc(rest + 2 + len, ws->connection->log);
    if (out == NULL) {
        return NGX_ERROR;
    }

    if (rest) {
        ngx_memcpy(out, ws->out + ws->out_pos, rest);
    }

    if (ws->out) {
        ngx_free(ws->out);
    }

    out[rest] = (u_char) (0x80 | opcode);
    out[rest + 1] = (u_char) len;

    if (len) {
        /* an empty ping, pong or close has data NULL: memcpy() from NULL
         * is undefined even for no bytes (UBSan, make asan) */
        ngx_memcpy(out + rest + 2, data, len);
    }

    ws->out = out;
    ws->out_pos = 0;
    ws->out_len = rest + 2 + len;

    if (opcode == NGX_HTTP_JVM_WS_CLOSE) {
        ws->close_sent = 1;
    }

    return NGX_OK;
}


/*
 * Writes what is queued here: NGX_OK when all of it left (the send timer
 * off), NGX_AGAIN when the socket would block (the write event armed, with
 * send_timeout), NGX_ERROR when the connection failed (it is finished).
 */

static ngx_int_t
ngx_http_jvm_ws_flush(ngx_http_jvm_ws_t *ws)
{
    ssize_t            n;
    ngx_event_t       *wev;
    ngx_connection_t  *c;

    c = ws->connection;
    wev = c->write;

    while (ws->out_pos < ws->out_len) {
        n = c->send(c, ws->out + ws->out_pos, ws->out_len - ws->out_pos);

        if (n == NGX_AGAIN) {
            ngx_add_timer(wev, ws->send_timeout);

            if (ngx_handle_write_event(wev, 0) != NGX_OK) {
                ngx_http_jvm_ws_finish(ws, NGX_HTTP_JVM_CLOSE_ABNORMAL);
                return NGX_ERROR;
            }

            return NGX_AGAIN;
        }

        if (n == NGX_ERROR) {
            ngx_http_jvm_ws_finish(ws, NGX_HTTP_JVM_CLOSE_ABNORMAL);
            return NGX_ERROR;
        }

        ws->out_pos += n;
    }

    if (ws->out) {
        ngx_free(ws->out);
        ws->out = NULL;
        ws->out_pos = 0;
        ws->out_len = 0;
    }

    if (wev->timer_set) {
        ngx_del_timer(wev);
    }

    return NGX_OK;
}


/*
 * Sends what is queued here, then frames from Java, one at a time, until
 * the socket would block, Java has none, a close frame has left, or this
 * event has sent its share (NGX_HTTP_JVM_WS_BUDGET: a client that reads as
 * fast as a JVM thread sends would otherwise hold the loop; the rest goes
 * in the next round).
 */

static void
ngx_http_jvm_ws_send(ngx_http_jvm_ws_t *ws)
{
    u_char                    *p;
    size_t                     len;
    ssize_t                    budget;
    uint32_t                   opcode;
    ngx_int_t                  rc;
    ngx_uint_t                 taken;
    ngx_event_t               *wev;
    ngx_connection_t          *c;
    ngx_http_jvm_reader_t      rd;

    c = ws->connection;
    wev = c->write;
    budget = NGX_HTTP_JVM_WS_BUDGET;
    taken = 0;

    for ( ;; ) {

        if (ws->done || ngx_http_jvm_ws_flush(ws) != NGX_OK) {
            return;
        }

        if (ws->close_sent) {
            if (ws->reported || ws->raw) {
                /* both close frames are through */
                ngx_http_jvm_ws_finish(ws, ws->close_code);
                return;
            }

            /* the peer's close frame is awaited for a moment */
            ngx_http_jvm_ws_set_timer(ws);
            return;
        }

        if (budget <= 0) {
            ngx_post_event(wev, &ngx_posted_next_events);
            return;
        }

        rc = ngx_http_jvm_vm_ws_take(c->log, ws->id, &len);

        if (rc == NGX_DONE) {
            return;
        }

        if (rc == NGX_ERROR) {
            ngx_http_jvm_ws_fail(ws, NGX_HTTP_JVM_CLOSE_INTERNAL_ERROR, "");
            return;
        }

        /* the frame: an int opcode, then the payload */

        ngx_http_jvm_reader_init(&rd, ngx_http_jvm_vm.resp_addr, len);

        if (ngx_http_jvm_get_int(&rd, &opcode) != NGX_OK) {
            ngx_http_jvm_ws_fail(ws, NGX_HTTP_JVM_CLOSE_INTERNAL_ERROR, "");
            return;
        }

        p = rd.pos;
        len = rd.last - rd.pos;

        if (opcode == NGX_HTTP_JVM_WS_CLOSE) {
            ws->closing = 1;
            ws->close_sent = 1;
            ws->close_code = len >= 2 ? (p[0] << 8 | p[1])
                                      : NGX_HTTP_JVM_CLOSE_NO_STATUS;
        }

        if (ws->raw) {
            /* a byte tunnel's bytes go as they are; its close, as none */

            if (opcode == NGX_HTTP_JVM_WS_CLOSE || len == 0) {
                continue;
            }

            ws->out = ngx_alloc(len, c->log);
            if (ws->out == NULL) {
                ngx_http_jvm_ws_finish(ws, NGX_HTTP_JVM_CLOSE_INTERNAL_ERROR);
                return;
            }

            ngx_memcpy(ws->out, p, len);
            ws->out_pos = 0;
            ws->out_len = len;

            budget -= ngx_max(len, NGX_HTTP_JVM_WS_FRAME_COST);

            continue;
        }

        /* the frame is copied out: the response buffer is Java's again */

        /* the frame is compressed when its socket negotiated it */

        ws->out = ngx_http_jvm_deflate_frame(ws->deflate_bits, opcode, p, len,
                                             &ws->out_pos, &ws->out_len,
                                             c->log);
        if (ws->out == NULL) {
            ngx_http_jvm_ws_finish(ws, NGX_HTTP_JVM_CLOSE_INTERNAL_ERROR);
            return;
        }

        /* what it took: the message's bytes, compressed or not */
        budget -= ngx_max(len, NGX_HTTP_JVM_WS_FRAME_COST);

        if (taken++ == 1) {
            /* a batch's (several messages answered): leave together */
            ngx_http_jvm_pipeline_cork_frames(c);
        }
    }
}


static void
ngx_http_jvm_ws_write_handler(ngx_event_t *wev)
{
    ngx_connection_t   *c;
    ngx_http_jvm_ws_t  *ws;

    c = wev->data;
    ws = c->data;

    if (ws->done) {
        return;
    }

    if (wev->timedout) {
        /* the peer does not read: send_timeout */
        ngx_log_error(NGX_LOG_INFO, c->log, NGX_ETIMEDOUT,
                      "jvm: websocket %i: client timed out", ws->id);
        c->timedout = 1;
        ngx_http_jvm_ws_finish(ws, NGX_HTTP_JVM_CLOSE_ABNORMAL);
        return;
    }

    ngx_http_jvm_ws_send(ws);
}


/*
 * Worker.wsPoll() named socket id: Java has frames for it, or ("resume")
 * the listener and the client have caught up, and reading may go on.
 */

void
ngx_http_jvm_ws_ready(ngx_int_t id, ngx_uint_t resume)
{
    ngx_http_jvm_ws_t  *ws;

    if (ngx_http_jvm_ws_hash == NULL) {
        return;
    }

    for (ws = ngx_http_jvm_ws_hash[id & ngx_http_jvm_ws_hash_mask];
         ws;
         ws = ws->next)
    {
        if (ws->id == id) {
            break;
        }
    }

    if (ws == NULL || ws->done) {
        return;
    }

    if (ws->paused && resume) {
        ws->paused = 0;
        ngx_post_event(ws->connection->read, &ngx_posted_events);
    }

    if (ws->out == NULL) {
        ngx_http_jvm_ws_send(ws);
    }
}


/*
 * The connection's one timer: the wait for the peer's close frame, the
 * idle timeout, or the next keep-alive ping.
 */

static void
ngx_http_jvm_ws_set_timer(ngx_http_jvm_ws_t *ws)
{
    ngx_msec_t    t, idle, ping;
    ngx_event_t  *rev;

    rev = ws->connection->read;

    if (ws->close_sent) {
        ngx_add_timer(rev, NGX_HTTP_JVM_WS_CLOSE_WAIT);
        return;
    }

    idle = ws->conf->ws_idle_timeout;
    ping = ws->raw ? 0 : ws->conf->ws_ping_interval;
    t = 0;

    if (idle) {
        t = idle - ngx_min(idle, ngx_current_msec - ws->active);
    }

    if (ping && (t == 0 || ping < t)) {
        t = ping;
    }

    if (t) {
        ngx_add_timer(rev, t);

    } else if (rev->timer_set) {
        ngx_del_timer(rev);
    }
}


static void
ngx_http_jvm_ws_timer(ngx_http_jvm_ws_t *ws)
{
    ngx_msec_t  idle;

    if (ws->close_sent) {
        /* the peer did not answer our close frame */
        ngx_http_jvm_ws_finish(ws, ws->close_code);
        return;
    }

    idle = ws->conf->ws_idle_timeout;

    if (idle && ngx_current_msec - ws->active >= idle) {
        ngx_http_jvm_ws_fail(ws, NGX_HTTP_JVM_CLOSE_GOING_AWAY, "idle");
        return;
    }

    if (ws->conf->ws_ping_interval && !ws->closing && !ws->raw) {
        ws->pinged = 1;

        if (ngx_http_jvm_ws_queue(ws, NGX_HTTP_JVM_WS_PING, NULL, 0)
            != NGX_OK)
        {
            ngx_http_jvm_ws_finish(ws, NGX_HTTP_JVM_CLOSE_INTERNAL_ERROR);
            return;
        }

        ngx_http_jvm_ws_send(ws);

        if (ws->done) {
            return;
        }
    }

    ngx_http_jvm_ws_set_timer(ws);
}


/* Java hears once that the socket is closed: on-close, then forgotten. */

static void
ngx_http_jvm_ws_report(ngx_http_jvm_ws_t *ws, ngx_uint_t code,
    u_char *reason, size_t len)
{
    if (ws->reported) {
        return;
    }

    ws->reported = 1;

    ngx_http_jvm_vm_ws_closed(ws->connection->log, ws->id, code, reason,
                              len);
}


/*
 * The connection is over.  Java hears of it now; the connection itself is
 * closed from a posted event, so that no caller up the stack is left with
 * freed memory: they all stop when they see ws->done.
 */

static void
ngx_http_jvm_ws_finish(ngx_http_jvm_ws_t *ws, ngx_uint_t code)
{
    ngx_connection_t    *c;
    ngx_http_jvm_ws_t  **pws;

    if (ws->done) {
        return;
    }

    ws->done = 1;
    c = ws->connection;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, c->log, 0,
                   "jvm: websocket %i finished, %ui", ws->id, code);

    ngx_http_jvm_ws_report(ws, code, NULL, 0);

    if (ngx_http_jvm_ws_hash) {
        for (pws = &ngx_http_jvm_ws_hash[ws->id & ngx_http_jvm_ws_hash_mask];
             *pws;
             pws = &(*pws)->next)
        {
            if (*pws == ws) {
                *pws = ws->next;
                break;
            }
        }
    }

    if (c->read->timer_set) {
        ngx_del_timer(c->read);
    }

    if (c->write->timer_set) {
        ngx_del_timer(c->write);
    }

    c->read->handler = ngx_http_jvm_ws_close_handler;
    c->write->handler = ngx_http_jvm_ws_empty_handler;

    ngx_post_event(c->read, &ngx_posted_events);

    if (ngx_exiting) {
        /*
         * A quitting worker exits as soon as no timer is left, which may
         * be before posted events run (a byte tunnel, closed at once by
         * ngx_close_idle_connections(), has no close frame to wait for):
         * a timer keeps it until the connection is closed.
         */
        ngx_add_timer(c->read, 1);
    }
}


static void
ngx_http_jvm_ws_close_handler(ngx_event_t *ev)
{
    ngx_connection_t   *c;
    ngx_http_jvm_ws_t  *ws;

    c = ev->data;
    ws = c->data;

    if (ws->msg) {
        ngx_free(ws->msg);
    }

    if (ws->ctl) {
        ngx_free(ws->ctl);
    }

    if (ws->in) {
        ngx_free(ws->in);
    }

    if (ws->out) {
        ngx_free(ws->out);
    }

    ngx_http_close_connection(c);
}
