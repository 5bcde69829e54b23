
/*
 * nginx-jvm: reloads without a stall.
 *
 * On "nginx -s reload" the master starts the new workers and at once tells
 * the old ones to quit (NGX_CMD_QUIT through each worker's channel).  A
 * quitting worker closes its listening sockets, and a new worker accepts
 * only once every module's init_process has returned: for us, once its JVM
 * and the application are loaded, which takes seconds for a real app.
 * Nobody would accept meanwhile.
 *
 * So an old worker keeps serving until the new generation is ready: it
 * takes a quit command from its channel itself, and quits only when every
 * new worker has said, in a shared memory zone, that it is ready, or when
 * jvm_reload_timeout has passed, whichever comes first.  A plain
 * "nginx -s quit" (no newer generation) quits at once.
 *
 * Then it hands its clients over rather than dropping them all at once
 * (jvm_reload_drain): it stops accepting, and for the drain's time it
 * answers each keep-alive connection's next request with "Connection:
 * close", a growing share of them as the time passes, so that the clients
 * reconnect to the new workers a few at a time while their JIT warms up.
 * nginx's own quit would close every idle keep-alive connection at once: a
 * client that sends on one as it closes gets a reset, and all of them land
 * on the new, cold workers together.
 *
 * A new worker of a reload runs its JIT compiler threads at a lower CPU
 * priority (jvm_reload_nice): they take half of a JVM's start and most of
 * its warm-up, CPU the old workers serving meanwhile need; and where it may
 * lower a nice value again, its whole JVM's start runs under SCHED_IDLE.
 */


#include "ngx_http_jvm_module.h"

#include <ngx_channel.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sched.h>
#include <pthread.h>


#define NGX_HTTP_JVM_RELOAD_POLL  50
#define NGX_HTTP_JVM_TURN_LIMIT   10000
#define NGX_HTTP_JVM_DRAIN_POLL   100

/*
 * How long a new worker starts under SCHED_IDLE before it falls back to
 * nice +jvm_reload_nice: with the old workers saturating the CPU an idle
 * thread barely runs, and the reload would wait for jvm_reload_timeout.
 * The limit is twice what the last start at full priority took on this
 * machine (the first workers' start, in the zone): an idle start that
 * takes longer is starved.  At least 5 s (at 40,000 req/s, half the
 * Compojure example's peak, the start took 3 s), at most 30 s (half the
 * default jvm_reload_timeout): on a machine 2.5 times slower a fixed 5 s
 * ran out before the JVM had made its threads (ms).
 */
#define NGX_HTTP_JVM_IDLE_FACTOR  2
#define NGX_HTTP_JVM_IDLE_FLOOR   5000
#define NGX_HTTP_JVM_IDLE_CAP     30000

/*
 * After the start, how often a compiler thread still under SCHED_IDLE is
 * looked at, and for how long it may stay there (ms).
 */
#define NGX_HTTP_JVM_COMPILERS_POLL   100
#define NGX_HTTP_JVM_COMPILERS_LIMIT  10000


static void ngx_http_jvm_reload_install(ngx_event_t *ev);
static void ngx_http_jvm_reload_channel(ngx_event_t *ev);
static void ngx_http_jvm_reload_wait(ngx_event_t *ev);
static void ngx_http_jvm_reload_quit(ngx_event_t *ev);
static void ngx_http_jvm_reload_drain(ngx_event_t *ev);
static ngx_int_t ngx_http_jvm_reload_header_filter(ngx_http_request_t *r);
static ngx_uint_t ngx_http_jvm_reload_priorities(int compilers, int others,
    ngx_uint_t all);
static void *ngx_http_jvm_reload_idle_limit(void *data);
static void ngx_http_jvm_reload_compilers(ngx_event_t *ev);
static ssize_t ngx_http_jvm_reload_task_file(const char *tid,
    const char *file, char *buf, size_t size);


