
/*
 * nginx-jvm: every call down into the worker's JVM.
 *
 * The JVM (created by ngx_http_jvm_vm_create.c) is called only from the
 * worker's own thread, which stays attached to it for the worker's life
 * and is the only thread that calls into nginx.  One function per entry
 * point of nginx.jvm.Worker, the WebSocket's too, each checking for a
 * pending Java exception before anything else is done with the JVM
 * (calling JNI with an exception pending is undefined).  The codes Java
 * answers with are the wire protocol's (docs/internals.md); they become
 * nginx's codes here.  The method ids and the two buffers are bound here,
 * once, and used by no other file; the natives Java calls up are in
 * ngx_http_jvm_natives.c, the master's JVMs in ngx_http_jvm_child.c.
 */


#include "ngx_http_jvm_jni.h"

#include <signal.h>
#include <pthread.h>


typedef struct {
    jmethodID                *id;
    char                     *name;
    char                     *signature;
} ngx_http_jvm_method_t;


static ngx_int_t ngx_http_jvm_vm_buffer(jobject buf, jobject *ref,
    u_char **addr, size_t *cap);
static ngx_int_t ngx_http_jvm_vm_response_buffer(ngx_log_t *log);
static ngx_int_t ngx_http_jvm_vm_response(ngx_log_t *log, jint n,
    size_t *out, const char *what);
static ngx_int_t ngx_http_jvm_vm_call_string(ngx_cycle_t *cycle,
    jmethodID method, ngx_str_t *arg, const char *what);
static ngx_int_t ngx_http_jvm_vm_copy_in(ngx_log_t *log, u_char *data,
    size_t len);


ngx_http_jvm_vm_t  ngx_http_jvm_vm;


JNIEnv            *ngx_http_jvm_env;          /* the event loop's */
static jclass      ngx_http_jvm_worker;       /* nginx.jvm.Worker */
static jobject     ngx_http_jvm_req_ref;      /* the buffers, global refs */
static jobject     ngx_http_jvm_resp_ref;
static jobject     ngx_http_jvm_ready_ref;
ngx_fd_t           ngx_http_jvm_notify_fd = -1;

static jmethodID   ngx_http_jvm_request_buffer_mid;
static jmethodID   ngx_http_jvm_response_buffer_mid;
static jmethodID   ngx_http_jvm_ready_buffer_mid;
static jmethodID   ngx_http_jvm_register_mid;
static jmethodID   ngx_http_jvm_init_mid;
static jmethodID   ngx_http_jvm_configure_mid;
static jmethodID   ngx_http_jvm_handle_mid;
static jmethodID   ngx_http_jvm_submit_mid;
static jmethodID   ngx_http_jvm_wake_mid;
static jmethodID   ngx_http_jvm_take_mid;
static jmethodID   ngx_http_jvm_upload_mid;
static jmethodID   ngx_http_jvm_cancel_mid;
static jmethodID   ngx_http_jvm_abort_mid;
static jmethodID   ngx_http_jvm_next_mid;
static jmethodID   ngx_http_jvm_close_mid;
static jmethodID   ngx_http_jvm_stop_mid;
static jmethodID   ngx_http_jvm_ws_open_mid;
static jmethodID   ngx_http_jvm_ws_abandon_mid;
static jmethodID   ngx_http_jvm_ws_message_mid;
static jmethodID   ngx_http_jvm_ws_closed_mid;
static jmethodID   ngx_http_jvm_ws_poll_mid;
static jmethodID   ngx_http_jvm_ws_take_mid;
static jmethodID   ngx_http_jvm_topic_messages_mid;
static jmethodID   ngx_http_jvm_quitting_mid;
static jmethodID   ngx_http_jvm_variable_mid;
static jmethodID   ngx_http_jvm_filter_mid;
static jmethodID   ngx_http_jvm_body_mid;
static jmethodID   ngx_http_jvm_body_end_mid;
static jmethodID   ngx_http_jvm_subrequest_done_mid;
static jmethodID   ngx_http_jvm_client_data_mid;
static jmethodID   ngx_http_jvm_trace_end_mid;


/* The entry points of nginx.jvm.Worker, bound once at start. */

