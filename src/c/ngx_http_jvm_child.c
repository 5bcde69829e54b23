
/*
 * nginx-jvm: the master's JVMs, each in a child process: the trial start
 * of a configuration's JVM options, and the two JVMs that build the class
 * cache (jvm_cache).  The master itself never loads a JVM; these children
 * start one with the workers' options (ngx_http_jvm_vm_args) and exit.
 */


#include "ngx_http_jvm_jni.h"

#include <signal.h>
#include <pthread.h>
#include <sys/wait.h>
#include <grp.h>


/* The master's JVMs in child processes, and how long one may run. */
#define NGX_HTTP_JVM_CHILD_TRIAL   0
#define NGX_HTTP_JVM_CHILD_COMPILE 1
#define NGX_HTTP_JVM_CHILD_ARCHIVE 2
#define NGX_HTTP_JVM_CHILD_LIMIT   300000

static char  *ngx_http_jvm_child_jobs[] = { "trial", "compiling", "archiving" };


static ngx_int_t ngx_http_jvm_vm_child(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf, ngx_uint_t job);
static ngx_int_t ngx_http_jvm_vm_child_user(ngx_cycle_t *cycle);
static int ngx_http_jvm_vm_child_job(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf, ngx_uint_t job);
static ngx_int_t ngx_http_jvm_vm_compile(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
static ngx_uint_t ngx_http_jvm_vm_child_stop(void);
static void ngx_http_jvm_vm_child_kill(pid_t pid);


/*
 * For some bad options (a heap too small, say) the JVM does not fail
 * JNI_CreateJavaVM(): it exits the process, and the master would respawn the
 * worker to exit again at once, in a loop.  So the master, once for each
 * configuration it loads, starts the JVM in a child process with the same
 * options; if that fails, the workers do not try (and say so).  The master
 * itself never loads a JVM.  The same children build the class cache.
 */

ngx_int_t
ngx_http_jvm_vm_trial(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf)
{
    return ngx_http_jvm_vm_child(cycle, jmcf, NGX_HTTP_JVM_CHILD_TRIAL);
}


/*
 * The class cache, in jmcf->cache_entry (ngx_http_jvm_cache.c chose it):
 * a first JVM compiles the handlers' namespaces and copies the class path's
 * directories into jars (nginx.jvm.ClassCache); a second one, on the cache's
 * class path, loads the handlers as a worker does and archives every class
 * it loaded when it ends (a dynamic CDS archive).  The second one is also
 * the trial start.  NGX_DECLINED: no cache, but the JVM starts.
 */

ngx_int_t
ngx_http_jvm_vm_build_cache(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf)
{
    ngx_int_t  rc;

    rc = ngx_http_jvm_vm_child(cycle, jmcf, NGX_HTTP_JVM_CHILD_COMPILE);

    if (rc == NGX_DECLINED) {
        /* the JVM started but the cache was not built: a plain trial */
        return ngx_http_jvm_vm_trial(cycle, jmcf) == NGX_BUSY ? NGX_BUSY
                                                               : NGX_DECLINED;
    }

    if (rc != NGX_OK) {
        return rc;
    }

    return ngx_http_jvm_vm_child(cycle, jmcf, NGX_HTTP_JVM_CHILD_ARCHIVE);
}


/*
 * A JVM in a child process; NGX_OK when it did its job, NGX_DECLINED when
 * it started but failed at the job, NGX_ERROR when it could not start (the
 * workers then do not try), NGX_ABORT when a handler could not be loaded
 * (the configuration is refused), NGX_BUSY when a stop came meanwhile (the
 * child killed; the configuration is refused, and the stop acted upon).
 * SIGCHLD stays blocked meanwhile, so that nginx's handler does not reap
 * the child before waitpid() does; a child that runs past the bound (a
 * handler's namespace that never finishes loading) is killed.
 */

static void
ngx_http_jvm_vm_child_kill(pid_t pid)
{
    int  status;

    (void) kill(pid, SIGKILL);

    while (waitpid(pid, &status, 0) == -1 && ngx_errno == NGX_EINTR) {
        /* void */
    }
}


static ngx_int_t
ngx_http_jvm_vm_child(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf,
    ngx_uint_t job)
{
    int                         status;
    pid_t                       pid;
    sigset_t                    old;
    ngx_msec_t                  waited;
    ngx_http_jvm_generation_t  *gen;

    gen = jmcf->zone->data;
    gen->jvm_failed = 0;

    ngx_http_jvm_vm_block_signals(&old);

    pid = fork();

    if (pid == 0) {
        /* the JVM says why it exits on stdout: into the error log with it */
        (void) dup2(ngx_stderr, STDOUT_FILENO);
        status = ngx_http_jvm_vm_child_job(cycle, jmcf, job);
        ngx_http_jvm_vm_remove_attach_socket(getpid());
        _exit(status);
    }

    ngx_log_debug2(NGX_LOG_DEBUG_CORE, cycle->log, 0,
                   "jvm: the master's %s JVM: process %P",
                   ngx_http_jvm_child_jobs[job], pid);

    status = 0;
    waited = 0;

    while (pid != -1) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            break;
        }

        if (ngx_http_jvm_vm_child_stop()) {
            ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                          "jvm: a stop came while the master's %s JVM ran: "
                          "killed", ngx_http_jvm_child_jobs[job]);
            ngx_http_jvm_vm_child_kill(pid);

            /*
             * the stop is delivered as soon as the caller's mask lets it
             * (ngx_http_jvm_cache_prepare() keeps it blocked until its
             * half-built entry is gone), and then acted upon
             */
            pthread_sigmask(SIG_SETMASK, &old, NULL);
            return NGX_BUSY;
        }

        if (waited >= NGX_HTTP_JVM_CHILD_LIMIT) {
            ngx_log_error(NGX_LOG_WARN, cycle->log, 0,
                          "jvm: the master's %s JVM ran for over %M ms: "
                          "killed", ngx_http_jvm_child_jobs[job],
                          (ngx_msec_t) NGX_HTTP_JVM_CHILD_LIMIT);
            ngx_http_jvm_vm_child_kill(pid);

            pthread_sigmask(SIG_SETMASK, &old, NULL);
            return NGX_DECLINED;
        }

        ngx_msleep(10);
        waited += 10;
    }

    pthread_sigmask(SIG_SETMASK, &old, NULL);

    if (pid == -1) {
        /* no trial is possible: the workers try all the same */
        ngx_log_error(NGX_LOG_WARN, cycle->log, ngx_errno,
                      "jvm: fork() for a trial start of the JVM failed");
        return NGX_DECLINED;
    }

    ngx_log_debug4(NGX_LOG_DEBUG_CORE, cycle->log, 0,
                   "jvm: the master's %s JVM ended after %M ms: %s %d",
                   ngx_http_jvm_child_jobs[job], waited,
                   WIFEXITED(status) ? "exit status" : "signal",
                   WIFEXITED(status) ? WEXITSTATUS(status)
                                     : WTERMSIG(status));

    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        return NGX_OK;
    }

    if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
        return NGX_DECLINED;
    }

    if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "jvm: a handler cannot be loaded (the reason is "
                      "above): the master's JVM loaded the handlers as a "
                      "worker would, and one failed");
        return NGX_ABORT;
    }

    gen->jvm_failed = 1;

    ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                  "jvm: the master's trial start of the JVM in a child "
                  "process ended with %s %d (the JVM's reason is above); "
                  "check \"jvm_options\"; the workers will not start it",
                  WIFEXITED(status) ? "exit status" : "signal",
                  WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));

    return NGX_ERROR;
}


