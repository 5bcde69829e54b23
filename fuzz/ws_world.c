
/*
 * nginx-jvm fuzzing: a WebSocket connection's life through
 * ngx_http_jvm_ws_handshake.c, ngx_http_jvm_websocket.c and
 * ngx_http_jvm_deflate.c, as nginx and the
 * JVM would drive it: the handshake answered (ngx_http_jvm_ws_upgrade),
 * the 101 sent and the request freed (its write event), then read events
 * whose reads end where the fuzzer says (a frame header may be cut
 * anywhere), writes that block or go part way, timers that fire, Java's
 * queue that fills and drains, Java's own frames to send, the client's
 * leaving.  The fuzzer's input is the client's bytes from its start and
 * these choices from its end.
 *
 * What is checked, beyond the sanitizers: Java gets only what RFC 6455
 * lets through (text is UTF-8, within jvm_websocket_max_message, control
 * payloads of at most 125 bytes), hears once that the socket closed, and
 * nothing after; what the server sends parses as unmasked, whole frames,
 * RSV1 only on a compressed message when it was negotiated, nothing after
 * a close frame; each message Java sent arrives as Java sent it, once
 * inflated with the window the answer named; every byte allocated is
 * freed when the connection closes (LeakSanitizer).
 */

#include <zlib.h>
#include <strings.h>
#include <openssl/evp.h>

#include "ngx_fuzz.h"
#include "ws_world.h"


#define NGX_FUZZ_WS_ID        7
#define NGX_FUZZ_WS_OUT_MAX   (4 * 1024 * 1024)
#define NGX_FUZZ_WS_STEPS     2000
#define NGX_FUZZ_JAVA_FRAMES  64


typedef struct {
    ngx_uint_t                opcode;
    size_t                    len;
    u_char                    fill;
} ngx_fuzz_java_frame_t;


static struct {
    ngx_fuzz_input_t         *in;
    ngx_connection_t         *c;
    ngx_http_jvm_loc_conf_t  *jlcf;
    ngx_uint_t                bits;          /* the window answered, or 0 */
    ngx_uint_t                java_pings;
    ngx_uint_t                opened;
    ngx_uint_t                reported;
    ngx_uint_t                paused;
    ngx_uint_t                again;         /* the next recv() blocks */
    ngx_uint_t                blocked;       /* a send() blocked */

    u_char                   *out;           /* what the server sent */
    size_t                    out_len;

    /* Java's frames: those it has, those it gave, in order */
    ngx_uint_t                pending;
    ngx_fuzz_java_frame_t     given[NGX_FUZZ_JAVA_FRAMES];
    ngx_uint_t                ngiven;
} w;

static u_char  ngx_fuzz_resp[128 * 1024];
static u_char *ngx_fuzz_ws_out;
static u_char  ngx_fuzz_req[64 * 1024];


static void
ngx_fuzz_fail(const char *what)
{
    fprintf(stderr, "ws_world: %s\n", what);
    abort();
}


/* RFC 3629, written apart from the module's: code points decoded whole */

ngx_uint_t
ngx_fuzz_utf8(const u_char *p, size_t n)
{
    size_t    i, j, k;
    uint32_t  cp, min;

    for (i = 0; i < n; /* void */) {

        if (p[i] < 0x80) {
            i++;
            continue;
        }

        if ((p[i] & 0xe0) == 0xc0) {
            k = 1; cp = p[i] & 0x1f; min = 0x80;
        } else if ((p[i] & 0xf0) == 0xe0) {
            k = 2; cp = p[i] & 0x0f; min = 0x800;
        } else if ((p[i] & 0xf8) == 0xf0) {
            k = 3; cp = p[i] & 0x07; min = 0x10000;
        } else {
            return 0;
        }

        if (n - i <= k) {
            return 0;
        }

        for (j = 1; j <= k; j++) {
            if ((p[i + j] & 0xc0) != 0x80) {
                return 0;
            }

            cp = (cp << 6) | (p[i + j] & 0x3f);
        }

        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
            return 0;
        }

        i += k + 1;
    }

    return 1;
}


