
/*
 * nginx-jvm: the JVM of a worker process.
 *
 * One JVM per worker, created at worker start on the worker's own thread,
 * which stays attached to it for the worker's life and is the only thread
 * that calls into nginx.
 */


#include "ngx_http_jvm_module.h"

#include <dlfcn.h>
#include <signal.h>
#include <pthread.h>
#include <sys/wait.h>


typedef jint (JNICALL *ngx_http_jvm_create_pt)(JavaVM **vm, void **env,
    void *args);


static ngx_int_t ngx_http_jvm_vm_create(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
static ngx_int_t ngx_http_jvm_vm_bind(ngx_cycle_t *cycle);
static ngx_int_t ngx_http_jvm_vm_buffer(JNIEnv *env, jobject buf,
    jobject *ref, u_char **addr, size_t *cap);
static ngx_int_t ngx_http_jvm_vm_call_string(ngx_cycle_t *cycle,
    jmethodID method, ngx_str_t *arg, const char *what);
static void ngx_http_jvm_check_readable(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
static ngx_uint_t ngx_http_jvm_vm_chooses_gc(ngx_http_jvm_main_conf_t *jmcf);
static ngx_int_t ngx_http_jvm_vm_trial(ngx_cycle_t *cycle,
    ngx_http_jvm_create_pt create, JavaVMInitArgs *args);


ngx_http_jvm_vm_t  ngx_http_jvm_vm;


ngx_int_t
ngx_http_jvm_vm_start(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf)
{
    ngx_str_t   *name;
    ngx_uint_t   i;

    ngx_http_jvm_vm.notify_fd = -1;

    ngx_http_jvm_check_readable(cycle, jmcf);

    if (ngx_http_jvm_vm_create(cycle, jmcf) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_jvm_vm_bind(cycle) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_http_jvm_vm.ready = 1;

    /* handlers are loaded now, so that a missing one is reported once */

    name = jmcf->handlers.elts;

    for (i = 0; i < jmcf->handlers.nelts; i++) {
        (void) ngx_http_jvm_vm_call_string(cycle,
                                           ngx_http_jvm_vm.register_handler,
                                           &name[i], "jvm_content");
    }

    if (jmcf->uses_tasks && ngx_http_jvm_tasks_init(cycle, jmcf) != NGX_OK) {
        return NGX_ERROR;
    }

    if (jmcf->init.len) {
        (void) ngx_http_jvm_vm_call_string(cycle, ngx_http_jvm_vm.init,
                                           &jmcf->init, "jvm_init");
    }

    return NGX_OK;
}


/*
 * Threads started while this thread blocks nginx's signals inherit the mask:
 * those signals are then always delivered to the event loop's thread.
 */

void
ngx_http_jvm_block_signals(sigset_t *old)
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


/* -XX:+UseG1GC, -XX:+UseParallelGC, ... */

static ngx_uint_t
ngx_http_jvm_vm_chooses_gc(ngx_http_jvm_main_conf_t *jmcf)
{
    ngx_str_t   *opt;
    ngx_uint_t   i;

    if (jmcf->options == NULL) {
        return 0;
    }

    opt = jmcf->options->elts;

    for (i = 0; i < jmcf->options->nelts; i++) {
        if (opt[i].len > 10
            && ngx_strncmp(opt[i].data, "-XX:+Use", 8) == 0
            && ngx_strcmp(opt[i].data + opt[i].len - 2, "GC") == 0)
        {
            return 1;
        }
    }

    return 0;
}


static ngx_int_t
ngx_http_jvm_vm_create(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf)
{
    u_char                  *p;
    void                    *lib;
    size_t                   len;
    jint                     rc;
    sigset_t                 old;
    ngx_str_t               *cp, *opt;
    ngx_uint_t               i, n;
    JavaVMOption            *options;
    JavaVMInitArgs           args;
    ngx_http_jvm_create_pt   create;

    lib = dlopen((char *) jmcf->jvm_path.data, RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "jvm: dlopen(\"%V\") failed: %s",
                      &jmcf->jvm_path, dlerror());
        return NGX_ERROR;
    }

    create = (ngx_http_jvm_create_pt) dlsym(lib, "JNI_CreateJavaVM");
    if (create == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "jvm: \"%V\" has no JNI_CreateJavaVM: %s",
                      &jmcf->jvm_path, dlerror());
        return NGX_ERROR;
    }

    options = ngx_pcalloc(cycle->pool, (3 + (jmcf->options
                                             ? jmcf->options->nelts : 0))
                                       * sizeof(JavaVMOption));
    if (options == NULL) {
        return NGX_ERROR;
    }

    cp = jmcf->classpath->elts;
    len = sizeof("-Djava.class.path=");

    for (i = 0; i < jmcf->classpath->nelts; i++) {
        len += cp[i].len + 1;
    }

    p = ngx_pnalloc(cycle->pool, len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    options[0].optionString = (char *) p;
    p = ngx_cpymem(p, "-Djava.class.path=", sizeof("-Djava.class.path=") - 1);

    for (i = 0; i < jmcf->classpath->nelts; i++) {
        if (i) {
            *p++ = ':';
        }

        p = ngx_cpymem(p, cp[i].data, cp[i].len);
    }

    *p = '\0';

    /*
     * -Xrs: the signals nginx uses (QUIT, TERM, HUP, INT, ...) stay nginx's,
     * so that quit, reload and reopen work in a worker with a JVM.
     */

    options[1].optionString = "-Xrs";

    /*
     * The serial collector, unless the options choose another: handlers of
     * a worker mostly run on its one event loop thread, and a concurrent
     * collector's threads and barriers cost CPU and memory for nothing.
     * Naming two collectors would stop the JVM, so it is only a default.
     */

    n = 2;

    if (!ngx_http_jvm_vm_chooses_gc(jmcf)) {
        options[n++].optionString = "-XX:+UseSerialGC";
    }

    if (jmcf->options) {
        opt = jmcf->options->elts;

        for (i = 0; i < jmcf->options->nelts; i++) {
            options[n++].optionString = (char *) opt[i].data;
        }
    }

    args.version = JNI_VERSION_1_8;
    args.nOptions = n;
    args.options = options;
    args.ignoreUnrecognized = JNI_FALSE;

    if (ngx_http_jvm_vm_trial(cycle, create, &args) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_http_jvm_block_signals(&old);

    rc = create(&ngx_http_jvm_vm.vm, (void **) &ngx_http_jvm_vm.env, &args);

    pthread_sigmask(SIG_SETMASK, &old, NULL);

    if (rc != JNI_OK) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "jvm: the JVM \"%V\" failed to start (JNI error %d); "
                      "check \"jvm_options\"; locations with "
                      "\"jvm_content\" answer 500", &jmcf->jvm_path, rc);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * For some bad options (a heap too small, say) the JVM does not fail
 * JNI_CreateJavaVM(): it exits the process, and the master would respawn the
 * worker to exit again at once, in a loop.  So a child process starts the
 * JVM first, with the same options; only if it could does this process.
 * SIGCHLD stays blocked meanwhile, so that nginx's handler does not reap the
 * child before waitpid() does.
 */

static ngx_int_t
ngx_http_jvm_vm_trial(ngx_cycle_t *cycle, ngx_http_jvm_create_pt create,
    JavaVMInitArgs *args)
{
    int        status;
    pid_t      pid;
    JNIEnv    *env;
    JavaVM    *vm;
    sigset_t   old;

    ngx_http_jvm_block_signals(&old);

    pid = fork();

    if (pid == 0) {
        /* the JVM says why it exits on stdout: into the error log with it */
        (void) dup2(ngx_stderr, STDOUT_FILENO);

        if (create(&vm, (void **) &env, args) != JNI_OK) {
            _exit(1);
        }

        (*vm)->DestroyJavaVM(vm);
        _exit(0);
    }

    status = 0;

    if (pid != -1) {
        while (waitpid(pid, &status, 0) == -1 && ngx_errno == NGX_EINTR) {
            /* void */
        }
    }

    pthread_sigmask(SIG_SETMASK, &old, NULL);

    if (pid == -1) {
        /* no trial is possible: start the JVM here all the same */
        ngx_log_error(NGX_LOG_WARN, cycle->log, ngx_errno,
                      "jvm: fork() for a trial start of the JVM failed");
        return NGX_OK;
    }

    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        return NGX_OK;
    }

    ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                  "jvm: the JVM failed to start: a trial start in a child "
                  "process ended with %s %d (the JVM's reason is above); "
                  "check \"jvm_options\"; locations with \"jvm_content\" "
                  "answer 500",
                  WIFEXITED(status) ? "exit status" : "signal",
                  WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));

    return NGX_ERROR;
}


