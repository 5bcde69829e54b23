
/*
 * nginx-jvm: the natives Java calls up into the C module, registered once
 * the JVM is up (the worker's start, ngx_http_jvm_init_process; the
 * master's archiving JVM): those of nginx.jvm.Natives (wake-ups, a
 * request's variables, URI, header fields and subrequests, the shutdown
 * hooks) and of nginx.jvm.Shm (the shared dictionaries and topics).  They
 * call the feature files below them; nothing below calls them but Java.
 */


#include "ngx_http_jvm_jni.h"

#include <sched.h>


static void JNICALL ngx_http_jvm_wake(JNIEnv *env, jclass cls);
static void JNICALL ngx_http_jvm_batch(JNIEnv *env, jclass cls);
static jbyteArray JNICALL ngx_http_jvm_get_variable(JNIEnv *env, jclass cls,
    jlong r, jbyteArray name);
static void JNICALL ngx_http_jvm_set_variable(JNIEnv *env, jclass cls,
    jlong r, jbyteArray name, jbyteArray value);
static void JNICALL ngx_http_jvm_native_set_uri(JNIEnv *env, jclass cls,
    jlong r, jbyteArray uri);
static void JNICALL ngx_http_jvm_native_set_header(JNIEnv *env, jclass cls,
    jlong r, jbyteArray name, jbyteArray value, jboolean add);
static jstring JNICALL ngx_http_jvm_start_subrequest(JNIEnv *env,
    jclass cls, jlong r, jint id, jbyteArray spec);
static jlong JNICALL ngx_http_jvm_native_client_start(JNIEnv *env,
    jclass cls, jint id, jbyteArray name, jbyteArray method,
    jbyteArray target, jbyteArray fields, jbyteArray body);
static void JNICALL ngx_http_jvm_native_client_resume(JNIEnv *env,
    jclass cls, jlong call);
static jboolean JNICALL ngx_http_jvm_native_client_write(JNIEnv *env,
    jclass cls, jlong call, jbyteArray piece);
static void JNICALL ngx_http_jvm_native_client_close(JNIEnv *env,
    jclass cls, jlong call);
static void JNICALL ngx_http_jvm_run_shutdown_hooks(JNIEnv *env,
    jclass cls);
static jobject JNICALL ngx_http_jvm_virtual_builder(JNIEnv *env, jclass cls,
    jobject scheduler);
static jobject JNICALL ngx_http_jvm_meter(JNIEnv *env, jclass cls);
static void JNICALL ngx_http_jvm_native_tracing(JNIEnv *env, jclass cls);
static jlong JNICALL ngx_http_jvm_native_trace_start(JNIEnv *env, jclass cls,
    jlong r);
static ngx_int_t ngx_http_jvm_vm_str(JNIEnv *env, ngx_http_request_t *r,
    jbyteArray a, ngx_str_t *s);
static void ngx_http_jvm_vm_throw(JNIEnv *env, const char *cls,
    ngx_str_t *name, const char *text);
static jlong JNICALL ngx_http_jvm_shm_dict(JNIEnv *env, jclass cls,
    jbyteArray name);
static jlong JNICALL ngx_http_jvm_shm_dict_capacity(JNIEnv *env, jclass cls,
    jlong dict);
static jbyteArray JNICALL ngx_http_jvm_shm_dict_get(JNIEnv *env, jclass cls,
    jlong dict, jbyteArray key);
static jint JNICALL ngx_http_jvm_shm_dict_set(JNIEnv *env, jclass cls,
    jlong dict, jint op, jbyteArray key, jbyteArray value, jint type,
    jlong ttl);
static jint JNICALL ngx_http_jvm_shm_dict_incr(JNIEnv *env, jclass cls,
    jlong dict, jbyteArray key, jlong delta, jlong init, jlong ttl,
    jlongArray result);
static jint JNICALL ngx_http_jvm_shm_dict_delete(JNIEnv *env, jclass cls,
    jlong dict, jbyteArray key);
static jbyteArray JNICALL ngx_http_jvm_shm_dict_keys(JNIEnv *env, jclass cls,
    jlong dict, jint limit);
static void JNICALL ngx_http_jvm_shm_dict_stats(JNIEnv *env, jclass cls,
    jlong dict, jlongArray out);
static void JNICALL ngx_http_jvm_shm_dict_clear(JNIEnv *env, jclass cls,
    jlong dict);
static jbyteArray ngx_http_jvm_shm_get(JNIEnv *env, jlong dict,
    jbyteArray key, ngx_uint_t with_stale);
static jbyteArray JNICALL ngx_http_jvm_shm_dict_get_stale(JNIEnv *env,
    jclass cls, jlong dict, jbyteArray key);
static jint JNICALL ngx_http_jvm_shm_dict_push(JNIEnv *env, jclass cls,
    jlong dict, jint end, jbyteArray key, jbyteArray value, jint type,
    jlongArray out);
static jint JNICALL ngx_http_jvm_shm_dict_pop(JNIEnv *env, jclass cls,
    jlong dict, jint end, jbyteArray key, jobjectArray out);
static jint JNICALL ngx_http_jvm_shm_dict_llen(JNIEnv *env, jclass cls,
    jlong dict, jbyteArray key, jlongArray out);
static jint JNICALL ngx_http_jvm_shm_dict_ttl(JNIEnv *env, jclass cls,
    jlong dict, jbyteArray key, jlongArray out);
static jint JNICALL ngx_http_jvm_shm_dict_expire(JNIEnv *env, jclass cls,
    jlong dict, jbyteArray key, jlong ttl);
static jint JNICALL ngx_http_jvm_shm_dict_flush_expired(JNIEnv *env,
    jclass cls, jlong dict, jint max);
static jlong JNICALL ngx_http_jvm_shm_topic(JNIEnv *env, jclass cls,
    jbyteArray name);