/* --- the JVM's side ----------------------------------------------------- */

ngx_int_t
ngx_http_jvm_vm_ws_open(ngx_log_t *log, ngx_int_t id)
{
    u_char  b;

    if (id != NGX_FUZZ_WS_ID || w.opened) {
        ngx_fuzz_fail("wsOpen: another socket, or twice");
    }

    w.opened = 1;
    b = ngx_fuzz_choice(w.in);

    if (b == 0xff) {
        return NGX_ERROR;
    }

    w.java_pings = b & 1;

    return w.java_pings ? NGX_DECLINED : NGX_OK;
}


void
ngx_http_jvm_vm_ws_abandon(ngx_int_t id)
{
    if (w.opened) {
        ngx_fuzz_fail("wsAbandon after wsOpen");
    }
}


ngx_int_t
ngx_http_jvm_vm_ws_message(ngx_log_t *log, ngx_int_t id, ngx_uint_t opcode,
    u_char *data, size_t len)
{
    u_char  b;

    if (!w.opened || w.reported || id != NGX_FUZZ_WS_ID) {
        ngx_fuzz_fail("wsMessage to a socket not open");
    }

    if (w.paused) {
        ngx_fuzz_fail("wsMessage while reading is paused");
    }

    if (getenv("NGX_FUZZ_LOG")) {
        fprintf(stderr, "ws_world: wsMessage opcode %d, %zu bytes\n",
                (int) opcode, len);
    }

    switch (opcode) {

    case 0x1:
        if (!ngx_fuzz_utf8(data, len)) {
            ngx_fuzz_fail("wsMessage: a text message not UTF-8");
        }

        /* fall through */

    case 0x2:
        if (len > w.jlcf->ws_max_message) {
            ngx_fuzz_fail("wsMessage: beyond jvm_websocket_max_message");
        }

        break;

    case 0x9:
        if (!w.java_pings) {
            ngx_fuzz_fail("wsMessage: a ping the module answers itself");
        }

        /* fall through */

    case 0xa:
        if (len > 125) {
            ngx_fuzz_fail("wsMessage: a control payload over 125 bytes");
        }

        break;

    default:
        ngx_fuzz_fail("wsMessage: an opcode not of a message");
    }

    /* as vm.c does: copied where Java reads it */
    if (len) {
        if (len <= sizeof(ngx_fuzz_req)) {
            ngx_memcpy(ngx_fuzz_req, data, len);

        } else {
            ngx_memcpy(ngx_fuzz_req, data + len - sizeof(ngx_fuzz_req),
                       sizeof(ngx_fuzz_req));
        }
    }

    b = ngx_fuzz_choice(w.in);

    if (b == 0xfe) {
        return NGX_ERROR;
    }

    if ((b & 7) == 1) {
        /* the socket's queue is full */
        w.paused = 1;
        return NGX_AGAIN;
    }

    return NGX_OK;
}


void
ngx_http_jvm_vm_ws_closed(ngx_log_t *log, ngx_int_t id, ngx_uint_t code,
    u_char *reason, size_t len)
{
    /*
     * Not yet open is right too: the connection failed between the 101 and
     * wsOpen (an allocation, TCP_NODELAY), and Java hears it closed.
     */
    if (w.reported || id != NGX_FUZZ_WS_ID) {
        ngx_fuzz_fail("wsClosed: twice, or another socket");
    }

    w.reported = 1;

    if (len > 123 || !ngx_fuzz_utf8(reason, len)) {
        ngx_fuzz_fail("wsClosed: a reason too long or not UTF-8");
    }

    if (code < 1000 || code > 4999) {
        ngx_fuzz_fail("wsClosed: a code out of range");
    }
}


