
/*
 * nginx-jvm: the worker's JVM created and configured.
 *
 * libjvm.so is loaded by name (jvm_path) and its JNI_CreateJavaVM() called
 * once, at worker start, on the worker's own thread, with the options of
 * the configuration: the class path (or the class cache's), the defaults a
 * JVM per worker needs (collector, heap, attach listener, carriers), the
 * worker's number in jvm_options ("%w", "%{N+w}") and the exit hook.  The
 * master's JVMs (ngx_http_jvm_child.c) start with the same options.  Once
 * it runs, every call into it is ngx_http_jvm_vm.c's, which binds the
 * entry points of nginx.jvm.Worker.
 */


#include "ngx_http_jvm_jni.h"

#include <dlfcn.h>
#include <signal.h>
#include <pthread.h>
#include <malloc.h>


static ngx_int_t ngx_http_jvm_vm_create(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
static ngx_int_t ngx_http_jvm_vm_load(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf, ngx_http_jvm_create_pt *createp);
static char *ngx_http_jvm_vm_classpath(ngx_cycle_t *cycle,
    ngx_array_t *classpath);
static ngx_int_t ngx_http_jvm_vm_defaults(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf, JavaVMOption *options, ngx_uint_t *np);
static ngx_int_t ngx_http_jvm_vm_thread_defaults(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf, JavaVMOption *options, ngx_uint_t *np);
static ngx_uint_t ngx_http_jvm_vm_has_option(ngx_http_jvm_main_conf_t *jmcf,
    char **patterns);
static ngx_uint_t ngx_http_jvm_vm_option_is(ngx_str_t *opt, char *pattern);
static void ngx_http_jvm_check_readable(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
static ngx_uint_t ngx_http_jvm_vm_mapped(ngx_http_jvm_main_conf_t *jmcf);
static ngx_uint_t ngx_http_jvm_vm_version(ngx_http_jvm_main_conf_t *jmcf);
static void JNICALL ngx_http_jvm_vm_exit_hook(jint code);


static JavaVM  *ngx_http_jvm_jvm;


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
 * An option of jvm_options matches one of the patterns (NULL ended): a
 * pattern is a prefix, or "PREFIX*SUFFIX" for the options that start with
 * PREFIX and end with SUFFIX, one character or more between the two.
 */

static ngx_uint_t
ngx_http_jvm_vm_has_option(ngx_http_jvm_main_conf_t *jmcf, char **patterns)
{
    char        **p;
    ngx_str_t    *opt;
    ngx_uint_t    i;

    if (jmcf->options == NULL) {
        return 0;
    }

    opt = jmcf->options->elts;

    for (i = 0; i < jmcf->options->nelts; i++) {
        for (p = patterns; *p; p++) {
            if (ngx_http_jvm_vm_option_is(&opt[i], *p)) {
                return 1;
            }
        }
    }

    return 0;
}


static ngx_uint_t
ngx_http_jvm_vm_option_is(ngx_str_t *opt, char *pattern)
{
    char    *star;
    size_t   prefix, suffix;

    star = strchr(pattern, '*');

    if (star == NULL) {
        prefix = ngx_strlen(pattern);

        return opt->len >= prefix
               && ngx_strncmp(opt->data, pattern, prefix) == 0;
    }

    prefix = star - pattern;
    suffix = ngx_strlen(star + 1);

    return opt->len > prefix + suffix
           && ngx_strncmp(opt->data, pattern, prefix) == 0
           && ngx_strncmp(opt->data + opt->len - suffix, star + 1, suffix)
              == 0;
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

    static char  *gc[] = { "-XX:+Use*GC", NULL };
    static char  *initial[] = { "-Xms", "-XX:InitialHeapSize",
                                "-XX:InitialRAMPercentage", NULL };
    static char  *maximum[] = { "-Xmx", "-XX:MaxHeapSize",
                                "-XX:MaxRAMPercentage", "-XX:MaxRAM", NULL };
    static char  *trim[] = { "-XX:TrimNativeHeapInterval", NULL };
    static char  *attach[] = { "-XX:+DisableAttachMechanism",
                               "-XX:-DisableAttachMechanism", NULL };

    n = *np;

    /*
     * The serial collector, unless the options choose another: handlers of
     * a worker mostly run on its one event loop thread, and a concurrent
     * collector's threads and barriers cost CPU and memory for nothing.
     * Naming two collectors would stop the JVM, so it is only a default.
     */

    if (!ngx_http_jvm_vm_has_option(jmcf, gc)) {
        options[n++].optionString = "-XX:+UseSerialGC";
    }

    /*
     * The heap, unless the options size it: the JDK's default is a quarter
     * of the machine for each JVM, and there is a JVM per worker; and its
     * initial heap (1/64 of the machine) is touched, young generation
     * first, as the worker runs.  So: a small start, and a quarter of the
     * machine shared by all the workers at most.  16 MB rather than 32:
     * the serial collector's young generation, a third of it, is all
     * touched within seconds of load; a worker whose live data is small
     * keeps 5 MB less of it, and one whose heap needs more grows it, young
     * generation too (bench/results/2026-11-27-memory.md).
     */

    if (!ngx_http_jvm_vm_has_option(jmcf, initial)) {
        options[n++].optionString = "-Xms16m";
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

    *np = n;

    return ngx_http_jvm_vm_thread_defaults(cycle, jmcf, options, np);
}


/*
 * The defaults of the threads the JDK starts for virtual threads, when a
 * location runs its handlers on them (jvm_mode virtual or coloop).
 */

static ngx_int_t
ngx_http_jvm_vm_thread_defaults(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf, JavaVMOption *options, ngx_uint_t *np)
{
    u_char           *p;
    ngx_uint_t        n, workers;
    ngx_core_conf_t  *ccf;

    static char  *carriers[] = { "-Djdk.virtualThreadScheduler.parallelism",
                                 NULL };

    n = *np;

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
     * that log), the worker's number, jvm_repl's [address:]port.
     */

    p = ngx_pnalloc(cycle->pool, sizeof("-Dnginx.jvm.log=") + NGX_INT_T_LEN
                                 + sizeof("-Dnginx.jvm.worker=")
                                 + NGX_INT_T_LEN
                                 + sizeof("-Dnginx.jvm.repl=") + NGX_INT_T_LEN
                                 + jmcf->repl_addr.len + 1);
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
        p = ngx_sprintf(p, "-Dnginx.jvm.repl=%V%s%i%Z", &jmcf->repl_addr,
                        jmcf->repl_addr.len ? ":" : "", jmcf->repl);
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
 * "auto": $JAVA_HOME, then the JDK of the "java" on $PATH, then Debian's
 * default JDK.  Resolved when the configuration is read, in the master,
 * because nginx clears the environment of its workers.
 */

ngx_int_t
ngx_http_jvm_find_libjvm(ngx_conf_t *cf, ngx_str_t *path)
{
    char        *home, *env_path, *p, *dir, *save;
    u_char       buf[NGX_MAX_PATH], real[PATH_MAX];
    size_t       len;
    ngx_uint_t   i;

    static const char  *suffixes[] = {
        "/lib/server/libjvm.so",
        "/jre/lib/amd64/server/libjvm.so",
        NULL
    };

    home = getenv("JAVA_HOME");

    if (home != NULL && home[0] != '\0') {
        for (i = 0; suffixes[i]; i++) {
            ngx_snprintf(buf, sizeof(buf), "%s%s%Z", home, suffixes[i]);
            if (access((char *) buf, R_OK) == 0) {
                goto found;
            }
        }
    }

    env_path = getenv("PATH");

    if (env_path != NULL) {
        p = strdup(env_path);
        if (p == NULL) {
            return NGX_ERROR;
        }

        for (dir = strtok_r(p, ":", &save);
             dir != NULL;
             dir = strtok_r(NULL, ":", &save))
        {
            ngx_snprintf(buf, sizeof(buf), "%s/java%Z", dir);

            if (access((char *) buf, X_OK) != 0
                || realpath((char *) buf, (char *) real) == NULL)
            {
                continue;
            }

            /* real is ".../bin/java": strip "/bin/java" to get the home */
            len = ngx_strlen(real);
            if (len < sizeof("/bin/java") - 1) {
                continue;
            }

            real[len - (sizeof("/bin/java") - 1)] = '\0';

            for (i = 0; suffixes[i]; i++) {
                ngx_snprintf(buf, sizeof(buf), "%s%s%Z", real, suffixes[i]);
                if (access((char *) buf, R_OK) == 0) {
                    free(p);
                    goto found;
                }
            }
        }

        free(p);
    }

    ngx_snprintf(buf, sizeof(buf), "%s%Z",
                 "/usr/lib/jvm/default-java/lib/server/libjvm.so");
    if (access((char *) buf, R_OK) == 0) {
        goto found;
    }

    return NGX_DECLINED;

found:

    /* with the terminating NUL that dlopen() needs */
    path->len = ngx_strlen(buf);
    p = (char *) ngx_pnalloc(cf->pool, path->len + 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(p, buf, path->len + 1);
    path->data = (u_char *) p;

    return NGX_OK;
}