static jlong JNICALL ngx_http_jvm_shm_topic_max(JNIEnv *env, jclass cls,
    jlong topic);
static jint JNICALL ngx_http_jvm_shm_topic_publish(JNIEnv *env, jclass cls,
    jlong topic, jbyteArray data, jint type);
static void JNICALL ngx_http_jvm_shm_topic_stats(JNIEnv *env, jclass cls,
    jlong topic, jlongArray out);


/* nginx.jvm.Natives: wake-ups, a request on the loop, exit. */

static JNINativeMethod  ngx_http_jvm_natives[] = {
    { "wake", "()V", (void *) ngx_http_jvm_wake },
    { "batch", "()V", (void *) ngx_http_jvm_batch },
    { "getVariable", "(J[B)[B", (void *) ngx_http_jvm_get_variable },
    { "setVariable", "(J[B[B)V", (void *) ngx_http_jvm_set_variable },
    { "setUri", "(J[B)V", (void *) ngx_http_jvm_native_set_uri },
    { "setHeader", "(J[B[BZ)V", (void *) ngx_http_jvm_native_set_header },
    { "startSubrequest", "(JI[B)Ljava/lang/String;",
      (void *) ngx_http_jvm_start_subrequest },
    { "clientStart", "(I[B[B[B[B[B)J",
      (void *) ngx_http_jvm_native_client_start },
    { "clientResume", "(J)V", (void *) ngx_http_jvm_native_client_resume },
    { "clientWrite", "(J[B)Z", (void *) ngx_http_jvm_native_client_write },
    { "clientClose", "(J)V", (void *) ngx_http_jvm_native_client_close },
    { "runShutdownHooks", "()V", (void *) ngx_http_jvm_run_shutdown_hooks },
    { "virtualThreadBuilder",
      "(Ljava/util/concurrent/Executor;)Ljava/lang/Object;",
      (void *) ngx_http_jvm_virtual_builder },
    { "meter", "()Ljava/nio/ByteBuffer;", (void *) ngx_http_jvm_meter },
    { "tracing", "()V", (void *) ngx_http_jvm_native_tracing },
    { "traceStart", "(J)J", (void *) ngx_http_jvm_native_trace_start },
};


/* nginx.jvm.Shm: shared memory, from any thread (ngx_http_jvm_shared.c). */

static JNINativeMethod  ngx_http_jvm_shm_natives[] = {
    { "dict", "([B)J", (void *) ngx_http_jvm_shm_dict },
    { "dictCapacity", "(J)J", (void *) ngx_http_jvm_shm_dict_capacity },
    { "dictGet", "(J[B)[B", (void *) ngx_http_jvm_shm_dict_get },
    { "dictSet", "(JI[B[BIJ)I", (void *) ngx_http_jvm_shm_dict_set },
    { "dictIncr", "(J[BJJJ[J)I", (void *) ngx_http_jvm_shm_dict_incr },
    { "dictDelete", "(J[B)I", (void *) ngx_http_jvm_shm_dict_delete },
    { "dictKeys", "(JI)[B", (void *) ngx_http_jvm_shm_dict_keys },
    { "dictStats", "(J[J)V", (void *) ngx_http_jvm_shm_dict_stats },
    { "dictClear", "(J)V", (void *) ngx_http_jvm_shm_dict_clear },
    { "dictGetStale", "(J[B)[B", (void *) ngx_http_jvm_shm_dict_get_stale },
    { "dictPush", "(JI[B[BI[J)I", (void *) ngx_http_jvm_shm_dict_push },
    { "dictPop", "(JI[B[[B)I", (void *) ngx_http_jvm_shm_dict_pop },
    { "dictLlen", "(J[B[J)I", (void *) ngx_http_jvm_shm_dict_llen },
    { "dictTtl", "(J[B[J)I", (void *) ngx_http_jvm_shm_dict_ttl },
    { "dictExpire", "(J[BJ)I", (void *) ngx_http_jvm_shm_dict_expire },
    { "dictFlushExpired", "(JI)I",
      (void *) ngx_http_jvm_shm_dict_flush_expired },
    { "topic", "([B)J", (void *) ngx_http_jvm_shm_topic },
    { "topicMax", "(J)J", (void *) ngx_http_jvm_shm_topic_max },
    { "topicPublish", "(J[BI)I", (void *) ngx_http_jvm_shm_topic_publish },
    { "topicStats", "(J[J)V", (void *) ngx_http_jvm_shm_topic_stats },
};


/*
 * The natives of nginx.jvm.Natives, then those of nginx.jvm.Shm.  Without
 * them the runtime cannot serve: the JVM locations answer 500 as if the
 * JVM had not started.
 */

ngx_int_t
ngx_http_jvm_natives_init(ngx_cycle_t *cycle)
{
    jclass   cls;
    JNIEnv  *env;

    env = ngx_http_jvm_env;

    cls = (*env)->FindClass(env, "nginx/jvm/Natives");

    if (cls == NULL
        || (*env)->RegisterNatives(env, cls, ngx_http_jvm_natives,
                                   sizeof(ngx_http_jvm_natives)
                                   / sizeof(JNINativeMethod))
           != JNI_OK)
    {
        ngx_http_jvm_vm.ready = 0;
        return ngx_http_jvm_vm_failed(cycle->log,
                                      "RegisterNatives(nginx.jvm.Natives)");
    }

    (*env)->DeleteLocalRef(env, cls);

    if (ngx_http_jvm_natives_shm(cycle) != NGX_OK) {
        ngx_http_jvm_vm.ready = 0;
        return NGX_ERROR;
    }

    ngx_log_debug0(NGX_LOG_DEBUG_CORE, cycle->log, 0,
                   "jvm: natives of nginx.jvm.Natives and Shm registered");

    return NGX_OK;
}


/*
 * The natives of nginx.jvm.Shm.  The master's compiling and archiving JVMs
 * bind them too: a namespace may look up a dictionary or a topic as it
 * loads, and the zones are already mapped there.
 */