/*
 * Whether a stop (INT, TERM or QUIT, blocked while a child runs) waits for
 * the master.  A class cache's build can take a minute on a busy machine:
 * the master would act on the stop only after it, and until its handlers
 * are set (a first start), with INT ignored by a shell's background job,
 * not at all.  A signal still ignored is no stop.
 */

static ngx_uint_t
ngx_http_jvm_vm_child_stop(void)
{
    int                i;
    sigset_t           pending;
    struct sigaction   sa;
    static int         stops[] = { SIGINT, SIGTERM, SIGQUIT };

    if (sigpending(&pending) == -1) {
        return 0;
    }

    for (i = 0; i < 3; i++) {
        if (sigismember(&pending, stops[i])
            && sigaction(stops[i], NULL, &sa) == 0
            && sa.sa_handler != SIG_IGN)
        {
            return 1;
        }
    }

    return 0;
}


/*
 * The master's JVMs load the application's namespaces (their top-level
 * code runs): as the workers' user, never as root, like the workers.
 */

static ngx_int_t
ngx_http_jvm_vm_child_user(ngx_cycle_t *cycle)
{
    ngx_core_conf_t  *ccf;

    ccf = (ngx_core_conf_t *) ngx_get_conf(cycle->conf_ctx, ngx_core_module);

    if (geteuid() != 0 || ccf->user == (ngx_uid_t) NGX_CONF_UNSET_UINT) {
        return NGX_OK;
    }

    if (setgid(ccf->group) == -1
        || initgroups(ccf->username, ccf->group) == -1
        || setuid(ccf->user) == -1)
    {
        ngx_log_error(NGX_LOG_WARN, cycle->log, ngx_errno,
                      "jvm: the master's JVM could not take the user "
                      "\"%s\"", ccf->username);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * In the child: exit status 0 done, 1 the JVM did not start, 2 job failed,
 * 3 a handler cannot be loaded.
 */

static int
ngx_http_jvm_vm_child_job(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf,
    ngx_uint_t job)
{
    char                    *extra[3];
    jclass                   cls;
    JNIEnv                  *env;
    JavaVM                  *vm;
    jmethodID                exit;
    ngx_str_t               *name, *classes;
    ngx_uint_t               i;
    ngx_array_t             *cp;
    JavaVMInitArgs           args;
    ngx_http_jvm_create_pt   create;

    if (ngx_http_jvm_vm_child_user(cycle) != NGX_OK) {
        return 2;
    }

    cp = jmcf->classpath;
    extra[0] = NULL;

    switch (job) {

    case NGX_HTTP_JVM_CHILD_COMPILE:
        /* Clojure's compiler wants its output directory on the class path */
        cp = ngx_array_create(cycle->pool, jmcf->classpath->nelts + 1,
                              sizeof(ngx_str_t));
        if (cp == NULL) {
            return 2;
        }

        classes = ngx_array_push(cp);
        if (classes == NULL) {
            return 2;
        }

        classes->len = jmcf->cache_entry.len + sizeof("/classes") - 1;
        classes->data = ngx_pnalloc(cycle->pool, classes->len + 1);
        if (classes->data == NULL) {
            return 2;
        }

        ngx_sprintf(classes->data, "%V/classes%Z", &jmcf->cache_entry);

        name = ngx_array_push_n(cp, jmcf->classpath->nelts);
        if (name == NULL) {
            return 2;
        }

        ngx_memcpy(name, jmcf->classpath->elts,
                   jmcf->classpath->nelts * sizeof(ngx_str_t));
        break;

    case NGX_HTTP_JVM_CHILD_ARCHIVE:
        /* the archiving warnings name each class left out: noise */
        cp = jmcf->cache_classpath;
        extra[0] = (char *) jmcf->cache_dump.data;
        extra[1] = "-Xlog:cds*=error:stderr";
        extra[2] = NULL;
        break;
    }

    if (ngx_http_jvm_vm_args(cycle, jmcf, cp, extra, NULL, &args, &create)
        != NGX_OK
        || create(&vm, (void **) &env, &args) != JNI_OK)
    {
        return 1;
    }

    if (job == NGX_HTTP_JVM_CHILD_TRIAL) {
        return 0;
    }

    ngx_http_jvm_env = env;

    ngx_http_jvm_shared_init(jmcf);
    ngx_http_jvm_topics_names(jmcf);

    if (job == NGX_HTTP_JVM_CHILD_COMPILE) {
        return ngx_http_jvm_natives_shm(cycle) == NGX_OK
               && ngx_http_jvm_vm_compile(cycle, jmcf) == NGX_OK ? 0 : 2;
    }

    /* the classes a worker loads, archived as the JVM ends */

    if (ngx_http_jvm_vm_bind(cycle) != NGX_OK
        || ngx_http_jvm_natives_init(cycle) != NGX_OK)
    {
        return 2;
    }

    name = jmcf->handlers.elts;

    /*
     * A handler that cannot load here (the class cache's jar, compiled from
     * these sources, loaded as a worker loads it) cannot in a worker: no
     * such var or class, or a namespace that fails as it loads.
     */

    for (i = 0; i < jmcf->handlers.nelts; i++) {
        if (ngx_http_jvm_vm_register(cycle, &name[i]) != NGX_OK) {
            return 3;
        }
    }

    /*
     * System.exit() archives the classes, and unlike DestroyJavaVM() does
     * not wait for threads that a handler's namespace started.
     */

    cls = (*env)->FindClass(env, "java/lang/System");
    if (cls == NULL) {
        return 2;
    }

    exit = (*env)->GetStaticMethodID(env, cls, "exit", "(I)V");
    if (exit == NULL) {
        return 2;
    }

    (*env)->CallStaticVoidMethod(env, cls, exit, (jint) 0);

    return 2;
}


/* nginx.jvm.ClassCache.build(entry, classpath, handler names) */

static ngx_int_t
ngx_http_jvm_vm_compile(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf)
{
    jclass        cls, string;
    JNIEnv       *env;
    jstring       dir, err;
    jmethodID     build;
    ngx_str_t    *cp, *name;
    ngx_uint_t    i, n;
    const char   *text;
    jobjectArray  classpath, names;

    env = ngx_http_jvm_env;

    cls = (*env)->FindClass(env, "nginx/jvm/ClassCache");
    string = (*env)->FindClass(env, "java/lang/String");

    if (cls == NULL || string == NULL) {
        return ngx_http_jvm_vm_failed(cycle->log, "ClassCache");
    }

    build = (*env)->GetStaticMethodID(env, cls, "build",
                                      "(Ljava/lang/String;[Ljava/lang/String;"
                                      "[Ljava/lang/String;)Ljava/lang/String;");
    if (build == NULL) {
        return ngx_http_jvm_vm_failed(cycle->log, "ClassCache.build");
    }

    cp = jmcf->classpath->elts;
    classpath = (*env)->NewObjectArray(env, jmcf->classpath->nelts, string,
                                       NULL);
    if (classpath == NULL) {
        return ngx_http_jvm_vm_failed(cycle->log, "ClassCache.build");
    }

    for (i = 0; i < jmcf->classpath->nelts; i++) {
        (*env)->SetObjectArrayElement(env, classpath, i,
                                      (*env)->NewStringUTF(env,
                                                      (char *) cp[i].data));
    }

    n = jmcf->handlers.nelts + (jmcf->init.len ? 1 : 0);
    names = (*env)->NewObjectArray(env, n, string, NULL);
    if (names == NULL) {
        return ngx_http_jvm_vm_failed(cycle->log, "ClassCache.build");
    }

    name = jmcf->handlers.elts;

    for (i = 0; i < jmcf->handlers.nelts; i++) {
        (*env)->SetObjectArrayElement(env, names, i,
                                      (*env)->NewStringUTF(env,
                                                    (char *) name[i].data));
    }

    if (jmcf->init.len) {
        (*env)->SetObjectArrayElement(env, names, i,
                                      (*env)->NewStringUTF(env,
                                                   (char *) jmcf->init.data));
    }

    dir = (*env)->NewStringUTF(env, (char *) jmcf->cache_entry.data);
    if ((*env)->ExceptionCheck(env)) {
        return ngx_http_jvm_vm_failed(cycle->log, "ClassCache.build");
    }

    err = (*env)->CallStaticObjectMethod(env, cls, build, dir, classpath,
                                         names);

    if ((*env)->ExceptionCheck(env)) {
        return ngx_http_jvm_vm_failed(cycle->log, "ClassCache.build");
    }

    if (err == NULL) {
        return NGX_OK;
    }

    text = (*env)->GetStringUTFChars(env, err, NULL);

    if (text) {
        ngx_http_jvm_log_text(NGX_LOG_WARN, cycle->log, (u_char *) text,
                              ngx_strlen(text));
        (*env)->ReleaseStringUTFChars(env, err, text);
    }

    return NGX_ERROR;
}
