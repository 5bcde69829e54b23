
/*
 * nginx-jvm: JVM web applications served from inside nginx workers.
 *
 * The module is split by concern:
 *   ngx_http_jvm_module.c    directives, configuration, process hooks
 *   ngx_http_jvm_vm.c        the worker's JVM: loading, start, calls, exit
 *   ngx_http_jvm_request.c   content handler: the request described to Java
 *   ngx_http_jvm_response.c  Java's response back into nginx's output chain
 *   ngx_http_jvm_task.c      handlers off the event loop: submit, eventfd,
 *                            completions, response timeouts
 */


#ifndef _NGX_HTTP_JVM_MODULE_H_INCLUDED_
#define _NGX_HTTP_JVM_MODULE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>
#include <jni.h>


typedef struct {
    ngx_str_t                 jvm_path;     /* libjvm.so, resolved */
    ngx_array_t              *classpath;    /* of ngx_str_t, expanded */
    ngx_array_t              *options;      /* of ngx_str_t */
    ngx_str_t                 init;         /* jvm_init handler name */
    ngx_array_t               handlers;     /* of ngx_str_t; index = id */
    ngx_int_t                 pool_size;
    ngx_int_t                 queue;
    unsigned                  uses_pool:1;
    unsigned                  uses_virtual:1;
    unsigned                  uses_tasks:1; /* any location off the loop */
} ngx_http_jvm_main_conf_t;


/* Where a handler runs; the values match nginx.jvm.Tasks. */
#define NGX_HTTP_JVM_LOOP     0
#define NGX_HTTP_JVM_POOL     1
#define NGX_HTTP_JVM_VIRTUAL  2


typedef struct {
    ngx_int_t                 handler;      /* index into handlers */
    ngx_uint_t                mode;
    ngx_flag_t                async;
    ngx_msec_t                response_timeout;
} ngx_http_jvm_loc_conf_t;


/* A request's state once it outlives one call into Java. */
typedef struct {
    ngx_http_request_t       *request;
    jobject                   body;         /* global ref, a BodySource */
    ngx_chain_t              *free;
    ngx_chain_t              *busy;
    off_t                     length;       /* Content-Length, or -1 */
    off_t                     sent;
    ngx_event_t               timer;        /* jvm_response_timeout */
    unsigned                  task:1;       /* Java knows it by its address */
    unsigned                  responded:1;
    unsigned                  waiting:1;    /* for a piece of the body */
} ngx_http_jvm_ctx_t;


/* The worker's JVM and what the module caches of it. */
typedef struct {
    JavaVM                   *vm;
    JNIEnv                   *env;
    jclass                    worker;       /* nginx.jvm.Worker */
    jmethodID                 request_buffer;
    jmethodID                 response_buffer;
    jmethodID                 register_handler;
    jmethodID                 init;
    jmethodID                 handle;
    jmethodID                 next;
    jmethodID                 close;
    jmethodID                 stop;
    jmethodID                 configure;
    jmethodID                 submit;
    jmethodID                 poll;
    jmethodID                 take;
    jmethodID                 cancel;
    jfieldID                  pending;

    jobject                   req_buf;      /* global ref, direct buffer */
    u_char                   *req_addr;
    size_t                    req_cap;
    jobject                   resp_buf;
    u_char                   *resp_addr;
    size_t                    resp_cap;

    ngx_fd_t                  notify_fd;    /* eventfd, -1 if none */

    unsigned                  ready:1;
    unsigned                  no_virtual:1; /* JDK older than 21 */
} ngx_http_jvm_vm_t;


/* Body kinds of an encoded response; see nginx.jvm.ResponseEncoder. */
#define NGX_HTTP_JVM_BODY_NONE    0
#define NGX_HTTP_JVM_BODY_INLINE  1
#define NGX_HTTP_JVM_BODY_FILE    2
#define NGX_HTTP_JVM_BODY_STREAM  3
#define NGX_HTTP_JVM_BODY_ERROR   4


extern ngx_module_t       ngx_http_jvm_module;
extern ngx_http_jvm_vm_t  ngx_http_jvm_vm;


ngx_int_t ngx_http_jvm_vm_start(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
void ngx_http_jvm_vm_stop(ngx_cycle_t *cycle);
ngx_int_t ngx_http_jvm_vm_request_buffer(ngx_log_t *log, size_t size);
void ngx_http_jvm_vm_refresh_response_buffer(void);
ngx_int_t ngx_http_jvm_vm_failed(ngx_log_t *log, const char *what);
void ngx_http_jvm_block_signals(sigset_t *old);

ngx_int_t ngx_http_jvm_content_handler(ngx_http_request_t *r);
ngx_http_jvm_ctx_t *ngx_http_jvm_get_ctx(ngx_http_request_t *r);
ngx_int_t ngx_http_jvm_send_response(ngx_http_request_t *r, size_t len);
ngx_int_t ngx_http_jvm_stream(ngx_http_request_t *r, ngx_http_jvm_ctx_t *ctx);

ngx_int_t ngx_http_jvm_tasks_init(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
ngx_int_t ngx_http_jvm_task_submit(ngx_http_request_t *r, size_t len);
void ngx_http_jvm_task_wait(ngx_http_request_t *r, ngx_http_jvm_ctx_t *ctx);
void ngx_http_jvm_task_cancel(ngx_http_jvm_ctx_t *ctx);
void ngx_http_jvm_log_text(ngx_uint_t level, ngx_log_t *log, u_char *text,
    size_t len);


#endif /* _NGX_HTTP_JVM_MODULE_H_INCLUDED_ */
