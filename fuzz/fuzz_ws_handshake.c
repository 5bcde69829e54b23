
/*
 * nginx-jvm fuzzing: the opening handshake's fields
 * (ngx_http_jvm_ws_handshake.c: Upgrade and Connection token lists, the
 * version, the key; ngx_http_jvm_deflate.c: Sec-WebSocket-Extensions
 * offers, their parameters, quoted strings).  The input is header lines,
 * "name: value" each ending with a newline, up to an empty line; after it
 * the client's first frames.  What is checked: the request's flag
 * (:websocket?) and the 101 agree; the 101's accept key and extension
 * answer are right; the window the connection compresses with is the one
 * answered (found again after the request is freed); then the
 * connection's life, as in fuzz_ws_frames.c.
 */

#include "ws_world.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char               b, *p, *last, *eol, *colon, *v;
    ngx_int_t            rc;
    ngx_uint_t           flagged;
    ngx_pool_t          *pool;
    ngx_fuzz_input_t     in;
    ngx_http_request_t  *r;

    in.ctl_len = ngx_min(size / 8, 16);
    in.data = data;
    in.len = size - in.ctl_len;
    in.ctl = data + in.len;

    pool = ngx_fuzz_pool();
    r = ngx_fuzz_ws_request(&in, pool);

    p = (u_char *) in.data;
    last = p + in.len;

    while (p < last) {
        eol = memchr(p, '\n', last - p);
        if (eol == NULL) {
            eol = last;
        }

        if (eol == p) {
            p++;
            break;
        }

        colon = memchr(p, ':', eol - p);

        if (colon) {
            v = colon + 1;

            while (v < eol && *v == ' ') {
                v++;
            }

            ngx_fuzz_header(r, p, colon - p, v, eol - v);
        }

        p = (eol < last) ? eol + 1 : last;
    }

    in.len = last - p;
    in.data = p;

    /* a POST, HTTP/1.0, a subrequest: no handshake */
    b = ngx_fuzz_choice(&in);

    if ((b & 0x0f) == 1) {
        r->method = NGX_HTTP_POST;

    } else if ((b & 0x0f) == 2) {
        r->http_version = NGX_HTTP_VERSION_10;

    } else if ((b & 0x0f) == 3) {
        r->main = ngx_pcalloc(pool, sizeof(ngx_http_request_t));
    }

    flagged = ngx_http_jvm_ws_request(r);

    rc = ngx_fuzz_ws_session(r, 0);

    if (rc != NGX_ABORT && flagged != (rc == NGX_DONE)) {
        fprintf(stderr, "the request's websocket flag (%d) and the "
                "upgrade (%d) disagree\n", (int) flagged, (int) rc);
        abort();
    }

    ngx_destroy_pool(pool);

    return 0;
}
