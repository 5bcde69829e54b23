
/*
 * nginx-jvm fuzzing: permessage-deflate (ngx_http_jvm_deflate.c) on its
 * own, where the input is the compressed payload itself, as a client
 * sends it (its 00 00 ff ff left off): ngx_http_jvm_inflate_message()
 * against zlib driven plainly (the same bytes, or "too big", or "invalid",
 * as jvm_websocket_max_message allows), then the way back: the input as a
 * message Java sends, made a frame by ngx_http_jvm_deflate_frame() with
 * each window, must parse and inflate to itself.  The first byte picks
 * the limit and the window.
 */

#include <zlib.h>

#include "ngx_fuzz.h"


/* what zlib finds: bytes past the limit, invalid data, or both */
#define NGX_FUZZ_PLAIN_BIG  1
#define NGX_FUZZ_PLAIN_BAD  2


static void
ngx_fuzz_fail(const char *what)
{
    fprintf(stderr, "fuzz_inflate: %s\n", what);
    abort();
}


/* zlib, once through, into max + 1 bytes: what the module should find */

static ngx_uint_t
ngx_fuzz_plain(const u_char *in, size_t len, size_t max, u_char *out,
    size_t *n)
{
    int       rc;
    z_stream  zs;
    u_char    tail[4] = { 0, 0, 0xff, 0xff };

    ngx_memzero(&zs, sizeof(z_stream));

    if (inflateInit2(&zs, -15) != Z_OK) {
        abort();
    }

    zs.next_in = (u_char *) in;
    zs.avail_in = (uInt) len;
    zs.next_out = out;
    zs.avail_out = (uInt) max + 1;

    rc = inflate(&zs, Z_SYNC_FLUSH);

    if (rc != Z_STREAM_END && (rc == Z_OK || rc == Z_BUF_ERROR)
        && zs.avail_out && zs.avail_in == 0)
    {
        zs.next_in = tail;
        zs.avail_in = 4;
        rc = inflate(&zs, Z_SYNC_FLUSH);
    }

    *n = zs.total_out;
    inflateEnd(&zs);

    /*
     * Both may hold: zlib reads on past a full output buffer, and the
     * module may meet either first; it must then answer one of them.
     */
    return ((*n > max) ? NGX_FUZZ_PLAIN_BIG : 0)
           | ((rc == Z_STREAM_END
               || ((rc == Z_OK || rc == Z_BUF_ERROR) && zs.avail_in == 0))
              ? 0 : NGX_FUZZ_PLAIN_BAD);
}


static void
ngx_fuzz_inflate(const u_char *data, size_t len, size_t max)
{
    u_char            *out, *plain, *copy;
    size_t             out_len, n;
    ngx_int_t          rc;
    ngx_uint_t         expect;

    plain = malloc(max + 1);
    expect = ngx_fuzz_plain(data, len, max, plain, &n);

    /* a copy of its own, so that a read past the payload is seen */
    copy = malloc(len ? len : 1);
    ngx_memcpy(copy, data, len);

    rc = ngx_http_jvm_inflate_message(copy, len, max, &out, &out_len,
                                      &ngx_fuzz_log);
    free(copy);

    switch (rc) {

    case NGX_OK:
        if (expect != 0 || out_len != n
            || (n && ngx_memcmp(out, plain, n) != 0))
        {
            ngx_fuzz_fail("inflated, to other bytes than zlib's");
        }

        free(out);
        break;

    case NGX_DECLINED:
        if (!(expect & NGX_FUZZ_PLAIN_BIG)) {
            ngx_fuzz_fail("too big, and zlib finds it is not");
        }

        break;

    case NGX_ERROR:
        if (!(expect & NGX_FUZZ_PLAIN_BAD)) {
            ngx_fuzz_fail("invalid, and zlib finds it is not");
        }

        break;

    default:
        ngx_fuzz_fail("an unexpected answer");
    }

    free(plain);
}


/* the input as a message Java sends: a whole frame, inflating to itself */

static void
ngx_fuzz_deflate(const u_char *data, size_t len, ngx_uint_t bits,
    ngx_uint_t opcode)
{
    u_char     *frame, *p, *out, *copy;
    size_t      start, end, head, n, out_len;
    uint64_t    flen;
    ngx_int_t   rc;

    copy = malloc(len ? len : 1);
    ngx_memcpy(copy, data, len);

    frame = ngx_http_jvm_deflate_frame(bits, opcode, copy, len, &start, &end,
                                       &ngx_fuzz_log);
    free(copy);

    if (frame == NULL) {
        ngx_fuzz_fail("deflate_frame: no frame");
    }

    p = frame + start;
    n = end - start;

    if (n < 2 || p[0] != (0x80 | opcode | ((bits && opcode <= 2) ? 0x40 : 0))
        || (p[1] & 0x80))
    {
        ngx_fuzz_fail("deflate_frame: a wrong first two bytes");
    }

    flen = p[1];
    head = 2;

    if (flen == 126) {
        flen = ((uint64_t) p[2] << 8) | p[3];
        head = 4;

        if (flen < 126) {
            ngx_fuzz_fail("deflate_frame: a length not in its shortest form");
        }

    } else if (flen == 127) {
        flen = 0;

        for (head = 2; head < 10; head++) {
            flen = (flen << 8) | p[head];
        }

        if (flen < 65536) {
            ngx_fuzz_fail("deflate_frame: a length not in its shortest form");
        }
    }

    if (head + flen != n) {
        ngx_fuzz_fail("deflate_frame: the length is not the payload's");
    }

    if (p[0] & 0x40) {
        rc = ngx_http_jvm_inflate_message(p + head, flen, len, &out, &out_len,
                                          &ngx_fuzz_log);

        if (rc != NGX_OK || out_len != len
            || (len && ngx_memcmp(out, data, len) != 0))
        {
            ngx_fuzz_fail("deflate_frame: does not inflate to the message");
        }

        free(out);

    } else if (flen != len || (len && ngx_memcmp(p + head, data, len) != 0)) {
        ngx_fuzz_fail("deflate_frame: the payload changed");
    }

    free(frame);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char      b;
    ngx_uint_t  bits;

    static size_t  max[4] = { 0, 125, 4096, 1024 * 1024 };

    if (size == 0) {
        return 0;
    }

    ngx_fuzz_log.log_level = NGX_LOG_DEBUG_ALL | NGX_LOG_DEBUG;

    b = data[0];
    data++;
    size--;

    ngx_fuzz_inflate(data, size, max[b & 3]);

    /* 0: no compression; 9 to 15, the windows a client may ask for */
    bits = ((b >> 2) & 7) ? 8 + ((b >> 2) & 7) : 0;

    ngx_fuzz_deflate(data, size, bits, (b & 0x20) ? 0x2 : 0x1);
    ngx_fuzz_deflate(data, ngx_min(size, 125), bits, 0x9);

    return 0;
}