ngx_int_t
ngx_http_jvm_natives_shm(ngx_cycle_t *cycle)
{
    jclass   cls;
    JNIEnv  *env;

    env = ngx_http_jvm_env;

    cls = (*env)->FindClass(env, "nginx/jvm/Shm");

    if (cls == NULL
        || (*env)->RegisterNatives(env, cls, ngx_http_jvm_shm_natives,
                                   sizeof(ngx_http_jvm_shm_natives)
                                   / sizeof(JNINativeMethod))
           != JNI_OK)
    {
        return ngx_http_jvm_vm_failed(cycle->log,
                                      "RegisterNatives(nginx.jvm.Shm)");
    }

    (*env)->DeleteLocalRef(env, cls);

    return NGX_OK;
}


/* Natives.wake(), on any JVM thread: the only thing they do to nginx. */

static void JNICALL
ngx_http_jvm_wake(JNIEnv *env, jclass cls)
{
    uint64_t  one = 1;

    if (write(ngx_http_jvm_notify_fd, &one, sizeof(uint64_t)) == -1) {
        /* EAGAIN: the counter is full, so the loop is being woken anyway */
    }
}


/*
 * Natives.batch(), on a thread that runs handlers off the loop (a pool
 * thread, a virtual thread's carrier): the thread becomes SCHED_BATCH.
 * Woken by the loop's hand-off, a normal thread preempts the loop on the
 * spot, one context switch per request on a busy core; a batch thread runs
 * when the loop waits for events or its time slice ends, so the loop hands
 * off every ready request before the handlers run, and they answer them all
 * before the loop runs again.  Its share of the CPU is the same.
 */

static void JNICALL
ngx_http_jvm_batch(JNIEnv *env, jclass cls)
{
    struct sched_param  param;

    static __thread ngx_uint_t  done;

    if (done) {
        return;
    }

    done = 1;
    param.sched_priority = 0;

    /* any thread may; on failure the thread merely stays as it was */
    (void) sched_setscheduler(0, SCHED_BATCH, &param);
}


/*
 * The natives of nginx.jvm.Natives for a request's variables and URI.  Java
 * calls them on the event loop only, with the address of a request it knows
 * to be alive (Worker.handle() lasts, or the task is not cancelled); JVM
 * threads reach them through a hop to the loop (nginx.jvm.LoopCalls).
 */

static jbyteArray JNICALL
ngx_http_jvm_get_variable(JNIEnv *env, jclass cls, jlong req,
    jbyteArray name)
{
    ngx_int_t            rc;
    ngx_str_t            n, v;
    jbyteArray           a;
    ngx_http_request_t  *r;

    r = (ngx_http_request_t *) (uintptr_t) req;

    if (ngx_http_jvm_vm_str(env, r, name, &n) != NGX_OK) {
        return NULL;
    }

    rc = ngx_http_jvm_variable_get(r, &n, &v);

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: Java reads $%V: %i", &n, rc);

    if (rc == NGX_ABORT) {
        ngx_http_jvm_vm_throw(env, "java/lang/IllegalArgumentException", &n,
                              "unknown nginx variable");
        return NULL;
    }

    if (rc != NGX_OK) {
        return NULL;
    }

    a = (*env)->NewByteArray(env, (jsize) v.len);
    if (a != NULL) {
        (*env)->SetByteArrayRegion(env, a, 0, (jsize) v.len,
                                   (jbyte *) v.data);
    }

    return a;
}


static void JNICALL
ngx_http_jvm_set_variable(JNIEnv *env, jclass cls, jlong req,
    jbyteArray name, jbyteArray value)
{
    ngx_str_t            n, v;
    const char          *err;
    ngx_http_request_t  *r;

    r = (ngx_http_request_t *) (uintptr_t) req;

    if (ngx_http_jvm_vm_str(env, r, name, &n) != NGX_OK
        || ngx_http_jvm_vm_str(env, r, value, &v) != NGX_OK)
    {
        return;
    }

    err = NULL;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: Java sets $%V", &n);

    if (ngx_http_jvm_variable_set(r, &n, &v, &err) != NGX_OK) {
        ngx_http_jvm_vm_throw(env, err ? "java/lang/IllegalArgumentException"
                                       : "java/lang/OutOfMemoryError",
                              ngx_http_jvm_gate_refused(err) ? NULL : &n,
                              err ? err : "no memory for the variable");
    }
}


static void JNICALL
ngx_http_jvm_native_set_uri(JNIEnv *env, jclass cls, jlong req,
    jbyteArray uri)
{
    ngx_str_t            u;
    const char          *err;
    ngx_http_request_t  *r;

    r = (ngx_http_request_t *) (uintptr_t) req;

    if (ngx_http_jvm_vm_str(env, r, uri, &u) != NGX_OK) {
        return;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: Java sets the URI \"%V\"", &u);

    err = ngx_http_jvm_set_uri(r, &u);

    if (err) {
        ngx_http_jvm_vm_throw(env, "java/lang/IllegalArgumentException", NULL,
                              err);
    }
}


/*
 * A request header field set (add false), added (add true) or removed
 * (value null), before the content phase.
 */