/* the timers' data: nginx's debug log reads an fd from it */
static ngx_connection_t      ngx_http_jvm_reload_dummy = { .fd = -1 };
static ngx_event_t           ngx_http_jvm_reload_install_ev;
static ngx_event_t           ngx_http_jvm_reload_wait_ev;
static ngx_event_handler_pt  ngx_http_jvm_reload_nginx_handler;
static ngx_connection_t     *ngx_http_jvm_reload_channel_conn;
static ngx_msec_t            ngx_http_jvm_reload_deadline;
static ngx_http_jvm_main_conf_t  *ngx_http_jvm_reload_conf;

/* draining: since when (ngx_current_msec, never 0) and for how long */
static ngx_msec_t            ngx_http_jvm_reload_drain_start;
static ngx_msec_t            ngx_http_jvm_reload_drain_time;
static ngx_event_t           ngx_http_jvm_reload_drain_ev;

static ngx_http_output_header_filter_pt  ngx_http_jvm_reload_next_filter;

/*
 * A worker of a reload: its own nice value, the compilers' (own +
 * jvm_reload_nice, at most 19), whether they were found, and whether its
 * JVM's whole start ran under SCHED_IDLE.
 */
static int                   ngx_http_jvm_reload_nice_base;
static int                   ngx_http_jvm_reload_nice_low;
static ngx_uint_t            ngx_http_jvm_reload_nice_known;
static ngx_uint_t            ngx_http_jvm_reload_start_idle;

/* when this worker's start began, and its limit under SCHED_IDLE (ms) */
static ngx_msec_t            ngx_http_jvm_reload_start_time;
static ngx_msec_t            ngx_http_jvm_reload_idle_msec;

/* the start under SCHED_IDLE is over (ready, or past its limit) */
static pthread_mutex_t       ngx_http_jvm_reload_idle_lock =
                                 PTHREAD_MUTEX_INITIALIZER;
static ngx_uint_t            ngx_http_jvm_reload_idle_over;

/* the compilers' return from SCHED_IDLE: since when it is watched */
static ngx_event_t           ngx_http_jvm_reload_compilers_ev;
static ngx_msec_t            ngx_http_jvm_reload_compilers_since;


/* The zone: made once, kept by every reload (same name, size and tag). */

ngx_int_t
ngx_http_jvm_reload_zone_init(ngx_shm_zone_t *zone, void *data)
{
    ngx_slab_pool_t              *shpool;
    ngx_http_jvm_generation_t    *gen;

    if (data) {
        zone->data = data;
        return NGX_OK;
    }

    shpool = (ngx_slab_pool_t *) zone->shm.addr;

    if (zone->shm.exists) {
        zone->data = shpool->data;
        return NGX_OK;
    }

    gen = ngx_slab_alloc(shpool, sizeof(ngx_http_jvm_generation_t));
    if (gen == NULL) {
        return NGX_ERROR;
    }

    ngx_memzero(gen, sizeof(ngx_http_jvm_generation_t));

    shpool->data = gen;
    zone->data = gen;

    return NGX_OK;
}


/*
 * In the master, once the new configuration is in place and before its
 * workers start: a new generation, none of its workers ready yet.
 */

void
ngx_http_jvm_reload_new_generation(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf)
{
    ngx_core_conf_t            *ccf;
    ngx_http_jvm_generation_t  *gen;

    gen = jmcf->zone->data;
    ccf = (ngx_core_conf_t *) ngx_get_conf(cycle->conf_ctx, ngx_core_module);

    gen->ready = 0;
    gen->workers = ccf->worker_processes;
    jmcf->generation = ngx_atomic_fetch_add(&gen->generation, 1) + 1;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, cycle->log, 0,
                   "jvm: generation %uA of %ui workers",
                   jmcf->generation, ccf->worker_processes);
}


/*
 * The workers of a generation start their JVMs one after the other.  Started
 * together, N JVMs share the cores and the first is ready about when the
 * last is; one at a time, the first answers about N times sooner, and the
 * last is ready about when it would have been (a start is CPU-bound).  A
 * worker waits until as many workers of its generation as its number are
 * ready, for NGX_HTTP_JVM_TURN_LIMIT at most; a respawned worker finds
 * them ready and does not wait.  It reads its channel meanwhile (nginx
 * does only once init_process returns): a quit or stop ends the wait.
 */