static ngx_http_jvm_method_t  ngx_http_jvm_methods[] = {
    { &ngx_http_jvm_request_buffer_mid, "requestBuffer",
      "(I)Ljava/nio/ByteBuffer;" },
    { &ngx_http_jvm_response_buffer_mid, "responseBuffer",
      "()Ljava/nio/ByteBuffer;" },
    { &ngx_http_jvm_ready_buffer_mid, "readyBuffer",
      "()Ljava/nio/ByteBuffer;" },
    { &ngx_http_jvm_register_mid, "register",
      "(Ljava/lang/String;)Ljava/lang/String;" },
    { &ngx_http_jvm_init_mid, "init",
      "(Ljava/lang/String;)Ljava/lang/String;" },
    { &ngx_http_jvm_configure_mid, "configure", "(IIIZZI)Ljava/lang/String;" },
    { &ngx_http_jvm_handle_mid, "handle", "(IIJI)I" },
    { &ngx_http_jvm_submit_mid, "submit", "(IIJIZJI)I" },
    { &ngx_http_jvm_variable_mid, "variable", "(IIJ)I" },
    { &ngx_http_jvm_filter_mid, "filter", "(IIJI)I" },
    { &ngx_http_jvm_body_mid, "body", "(IIJJIZ)I" },
    { &ngx_http_jvm_body_end_mid, "bodyEnd", "(J)V" },
    { &ngx_http_jvm_subrequest_done_mid, "subrequestDone", "(II)V" },
    { &ngx_http_jvm_client_data_mid, "clientData", "(II)I" },
    { &ngx_http_jvm_trace_end_mid, "traceEnd", "(J)V" },
    { &ngx_http_jvm_wake_mid, "wake", "(Z)I" },
    { &ngx_http_jvm_take_mid, "take", "(J)I" },
    { &ngx_http_jvm_upload_mid, "upload", "(JII)I" },
    { &ngx_http_jvm_cancel_mid, "cancel", "(J)V" },
    { &ngx_http_jvm_abort_mid, "abort", "(JZ)V" },
    { &ngx_http_jvm_next_mid, "next", "(I)I" },
    { &ngx_http_jvm_close_mid, "close", "(I)V" },
    { &ngx_http_jvm_stop_mid, "stop", "(Ljava/lang/String;J)V" },
    { &ngx_http_jvm_ws_open_mid, "wsOpen", "(I)I" },
    { &ngx_http_jvm_ws_abandon_mid, "wsAbandon", "(I)V" },
    { &ngx_http_jvm_ws_message_mid, "wsMessage", "(III)I" },
    { &ngx_http_jvm_ws_closed_mid, "wsClosed", "(III)V" },
    { &ngx_http_jvm_ws_poll_mid, "wsPoll", "()I" },
    { &ngx_http_jvm_ws_take_mid, "wsTake", "(I)I" },
    { &ngx_http_jvm_topic_messages_mid, "topicMessages", "(JII)V" },
    { &ngx_http_jvm_quitting_mid, "quitting", "()V" },
    { NULL, NULL, NULL }
};


/*
 * Threads started while this thread blocks nginx's signals inherit the mask:
 * those signals are then always delivered to the event loop's thread.
 */

void
ngx_http_jvm_vm_block_signals(sigset_t *old)
{
    sigset_t  set;

    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGQUIT);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGWINCH);
    sigaddset(&set, SIGALRM);
    sigaddset(&set, SIGIO);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGPIPE);

    pthread_sigmask(SIG_BLOCK, &set, old);
}


/*
 * The entry points of nginx.jvm.Worker and its buffers; the natives Java
 * calls up are registered apart (ngx_http_jvm_natives.c).
 */

ngx_int_t
ngx_http_jvm_vm_bind(ngx_cycle_t *cycle)
{
    jint                    version;
    jclass                  cls, wire;
    size_t                  cap;
    u_char                 *addr;
    jobject                 buf;
    JNIEnv                 *env;
    jfieldID                field;
    ngx_http_jvm_method_t  *m;

    env = ngx_http_jvm_env;

    cls = (*env)->FindClass(env, "nginx/jvm/Worker");
    if (cls == NULL) {
        (*env)->ExceptionClear(env);
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "jvm: class nginx.jvm.Worker not found: "
                      "\"jvm_classpath\" must hold nginx-jvm.jar");
        return NGX_ERROR;
    }

    ngx_http_jvm_worker = (*env)->NewGlobalRef(env, cls);
    (*env)->DeleteLocalRef(env, cls);

    /* the wire protocol first: nothing else means anything if it differs */

    version = -1;
    wire = (*env)->FindClass(env, "nginx/jvm/Wire");

    if (wire != NULL) {
        field = (*env)->GetStaticFieldID(env, wire, "PROTOCOL", "I");

        if (field != NULL) {
            version = (*env)->GetStaticIntField(env, wire, field);
        }

        (*env)->DeleteLocalRef(env, wire);
    }

    if ((*env)->ExceptionCheck(env)) {
        (*env)->ExceptionClear(env);
    }

    if (version != NGX_HTTP_JVM_PROTOCOL) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "jvm: nginx-jvm.jar speaks wire protocol %d, this "
                      "module %d: use the jar built with this module",
                      (int) version, NGX_HTTP_JVM_PROTOCOL);
        return NGX_ERROR;
    }

    for (m = ngx_http_jvm_methods; m->id; m++) {
        *m->id = (*env)->GetStaticMethodID(env, ngx_http_jvm_worker, m->name,
                                           m->signature);

        if (*m->id == NULL) {
            (*env)->ExceptionClear(env);
            ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                          "jvm: nginx.jvm.Worker has no method %s%s: "
                          "nginx-jvm.jar and ngx_http_jvm_module.so differ "
                          "in version", m->name, m->signature);
            return NGX_ERROR;
        }
    }

    buf = (*env)->CallStaticObjectMethod(env, ngx_http_jvm_worker,
                                         ngx_http_jvm_request_buffer_mid,
                                         (jint) 0);

    if (ngx_http_jvm_vm_buffer(buf, &ngx_http_jvm_req_ref,
                               &ngx_http_jvm_vm.req_addr,
                               &ngx_http_jvm_vm.req_cap)
        != NGX_OK)
    {
        return ngx_http_jvm_vm_failed(cycle->log, "Worker.requestBuffer()");
    }

    buf = (*env)->CallStaticObjectMethod(env, ngx_http_jvm_worker,
                                         ngx_http_jvm_ready_buffer_mid);

    if (ngx_http_jvm_vm_buffer(buf, &ngx_http_jvm_ready_ref, &addr, &cap)
        != NGX_OK
        || cap < NGX_HTTP_JVM_READY_MAX * sizeof(uint64_t)
        || (uintptr_t) addr % sizeof(uint64_t))
    {
        return ngx_http_jvm_vm_failed(cycle->log, "Worker.readyBuffer()");
    }

    ngx_http_jvm_vm.ready_ids = (uint64_t *) addr;

    return ngx_http_jvm_vm_response_buffer(cycle->log);
}