ngx_int_t
ngx_http_jvm_vm_ws_take(ngx_log_t *log, ngx_int_t id, size_t *out)
{
    u_char                  b, *p;
    uint32_t                opcode;
    ngx_fuzz_java_frame_t  *f;

    static ngx_uint_t  opcodes[8] = { 1, 2, 1, 2, 9, 10, 8, 8 };
    static size_t      lens[8] = { 0, 1, 2, 125, 126, 300, 65535, 70000 };

    if (!w.opened || w.reported || id != NGX_FUZZ_WS_ID) {
        ngx_fuzz_fail("wsTake for a socket not open");
    }

    if (w.pending == 0 || w.ngiven == NGX_FUZZ_JAVA_FRAMES) {
        return NGX_DONE;
    }

    w.pending--;

    b = ngx_fuzz_choice(w.in);

    if (b == 0xfd) {
        return NGX_ERROR;
    }

    f = &w.given[w.ngiven++];
    f->opcode = opcodes[b & 7];
    f->len = lens[(b >> 3) & 7];
    f->fill = ngx_fuzz_choice(w.in);

    if (f->opcode >= 8 && f->len > 125) {
        f->len = 125;
    }

    if (f->opcode == 8 && f->len < 2) {
        f->len = 0;
    }

    opcode = (uint32_t) f->opcode;
    p = ngx_cpymem(ngx_fuzz_resp, &opcode, sizeof(uint32_t));

    /* text that compresses a little and is UTF-8: a letter, a pattern */
    for (size_t i = 0; i < f->len; i++) {
        p[i] = (u_char) ('a' + (f->fill + i % (1 + f->fill % 13)) % 26);
    }

    if (f->opcode == 8 && f->len) {
        p[0] = 0x03;        /* 1000, a normal closure */
        p[1] = 0xe8;
    }

    *out = sizeof(uint32_t) + f->len;

    if (getenv("NGX_FUZZ_LOG")) {
        fprintf(stderr, "ws_world: wsTake opcode %d, %zu bytes\n",
                (int) f->opcode, f->len);
    }

    return NGX_OK;
}


/* --- the socket --------------------------------------------------------- */

static ssize_t
ngx_fuzz_recv(ngx_connection_t *c, u_char *buf, size_t size)
{
    u_char   b;
    size_t   n;

    if (w.again) {
        w.again = 0;
        c->read->ready = 0;
        return NGX_AGAIN;
    }

    if (w.in->len == 0) {
        /* the client has gone */
        return 0;
    }

    b = ngx_fuzz_choice(w.in);

    if (b == 0x3f) {
        /* the client reset the connection */
        return NGX_ERROR;
    }

    /* mostly short reads, so that headers are cut in every place */
    n = (b & 0x80) ? size : (size_t) (b & 0x3f) + 1;
    n = ngx_min(n, ngx_min(size, w.in->len));

    ngx_memcpy(buf, w.in->data, n);
    w.in->data += n;
    w.in->len -= n;

    w.again = (b & 0x40) ? 1 : 0;

    return n;
}


static ssize_t
ngx_fuzz_send(ngx_connection_t *c, u_char *buf, size_t size)
{
    u_char  b;

    b = ngx_fuzz_choice(w.in);

    if (b == 0xef) {
        /* the client reset the connection */
        return NGX_ERROR;
    }

    if ((b & 3) == 3) {
        w.blocked = 1;
        c->write->ready = 0;
        return NGX_AGAIN;
    }

    if ((b & 3) == 2) {
        size = ngx_min(size, (size_t) (b >> 2) + 1);
    }

    if (w.out_len + size > NGX_FUZZ_WS_OUT_MAX) {
        ngx_fuzz_fail("send: more than a connection's queue may hold");
    }

    ngx_memcpy(w.out + w.out_len, buf, size);
    w.out_len += size;

    return size;
}


/* --- what the server sent ----------------------------------------------- */