ngx_int_t
ngx_http_jvm_reload_worker_turn(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf)
{
    ngx_msec_t                  waited;
    ngx_http_jvm_generation_t  *gen;

    gen = jmcf->zone->data;

    for (waited = 0; waited < NGX_HTTP_JVM_TURN_LIMIT; waited += 5) {
        ngx_http_jvm_warmup_read_channel(cycle);

        if (gen->generation != jmcf->generation
            || gen->ready >= (ngx_atomic_uint_t) ngx_worker
            || ngx_quit || ngx_terminate)
        {
            break;
        }

        ngx_msleep(5);
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, cycle->log, 0,
                   "jvm: worker %ui waited %M ms for its turn",
                   ngx_worker, waited);

    /*
     * A newer configuration came before this worker's turn: the master has
     * told it to quit already (its quit is in the channel), and the old
     * workers serve until the newest ones are ready.  Its JVM would only
     * take their CPU, and, ready, it would accept while cold: it starts
     * none and stops accepting at once.  So does a worker told to quit or
     * stop while it waited.
     */

    if (ngx_process == NGX_PROCESS_WORKER
        && (gen->generation != jmcf->generation || ngx_quit || ngx_terminate))
    {
        ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                      "jvm: %s before this worker's start: no JVM, "
                      "quitting",
                      gen->generation != jmcf->generation
                      ? "reload: a newer configuration came"
                      : ngx_terminate ? "a stop came" : "a quit came");

        ngx_close_listening_sockets(cycle);
        ngx_http_jvm_reload_leaving(cycle);

        return NGX_DECLINED;
    }

    return NGX_OK;
}


/*
 * Before its JVM, a worker of a reload (an older generation serves
 * meanwhile) that may lower a nice value again (root, or an RLIMIT_NICE
 * that allows its own value: the same test lets a thread leave SCHED_IDLE)
 * runs under SCHED_IDLE: the JVM's threads inherit it, and the JVM's
 * creation and the application's loading take only the CPU the old
 * workers leave.  An old worker that wakes preempts a SCHED_IDLE thread at
 * once, where a thread at nice +10 may run out its slice first (five
 * reloads at 40,000 req/s: p99 7-30 ms against 38-94 ms at +10, bench/
 * results/2026-11-26-reload.md).  Once the worker is ready, every thread
 * returns to SCHED_OTHER, the JIT compilers at +jvm_reload_nice (ngx_http_jvm_
 * reload_worker_ready).  On Linux a policy is a thread's: this is the main
 * thread's, before there is any other.
 */

void
ngx_http_jvm_reload_start_priority(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf)
{
    int                         own;
    pthread_t                   limit;
    ngx_msec_t                  last;
    struct rlimit               rl;
    pthread_attr_t              attr;
    struct sched_param          sp;
    ngx_http_jvm_generation_t  *gen;

    /* the start's duration, for the next reload's limit */
    ngx_time_update();
    ngx_http_jvm_reload_start_time = ngx_current_msec;

    if (jmcf->generation <= 1 || jmcf->reload_nice == 0
        || ngx_process != NGX_PROCESS_WORKER)
    {
        return;
    }

    errno = 0;
    own = getpriority(PRIO_PROCESS, 0);

    if (own == -1 && errno != 0) {
        return;
    }

    ngx_http_jvm_reload_nice_base = own;
    ngx_http_jvm_reload_nice_low = ngx_min(19, own + (int) jmcf->reload_nice);
    ngx_http_jvm_reload_nice_known = 1;

    if (geteuid() != 0
        && (getrlimit(RLIMIT_NICE, &rl) == -1
            || rl.rlim_cur < (rlim_t) (20 - own)))
    {
        return;
    }

    gen = jmcf->zone->data;
    last = gen->start_msec;
    ngx_http_jvm_reload_idle_msec = ngx_min(NGX_HTTP_JVM_IDLE_CAP,
                     ngx_max(NGX_HTTP_JVM_IDLE_FLOOR,
                             NGX_HTTP_JVM_IDLE_FACTOR * last));

    /* its thread made before SCHED_IDLE, which it would inherit */

    if (pthread_attr_init(&attr) != 0) {
        return;
    }

    (void) pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);

    if (pthread_create(&limit, &attr, ngx_http_jvm_reload_idle_limit, NULL)
        == 0)
    {
        (void) pthread_setname_np(limit, "jvm-reload-idle");
        ngx_memzero(&sp, sizeof(struct sched_param));

        (void) pthread_mutex_lock(&ngx_http_jvm_reload_idle_lock);
        ngx_http_jvm_reload_start_idle =
                            sched_setscheduler(0, SCHED_IDLE, &sp) == 0;
        (void) pthread_mutex_unlock(&ngx_http_jvm_reload_idle_lock);

        if (ngx_http_jvm_reload_start_idle) {
            ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                          "jvm: reload: the JVM starts under SCHED_IDLE, "
                          "for %M ms at most (the last start took %M ms)",
                          ngx_http_jvm_reload_idle_msec, last);
        }
    }

    (void) pthread_attr_destroy(&attr);
}