/* Takes a direct ByteBuffer (a local ref) as the new cached buffer. */

static ngx_int_t
ngx_http_jvm_vm_buffer(jobject buf, jobject *ref, u_char **addr, size_t *cap)
{
    JNIEnv  *env;

    env = ngx_http_jvm_env;

    if ((*env)->ExceptionCheck(env) || buf == NULL) {
        return NGX_ERROR;
    }

    if (*ref) {
        (*env)->DeleteGlobalRef(env, *ref);
    }

    *ref = (*env)->NewGlobalRef(env, buf);
    *addr = (*env)->GetDirectBufferAddress(env, buf);
    *cap = (size_t) (*env)->GetDirectBufferCapacity(env, buf);

    (*env)->DeleteLocalRef(env, buf);

    return (*ref && *addr) ? NGX_OK : NGX_ERROR;
}


/*
 * Worker.responseBuffer(): the response buffer Java now writes to, after
 * it answered "moved" (a larger one).
 */

static ngx_int_t
ngx_http_jvm_vm_response_buffer(ngx_log_t *log)
{
    jobject  buf;
    JNIEnv  *env;

    env = ngx_http_jvm_env;

    buf = (*env)->CallStaticObjectMethod(env, ngx_http_jvm_worker,
                                         ngx_http_jvm_response_buffer_mid);

    if (ngx_http_jvm_vm_buffer(buf, &ngx_http_jvm_resp_ref,
                               &ngx_http_jvm_vm.resp_addr,
                               &ngx_http_jvm_vm.resp_cap)
        != NGX_OK)
    {
        ngx_http_jvm_vm.resp_addr = NULL;
        ngx_http_jvm_vm.resp_cap = 0;
        return ngx_http_jvm_vm_failed(log, "Worker.responseBuffer()");
    }

    return NGX_OK;
}


/* Worker.requestBuffer(): a request buffer of at least size bytes. */

ngx_int_t
ngx_http_jvm_vm_request_buffer(ngx_log_t *log, size_t size)
{
    jobject  buf;
    JNIEnv  *env;

    env = ngx_http_jvm_env;

    if (size > NGX_MAX_INT32_VALUE) {
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "jvm: request of %uz bytes is too large to describe",
                      size);
        return NGX_ERROR;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, log, 0,
                   "jvm: request buffer grows to %uz bytes", size);

    buf = (*env)->CallStaticObjectMethod(env, ngx_http_jvm_worker,
                                         ngx_http_jvm_request_buffer_mid,
                                         (jint) size);

    if (ngx_http_jvm_vm_buffer(buf, &ngx_http_jvm_req_ref,
                               &ngx_http_jvm_vm.req_addr,
                               &ngx_http_jvm_vm.req_cap)
        != NGX_OK)
    {
        return ngx_http_jvm_vm_failed(log, "Worker.requestBuffer()");
    }

    return NGX_OK;
}


/*
 * A call answered an encoded response of n bytes.  A response too large for
 * the response buffer went into a new, larger one; the old one then says
 * only "moved", and the new one is fetched here.
 */

static ngx_int_t
ngx_http_jvm_vm_response(ngx_log_t *log, jint n, size_t *out,
    const char *what)
{
    uint32_t               status, kind;
    ngx_http_jvm_reader_t  rd;

    if ((*ngx_http_jvm_env)->ExceptionCheck(ngx_http_jvm_env)) {
        return ngx_http_jvm_vm_failed(log, what);
    }

    if (n < NGX_HTTP_JVM_RESPONSE_HEAD) {
        ngx_log_error(NGX_LOG_ALERT, log, 0,
                      "jvm: %s answered an invalid length %d", what, n);
        return NGX_ERROR;
    }

    ngx_http_jvm_reader_init(&rd, ngx_http_jvm_vm.resp_addr, (size_t) n);

    if (ngx_http_jvm_get_int(&rd, &status) == NGX_OK
        && ngx_http_jvm_get_int(&rd, &kind) == NGX_OK
        && kind == NGX_HTTP_JVM_BODY_MOVED
        && ngx_http_jvm_vm_response_buffer(log) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if ((size_t) n > ngx_http_jvm_vm.resp_cap) {
        ngx_log_error(NGX_LOG_ALERT, log, 0,
                      "jvm: %s answered %d bytes, more than the buffer's %uz",
                      what, n, ngx_http_jvm_vm.resp_cap);
        return NGX_ERROR;
    }

    *out = (size_t) n;

    return NGX_OK;
}


/*
 * The Worker methods catch everything; an exception here is the JVM itself
 * failing (out of memory, stack overflow).  It is printed to stderr, which
 * nginx points at the error log.
 */

ngx_int_t
ngx_http_jvm_vm_failed(ngx_log_t *log, const char *what)
{
    JNIEnv  *env;

    env = ngx_http_jvm_env;

    if ((*env)->ExceptionCheck(env)) {
        (*env)->ExceptionDescribe(env);
        (*env)->ExceptionClear(env);
    }

    ngx_log_error(NGX_LOG_ERR, log, 0, "jvm: %s failed", what);

    return NGX_ERROR;
}


/* Calls a Worker method taking a name and answering null or an error. */

static ngx_int_t
ngx_http_jvm_vm_call_string(ngx_cycle_t *cycle, jmethodID method,
    ngx_str_t *arg, const char *what)
{
    u_char      *p;
    jsize        len;
    JNIEnv      *env;
    jstring      s, err;
    const char  *text;

    env = ngx_http_jvm_env;

    p = ngx_pnalloc(cycle->pool, arg->len + 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    ngx_cpystrn(p, arg->data, arg->len + 1);

    s = (*env)->NewStringUTF(env, (char *) p);
    if (s == NULL) {
        return ngx_http_jvm_vm_failed(cycle->log, what);
    }

    err = (*env)->CallStaticObjectMethod(env, ngx_http_jvm_worker, method, s);
    (*env)->DeleteLocalRef(env, s);

    if ((*env)->ExceptionCheck(env)) {
        return ngx_http_jvm_vm_failed(cycle->log, what);
    }

    if (err == NULL) {
        return NGX_OK;
    }

    text = (*env)->GetStringUTFChars(env, err, NULL);
    len = (*env)->GetStringUTFLength(env, err);

    if (text) {
        ngx_http_jvm_log_text(NGX_LOG_ERR, cycle->log, (u_char *) text,
                              (size_t) len);
        (*env)->ReleaseStringUTFChars(env, err, text);
    }

    (*env)->DeleteLocalRef(env, err);

    return NGX_ERROR;
}


/* Worker.register(): loads a jvm_content handler, reported if it fails. */

ngx_int_t
ngx_http_jvm_vm_register(ngx_cycle_t *cycle, ngx_str_t *name)
{
    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, cycle->log, 0,
                   "jvm: loading handler \"%V\"", name);

    return ngx_http_jvm_vm_call_string(cycle, ngx_http_jvm_register_mid, name,
                                       "jvm_content");
}


/* Worker.init(): runs the jvm_init handler. */

ngx_int_t
ngx_http_jvm_vm_init(ngx_cycle_t *cycle, ngx_str_t *name)
{
    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, cycle->log, 0,
                   "jvm: running jvm_init \"%V\"", name);

    return ngx_http_jvm_vm_call_string(cycle, ngx_http_jvm_init_mid, name,
                                       "jvm_init");
}