static void JNICALL
ngx_http_jvm_native_set_header(JNIEnv *env, jclass cls, jlong req,
    jbyteArray name, jbyteArray value, jboolean add)
{
    ngx_int_t            rc;
    ngx_str_t            n, v;
    const char          *err;
    ngx_http_request_t  *r;

    r = (ngx_http_request_t *) (uintptr_t) req;

    if (ngx_http_jvm_vm_str(env, r, name, &n) != NGX_OK
        || (value != NULL
            && ngx_http_jvm_vm_str(env, r, value, &v) != NGX_OK))
    {
        return;
    }

    err = NULL;

    rc = ngx_http_jvm_header_in_set(r, &n, value != NULL ? &v : NULL,
                                    add == JNI_TRUE, &err);

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: Java %s the request header field \"%V\": %i",
                   value == NULL ? "removes" : add ? "adds" : "sets",
                   &n, rc);

    if (rc == NGX_OK) {
        return;
    }

    ngx_http_jvm_vm_throw(env, rc == NGX_DECLINED
                               ? "java/lang/IllegalArgumentException"
                               : rc == NGX_ABORT
                                 ? "java/lang/IllegalStateException"
                                 : "java/lang/OutOfMemoryError",
                          ngx_http_jvm_gate_refused(err) ? NULL : &n,
                          err ? err : "no memory for the header field");
}


/* Starts a subrequest; null, or why it could not start. */

static jstring JNICALL
ngx_http_jvm_start_subrequest(JNIEnv *env, jclass cls, jlong req, jint id,
    jbyteArray spec)
{
    ngx_str_t            s;
    const char          *err;
    ngx_http_request_t  *r;

    r = (ngx_http_request_t *) (uintptr_t) req;

    if (ngx_http_jvm_vm_str(env, r, spec, &s) != NGX_OK) {
        return NULL;
    }

    err = ngx_http_jvm_subrequest_start(r, id, s.data, s.len);

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: Java starts subrequest %i: %s", (ngx_int_t) id,
                   err ? err : "started");

    return err ? (*env)->NewStringUTF(env, err) : NULL;
}


/*
 * Starts call id through the jvm_client location named: method, target
 * (the URI after the location's prefix, and its args) and header fields
 * (each "name: value" CRLF), checked by Java's gate, and the body.  The call's handle,
 * 0 with IllegalStateException pending, or 0 alone: no room now.
 */

static jlong JNICALL
ngx_http_jvm_native_client_start(JNIEnv *env, jclass cls, jint id,
    jbyteArray name, jbyteArray method, jbyteArray target, jbyteArray fields,
    jbyteArray body)
{
    void        *call;
    u_char       n[256];
    ngx_str_t    s, part[4];
    jbyteArray   a[4];
    ngx_uint_t   i;
    const char  *err;

    s.len = (*env)->GetArrayLength(env, name);

    if (s.len > sizeof(n)) {
        ngx_http_jvm_vm_throw(env, "java/lang/IllegalStateException", NULL,
                              "no jvm_client location of that name");
        return 0;
    }

    s.data = n;
    (*env)->GetByteArrayRegion(env, name, 0, s.len, (jbyte *) n);

    a[0] = method;
    a[1] = target;
    a[2] = fields;
    a[3] = body;

    for (i = 0; i < 4; i++) {
        part[i].len = (*env)->GetArrayLength(env, a[i]);
        part[i].data = ngx_alloc(part[i].len + 1, ngx_cycle->log);

        if (part[i].data == NULL) {
            while (i--) {
                ngx_free(part[i].data);
            }

            ngx_http_jvm_vm_throw(env, "java/lang/OutOfMemoryError", NULL,
                                  "no memory for the call");
            return 0;
        }

        (*env)->GetByteArrayRegion(env, a[i], 0, part[i].len,
                                   (jbyte *) part[i].data);
    }

    err = NULL;
    call = ngx_http_jvm_client_start(id, &s, part, &err);

    for (i = 0; i < 4; i++) {
        ngx_free(part[i].data);
    }

    if (call == NULL && err != NULL) {
        ngx_http_jvm_vm_throw(env, "java/lang/IllegalStateException", &s,
                              err);
    }

    return (jlong) (uintptr_t) call;
}


/* Call's reader has room again (loop only). */

static void JNICALL
ngx_http_jvm_native_client_resume(JNIEnv *env, jclass cls, jlong call)
{
    ngx_http_jvm_client_resume((void *) (uintptr_t) call);
}


/*
 * A piece of the call's request body, copied, to be written (loop only):
 * false when the call's end is closed already.
 */

static jboolean JNICALL
ngx_http_jvm_native_client_write(JNIEnv *env, jclass cls, jlong call,
    jbyteArray piece)
{
    jbyte      *b;
    jsize       len;
    ngx_int_t   rc;

    len = (*env)->GetArrayLength(env, piece);

    b = (*env)->GetPrimitiveArrayCritical(env, piece, NULL);
    if (b == NULL) {
        return JNI_FALSE;
    }

    rc = ngx_http_jvm_client_send((void *) (uintptr_t) call, (u_char *) b,
                                  len);

    (*env)->ReleasePrimitiveArrayCritical(env, piece, b, JNI_ABORT);

    return rc == NGX_OK ? JNI_TRUE : JNI_FALSE;
}


/* Java is done with the call before its end (loop only). */

static void JNICALL
ngx_http_jvm_native_client_close(JNIEnv *env, jclass cls, jlong call)
{
    ngx_http_jvm_client_close((void *) (uintptr_t) call);
}


/*
 * Natives.runShutdownHooks(), on the thread that runs jvm_exit: the hooks
 * the application added with Runtime.addShutdownHook, which the JVM runs
 * only from System.exit or DestroyJavaVM, neither of which a worker calls.
 * java.lang.ApplicationShutdownHooks is not open to Java code outside
 * java.base; JNI reaches it.  It runs each hook on its own thread and joins
 * them; Runtime.addShutdownHook refuses new hooks from then on.
 */

static void JNICALL
ngx_http_jvm_run_shutdown_hooks(JNIEnv *env, jclass cls)
{
    jclass     hooks;
    jmethodID  run;

    hooks = (*env)->FindClass(env, "java/lang/ApplicationShutdownHooks");
    if (hooks == NULL) {
        return;                         /* the exception goes to the caller */
    }

    run = (*env)->GetStaticMethodID(env, hooks, "runHooks", "()V");
    if (run == NULL) {
        return;
    }

    (*env)->CallStaticVoidMethod(env, hooks, run);
    (*env)->DeleteLocalRef(env, hooks);
}


