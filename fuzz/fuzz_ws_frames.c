
/*
 * nginx-jvm fuzzing: the WebSocket frames a client sends
 * (ngx_http_jvm_websocket.c: frame headers cut anywhere across reads,
 * masking, fragments and control frames between them, close frames and
 * their codes, UTF-8 of text; ngx_http_jvm_deflate.c: compressed
 * messages).  The input is the client's bytes after a valid handshake;
 * its first byte says how many bytes at its end are choices, which pick
 * the location's settings, the offer of permessage-deflate, where reads
 * end, and what Java and the socket do (ws_world.c).
 */

#include "ws_world.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char               b, offer[128], *p;
    size_t               with_handshake;
    ngx_pool_t          *pool;
    ngx_fuzz_input_t     in;
    ngx_http_request_t  *r;

    if (size == 0) {
        return 0;
    }

    in.ctl_len = ngx_min(data[0], size - 1);
    in.data = data + 1;
    in.len = size - 1 - in.ctl_len;
    in.ctl = in.data + in.len;

    pool = ngx_fuzz_pool();
    r = ngx_fuzz_ws_request(&in, pool);

#define hdr(n, v)                                                             \
    ngx_fuzz_header(r, (u_char *) n, sizeof(n) - 1, (u_char *) v,             \
                    sizeof(v) - 1)

    hdr("Host", "localhost");
    hdr("Upgrade", "websocket");
    hdr("Connection", "Upgrade");
    hdr("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==");
    hdr("Sec-WebSocket-Version", "13");

    b = ngx_fuzz_choice(&in);

    if (b & 1) {
        p = ngx_cpymem(offer, "permessage-deflate; client_max_window_bits",
                       sizeof("permessage-deflate; client_max_window_bits")
                       - 1);

        if (b & 2) {
            /* a window of 9 to 15 asked of the server */
            p = ngx_sprintf(p, "; server_max_window_bits=%ui",
                            (ngx_uint_t) 9 + (b >> 2) % 7);
        }

        ngx_fuzz_header(r, (u_char *) "Sec-WebSocket-Extensions", 24, offer,
                        p - offer);
    }

#undef hdr

    b = ngx_fuzz_choice(&in);
    with_handshake = (b & 0x80) ? (size_t) (b & 0x7f) : 0;

    (void) ngx_fuzz_ws_session(r, with_handshake);

    ngx_destroy_pool(pool);

    return 0;
}
