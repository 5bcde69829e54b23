
/*
 * nginx-jvm: the JVM of a worker process, and every call down into it.
 *
 * One JVM per worker, created at worker start on the worker's own thread,
 * which stays attached to it for the worker's life and is the only thread
 * that calls into nginx.  One function per entry point of nginx.jvm.Worker,
 * each checking for a pending Java exception before anything else is done
 * with the JVM (calling JNI with an exception pending is undefined).  The
 * codes Java answers with are the wire protocol's (docs/internals.md); they
 * become nginx's codes here.  The WebSocket's calls down are in
 * ngx_http_jvm_vm_websocket.c (their method ids are bound here, with the
 * rest); the natives Java calls up are in ngx_http_jvm_natives.c, the
 * master's JVMs in ngx_http_jvm_child.c.
 */


#include "ngx_http_jvm_jni.h"

#include <dlfcn.h>
#include <signal.h>
#include <pthread.h>
#include <malloc.h>


typedef struct {
    jmethodID                *id;
    char                     *name;
    char                     *signature;
} ngx_http_jvm_method_t;


static ngx_int_t ngx_http_jvm_vm_create(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
static ngx_int_t ngx_http_jvm_vm_load(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf, ngx_http_jvm_create_pt *createp);
static char *ngx_http_jvm_vm_classpath(ngx_cycle_t *cycle,
    ngx_array_t *classpath);
static ngx_int_t ngx_http_jvm_vm_defaults(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf, JavaVMOption *options, ngx_uint_t *np);
static ngx_uint_t ngx_http_jvm_vm_chooses_gc(ngx_http_jvm_main_conf_t *jmcf);
static void ngx_http_jvm_check_readable(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
static ngx_uint_t ngx_http_jvm_vm_mapped(ngx_http_jvm_main_conf_t *jmcf);
static ngx_uint_t ngx_http_jvm_vm_version(ngx_http_jvm_main_conf_t *jmcf);
static ngx_int_t ngx_http_jvm_vm_buffer(jobject buf, jobject *ref,
    u_char **addr, size_t *cap);
static ngx_int_t ngx_http_jvm_vm_response(ngx_log_t *log, jint n,
    size_t *out, const char *what);
static ngx_int_t ngx_http_jvm_vm_call_string(ngx_cycle_t *cycle,
    jmethodID method, ngx_str_t *arg, const char *what);
static void JNICALL ngx_http_jvm_vm_exit_hook(jint code);


ngx_http_jvm_vm_t  ngx_http_jvm_vm;


static JavaVM     *ngx_http_jvm_jvm;
JNIEnv            *ngx_http_jvm_env;
jclass             ngx_http_jvm_worker;       /* nginx.jvm.Worker */
static jobject     ngx_http_jvm_req_ref;      /* the buffers, global refs */
static jobject     ngx_http_jvm_resp_ref;
ngx_fd_t           ngx_http_jvm_notify_fd = -1;

static jmethodID   ngx_http_jvm_request_buffer_mid;
static jmethodID   ngx_http_jvm_response_buffer_mid;
static jmethodID   ngx_http_jvm_register_mid;
static jmethodID   ngx_http_jvm_init_mid;
static jmethodID   ngx_http_jvm_configure_mid;
static jmethodID   ngx_http_jvm_handle_mid;
static jmethodID   ngx_http_jvm_submit_mid;
static jmethodID   ngx_http_jvm_poll_mid;
static jmethodID   ngx_http_jvm_take_mid;
static jmethodID   ngx_http_jvm_upload_mid;
static jmethodID   ngx_http_jvm_cancel_mid;
static jmethodID   ngx_http_jvm_abort_mid;
static jmethodID   ngx_http_jvm_next_mid;
static jmethodID   ngx_http_jvm_close_mid;
static jmethodID   ngx_http_jvm_stop_mid;
/* called in ngx_http_jvm_vm_websocket.c */
jmethodID          ngx_http_jvm_ws_open_mid;
jmethodID          ngx_http_jvm_ws_abandon_mid;
jmethodID          ngx_http_jvm_ws_message_mid;
jmethodID          ngx_http_jvm_ws_closed_mid;
jmethodID          ngx_http_jvm_ws_poll_mid;
jmethodID          ngx_http_jvm_ws_take_mid;
static jmethodID   ngx_http_jvm_topic_messages_mid;
static jmethodID   ngx_http_jvm_timers_mid;
static jmethodID   ngx_http_jvm_quitting_mid;
static jmethodID   ngx_http_jvm_variable_mid;
static jmethodID   ngx_http_jvm_filter_mid;
static jmethodID   ngx_http_jvm_body_mid;
static jmethodID   ngx_http_jvm_body_end_mid;
static jmethodID   ngx_http_jvm_subrequest_done_mid;


/* The entry points of nginx.jvm.Worker, bound once at start. */

static ngx_http_jvm_method_t  ngx_http_jvm_methods[] = {
    { &ngx_http_jvm_request_buffer_mid, "requestBuffer",
      "(I)Ljava/nio/ByteBuffer;" },
    { &ngx_http_jvm_response_buffer_mid, "responseBuffer",
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
    { &ngx_http_jvm_poll_mid, "poll", "()J" },
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
    { &ngx_http_jvm_timers_mid, "timers", "()V" },
    { &ngx_http_jvm_quitting_mid, "quitting", "()V" },
    { NULL, NULL, NULL }
};


/*
 * The JVM ends the worker's process: System.exit() or Runtime.halt() from
 * handler code, which nothing can refuse on JDK 17 and later.  The runtime
 * (nginx.jvm.ExitWatch) has logged the caller's stack for System.exit.
 * On the JVM's thread: only the error log is written, the loop's state is
 * left alone.  Exit status 2 would be nginx's "fatal, do not respawn": the
 * worker exits with 1 then, so the master always starts another.
 */

static void JNICALL
ngx_http_jvm_vm_exit_hook(jint code)
{
    ngx_log_error(NGX_LOG_ALERT, ngx_cycle->log, 0,
                  "jvm: handler code ended the JVM with status %d "
                  "(System.exit() or Runtime.halt()): the worker exits "
                  "with the requests it was serving", (int) code);

    ngx_http_jvm_vm_remove_attach_socket(ngx_pid);

    _exit(code == 2 ? 1 : code);
}


/*
 * The attach listener's socket, when jvm_options turned it on: HotSpot
 * removes it only in an exit() handler, and a process that leaves its JVM
 * with _exit() would leave it in /tmp (whatever java.io.tmpdir says), for
 * jcmd to try and fail on when the pid comes round again.
 */

void
ngx_http_jvm_vm_remove_attach_socket(ngx_pid_t pid)
{
    u_char  path[sizeof("/tmp/.java_pid") + NGX_INT64_LEN];

    ngx_sprintf(path, "/tmp/.java_pid%P%Z", pid);
    (void) unlink((char *) path);
}


/* Creates the JVM and binds the Worker class: the worker's first step. */

ngx_int_t
ngx_http_jvm_vm_start(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf)
{
    ngx_http_jvm_check_readable(cycle, jmcf);

    if (ngx_http_jvm_vm_create(cycle, jmcf) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_jvm_vm_bind(cycle) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_http_jvm_vm.ready = 1;

    return NGX_OK;
}


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


/* An option of jvm_options starts with one of the prefixes. */

static ngx_uint_t
ngx_http_jvm_vm_has_option(ngx_http_jvm_main_conf_t *jmcf, char **prefixes)
{
    char        **p;
    ngx_str_t    *opt;
    ngx_uint_t    i;

    if (jmcf->options == NULL) {
        return 0;
    }

    opt = jmcf->options->elts;

    for (i = 0; i < jmcf->options->nelts; i++) {
        for (p = prefixes; *p; p++) {
            if (ngx_strncmp(opt[i].data, *p, ngx_strlen(*p)) == 0) {
                return 1;
            }
        }
    }

    return 0;
}


/*
 * The JDK's version, from the "release" file of its home (JAVA_VERSION=
 * "17.0.15"; the home is three levels above lib/server/libjvm.so), as
 * major * 1000 + update; 0 when unknown.
 */

static ngx_uint_t
ngx_http_jvm_vm_version(ngx_http_jvm_main_conf_t *jmcf)
{
    u_char      *p, *last, buf[4096];
    ssize_t      n;
    ngx_fd_t     fd;
    ngx_int_t    major, update;
    ngx_uint_t   i, slashes, version;

    /* read each time: a reload may name another JDK */

    version = 0;

    slashes = 0;

    for (i = jmcf->jvm_path.len; i > 0; i--) {
        if (jmcf->jvm_path.data[i - 1] == '/' && ++slashes == 3) {
            break;
        }
    }

    if (i == 0 || i + sizeof("release") > sizeof(buf)) {
        return version;
    }

    p = ngx_cpymem(buf, jmcf->jvm_path.data, i);
    ngx_memcpy(p, "release", sizeof("release"));

    fd = ngx_open_file(buf, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);
    if (fd == NGX_INVALID_FILE) {
        return version;
    }

    n = read(fd, buf, sizeof(buf) - 1);
    (void) ngx_close_file(fd);

    if (n <= 0) {
        return version;
    }

    buf[n] = '\0';

    p = (u_char *) ngx_strstr(buf, "JAVA_VERSION=\"");
    if (p == NULL) {
        return version;
    }

    p += sizeof("JAVA_VERSION=\"") - 1;

    for (last = p; *last >= '0' && *last <= '9'; last++) { /* void */ }

    major = ngx_atoi(p, last - p);
    update = 0;

    /* "17.0.15": major, minor, update; "25": major alone */

    if (*last == '.') {
        for (p = ++last; *last >= '0' && *last <= '9'; last++) { /* void */ }

        if (*last == '.') {
            for (p = ++last; *last >= '0' && *last <= '9'; last++) {
                /* void */
            }

            update = ngx_atoi(p, last - p);
        }
    }

    if (major > 0 && update >= 0) {
        version = major * 1000 + ngx_min(update, 999);
    }

    return version;
}


/* libjvm.so loaded, and its JNI_CreateJavaVM(). */

static ngx_int_t
ngx_http_jvm_vm_load(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf,
    ngx_http_jvm_create_pt *createp)
{
    void                    *lib;
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

    *createp = create;

    return NGX_OK;
}


/* -Djava.class.path=, the class path's entries joined with ":". */

static char *
ngx_http_jvm_vm_classpath(ngx_cycle_t *cycle, ngx_array_t *classpath)
{
    u_char      *p, *s;
    size_t       len;
    ngx_str_t   *cp;
    ngx_uint_t   i;

    cp = classpath->elts;
    len = sizeof("-Djava.class.path=");

    for (i = 0; i < classpath->nelts; i++) {
        len += cp[i].len + 1;
    }

    p = ngx_pnalloc(cycle->pool, len);
    if (p == NULL) {
        return NULL;
    }

    s = p;
    p = ngx_cpymem(p, "-Djava.class.path=", sizeof("-Djava.class.path=") - 1);

    for (i = 0; i < classpath->nelts; i++) {
        if (i) {
            *p++ = ':';
        }

        p = ngx_cpymem(p, cp[i].data, cp[i].len);
    }

    *p = '\0';

    return (char *) s;
}


/*
 * The options a worker's JVM gets unless jvm_options says otherwise: the
 * collector, the heap, native memory given back, no attach listener.
 */

static ngx_int_t
ngx_http_jvm_vm_defaults(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf,
    JavaVMOption *options, ngx_uint_t *np)
{
    u_char           *p;
    ngx_uint_t        n, workers, version;
    ngx_core_conf_t  *ccf;

    static char  *initial[] = { "-Xms", "-XX:InitialHeapSize",
                                "-XX:InitialRAMPercentage", NULL };
    static char  *maximum[] = { "-Xmx", "-XX:MaxHeapSize",
                                "-XX:MaxRAMPercentage", "-XX:MaxRAM", NULL };
    static char  *trim[] = { "-XX:TrimNativeHeapInterval", NULL };
    static char  *attach[] = { "-XX:+DisableAttachMechanism",
                               "-XX:-DisableAttachMechanism", NULL };
    static char  *carriers[] = { "-Djdk.virtualThreadScheduler.parallelism",
                                 NULL };

    n = *np;

    /*
     * The serial collector, unless the options choose another: handlers of
     * a worker mostly run on its one event loop thread, and a concurrent
     * collector's threads and barriers cost CPU and memory for nothing.
     * Naming two collectors would stop the JVM, so it is only a default.
     */

    if (!ngx_http_jvm_vm_chooses_gc(jmcf)) {
        options[n++].optionString = "-XX:+UseSerialGC";
    }

    /*
     * The heap, unless the options size it: the JDK's default is a quarter
     * of the machine for each JVM, and there is a JVM per worker; and its
     * initial heap (1/64 of the machine) is touched, young generation
     * first, as the worker runs.  So: a small start, and a quarter of the
     * machine shared by all the workers at most.
     */

    if (!ngx_http_jvm_vm_has_option(jmcf, initial)) {
        options[n++].optionString = "-Xms32m";
    }

    if (!ngx_http_jvm_vm_has_option(jmcf, maximum)) {
        ccf = (ngx_core_conf_t *) ngx_get_conf(cycle->conf_ctx,
                                               ngx_core_module);
        workers = (ccf && ccf->worker_processes > 0)
                  ? (ngx_uint_t) ccf->worker_processes : 1;

        p = ngx_pnalloc(cycle->pool, sizeof("-XX:MaxRAMPercentage=")
                                     + NGX_INT_T_LEN);
        if (p == NULL) {
            return NGX_ERROR;
        }

        ngx_sprintf(p, "-XX:MaxRAMPercentage=%ui%Z",
                    ngx_max(25 / workers, 1));
        options[n++].optionString = (char *) p;
    }

    /*
     * The C2 compiler's arenas are malloc()ed and freed, and glibc keeps
     * the freed pages: tens of MB per worker after a warm-up.  The JVM
     * gives them back every few seconds (JDK 17.0.9, 21.0.1, 22 and later).
     */

    version = ngx_http_jvm_vm_version(jmcf);

    if (!ngx_http_jvm_vm_has_option(jmcf, trim)
        && version >= 17009
        && version / 1000 != 18
        && version / 1000 != 19
        && version / 1000 != 20
        && version != 21000)
    {
        options[n++].optionString = "-XX:TrimNativeHeapInterval=5000";
    }

    /*
     * No attach mechanism unless the options ask for it: with -Xrs the JVM
     * cannot start its attach listener on demand (SIGQUIT is nginx's), so
     * it starts one in every worker, a socket in /tmp (left behind when the
     * worker exits) through which any process of the workers' user can
     * load an agent into the worker.  "jvm_options
     * -XX:-DisableAttachMechanism" turns it on for jcmd and debuggers.
     */

    if (!ngx_http_jvm_vm_has_option(jmcf, attach)) {
        options[n++].optionString = "-XX:+DisableAttachMechanism";
    }

    /*
     * Where a location is jvm_mode coloop, unless a later -D says otherwise:
     *
     * - jdk.trackAllThreads=false: coloop starts a virtual thread per
     *   request, which the JDK's root thread container would add to a
     *   concurrent set and take out again (about a fifth of what coloop
     *   costs above loop), only for thread dumps.  Not for virtual mode: a
     *   virtual handler that calls System.exit is found, and its stack
     *   logged, through a thread dump (nginx.jvm.ExitWatch);
     * - jdk.pollerMode=1: the JDK's socket pollers as platform threads.  On
     *   Linux, JDK 21 to 25 make them virtual threads, started by the first
     *   socket read that parks: when that is a coloop handler's, they
     *   inherit its scheduler and run on the loop, and every virtual
     *   thread's socket I/O, virtual mode's too, waits whenever the loop is
     *   held.
     *
     * Measured: bench/results/2026-11-26-coloop.md.
     */

    if (jmcf->uses_coloop) {
        options[n++].optionString = "-Djdk.trackAllThreads=false";
        options[n++].optionString = "-Djdk.pollerMode=1";
    }

    /*
     * The virtual threads' scheduler, unless the options size it: the JDK
     * gives each JVM a carrier thread per core, and there is a JVM per
     * worker, so with a worker per core as many carriers as cores compete
     * with every worker's event loop.  A worker's share of the cores is
     * enough: fewer carriers, each finding more than one thread to run when
     * it wakes (virtual/loop on /hello, two workers on two cores, 0.62-0.68
     * with two carriers, 0.82 with one: bench/results/2026-11-26-handoff.md).
     * A thread that blocks in I/O leaves its carrier, so this bounds the
     * handlers running at once on the CPU, not those in flight.
     */

    if (jmcf->uses_virtual && !ngx_http_jvm_vm_has_option(jmcf, carriers)) {
        ccf = (ngx_core_conf_t *) ngx_get_conf(cycle->conf_ctx,
                                               ngx_core_module);
        workers = (ccf && ccf->worker_processes > 0)
                  ? (ngx_uint_t) ccf->worker_processes : 1;

        p = ngx_pnalloc(cycle->pool,
                        sizeof("-Djdk.virtualThreadScheduler.parallelism=")
                        + NGX_INT_T_LEN);
        if (p == NULL) {
            return NGX_ERROR;
        }

        ngx_sprintf(p, "-Djdk.virtualThreadScheduler.parallelism=%ui%Z",
                    ngx_max((ngx_uint_t) ngx_ncpu / workers, 1));
        options[n++].optionString = (char *) p;
    }

    *np = n;

    return NGX_OK;
}


/*
 * The worker's number in an option of jvm_options: "%w" is the number
 * (ngx_worker, 0 .. worker_processes - 1), "%{N+w}" N plus it, so that each
 * worker gets a debug port, a JMX port or a log file of its own.  "%%" and
 * any other "%" stay as they are: HotSpot's own "%p" and "%t" in file
 * names, and its "%%", keep their meaning.  Returns how many placeholders
 * the option has (NGX_ERROR for a "%{" that is not "%{N+w}"); with out, it
 * writes there the option for the worker, null-terminated.
 */

ngx_int_t
ngx_http_jvm_vm_option(ngx_str_t *opt, ngx_int_t worker, u_char *out)
{
    u_char      *p, *end, *digits;
    ngx_int_t    base, found;

    found = 0;
    end = opt->data + opt->len;

    for (p = opt->data; p < end; p++) {

        if (*p != '%' || p + 1 == end) {
            goto copy;
        }

        if (p[1] == '%') {
            if (out) {
                *out++ = *p++;
            } else {
                p++;
            }

            goto copy;
        }

        if (p[1] == 'w') {
            found++;
            if (out) {
                out = ngx_sprintf(out, "%i", worker);
            }

            p++;
            continue;
        }

        if (p[1] != '{') {
            goto copy;
        }

        /* %{N+w} */

        digits = p + 2;
        p = digits;

        while (p < end && *p >= '0' && *p <= '9') {
            p++;
        }

        if (p == digits || p - digits > 9 || end - p < 3
            || ngx_strncmp(p, "+w}", 3) != 0)
        {
            return NGX_ERROR;
        }

        base = ngx_atoi(digits, p - digits);
        found++;
        if (out) {
            out = ngx_sprintf(out, "%i", base + worker);
        }

        p += 2;
        continue;

    copy:

        if (out) {
            *out++ = *p;
        }
    }

    if (out) {
        *out = '\0';
    }

    return found;
}


/* libjvm.so loaded, and the JVM's options from the configuration. */

ngx_int_t
ngx_http_jvm_vm_args(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf,
    ngx_array_t *classpath, char **extra, void *exit_hook,
    JavaVMInitArgs *args, ngx_http_jvm_create_pt *createp)
{
    char          **e;
    u_char         *p;
    ngx_str_t      *opt;
    ngx_log_t      *log;
    ngx_uint_t      i, n, level;
    JavaVMOption   *options;

    if (ngx_http_jvm_vm_load(cycle, jmcf, createp) != NGX_OK) {
        return NGX_ERROR;
    }

    /* 4 first, 3 -D, the exit hook, and 8 defaults at most */

    n = 16 + (jmcf->options ? jmcf->options->nelts : 0);

    for (e = extra; e && *e; e++) {
        n++;
    }

    options = ngx_pcalloc(cycle->pool, n * sizeof(JavaVMOption));
    if (options == NULL) {
        return NGX_ERROR;
    }

    options[0].optionString = ngx_http_jvm_vm_classpath(cycle, classpath);
    if (options[0].optionString == NULL) {
        return NGX_ERROR;
    }

    /*
     * -Xrs: the signals nginx uses (QUIT, TERM, HUP, INT, ...) stay nginx's,
     * so that quit, reload and reopen work in a worker with a JVM.
     */

    options[1].optionString = "-Xrs";

    /*
     * The JVM's own warnings (unified logging) go to stderr, which nginx
     * points at the error log, instead of stdout, which a daemon has not.
     */

    options[2].optionString = "-Xlog:disable";
    options[3].optionString = "-Xlog:all=warning:stderr";

    n = 4;

    if (ngx_http_jvm_vm_defaults(cycle, jmcf, options, &n) != NGX_OK) {
        return NGX_ERROR;
    }

    for (e = extra; e && *e; e++) {
        options[n++].optionString = *e;
    }

    /*
     * What nginx.jvm.Log, the REPL and the metrics need to know: the error
     * log's level (Java writes its entries to fd 2, which nginx points at
     * that log), the worker's number, jvm_repl's port.
     */

    p = ngx_pnalloc(cycle->pool, sizeof("-Dnginx.jvm.log=") + NGX_INT_T_LEN
                                 + sizeof("-Dnginx.jvm.worker=")
                                 + NGX_INT_T_LEN
                                 + sizeof("-Dnginx.jvm.repl=") + NGX_INT_T_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    /* only syslog or memory logs: nginx's default level for what Java says */
    log = ngx_log_get_file_log(cycle->log);
    level = log ? log->log_level : NGX_LOG_ERR;

    options[n++].optionString = (char *) p;
    p = ngx_sprintf(p, "-Dnginx.jvm.log=%ui%Z",
                    ngx_min(level, (ngx_uint_t) NGX_LOG_DEBUG));

    options[n++].optionString = (char *) p;
    p = ngx_sprintf(p, "-Dnginx.jvm.worker=%ui%Z", ngx_worker);

    if (jmcf->repl) {
        options[n++].optionString = (char *) p;
        p = ngx_sprintf(p, "-Dnginx.jvm.repl=%i%Z", jmcf->repl);
    }

    if (jmcf->options) {
        opt = jmcf->options->elts;

        for (i = 0; i < jmcf->options->nelts; i++) {
            if (ngx_http_jvm_vm_option(&opt[i], -1, NULL) == 0) {
                options[n++].optionString = (char *) opt[i].data;
                continue;
            }

            /*
             * An option naming the worker's number: a worker's own port
             * or file.  The master's JVMs (no exit hook: they are not
             * workers) leave it out, so that they neither bind a worker's
             * port nor write a worker's file.
             */

            if (exit_hook == NULL) {
                continue;
            }

            p = ngx_pnalloc(cycle->pool,
                            opt[i].len * (NGX_INT_T_LEN + 1) + 1);
            if (p == NULL) {
                return NGX_ERROR;
            }

            (void) ngx_http_jvm_vm_option(&opt[i], ngx_worker, p);
            options[n++].optionString = (char *) p;
        }
    }

    if (exit_hook) {
        options[n].optionString = "exit";
        options[n++].extraInfo = exit_hook;
    }

    args->version = JNI_VERSION_1_8;
    args->nOptions = n;
    args->options = options;
    args->ignoreUnrecognized = JNI_FALSE;

    return NGX_OK;
}


static ngx_int_t
ngx_http_jvm_vm_create(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf)
{
    jint                         rc;
    char                        *extra[4];
    sigset_t                     old;
    ngx_array_t                 *cp;
    JavaVMInitArgs               args;
    ngx_http_jvm_create_pt       create;
    ngx_http_jvm_generation_t   *gen;

    static char  *relocation[] = { "-XX:ArchiveRelocationMode", NULL };

    gen = jmcf->zone->data;

    if (gen->jvm_failed && gen->generation == jmcf->generation) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "jvm: the JVM failed to start: its trial start by the "
                      "master failed (the reason is above); check "
                      "\"jvm_options\"; locations with \"jvm_content\" "
                      "answer 500");
        return NGX_ERROR;
    }

    /* the class cache (jvm_cache), when the master has one ready */

    cp = jmcf->classpath;
    extra[0] = NULL;

    if (jmcf->cache_ready
        && access((char *) jmcf->cache_entry.data, R_OK|X_OK) != 0)
    {
        ngx_log_error(NGX_LOG_WARN, cycle->log, ngx_errno,
                      "jvm: class cache \"%V\" is not readable by the "
                      "worker's user (uid %d): started without it",
                      &jmcf->cache_entry, (int) geteuid());

    } else if (jmcf->cache_ready) {
        cp = jmcf->cache_classpath;
        extra[0] = (char *) jmcf->cache_share.data;
        extra[1] = NULL;

        /*
         * Mapped where it was written, the archive is not relocated, so its
         * pages stay the file's, shared by all the workers; relocated (the
         * JDK's default, for address randomization), every page is copied
         * into each worker.
         */

        if (!ngx_http_jvm_vm_has_option(jmcf, relocation)) {
            extra[1] = "-XX:+UnlockDiagnosticVMOptions";
            extra[2] = "-XX:ArchiveRelocationMode=0";
            extra[3] = NULL;
        }
    }

    if (ngx_http_jvm_vm_args(cycle, jmcf, cp, extra,
                             (void *) ngx_http_jvm_vm_exit_hook,
                             &args, &create)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    /*
     * glibc gives each thread that mallocs an arena of its own, up to 8 per
     * core; a JVM's threads (compilers, GC, a pool of 16) then keep
     * megabytes of freed memory each.  Two arenas are plenty for threads
     * that allocate mostly in the Java heap (MALLOC_ARENA_MAX overrides).
     */

    if (getenv("MALLOC_ARENA_MAX") == NULL) {
        (void) mallopt(M_ARENA_MAX, 2);
    }

    ngx_http_jvm_vm_block_signals(&old);

    rc = create(&ngx_http_jvm_jvm, (void **) &ngx_http_jvm_env, &args);

    pthread_sigmask(SIG_SETMASK, &old, NULL);

    if (rc != JNI_OK) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "jvm: the JVM \"%V\" failed to start (JNI error %d); "
                      "check \"jvm_options\"; locations with "
                      "\"jvm_content\" answer 500", &jmcf->jvm_path, rc);
        return NGX_ERROR;
    }

    if (extra[0] && !ngx_http_jvm_vm_mapped(jmcf)) {
        ngx_log_error(NGX_LOG_WARN, cycle->log, 0,
                      "jvm: the JVM rejected the archive of class cache "
                      "\"%V\" (a JDK's change, or a corrupt file): started "
                      "without it", &jmcf->cache_entry);
    }

    return NGX_OK;
}


/*
 * Whether the JVM mapped the cache's archive: it says nothing when the
 * archive's header does not suit it, it just starts without.
 */

static ngx_uint_t
ngx_http_jvm_vm_mapped(ngx_http_jvm_main_conf_t *jmcf)
{
    FILE        *maps;
    char         line[4096];
    ngx_uint_t   found;

    maps = fopen("/proc/self/maps", "r");
    if (maps == NULL) {
        return 1;
    }

    found = 0;

    while (!found && fgets(line, sizeof(line), maps)) {
        found = ngx_strstr(line, jmcf->cache_entry.data) != NULL
                && ngx_strstr(line, "/app.jsa") != NULL;
    }

    fclose(maps);

    return found;
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

ngx_int_t
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


/* Worker.timers(): the event loop runs the Java timers that are due. */

void
ngx_http_jvm_vm_timers(ngx_log_t *log)
{
    JNIEnv  *env;

    env = ngx_http_jvm_env;

    (*env)->CallStaticVoidMethod(env, ngx_http_jvm_worker,
                                 ngx_http_jvm_timers_mid);

    if ((*env)->ExceptionCheck(env)) {
        (void) ngx_http_jvm_vm_failed(log, "Worker.timers()");
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


/* Worker.poll(): the next task with something for the loop, or NULL. */

void *
ngx_http_jvm_vm_poll(ngx_log_t *log)
{
    jlong  id;

    id = (*ngx_http_jvm_env)->CallStaticLongMethod(ngx_http_jvm_env,
                                                   ngx_http_jvm_worker,
                                                   ngx_http_jvm_poll_mid);

    if ((*ngx_http_jvm_env)->ExceptionCheck(ngx_http_jvm_env)) {
        (void) ngx_http_jvm_vm_failed(log, "Worker.poll()");
        return NULL;
    }

    return (void *) (uintptr_t) id;
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
 * thread has not produced the piece yet (Worker.poll() names the task when
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