/*
 * Natives.virtualThreadBuilder(scheduler), at the worker's start (jvm_mode
 * coloop): a Thread.Builder of virtual threads whose scheduler is the
 * given Executor.  JDK 21 to 25 have it only as a package-private
 * constructor, java.lang.ThreadBuilders$VirtualThreadBuilder(Executor);
 * Java would need --add-opens java.base/java.lang to call it (an option
 * that also makes the class cache's archive refuse its module graph), JNI
 * does not.  A JDK without it leaves NoClassDefFoundError or
 * NoSuchMethodError pending, which nginx.jvm.LoopScheduler turns into the
 * reason it falls back to jvm_mode virtual.
 */

static jobject JNICALL
ngx_http_jvm_virtual_builder(JNIEnv *env, jclass cls, jobject scheduler)
{
    jclass     builder;
    jobject    b;
    jmethodID  init;

    builder = (*env)->FindClass(env, "java/lang/ThreadBuilders$"
                                     "VirtualThreadBuilder");
    if (builder == NULL) {
        return NULL;                    /* the exception goes to the caller */
    }

    init = (*env)->GetMethodID(env, builder, "<init>",
                               "(Ljava/util/concurrent/Executor;)V");
    if (init == NULL) {
        (*env)->DeleteLocalRef(env, builder);
        return NULL;
    }

    b = (*env)->NewObject(env, builder, init, scheduler);
    (*env)->DeleteLocalRef(env, builder);

    return b;
}


/*
 * Natives.meter(), at the worker's start (Worker.configure): the slots a
 * call's cost goes into (ngx_http_jvm_cost_take), or null where the
 * configuration reads no such figure and Java is not to measure.
 */

static jobject JNICALL
ngx_http_jvm_meter(JNIEnv *env, jclass cls)
{
    if (ngx_http_jvm_vm.meter == NULL) {
        return NULL;
    }

    return (*env)->NewDirectByteBuffer(env, ngx_http_jvm_vm.meter,
                                       2 * sizeof(int64_t));
}


/* Natives.tracing() and Natives.traceStart(): ngx_http_jvm_trace.c */

static void JNICALL
ngx_http_jvm_native_tracing(JNIEnv *env, jclass cls)
{
    ngx_http_jvm_trace_on();
}


static jlong JNICALL
ngx_http_jvm_native_trace_start(JNIEnv *env, jclass cls, jlong r)
{
    return (jlong) ngx_http_jvm_trace_start(
                       (ngx_http_request_t *) (uintptr_t) r);
}


/* A Java byte[] copied into the request's pool. */

static ngx_int_t
ngx_http_jvm_vm_str(JNIEnv *env, ngx_http_request_t *r, jbyteArray a,
    ngx_str_t *s)
{
    s->len = (size_t) (*env)->GetArrayLength(env, a);
    s->data = ngx_pnalloc(r->pool, s->len + 1);

    if (s->data == NULL) {
        (*env)->ThrowNew(env, (*env)->FindClass(env,
                                                "java/lang/OutOfMemoryError"),
                         "nginx: no memory in the request's pool");
        return NGX_ERROR;
    }

    (*env)->GetByteArrayRegion(env, a, 0, (jsize) s->len, (jbyte *) s->data);
    s->data[s->len] = '\0';

    return NGX_OK;
}


static void
ngx_http_jvm_vm_throw(JNIEnv *env, const char *cls, ngx_str_t *name,
    const char *text)
{
    u_char   buf[512], *p;
    jclass   c;

    /* without a name: the text names what it is about (the gate's) */

    if (name) {
        p = ngx_snprintf(buf, sizeof(buf) - 1, "%s: \"%V\"", text, name);

    } else {
        p = ngx_snprintf(buf, sizeof(buf) - 1, "%s", text);
    }

    *p = '\0';

    c = (*env)->FindClass(env, cls);
    if (c != NULL) {
        (*env)->ThrowNew(env, c, (char *) buf);
    }
}


/*
 * The natives of nginx.jvm.Shm, on any thread: they copy between Java's
 * arrays and the zone, and never call into the JVM while the zone's mutex
 * is held (the ngx_http_jvm_dict_*() functions take and release it).  Java
 * checks the arguments first (nginx.jvm.SharedDict); a bad one here is
 * answered with a code, never a crash.
 */

#define NGX_HTTP_JVM_SHM_STACK  1024

#define ngx_http_jvm_shm_dict_of(dict)                                      \
    ((ngx_http_jvm_dict_t *) (uintptr_t) (dict))


/* A key copied out of Java: in buf, or in malloc()'s memory if larger. */

typedef struct {
    u_char   *data;
    size_t    len;
    u_char    buf[NGX_HTTP_JVM_SHM_STACK];
} ngx_http_jvm_shm_key_t;


static ngx_int_t
ngx_http_jvm_shm_key(JNIEnv *env, jbyteArray key, ngx_http_jvm_shm_key_t *k)
{
    k->len = (size_t) (*env)->GetArrayLength(env, key);
    k->data = (k->len <= sizeof(k->buf)) ? k->buf : malloc(k->len);

    if (k->data == NULL) {
        return NGX_ERROR;
    }

    (*env)->GetByteArrayRegion(env, key, 0, (jsize) k->len,
                               (jbyte *) k->data);

    return NGX_OK;
}


static void
ngx_http_jvm_shm_key_free(ngx_http_jvm_shm_key_t *k)
{
    if (k->data != k->buf) {
        free(k->data);
    }
}


/*
 * The bytes of value, pinned, once key and value could ever fit: no copy
 * of a large value; nothing of the JVM's may be called until the caller
 * releases them (ReleasePrimitiveArrayCritical, JNI_ABORT).
 */