/*
 * A thread of its own: the JVM's start holds the main thread.  Past the
 * limit, every thread (the compilers too) at the compilers' nice value
 * under SCHED_OTHER until the worker is ready.
 */

static void *
ngx_http_jvm_reload_idle_limit(void *data)
{
    struct timespec  ts;

    ts.tv_sec = ngx_http_jvm_reload_idle_msec / 1000;
    ts.tv_nsec = (ngx_http_jvm_reload_idle_msec % 1000) * 1000000;

    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
        /* void */
    }

    (void) pthread_mutex_lock(&ngx_http_jvm_reload_idle_lock);

    if (ngx_http_jvm_reload_start_idle && !ngx_http_jvm_reload_idle_over) {
        ngx_http_jvm_reload_idle_over = 1;

        /* before the change: seen in the log, it is under way or done */
        ngx_time_update();
        ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                      "jvm: reload: the start under SCHED_IDLE passed "
                      "%M ms: on at nice %d until ready",
                      ngx_http_jvm_reload_idle_msec,
                      ngx_http_jvm_reload_nice_low);
        (void) ngx_http_jvm_reload_priorities(ngx_http_jvm_reload_nice_low,
                                              ngx_http_jvm_reload_nice_low, 1);
    }

    (void) pthread_mutex_unlock(&ngx_http_jvm_reload_idle_lock);

    return NULL;
}


/*
 * After its JVM's creation, a worker of a reload: the JIT compiler threads
 * at nice +jvm_reload_nice.  They are half the CPU of a JVM's start and
 * most of what a cold worker spends beyond a warm one; the old workers and
 * every thread that serves keep their priority.  A thread may raise its
 * own nice value without privileges but not lower it again, so they stay
 * there; once the worker is warm they are idle.  (Returning them after the
 * drain, where allowed, was measured: worse, bench/results/2026-11-26-
 * reload.md.)  Compiler threads added later are started by a compiler
 * thread and inherit its value.
 */

void
ngx_http_jvm_reload_lower_priority(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf)
{
    ngx_uint_t  count;

    /* ngx_http_jvm_reload_start_priority() ran first and found them */
    if (!ngx_http_jvm_reload_nice_known) {
        return;
    }

    count = ngx_http_jvm_reload_priorities(ngx_http_jvm_reload_nice_low, -1,
                                           0);

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, cycle->log, 0,
                   "jvm: %ui JIT compiler threads at a lower priority",
                   count);
}


/* The start of /proc/self/task/TID/FILE, NUL-terminated: its length, or -1. */

static ssize_t
ngx_http_jvm_reload_task_file(const char *tid, const char *file, char *buf,
    size_t size)
{
    int      fd;
    char     path[64];
    ssize_t  n;

    ngx_sprintf((u_char *) path, "/proc/self/task/%s/%s%Z", tid, file);

    fd = open(path, O_RDONLY);
    if (fd == -1) {
        return -1;
    }

    n = read(fd, buf, size - 1);
    close(fd);

    if (n >= 0) {
        buf[n] = '\0';
    }

    return n;
}


/*
 * Sets the nice value of this process's JIT compiler threads (C1, C2) to
 * "compilers" and, unless "others" is -1, of every other thread to
 * "others", a thread under SCHED_IDLE then under SCHED_OTHER; with "all",
 * a compiler under SCHED_IDLE too.  Returns how many compiler threads
 * were set.
 */