/*
 * Worker.configure(): the pool's threads, the virtual threads' carriers and
 * the loop's own virtual threads (jvm_mode coloop: Java tries them and
 * warns when they cannot be had), started with nginx's signals blocked;
 * JVM threads wake the event loop through notify_fd.  NGX_DECLINED:
 * virtual threads cannot be had here.
 */

ngx_int_t
ngx_http_jvm_vm_configure(ngx_cycle_t *cycle, ngx_fd_t notify_fd,
    ngx_int_t pool_size, ngx_int_t carriers, ngx_int_t queue,
    ngx_uint_t virtual, ngx_uint_t coloop, ngx_int_t ws_send_queue)
{
    JNIEnv      *env;
    jstring      err;
    sigset_t     old;
    const char  *text;

    env = ngx_http_jvm_env;
    ngx_http_jvm_notify_fd = notify_fd;

    ngx_http_jvm_vm_block_signals(&old);

    err = (*env)->CallStaticObjectMethod(env, ngx_http_jvm_worker,
                                         ngx_http_jvm_configure_mid,
                                         (jint) pool_size, (jint) carriers,
                                         (jint) queue,
                                         (jboolean) virtual,
                                         (jboolean) coloop,
                                         (jint) ws_send_queue);

    pthread_sigmask(SIG_SETMASK, &old, NULL);

    if ((*env)->ExceptionCheck(env)) {
        return ngx_http_jvm_vm_failed(cycle->log, "Worker.configure()");
    }

    if (err == NULL) {
        return NGX_OK;
    }

    text = (*env)->GetStringUTFChars(env, err, NULL);
    if (text) {
        ngx_log_error(NGX_LOG_ERR, cycle->log, 0,
                      "jvm: %s; locations with \"jvm_mode virtual\" "
                      "or \"coloop\" answer 503", text);
        (*env)->ReleaseStringUTFChars(env, err, text);
    }

    (*env)->DeleteLocalRef(env, err);

    return NGX_DECLINED;
}


/*
 * Worker.subrequestDone(): subrequest id's answer is in the request
 * buffer; Java completes its future (on the loop).
 */

void
ngx_http_jvm_vm_subrequest_done(ngx_log_t *log, ngx_int_t id, size_t len)
{
    JNIEnv  *env;

    env = ngx_http_jvm_env;

    (*env)->CallStaticVoidMethod(env, ngx_http_jvm_worker,
                                 ngx_http_jvm_subrequest_done_mid,
                                 (jint) id, (jint) len);

    if ((*env)->ExceptionCheck(env)) {
        (void) ngx_http_jvm_vm_failed(log, "Worker.subrequestDone()");
    }
}


/*
 * Worker.clientData(): n bytes of call id's answer at the start of the
 * request buffer (0: its end, -1: it failed); Java's answer, which says
 * whether to read on (ngx_http_jvm_client.c), or NGX_ERROR.
 */

ngx_int_t
ngx_http_jvm_vm_client_data(ngx_log_t *log, ngx_int_t id, ssize_t n)
{
    jint     rc;
    JNIEnv  *env;

    env = ngx_http_jvm_env;

    rc = (*env)->CallStaticIntMethod(env, ngx_http_jvm_worker,
                                     ngx_http_jvm_client_data_mid,
                                     (jint) id, (jint) n);

    if ((*env)->ExceptionCheck(env)) {
        (void) ngx_http_jvm_vm_failed(log, "Worker.clientData()");
        return NGX_ERROR;
    }

    return rc;
}


/*
 * Worker.traceEnd(): r's log phase; Java ends the span it began for r,
 * reading nginx's variables for it (on the loop, r's pool still there).
 */