static ngx_int_t
ngx_http_jvm_vm_bind(ngx_cycle_t *cycle)
{
    jclass              cls;
    jobject             buf;
    JNIEnv             *env;
    ngx_http_jvm_vm_t  *jvm;

    jvm = &ngx_http_jvm_vm;
    env = jvm->env;

    cls = (*env)->FindClass(env, "nginx/jvm/Worker");
    if (cls == NULL) {
        (*env)->ExceptionClear(env);
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "jvm: class nginx.jvm.Worker not found: "
                      "\"jvm_classpath\" must hold nginx-jvm.jar");
        return NGX_ERROR;
    }

    jvm->worker = (*env)->NewGlobalRef(env, cls);
    (*env)->DeleteLocalRef(env, cls);

    jvm->request_buffer = (*env)->GetStaticMethodID(env, jvm->worker,
                             "requestBuffer", "(I)Ljava/nio/ByteBuffer;");
    jvm->response_buffer = (*env)->GetStaticMethodID(env, jvm->worker,
                             "responseBuffer", "()Ljava/nio/ByteBuffer;");
    jvm->register_handler = (*env)->GetStaticMethodID(env, jvm->worker,
                             "register",
                             "(Ljava/lang/String;)Ljava/lang/String;");
    jvm->init = (*env)->GetStaticMethodID(env, jvm->worker, "init",
                             "(Ljava/lang/String;)Ljava/lang/String;");
    jvm->handle = (*env)->GetStaticMethodID(env, jvm->worker, "handle",
                                            "(II)I");
    jvm->next = (*env)->GetStaticMethodID(env, jvm->worker, "next",
                                          "(Ljava/lang/Object;)I");
    jvm->close = (*env)->GetStaticMethodID(env, jvm->worker, "close",
                                           "(Ljava/lang/Object;)V");
    jvm->stop = (*env)->GetStaticMethodID(env, jvm->worker, "stop", "()V");
    jvm->configure = (*env)->GetStaticMethodID(env, jvm->worker, "configure",
                             "(IIZ)Ljava/lang/String;");
    jvm->submit = (*env)->GetStaticMethodID(env, jvm->worker, "submit",
                                            "(IIJIZ)I");
    jvm->poll = (*env)->GetStaticMethodID(env, jvm->worker, "poll", "()J");
    jvm->take = (*env)->GetStaticMethodID(env, jvm->worker, "take", "(J)I");
    jvm->cancel = (*env)->GetStaticMethodID(env, jvm->worker, "cancel",
                                            "(J)V");
    jvm->pending = (*env)->GetStaticFieldID(env, jvm->worker, "pending",
                                            "Ljava/lang/Object;");

    if ((*env)->ExceptionCheck(env)) {
        (*env)->ExceptionDescribe(env);
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "jvm: nginx.jvm.Worker does not match this module: "
                      "nginx-jvm.jar and ngx_http_jvm_module.so differ "
                      "in version");
        return NGX_ERROR;
    }

    buf = (*env)->CallStaticObjectMethod(env, jvm->worker,
                                         jvm->request_buffer, (jint) 0);

    if (ngx_http_jvm_vm_buffer(env, buf, &jvm->req_buf, &jvm->req_addr,
                               &jvm->req_cap)
        != NGX_OK)
    {
        return ngx_http_jvm_vm_failed(cycle->log, "request buffer");
    }

    ngx_http_jvm_vm_refresh_response_buffer();

    if (jvm->resp_addr == NULL) {
        return ngx_http_jvm_vm_failed(cycle->log, "response buffer");
    }

    return NGX_OK;
}