static ngx_uint_t
ngx_http_jvm_reload_priorities(int compilers, int others, ngx_uint_t all)
{
    int                  tid, compiler;
    char                 comm[32];
    DIR                 *dir;
    ssize_t              n;
    ngx_uint_t           count;
    struct dirent       *de;
    struct sched_param   sp;

    dir = opendir("/proc/self/task");
    if (dir == NULL) {
        return 0;
    }

    count = 0;

    while ((de = readdir(dir)) != NULL) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9') {
            continue;
        }

        n = ngx_http_jvm_reload_task_file(de->d_name, "comm", comm,
                                          sizeof(comm));
        if (n == -1) {
            continue;
        }

        tid = atoi(de->d_name);

        compiler = n >= 11 && (ngx_strncmp(comm, "C1 Compiler", 11) == 0
                               || ngx_strncmp(comm, "C2 Compiler", 11) == 0);

        /*
         * A pool thread or a carrier made itself SCHED_BATCH: it stays.
         * Once ready a compiler stays under SCHED_IDLE too, for now (see
         * ngx_http_jvm_reload_compilers()); past the start's limit it
         * leaves with the others: with no idle CPU it would never compile.
         */
        if (others != -1 && (all || !compiler)
            && sched_getscheduler(tid) == SCHED_IDLE)
        {
            ngx_memzero(&sp, sizeof(struct sched_param));
            (void) sched_setscheduler(tid, SCHED_OTHER, &sp);
        }

        if (compiler) {
            count += setpriority(PRIO_PROCESS, tid, compilers) == 0;

        } else if (others != -1) {
            (void) setpriority(PRIO_PROCESS, tid, others);
        }
    }

    closedir(dir);

    return count;
}


/*
 * A starting worker's JIT compiler threads leave SCHED_IDLE later than
 * the others, each once it sleeps (nothing left to compile), all of them
 * after NGX_HTTP_JVM_COMPILERS_LIMIT.  Moved to SCHED_OTHER while it has
 * work queued, a compiler that SCHED_IDLE kept waiting took both cores
 * from the old workers for 50-170 ms (every request of a reload at 40,000
 * req/s stalled once per new worker, as it became ready; with jvm_warmup
 * the compilers' queue is long then); moved while it sleeps it does not.
 * Under SCHED_IDLE it still compiles whenever a core is idle.
 */

static void
ngx_http_jvm_reload_compilers(ngx_event_t *ev)
{
    int                  tid;
    char                 buf[64], *state;
    DIR                 *dir;
    ngx_uint_t           left, force;
    struct dirent       *de;
    struct sched_param   sp;

    dir = opendir("/proc/self/task");
    if (dir == NULL) {
        return;
    }

    force = ngx_current_msec - ngx_http_jvm_reload_compilers_since
            >= NGX_HTTP_JVM_COMPILERS_LIMIT;
    left = 0;

    while ((de = readdir(dir)) != NULL) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9') {
            continue;
        }

        tid = atoi(de->d_name);

        if (sched_getscheduler(tid) != SCHED_IDLE) {
            continue;
        }

        /* "TID (C2 CompilerThre) S ...": only compilers are still idle */

        if (ngx_http_jvm_reload_task_file(de->d_name, "stat", buf,
                                          sizeof(buf))
            <= 0)
        {
            continue;
        }

        state = strrchr(buf, ')');

        if (!force && (state == NULL || state[1] != ' ' || state[2] == 'R')) {
            left++;
            continue;
        }

        ngx_memzero(&sp, sizeof(struct sched_param));
        (void) sched_setscheduler(tid, SCHED_OTHER, &sp);
    }

    closedir(dir);

    if (left && !ngx_exiting && !ngx_terminate && !ngx_quit) {
        ngx_add_timer(ev, NGX_HTTP_JVM_COMPILERS_POLL);
    }
}


/*
 * A worker of the newest generation told to quit or stop (another reload
 * makes a newer one first): the master tells only the workers it has not
 * told yet, so the older workers still waiting for this generation (they
 * took their quit at the reload) would wait for jvm_reload_timeout.  They
 * leave with it instead.  Said as soon as the worker sees the command: in
 * its turn's wait, after its warm-up (ngx_http_jvm_init_process), from its
 * channel in nginx's loop, or at its exit.
 */