static void
ngx_fuzz_check_data(ngx_uint_t opcode, ngx_uint_t rsv1, u_char *p,
    size_t len, ngx_uint_t *next)
{
    int                     rc;
    u_char                 *plain, tail[4] = { 0, 0, 0xff, 0xff };
    size_t                  i, n;
    z_stream                zs;
    ngx_fuzz_java_frame_t  *f;

    /* the next of Java's text and binary frames */
    while (*next < w.ngiven && w.given[*next].opcode > 2) {
        (*next)++;
    }

    if (*next == w.ngiven) {
        ngx_fuzz_fail("output: a message Java did not send");
    }

    f = &w.given[(*next)++];

    if (f->opcode != opcode) {
        ngx_fuzz_fail("output: a message of another opcode");
    }

    if (!rsv1) {
        plain = p;
        n = len;

    } else {
        /* inflated with the window the answer named, no larger */
        ngx_memzero(&zs, sizeof(z_stream));

        if (inflateInit2(&zs, - (int) w.bits) != Z_OK) {
            abort();
        }

        plain = malloc(f->len + 1);
        zs.next_in = p;
        zs.avail_in = (uInt) len;
        zs.next_out = plain;
        zs.avail_out = (uInt) f->len + 1;

        rc = inflate(&zs, Z_SYNC_FLUSH);

        if (rc == Z_OK || rc == Z_BUF_ERROR) {
            zs.next_in = tail;
            zs.avail_in = 4;
            rc = inflate(&zs, Z_SYNC_FLUSH);
        }

        n = zs.total_out;
        inflateEnd(&zs);

        if (rc != Z_OK && rc != Z_BUF_ERROR) {
            ngx_fuzz_fail("output: a compressed message that does not "
                          "inflate with the window answered");
        }
    }

    if (n != f->len) {
        ngx_fuzz_fail("output: a message of another length");
    }

    for (i = 0; i < n; i++) {
        if (plain[i] != (u_char) ('a' + (f->fill + i % (1 + f->fill % 13))
                                        % 26))
        {
            ngx_fuzz_fail("output: a message's bytes changed");
        }
    }

    if (plain != p) {
        free(plain);
    }
}


static void
ngx_fuzz_check_output(void)
{
    u_char      *p, *last;
    size_t       head;
    uint64_t     len;
    ngx_uint_t   opcode, rsv1, closed, next, i, code;

    p = w.out;
    last = w.out + w.out_len;
    closed = 0;
    next = 0;

    while (p < last) {

        if (closed) {
            ngx_fuzz_fail("output: bytes after a close frame");
        }

        if (last - p < 2) {
            return;         /* cut short by the connection's end */
        }

        head = 2;
        len = p[1] & 0x7f;

        if (len == 126) {
            head = 4;
        } else if (len == 127) {
            head = 10;
        }

        if ((size_t) (last - p) < head) {
            return;
        }

        if (len == 126) {
            len = ((uint64_t) p[2] << 8) | p[3];

            if (len < 126) {
                ngx_fuzz_fail("output: a length not in its shortest form");
            }

        } else if (len == 127) {
            len = 0;

            for (i = 0; i < 8; i++) {
                len = (len << 8) | p[2 + i];
            }

            if (len < 65536) {
                ngx_fuzz_fail("output: a length not in its shortest form");
            }
        }

        opcode = p[0] & 0x0f;
        rsv1 = (p[0] & 0x40) ? 1 : 0;

        if (!(p[0] & 0x80) || (p[0] & 0x30) || (p[1] & 0x80)) {
            ngx_fuzz_fail("output: a fragment, RSV2/RSV3 or a mask");
        }

        if (rsv1 && (w.bits == 0 || (opcode != 1 && opcode != 2))) {
            ngx_fuzz_fail("output: RSV1 where nothing was negotiated");
        }

        if (w.bits && (opcode == 1 || opcode == 2) && !rsv1) {
            ngx_fuzz_fail("output: a message not compressed");
        }

        if (opcode != 1 && opcode != 2 && opcode != 8 && opcode != 9
            && opcode != 10)
        {
            ngx_fuzz_fail("output: an opcode the server does not send");
        }

        if (opcode >= 8 && len > 125) {
            ngx_fuzz_fail("output: a control frame over 125 bytes");
        }

        if ((uint64_t) (last - p) - head < len) {
            return;
        }

        p += head;

        if (opcode == 8) {
            closed = 1;

            if (len == 1) {
                ngx_fuzz_fail("output: a close frame of one byte");
            }

            if (len >= 2) {
                code = (p[0] << 8) | p[1];

                if (code < 1000 || code == 1004 || code == 1005
                    || code == 1006 || code == 1015 || code > 4999)
                {
                    ngx_fuzz_fail("output: a close code not to be sent");
                }

                if (!ngx_fuzz_utf8(p + 2, len - 2)) {
                    ngx_fuzz_fail("output: a close reason not UTF-8");
                }
            }

        } else if (opcode <= 2) {
            ngx_fuzz_check_data(opcode, rsv1, p, len, &next);
        }

        p += len;
    }
}