/* Takes a direct ByteBuffer (a local ref) as the new cached buffer. */

static ngx_int_t
ngx_http_jvm_vm_buffer(JNIEnv *env, jobject buf, jobject *ref, u_char **addr,
    size_t *cap)
{
    if (buf == NULL || (*env)->ExceptionCheck(env)) {
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


ngx_int_t
ngx_http_jvm_vm_request_buffer(ngx_log_t *log, size_t size)
{
    jobject             buf;
    JNIEnv             *env;
    ngx_http_jvm_vm_t  *jvm;

    jvm = &ngx_http_jvm_vm;
    env = jvm->env;

    if (size > NGX_MAX_INT32_VALUE) {
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "jvm: request of %uz bytes is too large to describe",
                      size);
        return NGX_ERROR;
    }

    buf = (*env)->CallStaticObjectMethod(env, jvm->worker,
                                         jvm->request_buffer, (jint) size);

    if (ngx_http_jvm_vm_buffer(env, buf, &jvm->req_buf, &jvm->req_addr,
                               &jvm->req_cap)
        != NGX_OK)
    {
        return ngx_http_jvm_vm_failed(log, "Worker.requestBuffer()");
    }

    return NGX_OK;
}


/* Java replaced the response buffer with a bigger one. */

void
ngx_http_jvm_vm_refresh_response_buffer(void)
{
    jobject             buf;
    JNIEnv             *env;
    ngx_http_jvm_vm_t  *jvm;

    jvm = &ngx_http_jvm_vm;
    env = jvm->env;

    buf = (*env)->CallStaticObjectMethod(env, jvm->worker,
                                         jvm->response_buffer);

    if (ngx_http_jvm_vm_buffer(env, buf, &jvm->resp_buf, &jvm->resp_addr,
                               &jvm->resp_cap)
        != NGX_OK)
    {
        jvm->resp_addr = NULL;
        jvm->resp_cap = 0;
    }
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

    env = ngx_http_jvm_vm.env;

    if ((*env)->ExceptionCheck(env)) {
        (*env)->ExceptionDescribe(env);
        (*env)->ExceptionClear(env);
    }

    ngx_log_error(NGX_LOG_ERR, log, 0, "jvm: %s failed", what);

    return NGX_ERROR;
}


static ngx_int_t
ngx_http_jvm_vm_call_string(ngx_cycle_t *cycle, jmethodID method,
    ngx_str_t *arg, const char *what)
{
    u_char      *p;
    jsize        len;
    JNIEnv      *env;
    jstring      s, err;
    const char  *text;

    env = ngx_http_jvm_vm.env;

    p = ngx_pnalloc(cycle->pool, arg->len + 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    ngx_cpystrn(p, arg->data, arg->len + 1);

    s = (*env)->NewStringUTF(env, (char *) p);
    if (s == NULL) {
        return ngx_http_jvm_vm_failed(cycle->log, what);
    }

    err = (*env)->CallStaticObjectMethod(env, ngx_http_jvm_vm.worker, method,
                                         s);
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


/*
 * The JVM reads the class path after this process took the "user"
 * directive's identity: say plainly what that user cannot read.
 */

static void
ngx_http_jvm_check_readable(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf)
{
    ngx_str_t   *cp;
    ngx_uint_t   i;

    cp = jmcf->classpath->elts;

    for (i = 0; i < jmcf->classpath->nelts; i++) {
        if (access((char *) cp[i].data, R_OK) != 0) {
            ngx_log_error(NGX_LOG_ERR, cycle->log, ngx_errno,
                          "jvm: class path entry \"%V\" is not readable by "
                          "the worker's user (uid %d)",
                          &cp[i], (int) geteuid());
        }
    }
}


/*
 * At worker exit the JVM is left to the process's exit: DestroyJavaVM()
 * would wait for every non-daemon thread a handler started, and a graceful
 * quit must not hang on them.
 */

void
ngx_http_jvm_vm_stop(ngx_cycle_t *cycle)
{
    JNIEnv  *env;

    if (!ngx_http_jvm_vm.ready) {
        return;
    }

    env = ngx_http_jvm_vm.env;

    (*env)->CallStaticVoidMethod(env, ngx_http_jvm_vm.worker,
                                 ngx_http_jvm_vm.stop);

    if ((*env)->ExceptionCheck(env)) {
        (*env)->ExceptionClear(env);
    }

    ngx_http_jvm_vm.ready = 0;
}


/*
 * nginx truncates a log entry at NGX_MAX_ERROR_STR; a stack trace is longer,
 * so it is logged in pieces cut at line ends.
 */

void
ngx_http_jvm_log_text(ngx_uint_t level, ngx_log_t *log, u_char *text,
    size_t len)
{
    u_char  *p, *last, *cut;
    size_t   max;

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
