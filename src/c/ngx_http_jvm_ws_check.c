
/*
 * nginx-jvm: what a WebSocket peer's frames must hold, checked apart from
 * their parsing (ngx_http_jvm_websocket.c): a text message's UTF-8, read
 * by read (RFC 6455, 5.6), and a close frame's code (7.4).
 */


#include "ngx_http_jvm_module.h"
#include "ngx_http_jvm_websocket.h"


/*
 * Incremental UTF-8 validation (RFC 3629): the state is how many
 * continuation bytes are still needed and, before the second byte of a
 * character, its first byte (some narrow the second's range), so that a
 * character may be split across frames and reads.  A message is complete
 * UTF-8 when none is needed at its end.
 */

ngx_int_t
ngx_http_jvm_utf8(uint8_t *need, uint8_t *first, u_char *p, size_t len)
{
    u_char      c, lo, hi;
    ngx_uint_t  n;

    n = *need;

    while (len--) {
        c = *p++;

        if (n == 0) {
            if (c < 0x80) {
                continue;
            }

            if (c >= 0xc2 && c <= 0xdf) {
                n = 1;

            } else if (c >= 0xe0 && c <= 0xef) {
                n = 2;

            } else if (c >= 0xf0 && c <= 0xf4) {
                n = 3;

            } else {
                return NGX_ERROR;
            }

            *first = c;
            continue;
        }

        lo = 0x80;
        hi = 0xbf;

        switch (*first) {
        case 0xe0:
            lo = 0xa0;
            break;
        case 0xed:
            hi = 0x9f;
            break;
        case 0xf0:
            lo = 0x90;
            break;
        case 0xf4:
            hi = 0x8f;
            break;
        }

        *first = 0;

        if (c < lo || c > hi) {
            return NGX_ERROR;
        }

        n--;
    }

    *need = (uint8_t) n;

    return NGX_OK;
}


/* A close code a peer may send: the registered ones, and the applications' */

ngx_int_t
ngx_http_jvm_ws_valid_close_code(ngx_uint_t code)
{
    return (code >= NGX_HTTP_JVM_CLOSE_NORMAL
            && code <= NGX_HTTP_JVM_CLOSE_UNSUPPORTED_DATA)
           || (code >= NGX_HTTP_JVM_CLOSE_INVALID_DATA
               && code <= NGX_HTTP_JVM_CLOSE_BAD_GATEWAY)
           || (code >= NGX_HTTP_JVM_CLOSE_APP_FIRST
               && code <= NGX_HTTP_JVM_CLOSE_APP_LAST);
}