/* --- the connection's life ---------------------------------------------- */

ngx_http_request_t *
ngx_fuzz_ws_request(ngx_fuzz_input_t *in, ngx_pool_t *pool)
{
    u_char                     b;
    ngx_http_request_t        *r;
    ngx_http_core_loc_conf_t  *clcf;
    ngx_http_jvm_loc_conf_t   *jlcf;

    static size_t  max[4] = { 125, 1024, 65536, 1024 * 1024 };

    ngx_memzero(&w, sizeof(w));
    w.in = in;

    b = ngx_fuzz_choice(in);

    jlcf = ngx_pcalloc(pool, sizeof(ngx_http_jvm_loc_conf_t));
    jlcf->ws_max_message = max[b & 3];
    jlcf->ws_idle_timeout = (b & 4) ? 60000 : 0;
    jlcf->ws_ping_interval = (b & 8) ? 30000 : 0;
    jlcf->ws_deflate = (b & 0x10) ? 0 : 1;

    clcf = ngx_pcalloc(pool, sizeof(ngx_http_core_loc_conf_t));
    clcf->send_timeout = 60000;

    ngx_exiting = (b == 0xe0);

    w.jlcf = jlcf;
    r = ngx_fuzz_request(pool, jlcf, clcf);

    w.c = r->connection;
    w.c->recv = ngx_fuzz_recv;
    w.c->send = ngx_fuzz_send;

    ngx_http_jvm_vm.resp_addr = ngx_fuzz_resp;
    ngx_http_jvm_vm.resp_cap = sizeof(ngx_fuzz_resp);
    ngx_http_jvm_vm.req_addr = ngx_fuzz_req;
    ngx_http_jvm_vm.req_cap = sizeof(ngx_fuzz_req);

    return r;
}


/* A timer of the connection fires, as ngx_event_expire_timers() does it. */

static void
ngx_fuzz_expire(ngx_event_t *ev)
{
    ev->timer_set = 0;
    ev->timedout = 1;
    ev->handler(ev);
}


