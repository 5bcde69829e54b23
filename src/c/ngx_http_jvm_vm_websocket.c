
/*
 * nginx-jvm: the WebSocket's calls down into the JVM, from
 * ngx_http_jvm_websocket.c on the event loop: a socket opened, abandoned
 * or closed, a message in, the next socket and frame Java has to send.
 * One function per entry point of nginx.jvm.Worker, as in
 * ngx_http_jvm_vm.c, which binds their method ids with the rest and holds
 * the buffers they use.
 */


#include "ngx_http_jvm_jni.h"


/* Copies bytes into the request buffer, for Java to read there. */

static ngx_int_t
ngx_http_jvm_vm_copy_in(ngx_log_t *log, u_char *data, size_t len)
{
    if (len > ngx_http_jvm_vm.req_cap
        && ngx_http_jvm_vm_request_buffer(log, len) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (len) {
        ngx_memcpy(ngx_http_jvm_vm.req_addr, data, len);
    }

    return NGX_OK;
}


/*
 * Worker.wsOpen(): the 101 has left, the socket is open.  NGX_DECLINED:
 * the listener answers pings itself.
 */

ngx_int_t
ngx_http_jvm_vm_ws_open(ngx_log_t *log, ngx_int_t id)
{
    jint  n;

    n = (*ngx_http_jvm_env)->CallStaticIntMethod(ngx_http_jvm_env,
                                                 ngx_http_jvm_worker,
                                                 ngx_http_jvm_ws_open_mid,
                                                 (jint) id);

    if ((*ngx_http_jvm_env)->ExceptionCheck(ngx_http_jvm_env)) {
        return ngx_http_jvm_vm_failed(log, "Worker.wsOpen()");
    }

    return n == NGX_HTTP_JVM_WS_JAVA_PINGS ? NGX_DECLINED : NGX_OK;
}


/* Worker.wsAbandon(): the upgrade did not happen; Java forgets the socket. */

void
ngx_http_jvm_vm_ws_abandon(ngx_int_t id)
{
    JNIEnv  *env;

    env = ngx_http_jvm_env;

    (*env)->CallStaticVoidMethod(env, ngx_http_jvm_worker,
                                 ngx_http_jvm_ws_abandon_mid, (jint) id);

    if ((*env)->ExceptionCheck(env)) {
        (*env)->ExceptionClear(env);
    }
}


/*
 * Worker.wsMessage(): a whole message (or a ping or pong the listener
 * takes).  NGX_AGAIN: the socket's inbound queue is full, reading stops
 * until Worker.wsPoll() names the socket.
 */

ngx_int_t
ngx_http_jvm_vm_ws_message(ngx_log_t *log, ngx_int_t id, ngx_uint_t opcode,
    u_char *data, size_t len)
{
    jint  n;

    if (ngx_http_jvm_vm_copy_in(log, data, len) != NGX_OK) {
        return NGX_ERROR;
    }

    n = (*ngx_http_jvm_env)->CallStaticIntMethod(ngx_http_jvm_env,
                                                 ngx_http_jvm_worker,
                                                 ngx_http_jvm_ws_message_mid,
                                                 (jint) id, (jint) opcode,
                                                 (jint) len);

    if ((*ngx_http_jvm_env)->ExceptionCheck(ngx_http_jvm_env)) {
        return ngx_http_jvm_vm_failed(log, "Worker.wsMessage()");
    }

    return n == NGX_HTTP_JVM_WS_PAUSE ? NGX_AGAIN : NGX_OK;
}


/* Worker.wsClosed(): the connection is over, with this code and reason. */

void
ngx_http_jvm_vm_ws_closed(ngx_log_t *log, ngx_int_t id, ngx_uint_t code,
    u_char *reason, size_t len)
{
    JNIEnv  *env;

    env = ngx_http_jvm_env;

    if (ngx_http_jvm_vm_copy_in(log, reason, len) != NGX_OK) {
        len = 0;
    }

    (*env)->CallStaticVoidMethod(env, ngx_http_jvm_worker,
                                 ngx_http_jvm_ws_closed_mid, (jint) id,
                                 (jint) code, (jint) len);

    if ((*env)->ExceptionCheck(env)) {
        (void) ngx_http_jvm_vm_failed(log, "Worker.wsClosed()");
    }
}


/* Worker.wsPoll(): the next socket with something for the loop, or -1. */

ngx_int_t
ngx_http_jvm_vm_ws_poll(ngx_log_t *log)
{
    jint  id;

    id = (*ngx_http_jvm_env)->CallStaticIntMethod(ngx_http_jvm_env,
                                                  ngx_http_jvm_worker,
                                                  ngx_http_jvm_ws_poll_mid);

    if ((*ngx_http_jvm_env)->ExceptionCheck(ngx_http_jvm_env)) {
        (void) ngx_http_jvm_vm_failed(log, "Worker.wsPoll()");
        return -1;
    }

    return id;
}


/*
 * Worker.wsTake(): the socket's next frame to send, *out bytes at the start
 * of the response buffer: an int opcode, then the payload.  NGX_DONE: none.
 */

ngx_int_t
ngx_http_jvm_vm_ws_take(ngx_log_t *log, ngx_int_t id, size_t *out)
{
    jint  n;

    for ( ;; ) {
        n = (*ngx_http_jvm_env)->CallStaticIntMethod(ngx_http_jvm_env,
                                                     ngx_http_jvm_worker,
                                                     ngx_http_jvm_ws_take_mid,
                                                     (jint) id);

        if ((*ngx_http_jvm_env)->ExceptionCheck(ngx_http_jvm_env)) {
            return ngx_http_jvm_vm_failed(log, "Worker.wsTake()");
        }

        if (n != NGX_HTTP_JVM_WS_MOVED) {
            break;
        }

        /* the frame did not fit: Java made a larger buffer, and keeps it */

        if (ngx_http_jvm_vm_response_buffer(log) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    if (n == NGX_HTTP_JVM_WS_NONE) {
        return NGX_DONE;
    }

    if (n < (jint) sizeof(uint32_t) || (size_t) n > ngx_http_jvm_vm.resp_cap) {
        ngx_log_error(NGX_LOG_ALERT, log, 0,
                      "jvm: Worker.wsTake() answered an invalid length %d", n);
        return NGX_ERROR;
    }

    *out = (size_t) n;

    return NGX_OK;
}