void
ngx_http_jvm_reload_leaving(ngx_cycle_t *cycle)
{
    ngx_http_jvm_main_conf_t   *jmcf;
    ngx_http_jvm_generation_t  *gen;

    jmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_jvm_module);

    if (jmcf == NULL || jmcf->zone == NULL || jmcf->zone->data == NULL) {
        return;
    }

    gen = jmcf->zone->data;

    if (gen->generation == jmcf->generation
        && gen->leaving != jmcf->generation)
    {
        gen->leaving = jmcf->generation;
    }
}


/*
 * In a worker whose JVM is up (or failed for good): it says so, and, once
 * nginx has set up its channel, watches the channel for a quit.
 */

void
ngx_http_jvm_reload_worker_ready(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf)
{
    ngx_http_jvm_generation_t  *gen;

    gen = jmcf->zone->data;

    /*
     * A start at full priority measures the machine (a start under
     * SCHED_IDLE measures the load): the next reload's limit under it.
     */
    ngx_time_update();

    if (!ngx_http_jvm_reload_start_idle && ngx_http_jvm_reload_start_time) {
        gen->start_msec = ngx_current_msec - ngx_http_jvm_reload_start_time;
    }

    if (gen->generation == jmcf->generation) {
        (void) ngx_atomic_fetch_add(&gen->ready, 1);
    }

    /* an operator's measure of a start, and a test's sign that one is over */
    ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                  "jvm: worker %ui ready %M ms after its turn%s",
                  ngx_worker,
                  ngx_current_msec - ngx_http_jvm_reload_start_time,
                  ngx_http_jvm_vm.ready ? "" : ", without a JVM");

    if (ngx_process != NGX_PROCESS_WORKER) {
        return;
    }

    if (ngx_http_jvm_reload_start_idle) {
        /* ready: SCHED_OTHER, and all but the compilers at the worker's own */
        (void) pthread_mutex_lock(&ngx_http_jvm_reload_idle_lock);
        ngx_http_jvm_reload_idle_over = 1;
        (void) ngx_http_jvm_reload_priorities(ngx_http_jvm_reload_nice_low,
                                              ngx_http_jvm_reload_nice_base,
                                              0);
        (void) pthread_mutex_unlock(&ngx_http_jvm_reload_idle_lock);

        ngx_http_jvm_reload_compilers_since = ngx_current_msec;
        ngx_http_jvm_reload_compilers_ev.data = &ngx_http_jvm_reload_dummy;
        ngx_http_jvm_reload_compilers_ev.handler =
                                             ngx_http_jvm_reload_compilers;
        ngx_http_jvm_reload_compilers_ev.log = cycle->log;
        ngx_http_jvm_reload_compilers_ev.cancelable = 1;

        ngx_add_timer(&ngx_http_jvm_reload_compilers_ev,
                      NGX_HTTP_JVM_COMPILERS_POLL);
    }

    if (jmcf->reload_timeout == 0) {
        return;
    }

    ngx_http_jvm_reload_conf = jmcf;

    /* nginx adds the channel's event after every init_process */

    ngx_http_jvm_reload_install_ev.data = &ngx_http_jvm_reload_dummy;
    ngx_http_jvm_reload_install_ev.handler = ngx_http_jvm_reload_install;
    ngx_http_jvm_reload_install_ev.log = cycle->log;
    ngx_http_jvm_reload_install_ev.cancelable = 1;

    ngx_add_timer(&ngx_http_jvm_reload_install_ev, 1);
}


static void
ngx_http_jvm_reload_install(ngx_event_t *ev)
{
    ngx_uint_t         i;
    ngx_connection_t  *c;

    c = ngx_cycle->connections;

    for (i = 0; i < ngx_cycle->connection_n; i++) {
        if (c[i].fd == ngx_channel && c[i].read && c[i].read->handler) {
            ngx_http_jvm_reload_channel_conn = &c[i];
            ngx_http_jvm_reload_nginx_handler = c[i].read->handler;
            c[i].read->handler = ngx_http_jvm_reload_channel;
            return;
        }
    }

    ngx_log_error(NGX_LOG_WARN, ev->log, 0,
                  "jvm: the worker's channel was not found: reloads "
                  "stop accepting before the new workers are ready");
}