static void
ngx_fuzz_ws_events(ngx_connection_t *c)
{
    u_char      b;
    ngx_uint_t  step;

    for (step = 0;
         ngx_fuzz_closed == NULL && ngx_fuzz_finalized == NGX_DECLINED;
         step++)
    {

        if (ngx_fuzz_run_posted() != NGX_OK) {
            ngx_fuzz_fail("events posted without end");
        }

        if (ngx_fuzz_closed || ngx_fuzz_finalized != NGX_DECLINED) {
            break;
        }

        if (step >= NGX_FUZZ_WS_STEPS) {
            /* enough: the client goes, whatever it had left */
            w.in->len = 0;
            w.in->ctl_len = 0;
        }

        if (step >= NGX_FUZZ_WS_STEPS + 100) {
            ngx_fuzz_fail("the connection does not close once the client "
                          "has gone");
        }

        b = ngx_fuzz_choice(w.in);

        if (c->buffered) {
            /* the 101 leaves, or its send_timeout comes first */
            if ((b & 0x20) && c->write->timer_set) {
                ngx_fuzz_expire(c->write);

            } else {
                c->write->handler(c->write);
            }

            continue;
        }

        if (w.paused && (b & 1 || w.in->len == 0)) {
            /* Java's queue drained: Worker.wsPoll() names the socket */
            w.paused = 0;
            ngx_http_jvm_ws_ready(NGX_FUZZ_WS_ID, 1);
            continue;
        }

        if (w.blocked && (b & 2 || w.in->len == 0)) {
            w.blocked = 0;
            c->write->ready = 1;
            c->write->handler(c->write);
            continue;
        }

        switch ((b >> 2) & 7) {

        case 1:
            if (c->read->timer_set) {
                ngx_current_msec += 60000;
                ngx_fuzz_expire(c->read);
                continue;
            }

            break;

        case 2:
            if (c->write->timer_set) {
                ngx_fuzz_expire(c->write);
                continue;
            }

            break;

        case 3:
            /* Java has a frame to send */
            w.pending++;
            ngx_http_jvm_ws_ready(NGX_FUZZ_WS_ID, 0);
            continue;

        case 4:
            if (b == 0xf0) {
                /* the worker quits: it closes idle connections */
                c->close = 1;
                c->read->handler(c->read);
                continue;
            }

            break;
        }

        c->read->ready = 1;
        c->read->handler(c->read);
    }
}


/* The 101's fields: the accept key RFC 6455 4.2.2 computes, the window. */

static void
ngx_fuzz_ws_check_101(ngx_http_request_t *r)
{
    u_char            *v, digest[20], accept[32], buf[64];
    size_t             n;
    ngx_str_t         *key;
    ngx_uint_t         i, accepted;
    ngx_list_part_t   *part;
    ngx_table_elt_t   *h;

    static char  pmd[] = "permessage-deflate; server_no_context_takeover; "
                         "client_no_context_takeover";

    if (r->headers_out.status != NGX_HTTP_SWITCHING_PROTOCOLS) {
        ngx_fuzz_fail("101: another status");
    }

    key = NULL;
    part = &r->headers_in.headers.part;
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

        if (h[i].key.len == 17
            && strncasecmp((char *) h[i].key.data, "Sec-WebSocket-Key", 17)
               == 0)
        {
            key = &h[i].value;
            break;
        }
    }

    if (key == NULL || key->len != 24) {
        ngx_fuzz_fail("101: without a valid key");
    }

    ngx_memcpy(buf, key->data, 24);
    ngx_memcpy(buf + 24, "258EAFA5-E914-47DA-95CA-C5AB0DC85B11", 36);
    EVP_Digest(buf, 60, digest, NULL, EVP_sha1(), NULL);
    n = EVP_EncodeBlock(accept, digest, 20);

    accepted = 0;
    w.bits = 0;
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

        if (h[i].key.len == 20
            && ngx_strncmp(h[i].key.data, "Sec-WebSocket-Accept", 20) == 0)
        {
            if (h[i].value.len != n
                || ngx_memcmp(h[i].value.data, accept, n) != 0)
            {
                ngx_fuzz_fail("101: a wrong Sec-WebSocket-Accept");
            }

            accepted = 1;
        }

        if (h[i].key.len == 24
            && ngx_strncmp(h[i].key.data, "Sec-WebSocket-Extensions", 24)
               == 0)
        {
            v = h[i].value.data;
            n = h[i].value.len;

            if (w.bits || !w.jlcf->ws_deflate
                || n < sizeof(pmd) - 1
                || ngx_memcmp(v, pmd, sizeof(pmd) - 1) != 0)
            {
                ngx_fuzz_fail("101: an answer not of permessage-deflate");
            }

            w.bits = 15;
            v += sizeof(pmd) - 1;
            n -= sizeof(pmd) - 1;

            if (n == sizeof("; server_max_window_bits=9") - 1
                && ngx_memcmp(v, "; server_max_window_bits=9", n) == 0)
            {
                w.bits = 9;

            } else if (n == sizeof("; server_max_window_bits=10") - 1
                       && ngx_memcmp(v, "; server_max_window_bits=1",
                                     n - 1) == 0
                       && v[n - 1] >= '0' && v[n - 1] <= '5')
            {
                w.bits = 10 + v[n - 1] - '0';

            } else if (n != 0) {
                ngx_fuzz_fail("101: a parameter the server cannot keep to");
            }
        }
    }

    if (!accepted) {
        ngx_fuzz_fail("101: without Sec-WebSocket-Accept");
    }
}


