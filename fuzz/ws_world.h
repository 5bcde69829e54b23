
/*
 * nginx-jvm fuzzing: a WebSocket connection's life (ws_world.c), shared by
 * the frame harness and the handshake harness.
 */

#ifndef _WS_WORLD_H_INCLUDED_
#define _WS_WORLD_H_INCLUDED_


#include "ngx_fuzz.h"


/* a request on a new connection, the location's settings chosen */
ngx_http_request_t *ngx_fuzz_ws_request(ngx_fuzz_input_t *in,
    ngx_pool_t *pool);

/* the handshake answered, then the connection until it closes */
ngx_int_t ngx_fuzz_ws_session(ngx_http_request_t *r, size_t with_handshake);

/* whether the bytes are UTF-8 (RFC 3629), by a decoder of the harness's */
ngx_uint_t ngx_fuzz_utf8(const u_char *p, size_t n);


#endif /* _WS_WORLD_H_INCLUDED_ */
