
/*
 * nginx-jvm: handlers off the event loop.
 *
 * A request for a pool, virtual-thread or async location becomes a task: the
 * request is described to Java as for the event loop, Java starts the
 * handler on a JVM thread and returns at once.  When the handler answers (or
 * a streamed body has its next piece), a JVM thread queues the task as ready
 * and writes to this module's eventfd; the event loop then takes what is
 * ready.  No JVM thread ever calls nginx: the eventfd write is all they do.
 *
 * Java knows a task by the address of its request's ngx_http_jvm_ctx_t.
 * When the request ends, however it ends, the pool cleanup cancels the task
 * on the event loop, so Java never names that address again.
 */


#include "ngx_http_jvm_module.h"

#include <sys/eventfd.h>


static void JNICALL ngx_http_jvm_wake(JNIEnv *env, jclass cls);
static void ngx_http_jvm_task_notified(ngx_event_t *ev);
static void ngx_http_jvm_task_ready(ngx_http_jvm_ctx_t *ctx);
static void ngx_http_jvm_task_timeout(ngx_event_t *ev);


/* like ngx_notify's eventfd, outside the worker's connection pool */
static ngx_connection_t  ngx_http_jvm_notify_conn;
static ngx_event_t       ngx_http_jvm_notify_rev;
static ngx_event_t       ngx_http_jvm_notify_wev;


ngx_int_t
ngx_http_jvm_tasks_init(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf)
{
    JNIEnv             *env;
    jstring             err;
    sigset_t            old;
    const char         *text;
    JNINativeMethod     wake;
    ngx_http_jvm_vm_t  *jvm;

    jvm = &ngx_http_jvm_vm;
    env = jvm->env;

    jvm->notify_fd = eventfd(0, EFD_NONBLOCK|EFD_CLOEXEC);
    if (jvm->notify_fd == -1) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, ngx_errno,
                      "jvm: eventfd() failed");
        return NGX_ERROR;
    }

    ngx_http_jvm_notify_conn.fd = jvm->notify_fd;
    ngx_http_jvm_notify_conn.read = &ngx_http_jvm_notify_rev;
    ngx_http_jvm_notify_conn.write = &ngx_http_jvm_notify_wev;
    ngx_http_jvm_notify_conn.log = cycle->log;

    ngx_http_jvm_notify_rev.data = &ngx_http_jvm_notify_conn;
    ngx_http_jvm_notify_rev.handler = ngx_http_jvm_task_notified;
    ngx_http_jvm_notify_rev.log = cycle->log;
    ngx_http_jvm_notify_wev.data = &ngx_http_jvm_notify_conn;
    ngx_http_jvm_notify_wev.log = cycle->log;

    if (ngx_add_event(&ngx_http_jvm_notify_rev, NGX_READ_EVENT, 0)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    wake.name = "wake";
    wake.signature = "()V";
    wake.fnPtr = (void *) ngx_http_jvm_wake;

    if ((*env)->RegisterNatives(env, jvm->worker, &wake, 1) != JNI_OK) {
        return ngx_http_jvm_vm_failed(cycle->log, "RegisterNatives()");
    }

    /* the pool's threads are started now, with nginx's signals blocked */

    ngx_http_jvm_block_signals(&old);

    err = (*env)->CallStaticObjectMethod(env, jvm->worker, jvm->configure,
                                         (jint) (jmcf->uses_pool
                                                 ? jmcf->pool_size : 0),
                                         (jint) jmcf->queue,
                                         (jboolean) jmcf->uses_virtual);

    pthread_sigmask(SIG_SETMASK, &old, NULL);

    if ((*env)->ExceptionCheck(env)) {
        return ngx_http_jvm_vm_failed(cycle->log, "Worker.configure()");
    }

    if (err != NULL) {
        /* said once here; each request of such a location answers 503 */
        jvm->no_virtual = 1;

        text = (*env)->GetStringUTFChars(env, err, NULL);
        if (text) {
            ngx_log_error(NGX_LOG_ERR, cycle->log, 0,
                          "jvm: %s; locations with \"jvm_mode virtual\" "
                          "answer 503", text);
            (*env)->ReleaseStringUTFChars(env, err, text);
        }

        (*env)->DeleteLocalRef(env, err);
    }

    return NGX_OK;
}


