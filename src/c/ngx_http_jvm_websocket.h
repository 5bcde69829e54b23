
/*
 * nginx-jvm: what the WebSocket's two files share: the close codes, named
 * once, and the handover of a connection from the handshake
 * (ngx_http_jvm_ws_handshake.c) to the frames (ngx_http_jvm_websocket.c).
 */


#ifndef _NGX_HTTP_JVM_WEBSOCKET_H_INCLUDED_
#define _NGX_HTTP_JVM_WEBSOCKET_H_INCLUDED_


#include "ngx_http_jvm_module.h"


/* The close codes, RFC 6455 section 7.4.1 (1012 to 1014: IANA's registry) */

#define NGX_HTTP_JVM_CLOSE_NORMAL             1000
#define NGX_HTTP_JVM_CLOSE_GOING_AWAY         1001
#define NGX_HTTP_JVM_CLOSE_PROTOCOL_ERROR     1002
#define NGX_HTTP_JVM_CLOSE_UNSUPPORTED_DATA   1003
#define NGX_HTTP_JVM_CLOSE_NO_STATUS          1005   /* never sent */
#define NGX_HTTP_JVM_CLOSE_ABNORMAL           1006   /* never sent */
#define NGX_HTTP_JVM_CLOSE_INVALID_DATA       1007
#define NGX_HTTP_JVM_CLOSE_POLICY_VIOLATION   1008
#define NGX_HTTP_JVM_CLOSE_TOO_BIG            1009
#define NGX_HTTP_JVM_CLOSE_MANDATORY_EXT      1010
#define NGX_HTTP_JVM_CLOSE_INTERNAL_ERROR     1011
#define NGX_HTTP_JVM_CLOSE_BAD_GATEWAY        1014

/* codes for applications: registered (3000-3999) and private (4000-4999) */
#define NGX_HTTP_JVM_CLOSE_APP_FIRST          3000
#define NGX_HTTP_JVM_CLOSE_APP_LAST           4999


typedef struct ngx_http_jvm_ws_s  ngx_http_jvm_ws_t;


/* ngx_http_jvm_websocket.c: the connection, once its 101 has left */
ngx_http_jvm_ws_t *ngx_http_jvm_ws_create(ngx_http_request_t *r,
    ngx_int_t id, ngx_uint_t raw);
void ngx_http_jvm_ws_open(ngx_http_jvm_ws_t *ws, ngx_uint_t nodelay);
void ngx_http_jvm_ws_empty_handler(ngx_event_t *ev);


#endif /* _NGX_HTTP_JVM_WEBSOCKET_H_INCLUDED_ */