/*
 * The channel is readable.  A quit while a newer generation is not ready
 * yet is taken here and delayed; a quit once it is ready starts the drain;
 * a quit while waiting or draining is taken (this worker quits soon
 * anyway); anything else is nginx's.
 */

static void
ngx_http_jvm_reload_channel(ngx_event_t *ev)
{
    ssize_t                     n;
    ngx_uint_t                  take;
    ngx_channel_t               ch;
    ngx_connection_t           *c;
    ngx_http_jvm_main_conf_t   *jmcf;
    ngx_http_jvm_generation_t  *gen;

    c = ev->data;
    jmcf = ngx_http_jvm_reload_conf;
    gen = jmcf->zone->data;
    take = 0;

    if (!ev->timedout && !ngx_exiting) {
        if (ngx_http_jvm_reload_wait_ev.timer_set
            || ngx_http_jvm_reload_drain_start)
        {
            take = 1;

        } else if (gen->generation != jmcf->generation) {
            take = (gen->ready < gen->workers) ? 2 : 3;
        }
    }

    if (take) {
        n = recv(c->fd, &ch, sizeof(ngx_channel_t), MSG_PEEK);

        /* ngx_read_channel() answers the bytes it read */

        if (n == (ssize_t) sizeof(ngx_channel_t) && ch.command == NGX_CMD_QUIT
            && ngx_read_channel(c->fd, &ch, sizeof(ngx_channel_t), ev->log)
               == (ngx_int_t) sizeof(ngx_channel_t))
        {
            if (take == 2) {
                ngx_log_error(NGX_LOG_NOTICE, ev->log, 0,
                              "jvm: reload: serving until the new workers "
                              "are ready (jvm_reload_timeout %M ms)",
                              jmcf->reload_timeout);

                ngx_http_jvm_reload_deadline = ngx_current_msec
                                               + jmcf->reload_timeout;

                ngx_http_jvm_reload_wait_ev.data = &ngx_http_jvm_reload_dummy;
                ngx_http_jvm_reload_wait_ev.handler = ngx_http_jvm_reload_wait;
                ngx_http_jvm_reload_wait_ev.log = ev->log;

                ngx_add_timer(&ngx_http_jvm_reload_wait_ev,
                              NGX_HTTP_JVM_RELOAD_POLL);

            } else if (take == 3) {
                ngx_http_jvm_reload_quit(ev);
            }
        }
    }

    ngx_http_jvm_reload_nginx_handler(ev);

    if (ngx_quit || ngx_terminate) {
        ngx_http_jvm_reload_leaving((ngx_cycle_t *) ngx_cycle);
    }
}


static void
ngx_http_jvm_reload_wait(ngx_event_t *ev)
{
    ngx_http_jvm_generation_t  *gen;

    gen = ngx_http_jvm_reload_conf->zone->data;

    if (gen->ready >= gen->workers) {
        ngx_log_error(NGX_LOG_NOTICE, ev->log, 0,
                      "jvm: reload: the new workers are ready");
        ngx_http_jvm_reload_quit(ev);
        return;
    }

    if (gen->leaving == gen->generation) {
        ngx_log_error(NGX_LOG_NOTICE, ev->log, 0,
                      "jvm: reload: the new workers were told to leave: "
                      "quitting");
        ngx_quit = 1;
        return;
    }

    if ((ngx_msec_int_t) (ngx_current_msec - ngx_http_jvm_reload_deadline)
        >= 0)
    {
        ngx_log_error(NGX_LOG_WARN, ev->log, 0,
                      "jvm: reload: %uA of %uA new workers ready after "
                      "jvm_reload_timeout; quitting all the same",
                      gen->ready, gen->workers);
        ngx_quit = 1;
        return;
    }

    if (ngx_exiting || ngx_terminate || ngx_quit) {
        return;
    }

    ngx_add_timer(ev, NGX_HTTP_JVM_RELOAD_POLL);
}