/*
 * The handshake answered, then the connection's life; NGX_DONE, the
 * status that refused the handshake, or NGX_ABORT: the request ended
 * before the connection was the WebSocket's (an allocation failed, the
 * 101 did not leave).
 */

ngx_int_t
ngx_fuzz_ws_session(ngx_http_request_t *r, size_t with_handshake)
{
    u_char             b;
    ngx_int_t          rc;
    ngx_connection_t  *c;

    c = r->connection;

    /* frames the client sent right behind its handshake */
    with_handshake = ngx_min(with_handshake, w.in->len);
    r->header_in->pos = ngx_pnalloc(r->pool, with_handshake);
    ngx_memcpy(r->header_in->pos, w.in->data, with_handshake);
    r->header_in->last = r->header_in->pos + with_handshake;
    w.in->data += with_handshake;
    w.in->len -= with_handshake;

    /*
     * A choice: bit 0, the 101 does not leave at once (the handshake's
     * write handler waits for it; bit 1: till its timer fires); bits 2-7,
     * when not 0, the allocation of the module's that fails from here on.
     */
    b = ngx_fuzz_choice(w.in);
    ngx_fuzz_fail_alloc = b >> 2;

    rc = ngx_http_jvm_ws_upgrade(r, NGX_FUZZ_WS_ID, 0);   /* a WebSocket of ours */

    if (rc == NGX_DONE && (b & 1)) {
        c->buffered = 1;

        if (b & 2) {
            /* the write event times out before the 101 has left */
            ngx_delete_posted_event(c->write);
            ngx_fuzz_expire(c->write);
        }
    }

    if (rc == NGX_HTTP_INTERNAL_SERVER_ERROR && b >= 4) {
        /* an allocation failed: the request ends with 500 */
        ngx_fuzz_fail_alloc = 0;
        return NGX_ABORT;
    }

    if (rc != NGX_DONE) {
        if (rc != NGX_HTTP_BAD_REQUEST && rc != 426) {
            ngx_fuzz_fail("upgrade: refused with an unexpected status");
        }

        return rc;
    }

    ngx_fuzz_ws_check_101(r);

    /* one buffer for all runs: poisoning 4 MB each time costs */
    if (ngx_fuzz_ws_out == NULL) {
        ngx_fuzz_ws_out = malloc(NGX_FUZZ_WS_OUT_MAX);
    }

    w.out = ngx_fuzz_ws_out;

    ngx_fuzz_ws_events(c);

    if (ngx_fuzz_finalized != NGX_DECLINED) {
        /* the 101 did not leave: the request ended, its cleanup abandons */
        if (w.opened) {
            ngx_fuzz_fail("a socket opened, then its request finalized");
        }

        ngx_fuzz_fail_alloc = 0;
        w.out = NULL;
        return NGX_ABORT;
    }

    if (w.opened && !w.reported) {
        ngx_fuzz_fail("closed, and Java was not told");
    }

    ngx_fuzz_fail_alloc = 0;
    ngx_fuzz_check_output();

    w.out = NULL;

    return NGX_DONE;
}