static ngx_int_t
ngx_http_jvm_shm_value(JNIEnv *env, ngx_http_jvm_dict_t *d, size_t klen,
    jbyteArray value, u_char **v, size_t *vlen)
{
    *vlen = (size_t) (*env)->GetArrayLength(env, value);

    if (!ngx_http_jvm_dict_fits(d, klen, *vlen)) {
        return NGX_HTTP_JVM_DICT_TOO_LARGE;
    }

    *v = (*env)->GetPrimitiveArrayCritical(env, value, NULL);
    if (*v == NULL) {
        return NGX_HTTP_JVM_DICT_NO_MEMORY;
    }

    return NGX_HTTP_JVM_DICT_OK;
}


/* Copies a zone's name into buf (DICT_NAME_MAX bytes), or declines it. */

static ngx_int_t
ngx_http_jvm_shm_name(JNIEnv *env, jbyteArray name, u_char *buf, size_t *len)
{
    jsize  n;

    n = (*env)->GetArrayLength(env, name);

    if (n <= 0 || n > NGX_HTTP_JVM_DICT_NAME_MAX) {
        return NGX_DECLINED;
    }

    (*env)->GetByteArrayRegion(env, name, 0, n, (jbyte *) buf);
    *len = (size_t) n;

    return NGX_OK;
}


/*
 * out[0] = n when the call went well, or when an incr overflowed (n is then
 * the number it started from, for the exception's message); its code
 * either way.
 */

static jint
ngx_http_jvm_shm_long_out(JNIEnv *env, ngx_int_t rc, jlongArray out, jlong n)
{
    if (rc == NGX_HTTP_JVM_DICT_OK || rc == NGX_HTTP_JVM_DICT_OVERFLOW) {
        (*env)->SetLongArrayRegion(env, out, 0, 1, &n);
    }

    return (jint) rc;
}


static jlong JNICALL
ngx_http_jvm_shm_dict(JNIEnv *env, jclass cls, jbyteArray name)
{
    u_char  buf[NGX_HTTP_JVM_DICT_NAME_MAX];
    size_t  len;

    if (ngx_http_jvm_shm_name(env, name, buf, &len) != NGX_OK) {
        return 0;
    }

    return (jlong) (uintptr_t) ngx_http_jvm_dict_find(buf, len);
}


static jlong JNICALL
ngx_http_jvm_shm_dict_capacity(JNIEnv *env, jclass cls, jlong dict)
{
    return (jlong) ngx_http_jvm_shm_dict_of(dict)->size;
}


/* The value of key: a byte[] of its type and its bytes, or null. */

static jbyteArray JNICALL
ngx_http_jvm_shm_dict_get(JNIEnv *env, jclass cls, jlong dict,
    jbyteArray key)
{
    return ngx_http_jvm_shm_get(env, dict, key, 0);
}


/*
 * The value of key, even expired (not yet removed): a byte[] of its type,
 * 1 if it is stale or else 0, and its bytes; or null.
 */

static jbyteArray JNICALL
ngx_http_jvm_shm_dict_get_stale(JNIEnv *env, jclass cls, jlong dict,
    jbyteArray key)
{
    return ngx_http_jvm_shm_get(env, dict, key, 1);
}


static jbyteArray
ngx_http_jvm_shm_get(JNIEnv *env, jlong dict, jbyteArray key,
    ngx_uint_t with_stale)
{
    u_char                  vbuf[4 * NGX_HTTP_JVM_SHM_STACK];
    u_char                 *v, *p;
    jbyte                   head[2];
    size_t                  cap, len, hlen;
    ngx_int_t               rc;
    ngx_uint_t              type, stale;
    jbyteArray              a;
    ngx_http_jvm_shm_key_t  k;

    if (ngx_http_jvm_shm_key(env, key, &k) != NGX_OK) {
        return NULL;
    }

    v = vbuf;
    cap = sizeof(vbuf);

    for ( ;; ) {
        rc = ngx_http_jvm_dict_get(ngx_http_jvm_shm_dict_of(dict),
                                   k.data, k.len, v, cap, &len, &type,
                                   with_stale ? &stale : NULL);

        if (rc != NGX_HTTP_JVM_DICT_AGAIN) {
            break;
        }

        /* larger than the buffer: again with one of its size */

        p = malloc(len);
        if (p == NULL) {
            rc = NGX_HTTP_JVM_DICT_NO_MEMORY;
            break;
        }

        if (v != vbuf) {
            free(v);
        }

        v = p;
        cap = len;
    }

    a = NULL;

    if (rc == NGX_HTTP_JVM_DICT_OK) {
        head[0] = (jbyte) type;
        head[1] = (jbyte) (with_stale && stale);
        hlen = with_stale ? 2 : 1;

        a = (*env)->NewByteArray(env, (jsize) (hlen + len));

        if (a != NULL) {
            (*env)->SetByteArrayRegion(env, a, 0, (jsize) hlen, head);
            (*env)->SetByteArrayRegion(env, a, (jsize) hlen, (jsize) len,
                                       (jbyte *) v);
        }
    }

    if (v != vbuf) {
        free(v);
    }

    ngx_http_jvm_shm_key_free(&k);

    return a;
}


static jint JNICALL
ngx_http_jvm_shm_dict_set(JNIEnv *env, jclass cls, jlong dict, jint op,
    jbyteArray key, jbyteArray value, jint type, jlong ttl)
{
    u_char                 *v;
    size_t                  vlen;
    ngx_int_t               rc;
    ngx_http_jvm_dict_t    *d;
    ngx_http_jvm_shm_key_t  k;

    if (ngx_http_jvm_shm_key(env, key, &k) != NGX_OK) {
        return NGX_HTTP_JVM_DICT_NO_MEMORY;
    }

    d = ngx_http_jvm_shm_dict_of(dict);

    rc = ngx_http_jvm_shm_value(env, d, k.len, value, &v, &vlen);

    if (rc == NGX_HTTP_JVM_DICT_OK) {
        rc = ngx_http_jvm_dict_set(d, (ngx_uint_t) op, k.data, k.len, v, vlen,
                                   (ngx_uint_t) type, (int64_t) ttl);

        (*env)->ReleasePrimitiveArrayCritical(env, value, v, JNI_ABORT);
    }

    ngx_http_jvm_shm_key_free(&k);

    return (jint) rc;
}