/*
 * The new workers are ready: without jvm_reload_drain, quit as nginx
 * would; with it, stop accepting (the new workers accept from the same
 * sockets) and hand the keep-alive connections over for that long.
 */

static void
ngx_http_jvm_reload_quit(ngx_event_t *ev)
{
    ngx_msec_t  drain;

    drain = ngx_http_jvm_reload_conf->reload_drain;

    if (drain == 0 || ngx_exiting || ngx_terminate) {
        ngx_quit = 1;
        return;
    }

    ngx_log_error(NGX_LOG_NOTICE, ev->log, 0,
                  "jvm: reload: handing the connections over to the new "
                  "workers (jvm_reload_drain %M ms)", drain);

    ngx_close_listening_sockets((ngx_cycle_t *) ngx_cycle);

    ngx_http_jvm_reload_drain_time = drain;
    ngx_http_jvm_reload_drain_start = ngx_current_msec ? ngx_current_msec : 1;

    ngx_http_jvm_reload_drain_ev.data = &ngx_http_jvm_reload_dummy;
    ngx_http_jvm_reload_drain_ev.handler = ngx_http_jvm_reload_drain;
    ngx_http_jvm_reload_drain_ev.log = ev->log;

    ngx_add_timer(&ngx_http_jvm_reload_drain_ev, NGX_HTTP_JVM_DRAIN_POLL);
}


/* The clients' connections this worker still has. */

static ngx_uint_t
ngx_http_jvm_reload_clients(void)
{
    ngx_uint_t         i, n;
    ngx_connection_t  *c;

    c = ngx_cycle->connections;
    n = 0;

    for (i = 0; i < ngx_cycle->connection_n; i++) {
        if (c[i].fd != (ngx_socket_t) -1 && c[i].listening != NULL) {
            n++;
        }
    }

    return n;
}


static void
ngx_http_jvm_reload_drain(ngx_event_t *ev)
{
    ngx_uint_t                  left;
    ngx_http_jvm_generation_t  *gen;

    if (ngx_exiting || ngx_terminate || ngx_quit) {
        return;
    }

    gen = ngx_http_jvm_reload_conf->zone->data;
    left = ngx_http_jvm_reload_clients();

    /* no one left to hand them to: a quit or stop came for all */

    if (left == 0 || gen->leaving == gen->generation
        || ngx_current_msec - ngx_http_jvm_reload_drain_start
           >= ngx_http_jvm_reload_drain_time)
    {
        ngx_log_error(NGX_LOG_NOTICE, ev->log, 0,
                      "jvm: reload: connections handed over, %ui left",
                      left);
        ngx_quit = 1;
        return;
    }

    ngx_add_timer(ev, NGX_HTTP_JVM_DRAIN_POLL);
}


/*
 * While draining, a response on a keep-alive connection says "Connection:
 * close" and the connection closes after it, once the drain's elapsed
 * share passes the connection's place (a hash of its number, spread over
 * the drain's time): the connections leave in an even stream, each right
 * after an answer, never while a request may be on its way.
 *
 * Postconfiguration: installed when the worker will have a JVM (some
 * handler, or jvm_init), which is when it drains on a reload.
 */

ngx_int_t
ngx_http_jvm_reload_filter_init(ngx_conf_t *cf)
{
    ngx_http_jvm_main_conf_t  *jmcf;

    jmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_jvm_module);

    if (jmcf->handlers.nelts == 0 && jmcf->init.len == 0) {
        return NGX_OK;
    }

    ngx_http_jvm_reload_next_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_jvm_reload_header_filter;

    return NGX_OK;
}


static ngx_int_t
ngx_http_jvm_reload_header_filter(ngx_http_request_t *r)
{
    uint32_t    hash;
    ngx_msec_t  place;

    if (ngx_http_jvm_reload_drain_start && r == r->main && r->keepalive) {
        hash = (uint32_t) r->connection->number * 2654435761u;
        place = (ngx_msec_t) (((uint64_t) hash
                               * ngx_http_jvm_reload_drain_time) >> 32);

        if (ngx_current_msec - ngx_http_jvm_reload_drain_start >= place) {
            r->keepalive = 0;
        }
    }

    return ngx_http_jvm_reload_next_filter(r);
}