void
ngx_http_jvm_vm_trace_end(ngx_http_request_t *r)
{
    JNIEnv  *env;

    env = ngx_http_jvm_env;

    (*env)->CallStaticVoidMethod(env, ngx_http_jvm_worker,
                                 ngx_http_jvm_trace_end_mid,
                                 (jlong) (uintptr_t) r);

    if ((*env)->ExceptionCheck(env)) {
        (void) ngx_http_jvm_vm_failed(r->connection->log, "Worker.traceEnd()");
    }
}


/*
 * Worker.topicMessages(): n messages of a topic, len bytes at the start of
 * the request buffer (each a uint32 length, a uint32 type and the bytes),
 * for this worker's subscribers; on the event loop.
 */

void
ngx_http_jvm_vm_topic_deliver(ngx_log_t *log, ngx_http_jvm_topic_t *topic,
    ngx_uint_t n, size_t len)
{
    JNIEnv  *env;

    if (!ngx_http_jvm_vm.ready) {
        return;
    }

    env = ngx_http_jvm_env;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, log, 0,
                   "jvm: topic \"%V\": %ui messages, %uz bytes",
                   &topic->name, n, len);

    (*env)->CallStaticVoidMethod(env, ngx_http_jvm_worker,
                                 ngx_http_jvm_topic_messages_mid,
                                 (jlong) (uintptr_t) topic, (jint) n,
                                 (jint) len);

    if ((*env)->ExceptionCheck(env)) {
        (void) ngx_http_jvm_vm_failed(log, "Worker.topicMessages()");
    }
}


/* Worker.quitting(): a graceful quit began; Java's timers stop. */

void
ngx_http_jvm_vm_quitting(ngx_log_t *log)
{
    JNIEnv  *env;

    env = ngx_http_jvm_env;

    (*env)->CallStaticVoidMethod(env, ngx_http_jvm_worker,
                                 ngx_http_jvm_quitting_mid);

    if ((*env)->ExceptionCheck(env)) {
        (void) ngx_http_jvm_vm_failed(log, "Worker.quitting()");
    }
}


/*
 * Worker.handle(): serves the described request on the event loop with a
 * handler of the given phase.  Java may read the request's variables
 * through r while the call lasts.
 */

ngx_int_t
ngx_http_jvm_vm_handle(ngx_http_request_t *r, ngx_int_t handler,
    ngx_uint_t phase, size_t len, size_t *out)
{
    jint  n;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: handler %i of phase %ui on the loop, request of "
                   "%uz bytes", handler, phase, len);

    n = (*ngx_http_jvm_env)->CallStaticIntMethod(ngx_http_jvm_env,
                                                 ngx_http_jvm_worker,
                                                 ngx_http_jvm_handle_mid,
                                                 (jint) handler, (jint) len,
                                                 (jlong) (uintptr_t) r,
                                                 (jint) phase);

    return ngx_http_jvm_vm_response(r->connection->log, n, out,
                                    "Worker.handle()");
}


/*
 * Worker.submit(): starts the described request as the task named id.
 * NGX_OK: accepted; NGX_DECLINED: refused or failed at once, with an
 * encoded error response of *out bytes.  A log handler's task has no id:
 * nothing comes back from it.
 */

ngx_int_t
ngx_http_jvm_vm_submit(ngx_http_request_t *r, ngx_int_t handler,
    ngx_uint_t phase, size_t len, void *id, ngx_uint_t mode,
    ngx_uint_t async, size_t *out)
{
    jint        n;
    ngx_log_t  *log;

    log = r->connection->log;

    ngx_log_debug5(NGX_LOG_DEBUG_HTTP, log, 0,
                   "jvm: task %p submitted: handler %i, phase %ui, "
                   "mode %ui, async %ui", id, handler, phase, mode, async);

    n = (*ngx_http_jvm_env)->CallStaticIntMethod(ngx_http_jvm_env,
                                                 ngx_http_jvm_worker,
                                                 ngx_http_jvm_submit_mid,
                                                 (jint) handler, (jint) len,
                                                 (jlong) (uintptr_t) id,
                                                 (jint) mode,
                                                 (jboolean) async,
                                                 (jlong) (uintptr_t) r,
                                                 (jint) phase);

    if (n == NGX_HTTP_JVM_ACCEPTED
        && !(*ngx_http_jvm_env)->ExceptionCheck(ngx_http_jvm_env))
    {
        return NGX_OK;
    }

    if (ngx_http_jvm_vm_response(log, n, out, "Worker.submit()") != NGX_OK) {
        return NGX_ERROR;
    }

    return NGX_DECLINED;
}


/*
 * Worker.variable(): a jvm_set handler computes its variable, on the loop.
 * NGX_OK with the value (in the request's pool), NGX_DECLINED for none,
 * NGX_ERROR when the handler failed (logged here).
 */