static jint JNICALL
ngx_http_jvm_shm_dict_incr(JNIEnv *env, jclass cls, jlong dict,
    jbyteArray key, jlong delta, jlong init, jlong ttl, jlongArray result)
{
    int64_t                 n;
    ngx_int_t               rc;
    ngx_http_jvm_dict_t    *d;
    ngx_http_jvm_shm_key_t  k;

    if (ngx_http_jvm_shm_key(env, key, &k) != NGX_OK) {
        return NGX_HTTP_JVM_DICT_NO_MEMORY;
    }

    d = ngx_http_jvm_shm_dict_of(dict);
    n = 0;

    if (!ngx_http_jvm_dict_fits(d, k.len, sizeof(int64_t))) {
        rc = NGX_HTTP_JVM_DICT_TOO_LARGE;

    } else {
        rc = ngx_http_jvm_dict_incr(d, k.data, k.len, (int64_t) delta,
                                    (int64_t) init, (int64_t) ttl, &n);
    }

    ngx_http_jvm_shm_key_free(&k);

    return ngx_http_jvm_shm_long_out(env, rc, result, (jlong) n);
}


static jint JNICALL
ngx_http_jvm_shm_dict_delete(JNIEnv *env, jclass cls, jlong dict,
    jbyteArray key)
{
    ngx_int_t               rc;
    ngx_http_jvm_shm_key_t  k;

    if (ngx_http_jvm_shm_key(env, key, &k) != NGX_OK) {
        return NGX_HTTP_JVM_DICT_NO_MEMORY;
    }

    rc = ngx_http_jvm_dict_delete(ngx_http_jvm_shm_dict_of(dict),
                                  k.data, k.len);

    ngx_http_jvm_shm_key_free(&k);

    return (jint) rc;
}


/* At most limit keys: each a 2-byte length (native order) and the bytes. */

static jbyteArray JNICALL
ngx_http_jvm_shm_dict_keys(JNIEnv *env, jclass cls, jlong dict, jint limit)
{
    u_char      *buf;
    size_t       len;
    jbyteArray   a;

    if (ngx_http_jvm_dict_keys(ngx_http_jvm_shm_dict_of(dict),
                               (ngx_uint_t) limit, &buf, &len)
        != NGX_HTTP_JVM_DICT_OK)
    {
        return NULL;
    }

    a = (*env)->NewByteArray(env, (jsize) len);

    if (a != NULL) {
        (*env)->SetByteArrayRegion(env, a, 0, (jsize) len, (jbyte *) buf);
    }

    free(buf);

    return a;
}


/* out: live entries, entries ever evicted to make room. */

static void JNICALL
ngx_http_jvm_shm_dict_stats(JNIEnv *env, jclass cls, jlong dict,
    jlongArray out)
{
    jlong       v[2];
    ngx_uint_t  evicted;

    v[0] = (jlong) ngx_http_jvm_dict_size(ngx_http_jvm_shm_dict_of(dict),
                                          &evicted);
    v[1] = (jlong) evicted;

    (*env)->SetLongArrayRegion(env, out, 0, 2, v);
}


static void JNICALL
ngx_http_jvm_shm_dict_clear(JNIEnv *env, jclass cls, jlong dict)
{
    ngx_http_jvm_dict_clear(ngx_http_jvm_shm_dict_of(dict));
}


static jlong JNICALL
ngx_http_jvm_shm_topic(JNIEnv *env, jclass cls, jbyteArray name)
{
    u_char  buf[NGX_HTTP_JVM_DICT_NAME_MAX];
    size_t  len;

    if (ngx_http_jvm_shm_name(env, name, buf, &len) != NGX_OK) {
        return 0;
    }

    return (jlong) (uintptr_t) ngx_http_jvm_topic_find(buf, len);
}


static jlong JNICALL
ngx_http_jvm_shm_topic_max(JNIEnv *env, jclass cls, jlong topic)
{
    return (jlong) ngx_http_jvm_topic_max(
                       (ngx_http_jvm_topic_t *) (uintptr_t) topic);
}


static jint JNICALL
ngx_http_jvm_shm_topic_publish(JNIEnv *env, jclass cls, jlong topic,
    jbyteArray data, jint type)
{
    u_char     *p;
    size_t      len;
    ngx_int_t   rc;

    len = (size_t) (*env)->GetArrayLength(env, data);

    /* no copy; nothing of the JVM's is called while it is held */

    p = (*env)->GetPrimitiveArrayCritical(env, data, NULL);
    if (p == NULL) {
        return NGX_HTTP_JVM_DICT_NO_MEMORY;
    }

    rc = ngx_http_jvm_topic_publish((ngx_http_jvm_topic_t *) (uintptr_t) topic,
                                    p, len, (ngx_uint_t) type);

    (*env)->ReleasePrimitiveArrayCritical(env, data, p, JNI_ABORT);

    return (jint) rc;
}


/* out: messages published, messages refused (the ring was full). */

static void JNICALL
ngx_http_jvm_shm_topic_stats(JNIEnv *env, jclass cls, jlong topic,
    jlongArray out)
{
    jlong     v[2];
    uint64_t  published, overflows;

    ngx_http_jvm_topic_stats((ngx_http_jvm_topic_t *) (uintptr_t) topic,
                             &published, &overflows);

    v[0] = (jlong) published;
    v[1] = (jlong) overflows;

    (*env)->SetLongArrayRegion(env, out, 0, 2, v);
}