/* Worker.wake(), on any JVM thread. */

static void JNICALL
ngx_http_jvm_wake(JNIEnv *env, jclass cls)
{
    uint64_t  one = 1;

    if (write(ngx_http_jvm_vm.notify_fd, &one, sizeof(uint64_t)) == -1) {
        /* EAGAIN: the counter is full, so the loop is being woken anyway */
    }
}


ngx_int_t
ngx_http_jvm_task_submit(ngx_http_request_t *r, size_t len)
{
    jint                      n;
    JNIEnv                   *env;
    ngx_http_jvm_vm_t        *jvm;
    ngx_http_jvm_ctx_t       *ctx;
    ngx_http_jvm_loc_conf_t  *jlcf;

    jvm = &ngx_http_jvm_vm;
    env = jvm->env;
    jlcf = ngx_http_get_module_loc_conf(r, ngx_http_jvm_module);

    if (jlcf->mode == NGX_HTTP_JVM_VIRTUAL && jvm->no_virtual) {
        return NGX_HTTP_SERVICE_UNAVAILABLE;
    }

    ctx = ngx_http_jvm_get_ctx(r);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* the timer keeps a quitting worker alive until the task answers */

    ctx->timer.handler = ngx_http_jvm_task_timeout;
    ctx->timer.data = r;
    ctx->timer.log = r->connection->log;

    n = (*env)->CallStaticIntMethod(env, jvm->worker, jvm->submit,
                                    (jint) jlcf->handler, (jint) len,
                                    (jlong) (uintptr_t) ctx,
                                    (jint) jlcf->mode,
                                    (jboolean) jlcf->async);

    if ((*env)->ExceptionCheck(env)) {
        ngx_http_jvm_vm_failed(r->connection->log, "Worker.submit()");
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (n != 0) {
        /* refused (503) or failed at once: an encoded error response */
        if (n < 0) {
            ngx_http_jvm_vm_refresh_response_buffer();
            n = -n;
        }

        return ngx_http_jvm_send_response(r, (size_t) n);
    }

    ctx->task = 1;
    ngx_add_timer(&ctx->timer, jlcf->response_timeout);

    r->main->count++;
    r->read_event_handler = ngx_http_test_reading;
    r->write_event_handler = ngx_http_request_empty_handler;

    return NGX_DONE;
}


/* The eventfd is readable: take every ready task. */

static void
ngx_http_jvm_task_notified(ngx_event_t *ev)
{
    jlong               id;
    JNIEnv             *env;
    uint64_t            count;
    ngx_http_jvm_vm_t  *jvm;

    jvm = &ngx_http_jvm_vm;
    env = jvm->env;

    if (read(jvm->notify_fd, &count, sizeof(uint64_t)) == -1) {
        /* EAGAIN: woken for tasks an earlier pass already took */
    }

    for ( ;; ) {
        id = (*env)->CallStaticLongMethod(env, jvm->worker, jvm->poll);

        if ((*env)->ExceptionCheck(env)) {
            ngx_http_jvm_vm_failed(ev->log, "Worker.poll()");
            return;
        }

        if (id == 0) {
            return;
        }

        ngx_http_jvm_task_ready((ngx_http_jvm_ctx_t *) (uintptr_t) id);
    }
}


static void
ngx_http_jvm_task_ready(ngx_http_jvm_ctx_t *ctx)
{
    jint                 n;
    JNIEnv              *env;
    ngx_int_t            rc;
    ngx_connection_t    *c;
    ngx_http_request_t  *r;

    env = ngx_http_jvm_vm.env;
    r = ctx->request;
    c = r->connection;

    ngx_http_set_log_request(c->log, r);

    if (ctx->responded) {
        /* the next piece of a body produced on a JVM thread */

        if (!ctx->waiting) {
            return;
        }

        ctx->waiting = 0;

        if (ctx->timer.timer_set) {
            ngx_del_timer(&ctx->timer);
        }

        rc = ngx_http_jvm_stream(r, ctx);

        if (rc == NGX_AGAIN) {
            return;
        }

        ngx_http_finalize_request(r, rc);
        ngx_http_run_posted_requests(c);
        return;
    }

    ctx->responded = 1;

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    n = (*env)->CallStaticIntMethod(env, ngx_http_jvm_vm.worker,
                                    ngx_http_jvm_vm.take,
                                    (jlong) (uintptr_t) ctx);

    if ((*env)->ExceptionCheck(env)) {
        ngx_http_jvm_vm_failed(c->log, "Worker.take()");
        rc = NGX_HTTP_INTERNAL_SERVER_ERROR;

    } else {
        if (n < 0) {
            ngx_http_jvm_vm_refresh_response_buffer();
            n = -n;
        }

        rc = ngx_http_jvm_send_response(r, (size_t) n);
    }

    ngx_http_finalize_request(r, rc);
    ngx_http_run_posted_requests(c);
}


/* A streamed body waits for its next piece from a JVM thread. */

void
ngx_http_jvm_task_wait(ngx_http_request_t *r, ngx_http_jvm_ctx_t *ctx)
{
    ngx_http_jvm_loc_conf_t  *jlcf;

    jlcf = ngx_http_get_module_loc_conf(r, ngx_http_jvm_module);

    ctx->waiting = 1;

    if (ctx->timer.handler == NULL) {
        ctx->timer.handler = ngx_http_jvm_task_timeout;
        ctx->timer.data = r;
        ctx->timer.log = r->connection->log;
    }

    ngx_add_timer(&ctx->timer, jlcf->response_timeout);
}


static void
ngx_http_jvm_task_timeout(ngx_event_t *ev)
{
    ngx_connection_t         *c;
    ngx_http_request_t       *r;
    ngx_http_jvm_ctx_t       *ctx;
    ngx_http_jvm_loc_conf_t  *jlcf;

    r = ev->data;
    c = r->connection;
    ctx = ngx_http_get_module_ctx(r, ngx_http_jvm_module);
    jlcf = ngx_http_get_module_loc_conf(r, ngx_http_jvm_module);

    ngx_http_set_log_request(c->log, r);

    ngx_http_jvm_task_cancel(ctx);

    if (!ctx->responded) {
        ngx_log_error(NGX_LOG_ERR, c->log, 0,
                      "jvm: the handler gave no response within "
                      "jvm_response_timeout (%M ms)", jlcf->response_timeout);

        ctx->responded = 1;
        ngx_http_finalize_request(r, NGX_HTTP_GATEWAY_TIME_OUT);

    } else {
        ngx_log_error(NGX_LOG_ERR, c->log, 0,
                      "jvm: the response body produced nothing for "
                      "jvm_response_timeout (%M ms)", jlcf->response_timeout);

        ngx_http_finalize_request(r, NGX_ERROR);
    }

    ngx_http_run_posted_requests(c);
}


/* The request is over: Java forgets the task and stops its body. */

void
ngx_http_jvm_task_cancel(ngx_http_jvm_ctx_t *ctx)
{
    JNIEnv  *env;

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    if (!ctx->task) {
        return;
    }

    ctx->task = 0;

    env = ngx_http_jvm_vm.env;

    (*env)->CallStaticVoidMethod(env, ngx_http_jvm_vm.worker,
                                 ngx_http_jvm_vm.cancel,
                                 (jlong) (uintptr_t) ctx);

    if ((*env)->ExceptionCheck(env)) {
        (*env)->ExceptionClear(env);
    }
}