ngx_int_t
ngx_http_jvm_vm_variable(ngx_http_request_t *r, ngx_int_t handler,
    size_t len, ngx_str_t *value)
{
    jint                   n;
    ngx_str_t              msg;
    ngx_log_t             *log;
    ngx_http_jvm_reader_t  rd;

    log = r->connection->log;

    n = (*ngx_http_jvm_env)->CallStaticIntMethod(ngx_http_jvm_env,
                                                 ngx_http_jvm_worker,
                                                 ngx_http_jvm_variable_mid,
                                                 (jint) handler, (jint) len,
                                                 (jlong) (uintptr_t) r);

    if ((*ngx_http_jvm_env)->ExceptionCheck(ngx_http_jvm_env)) {
        return ngx_http_jvm_vm_failed(log, "Worker.variable()");
    }

    if (n == NGX_HTTP_JVM_VAR_NULL) {
        return NGX_DECLINED;
    }

    if (n == NGX_HTTP_JVM_VAR_FAILED) {
        /* the response buffer holds the message, a string */
        ngx_http_jvm_reader_init(&rd, ngx_http_jvm_vm.resp_addr,
                                 ngx_http_jvm_vm.resp_cap);

        if (ngx_http_jvm_get_str(&rd, &msg) == NGX_OK) {
            ngx_http_jvm_log_text(NGX_LOG_ERR, log, msg.data, msg.len);
        }

        return NGX_ERROR;
    }

    if ((size_t) n > ngx_http_jvm_vm.resp_cap
        && ngx_http_jvm_vm_response_buffer(log) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (n < 0 || (size_t) n > ngx_http_jvm_vm.resp_cap) {
        ngx_log_error(NGX_LOG_ALERT, log, 0,
                      "jvm: Worker.variable() answered %d", n);
        return NGX_ERROR;
    }

    value->len = n;
    value->data = ngx_pnalloc(r->pool, n);
    if (value->data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(value->data, ngx_http_jvm_vm.resp_addr, n);

    return NGX_OK;
}


/*
 * Worker.filter(): a jvm_header_filter handler sees the response's status
 * and header fields (in the request buffer at "headers", after the
 * request).  NGX_DECLINED: it changed nothing; NGX_OK: *out bytes of
 * edits, or of an error, in the response buffer.
 */

ngx_int_t
ngx_http_jvm_vm_filter(ngx_http_request_t *r, ngx_int_t handler,
    size_t len, size_t headers, size_t *out)
{
    jint  n;

    n = (*ngx_http_jvm_env)->CallStaticIntMethod(ngx_http_jvm_env,
                                                 ngx_http_jvm_worker,
                                                 ngx_http_jvm_filter_mid,
                                                 (jint) handler, (jint) len,
                                                 (jlong) (uintptr_t) r,
                                                 (jint) headers);

    if (n == NGX_HTTP_JVM_FILTER_SAME
        && !(*ngx_http_jvm_env)->ExceptionCheck(ngx_http_jvm_env))
    {
        return NGX_DECLINED;
    }

    return ngx_http_jvm_vm_response(r->connection->log, n, out,
                                    "Worker.filter()");
}


/*
 * Worker.body(): a jvm_body_filter handler sees a chunk of the response's
 * body, "size" bytes in the request buffer after the request's "len"; Java
 * knows the response by "id" until its last chunk or Worker.bodyEnd().
 * NGX_DECLINED: it left the chunk as it was; NGX_OK: *out replaces it (in
 * the response buffer); NGX_ERROR: it failed, and why is logged.
 */

ngx_int_t
ngx_http_jvm_vm_body(ngx_http_request_t *r, ngx_int_t handler, void *id,
    size_t len, size_t size, ngx_uint_t last, ngx_str_t *out)
{
    jint                   n;
    ngx_str_t              msg;
    ngx_log_t             *log;
    ngx_http_jvm_reader_t  rd;

    log = r->connection->log;

    n = (*ngx_http_jvm_env)->CallStaticIntMethod(ngx_http_jvm_env,
                                                 ngx_http_jvm_worker,
                                                 ngx_http_jvm_body_mid,
                                                 (jint) handler, (jint) len,
                                                 (jlong) (uintptr_t) r,
                                                 (jlong) (uintptr_t) id,
                                                 (jint) size,
                                                 (jboolean) (last != 0));

    if ((*ngx_http_jvm_env)->ExceptionCheck(ngx_http_jvm_env)) {
        return ngx_http_jvm_vm_failed(log, "Worker.body()");
    }

    if (n == NGX_HTTP_JVM_CHUNK_SAME) {
        return NGX_DECLINED;
    }

    if (n == NGX_HTTP_JVM_CHUNK_FAILED) {
        /* the response buffer holds the message, a string */
        ngx_http_jvm_reader_init(&rd, ngx_http_jvm_vm.resp_addr,
                                 ngx_http_jvm_vm.resp_cap);

        if (ngx_http_jvm_get_str(&rd, &msg) == NGX_OK) {
            ngx_http_jvm_log_text(NGX_LOG_ERR, log, msg.data, msg.len);
        }

        return NGX_ERROR;
    }

    if (n > 0 && (size_t) n > ngx_http_jvm_vm.resp_cap
        && ngx_http_jvm_vm_response_buffer(log) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (n < 0 || (size_t) n > ngx_http_jvm_vm.resp_cap) {
        ngx_log_error(NGX_LOG_ALERT, log, 0,
                      "jvm: Worker.body() answered %d", n);
        return NGX_ERROR;
    }

    out->data = ngx_http_jvm_vm.resp_addr;
    out->len = n;

    return NGX_OK;
}


/* Worker.bodyEnd(): a filtered body ended before its last chunk. */

void
ngx_http_jvm_vm_body_end(void *id)
{
    JNIEnv  *env;

    env = ngx_http_jvm_env;

    (*env)->CallStaticVoidMethod(env, ngx_http_jvm_worker,
                                 ngx_http_jvm_body_end_mid,
                                 (jlong) (uintptr_t) id);

    if ((*env)->ExceptionCheck(env)) {
        (*env)->ExceptionClear(env);
    }
}


/*
 * Worker.wake(): the eventfd was readable.  Java runs its timers that are
 * due on the loop (when asked), then writes the ids of the tasks with
 * something for the loop into the ready buffer: their count (at most
 * NGX_HTTP_JVM_READY_MAX), plus NGX_HTTP_JVM_WAKE_SOCKETS when WebSockets
 * have something too; -1 when it failed.  One call a wake-up, rather than
 * one a task.
 */

ngx_int_t
ngx_http_jvm_vm_wake(ngx_log_t *log, ngx_uint_t timers)
{
    jint  n;

    n = (*ngx_http_jvm_env)->CallStaticIntMethod(ngx_http_jvm_env,
                                                 ngx_http_jvm_worker,
                                                 ngx_http_jvm_wake_mid,
                                                 (jboolean) timers);

    if ((*ngx_http_jvm_env)->ExceptionCheck(ngx_http_jvm_env)) {
        (void) ngx_http_jvm_vm_failed(log, "Worker.wake()");
        return -1;
    }

    return n;
}


/*
 * Worker.take(): the response of a task, encoded; *done when Java is done
 * with the task (NGX_HTTP_JVM_TAKE_DONE): nothing more to cancel.
 */

ngx_int_t
ngx_http_jvm_vm_take(ngx_log_t *log, void *id, size_t *out, ngx_uint_t *done)
{
    jint  n;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, log, 0,
                   "jvm: task %p answered", id);

    n = (*ngx_http_jvm_env)->CallStaticIntMethod(ngx_http_jvm_env,
                                                 ngx_http_jvm_worker,
                                                 ngx_http_jvm_take_mid,
                                                 (jlong) (uintptr_t) id);

    *done = n > 0 && (n & NGX_HTTP_JVM_TAKE_DONE);

    if (*done) {
        n &= ~NGX_HTTP_JVM_TAKE_DONE;
    }

    return ngx_http_jvm_vm_response(log, n, out, "Worker.take()");
}


/*
 * Worker.upload(): a piece of the task's body, len bytes at the start of
 * the request buffer, and its status.  NGX_OK: read on; NGX_AGAIN: Java's
 * pieces are full; NGX_DECLINED: nobody reads the body.
 */

ngx_int_t
ngx_http_jvm_vm_upload(ngx_log_t *log, void *id, size_t len,
    ngx_uint_t status)
{
    jint  n;

    n = (*ngx_http_jvm_env)->CallStaticIntMethod(ngx_http_jvm_env,
                                                 ngx_http_jvm_worker,
                                                 ngx_http_jvm_upload_mid,
                                                 (jlong) (uintptr_t) id,
                                                 (jint) len, (jint) status);

    if ((*ngx_http_jvm_env)->ExceptionCheck(ngx_http_jvm_env)) {
        return ngx_http_jvm_vm_failed(log, "Worker.upload()");
    }

    return n == NGX_HTTP_JVM_UPLOAD_MORE ? NGX_OK
           : (n == NGX_HTTP_JVM_UPLOAD_FULL ? NGX_AGAIN : NGX_DECLINED);
}


/* Worker.cancel(): the task's request is over. */

void
ngx_http_jvm_vm_cancel(void *id)
{
    JNIEnv  *env;

    env = ngx_http_jvm_env;

    (*env)->CallStaticVoidMethod(env, ngx_http_jvm_worker,
                                 ngx_http_jvm_cancel_mid,
                                 (jlong) (uintptr_t) id);

    if ((*env)->ExceptionCheck(env)) {
        (*env)->ExceptionClear(env);
    }
}


/*
 * Worker.abort(): the client left before the task's response was complete.
 * Java runs the request's abort callbacks on a JVM thread, interrupts the
 * handler's thread if asked, and forgets the task, as cancel() does.
 */

void
ngx_http_jvm_vm_abort(void *id, ngx_uint_t interrupt)
{
    JNIEnv  *env;

    env = ngx_http_jvm_env;

    (*env)->CallStaticVoidMethod(env, ngx_http_jvm_worker,
                                 ngx_http_jvm_abort_mid,
                                 (jlong) (uintptr_t) id,
                                 (jboolean) (interrupt ? JNI_TRUE
                                                       : JNI_FALSE));

    if ((*env)->ExceptionCheck(env)) {
        (*env)->ExceptionClear(env);
    }
}


/*
 * Worker.next(): the next piece of a streamed body, *out bytes at the
 * start of the response buffer.  NGX_DONE: the body ended; NGX_AGAIN: a JVM
 * thread has not produced the piece yet (Worker.wake() names the task when
 * it has); NGX_DECLINED: its source gave only empty pieces this time;
 * NGX_ERROR: the body failed, and why is logged.
 */

ngx_int_t
ngx_http_jvm_vm_next(ngx_log_t *log, ngx_int_t stream, size_t *out)
{
    jint                   n;
    JNIEnv                *env;
    ngx_str_t              msg;
    ngx_http_jvm_reader_t  rd;

    env = ngx_http_jvm_env;

    n = (*env)->CallStaticIntMethod(env, ngx_http_jvm_worker,
                                    ngx_http_jvm_next_mid, (jint) stream);

    if ((*env)->ExceptionCheck(env)) {
        return ngx_http_jvm_vm_failed(log, "Worker.next()");
    }

    if (n > 0 && (size_t) n <= ngx_http_jvm_vm.resp_cap) {
        *out = (size_t) n;
        return NGX_OK;
    }

    switch (n) {

    case NGX_HTTP_JVM_NEXT_END:
        return NGX_DONE;

    case NGX_HTTP_JVM_NEXT_WAIT:
        return NGX_AGAIN;

    case NGX_HTTP_JVM_NEXT_EMPTY:
        return NGX_DECLINED;

    case NGX_HTTP_JVM_NEXT_FAILED:
        /* the body failed half-way: the message, a string */
        ngx_http_jvm_reader_init(&rd, ngx_http_jvm_vm.resp_addr,
                                 ngx_http_jvm_vm.resp_cap);

        if (ngx_http_jvm_get_str(&rd, &msg) == NGX_OK) {
            ngx_http_jvm_log_text(NGX_LOG_ERR, log, msg.data, msg.len);
        }

        return NGX_ERROR;
    }

    ngx_log_error(NGX_LOG_ALERT, log, 0,
                  "jvm: Worker.next() answered an invalid length %d", n);

    return NGX_ERROR;
}


/* Worker.close(): a streamed body is over, at its end or not. */

void
ngx_http_jvm_vm_close(ngx_int_t stream)
{
    JNIEnv  *env;

    env = ngx_http_jvm_env;

    (*env)->CallStaticVoidMethod(env, ngx_http_jvm_worker,
                                 ngx_http_jvm_close_mid, (jint) stream);

    if ((*env)->ExceptionCheck(env)) {
        (*env)->ExceptionClear(env);
    }
}


/*
 * The WebSocket's calls, from its two files on the event loop (and from
 * a request's cleanup, for a socket abandoned before its 101):
 * a socket opened, abandoned or closed, a message in, the next socket and
 * frame Java has to send.
 */


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

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, log, 0,
                   "jvm: websocket %i: pings answered by %s", id,
                   n == NGX_HTTP_JVM_WS_JAVA_PINGS ? "the listener" : "nginx");

    return n == NGX_HTTP_JVM_WS_JAVA_PINGS ? NGX_DECLINED : NGX_OK;
}