/*
 * Pushes value at one end of the list at key: out[0] is the list's new
 * length.  A value that could never fit is refused before the lock.
 */

static jint JNICALL
ngx_http_jvm_shm_dict_push(JNIEnv *env, jclass cls, jlong dict, jint end,
    jbyteArray key, jbyteArray value, jint type, jlongArray out)
{
    u_char                 *v;
    size_t                  vlen, length;
    ngx_int_t               rc;
    ngx_http_jvm_dict_t    *d;
    ngx_http_jvm_shm_key_t  k;

    if (ngx_http_jvm_shm_key(env, key, &k) != NGX_OK) {
        return NGX_HTTP_JVM_DICT_NO_MEMORY;
    }

    d = ngx_http_jvm_shm_dict_of(dict);
    length = 0;

    rc = ngx_http_jvm_shm_value(env, d, k.len, value, &v, &vlen);

    if (rc == NGX_HTTP_JVM_DICT_OK) {
        rc = ngx_http_jvm_dict_push(d, (ngx_uint_t) end, k.data, k.len, v,
                                    vlen, (ngx_uint_t) type, &length);

        (*env)->ReleasePrimitiveArrayCritical(env, value, v, JNI_ABORT);
    }

    ngx_http_jvm_shm_key_free(&k);

    return ngx_http_jvm_shm_long_out(env, rc, out, (jlong) length);
}


/*
 * Takes the value at one end of the list at key: out[0] is a byte[] of
 * its type and its bytes.
 */

static jint JNICALL
ngx_http_jvm_shm_dict_pop(JNIEnv *env, jclass cls, jlong dict, jint end,
    jbyteArray key, jobjectArray out)
{
    u_char                  vbuf[4 * NGX_HTTP_JVM_SHM_STACK];
    u_char                 *v;
    jbyte                   t;
    size_t                  len;
    ngx_int_t               rc;
    ngx_uint_t              type;
    jbyteArray              a;
    ngx_http_jvm_shm_key_t  k;

    if (ngx_http_jvm_shm_key(env, key, &k) != NGX_OK) {
        return NGX_HTTP_JVM_DICT_NO_MEMORY;
    }

    v = NULL;

    rc = ngx_http_jvm_dict_pop(ngx_http_jvm_shm_dict_of(dict),
                               (ngx_uint_t) end, k.data, k.len,
                               vbuf, sizeof(vbuf), &v, &len, &type);

    if (rc == NGX_HTTP_JVM_DICT_OK) {
        a = (*env)->NewByteArray(env, (jsize) (len + 1));

        if (a != NULL) {
            t = (jbyte) type;
            (*env)->SetByteArrayRegion(env, a, 0, 1, &t);
            (*env)->SetByteArrayRegion(env, a, 1, (jsize) len, (jbyte *) v);
            (*env)->SetObjectArrayElement(env, out, 0, a);
        }

        /* taken from the list: an OutOfMemoryError is pending if lost */
    }

    if (v != NULL && v != vbuf) {
        free(v);
    }

    ngx_http_jvm_shm_key_free(&k);

    return (jint) rc;
}


/* out[0]: the length of the list at key, 0 when absent. */

static jint JNICALL
ngx_http_jvm_shm_dict_llen(JNIEnv *env, jclass cls, jlong dict,
    jbyteArray key, jlongArray out)
{
    size_t                  length;
    ngx_int_t               rc;
    ngx_http_jvm_shm_key_t  k;

    if (ngx_http_jvm_shm_key(env, key, &k) != NGX_OK) {
        return NGX_HTTP_JVM_DICT_NO_MEMORY;
    }

    length = 0;

    rc = ngx_http_jvm_dict_llen(ngx_http_jvm_shm_dict_of(dict),
                                k.data, k.len, &length);

    ngx_http_jvm_shm_key_free(&k);

    return ngx_http_jvm_shm_long_out(env, rc, out, (jlong) length);
}


/* out[0]: the ms key has left to live, 0 when it never expires. */

static jint JNICALL
ngx_http_jvm_shm_dict_ttl(JNIEnv *env, jclass cls, jlong dict,
    jbyteArray key, jlongArray out)
{
    int64_t                 ttl;
    ngx_int_t               rc;
    ngx_http_jvm_shm_key_t  k;

    if (ngx_http_jvm_shm_key(env, key, &k) != NGX_OK) {
        return NGX_HTTP_JVM_DICT_NO_MEMORY;
    }

    ttl = 0;

    rc = ngx_http_jvm_dict_ttl(ngx_http_jvm_shm_dict_of(dict),
                               k.data, k.len, &ttl);

    ngx_http_jvm_shm_key_free(&k);

    return ngx_http_jvm_shm_long_out(env, rc, out, (jlong) ttl);
}


static jint JNICALL
ngx_http_jvm_shm_dict_expire(JNIEnv *env, jclass cls, jlong dict,
    jbyteArray key, jlong ttl)
{
    ngx_int_t               rc;
    ngx_http_jvm_shm_key_t  k;

    if (ngx_http_jvm_shm_key(env, key, &k) != NGX_OK) {
        return NGX_HTTP_JVM_DICT_NO_MEMORY;
    }

    rc = ngx_http_jvm_dict_expire(ngx_http_jvm_shm_dict_of(dict),
                                  k.data, k.len, (int64_t) ttl);

    ngx_http_jvm_shm_key_free(&k);

    return (jint) rc;
}


/* How many expired entries went, at most max (0: all). */

static jint JNICALL
ngx_http_jvm_shm_dict_flush_expired(JNIEnv *env, jclass cls, jlong dict,
    jint max)
{
    ngx_uint_t  n;

    n = ngx_http_jvm_dict_flush_expired(ngx_http_jvm_shm_dict_of(dict),
                                        (ngx_uint_t) (max > 0 ? max : 0));

    return (jint) ngx_min(n, (ngx_uint_t) NGX_MAX_INT32_VALUE);
}
