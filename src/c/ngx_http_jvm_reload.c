
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
 */


#include "ngx_http_jvm_module.h"

#include <ngx_channel.h>
#include <sys/socket.h>


#define NGX_HTTP_JVM_RELOAD_POLL  50
#define NGX_HTTP_JVM_TURN_LIMIT   10000


static void ngx_http_jvm_reload_install(ngx_event_t *ev);
static void ngx_http_jvm_reload_channel(ngx_event_t *ev);
static void ngx_http_jvm_reload_wait(ngx_event_t *ev);


/* the timers' data: nginx's debug log reads an fd from it */
static ngx_connection_t      ngx_http_jvm_reload_dummy = { .fd = -1 };
static ngx_event_t           ngx_http_jvm_reload_install_ev;
static ngx_event_t           ngx_http_jvm_reload_wait_ev;
static ngx_event_handler_pt  ngx_http_jvm_reload_nginx_handler;
static ngx_connection_t     *ngx_http_jvm_reload_channel_conn;
static ngx_msec_t            ngx_http_jvm_reload_deadline;
static ngx_http_jvm_main_conf_t  *ngx_http_jvm_reload_conf;


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
 * them ready and does not wait.
 */

void
ngx_http_jvm_reload_worker_turn(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf)
{
    ngx_msec_t                  waited;
    ngx_http_jvm_generation_t  *gen;

    gen = jmcf->zone->data;

    for (waited = 0; waited < NGX_HTTP_JVM_TURN_LIMIT; waited += 5) {
        if (gen->generation != jmcf->generation
            || gen->ready >= (ngx_atomic_uint_t) ngx_worker)
        {
            break;
        }

        ngx_msleep(5);
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, cycle->log, 0,
                   "jvm: worker %ui waited %M ms for its turn",
                   ngx_worker, waited);
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

    if (gen->generation == jmcf->generation) {
        (void) ngx_atomic_fetch_add(&gen->ready, 1);
    }

    if (ngx_process != NGX_PROCESS_WORKER || jmcf->reload_timeout == 0) {
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
 * The channel is readable: a quit while a newer generation is not ready yet
 * is taken here and delayed; anything else is nginx's.
 */

static void
ngx_http_jvm_reload_channel(ngx_event_t *ev)
{
    ssize_t                     n;
    ngx_channel_t               ch;
    ngx_connection_t           *c;
    ngx_http_jvm_main_conf_t   *jmcf;
    ngx_http_jvm_generation_t  *gen;

    c = ev->data;
    jmcf = ngx_http_jvm_reload_conf;
    gen = jmcf->zone->data;

    if (!ev->timedout && !ngx_exiting && !ngx_http_jvm_reload_wait_ev.timer_set
        && gen->generation != jmcf->generation
        && gen->ready < gen->workers)
    {
        n = recv(c->fd, &ch, sizeof(ngx_channel_t), MSG_PEEK);

        /* ngx_read_channel() answers the bytes it read */

        if (n == (ssize_t) sizeof(ngx_channel_t) && ch.command == NGX_CMD_QUIT
            && ngx_read_channel(c->fd, &ch, sizeof(ngx_channel_t), ev->log)
               == (ngx_int_t) sizeof(ngx_channel_t))
        {
            ngx_log_error(NGX_LOG_NOTICE, ev->log, 0,
                          "jvm: reload: serving until the new workers are "
                          "ready (jvm_reload_timeout %M ms)",
                          jmcf->reload_timeout);

            ngx_http_jvm_reload_deadline = ngx_current_msec
                                           + jmcf->reload_timeout;

            ngx_http_jvm_reload_wait_ev.data = &ngx_http_jvm_reload_dummy;
            ngx_http_jvm_reload_wait_ev.handler = ngx_http_jvm_reload_wait;
            ngx_http_jvm_reload_wait_ev.log = ev->log;

            ngx_add_timer(&ngx_http_jvm_reload_wait_ev,
                          NGX_HTTP_JVM_RELOAD_POLL);
        }
    }

    ngx_http_jvm_reload_nginx_handler(ev);
}


static void
ngx_http_jvm_reload_wait(ngx_event_t *ev)
{
    ngx_http_jvm_generation_t  *gen;

    gen = ngx_http_jvm_reload_conf->zone->data;

    if (gen->ready >= gen->workers) {
        ngx_log_error(NGX_LOG_NOTICE, ev->log, 0,
                      "jvm: reload: the new workers are ready");
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