/* Worker.wsAbandon(): the upgrade did not happen; Java forgets the socket. */

void
ngx_http_jvm_vm_ws_abandon(ngx_int_t id)
{
    JNIEnv  *env;

    env = ngx_http_jvm_env;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "jvm: websocket %i abandoned before its 101", id);

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

    if (n == NGX_HTTP_JVM_WS_PAUSE) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, log, 0,
                       "jvm: websocket %i: Java's inbound queue is full, "
                       "reading pauses", id);
        return NGX_AGAIN;
    }

    return NGX_OK;
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

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, log, 0,
                   "jvm: websocket %i closed with %ui, Java told", id, code);

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

    ngx_log_debug1(NGX_LOG_DEBUG_EVENT, log, 0,
                   "jvm: Worker.wsPoll() answered %d", (int) id);

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

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, log, 0,
                       "jvm: websocket %i: the frame moved to a larger "
                       "response buffer", id);

        if (ngx_http_jvm_vm_response_buffer(log) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    if (n == NGX_HTTP_JVM_WS_NONE) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, log, 0,
                       "jvm: websocket %i: no frame to send", id);
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


/*
 * At worker exit the JVM is left to the process's exit: DestroyJavaVM()
 * would wait for every non-daemon thread a handler started, and a graceful
 * quit must not hang on them.  Worker.stop() runs jvm_exit and the
 * application's shutdown hooks first, bounded by jvm_exit_timeout.
 */

void
ngx_http_jvm_vm_stop(ngx_cycle_t *cycle)
{
    u_char                    *p;
    JNIEnv                    *env;
    jstring                    name;
    sigset_t                   old;
    ngx_http_jvm_main_conf_t  *jmcf;

    if (!ngx_http_jvm_vm.ready) {
        return;
    }

    env = ngx_http_jvm_env;
    jmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_jvm_module);
    name = NULL;

    if (jmcf && jmcf->exit.len) {
        p = ngx_pnalloc(cycle->pool, jmcf->exit.len + 1);
        if (p) {
            ngx_cpystrn(p, jmcf->exit.data, jmcf->exit.len + 1);
            name = (*env)->NewStringUTF(env, (char *) p);
        }
    }

    /* jvm_exit and the shutdown hooks run on threads of their own */
    ngx_http_jvm_vm_block_signals(&old);

    (*env)->CallStaticVoidMethod(env, ngx_http_jvm_worker,
                                 ngx_http_jvm_stop_mid, name,
                                 (jlong) (jmcf ? jmcf->exit_timeout : 0));

    pthread_sigmask(SIG_SETMASK, &old, NULL);

    if ((*env)->ExceptionCheck(env)) {
        (*env)->ExceptionClear(env);
    }

    ngx_http_jvm_vm.ready = 0;
}


/*
 * nginx truncates a log entry at NGX_MAX_ERROR_STR; a stack trace is longer,
 * so it is logged in pieces cut at line ends.  A failure on a quiet
 * connection after its first is only counted.
 */

void
ngx_http_jvm_log_text(ngx_uint_t level, ngx_log_t *log, u_char *text,
    size_t len)
{
    u_char                *p, *last, *cut;
    size_t                 max;
    ngx_http_jvm_quiet_t  *q;

    for (q = ngx_http_jvm_vm.quiet; q && level == NGX_LOG_ERR; q = q->next) {
        if (q->log == log && q->failed++) {
            return;
        }
    }

    max = NGX_MAX_ERROR_STR - 512;
    last = text + len;

    for (p = text; p < last; p = cut) {
        cut = (size_t) (last - p) > max ? p + max : last;

        if (cut < last) {
            while (cut > p && *cut != '\n') {
                cut--;
            }

            if (cut == p) {
                cut = p + max;
            }
        }

        ngx_log_error(level, log, 0, "jvm: %*s", cut - p, p);

        while (cut < last && *cut == '\n') {
            cut++;
        }
    }
}
