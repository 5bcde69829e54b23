
/*
 * nginx-jvm: a worker warms its JVM up before it accepts (jvm_warmup).
 *
 * A fresh JVM runs the request path interpreted, then compiles it as it
 * gets hot: a new worker of a reload serves its first seconds at a
 * fraction of a warm worker's rate, and the clients the old workers hand
 * over to it wait (bench/results/2026-11-26-reload.md).  With jvm_warmup
 * a worker whose JVM is up first sends itself its server's requests, and
 * only then accepts connections and counts as ready for the workers of an
 * older generation, which serve meanwhile.
 *
 * The requests go through nginx's whole path (phases, handlers, filters,
 * the log), so that what gets compiled is what real requests run: one end
 * of a socket pair becomes an HTTP connection of the server's listen, as
 * if accepted there; the other is a client this worker drives from its
 * own event loop, the requests pipelined, the last one "Connection:
 * close".  The loop runs here, inside init_process, with the listening
 * sockets' events off; nginx enters its own loop afterwards.
 *
 * nginx watches the worker's channel only once every init_process has
 * returned: meanwhile the worker reads it here, for the warm-up and for
 * the wait for its turn to start (ngx_http_jvm_warmup_read_channel), so
 * that a quit or stop from the master ends them at once.
 */


#include "ngx_http_jvm_module.h"

#include <ngx_channel.h>
#include <sys/socket.h>


#define NGX_HTTP_JVM_WARMUP_AGENT   "nginx-jvm-warmup"
#define NGX_HTTP_JVM_WARMUP_BUF     16384
#define NGX_HTTP_JVM_WARMUP_NEWER   50

/*
 * Requests sent and not yet begun by nginx, at most.  nginx serves what
 * is pipelined one request after the other without returning to its
 * loop (ngx_http_set_keepalive posts the next one): with the socket's
 * whole buffer of requests sent ahead, a loop-mode handler of 3 ms held
 * the loop, and the master's quit, for a second.
 */
#define NGX_HTTP_JVM_WARMUP_WINDOW  8


typedef struct {
    ngx_http_jvm_warmup_t     *conf;
    ngx_listening_t           *listening;
    ngx_connection_t          *client;
    ngx_connection_t          *server;     /* until nginx closes it */
    ngx_pool_cleanup_t        *cleanup;    /* of its pool: the count */
    ngx_uint_t                 served;     /* by the connections closed */
    ngx_uint_t                 sent;       /* "served" when this one began */
    ngx_str_t                  request;
    ngx_str_t                  last;       /* the same, "Connection: close" */
    ngx_uint_t                 queued;     /* requests put in "out" so far */
    ngx_buf_t                 *out;
    u_char                     first[32];  /* the first answer's first bytes */
    size_t                     first_len;
    ngx_msec_t                 start;
    ngx_event_t                limit;
    ngx_http_jvm_quiet_t       quiet;      /* its failures, counted */
    unsigned                   done:1;
} ngx_http_jvm_warmup_run_t;


static ngx_int_t ngx_http_jvm_warmup_start(ngx_cycle_t *cycle,
    ngx_http_jvm_warmup_run_t *run);
static ngx_int_t ngx_http_jvm_warmup_connect(
    ngx_http_jvm_warmup_run_t *run);
static ngx_int_t ngx_http_jvm_warmup_serve(ngx_listening_t *ls,
    ngx_socket_t fd, ngx_http_jvm_warmup_run_t *run);
static void ngx_http_jvm_warmup_server_closed(void *data);
static void ngx_http_jvm_warmup_write(ngx_event_t *wev);
static void ngx_http_jvm_warmup_read(ngx_event_t *rev);
static void ngx_http_jvm_warmup_closed(ngx_http_jvm_warmup_run_t *run);
static void ngx_http_jvm_warmup_timeout(ngx_event_t *ev);
static void ngx_http_jvm_warmup_end(ngx_http_jvm_warmup_run_t *run,
    const char *why);
static void ngx_http_jvm_warmup_unquiet(ngx_http_jvm_warmup_run_t *run);
static void ngx_http_jvm_warmup_accept(ngx_cycle_t *cycle, ngx_uint_t on);
static void ngx_http_jvm_warmup_stop(ngx_http_jvm_warmup_run_t *runs,
    ngx_uint_t n);
static ngx_int_t ngx_http_jvm_warmup_watch(ngx_cycle_t *cycle, ngx_uint_t on);
static void ngx_http_jvm_warmup_channel(ngx_event_t *rev);
static void ngx_http_jvm_warmup_newer(ngx_event_t *ev);
static void ngx_http_jvm_warmup_wake(void);
static void ngx_http_jvm_warmup_woken(ngx_event_t *ev);


static ngx_uint_t        ngx_http_jvm_warmup_pending;
static ngx_http_jvm_main_conf_t  *ngx_http_jvm_warmup_conf;

/* the master's commands, read from the channel before nginx does */
static ngx_connection_t *ngx_http_jvm_warmup_channel_conn;
static ngx_uint_t        ngx_http_jvm_warmup_channel_gone;
static ngx_uint_t        ngx_http_jvm_warmup_taken;
static ngx_event_t       ngx_http_jvm_warmup_wake_ev;

/* a newer configuration came: why the warm-up stopped */
static const char       *ngx_http_jvm_warmup_why;
static ngx_event_t       ngx_http_jvm_warmup_newer_ev;

/* the timers' data: nginx's debug log reads an fd from it */
static ngx_connection_t  ngx_http_jvm_warmup_dummy = { .fd = -1 };


/* jvm_warmup URI [requests=N] [time=T], in a server */

char *
ngx_http_jvm_warmup_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_jvm_main_conf_t *jmcf = conf;

    u_char                 *p;
    ngx_int_t               n;
    ngx_str_t              *value, s;
    ngx_uint_t              i;
    ngx_http_jvm_warmup_t  *w;

    value = cf->args->elts;

    if (value[1].len == 0 || value[1].data[0] != '/') {
        return "takes a path that starts with \"/\"";
    }

    for (p = value[1].data; p < value[1].data + value[1].len; p++) {
        if (*p <= ' ' || *p == 0x7f) {
            return "takes a path without spaces or control characters";
        }
    }

    if (jmcf->warmups == NULL) {
        jmcf->warmups = ngx_array_create(cf->pool, 2,
                                         sizeof(ngx_http_jvm_warmup_t));
        if (jmcf->warmups == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    w = ngx_array_push(jmcf->warmups);
    if (w == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(w, sizeof(ngx_http_jvm_warmup_t));

    w->uri = value[1];
    w->requests = 10000;
    w->time = 30000;
    w->server = ngx_http_conf_get_module_srv_conf(cf, ngx_http_core_module);
    w->file = cf->conf_file->file.name;
    w->line = cf->conf_file->line;

    for (i = 2; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "requests=", 9) == 0) {
            n = ngx_atoi(value[i].data + 9, value[i].len - 9);

            if (n < 1 || n > 1000000) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "\"jvm_warmup\": \"%V\": requests must be "
                                   "1 to 1000000", &value[i]);
                return NGX_CONF_ERROR;
            }

            w->requests = n;
            continue;
        }

        if (ngx_strncmp(value[i].data, "time=", 5) == 0) {
            s.data = value[i].data + 5;
            s.len = value[i].len - 5;

            w->time = ngx_parse_time(&s, 0);

            if (w->time == (ngx_msec_t) NGX_ERROR || w->time == 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "\"jvm_warmup\": \"%V\": time must be a "
                                   "time above 0, such as 30s", &value[i]);
                return NGX_CONF_ERROR;
            }

            continue;
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"jvm_warmup\": invalid parameter \"%V\" "
                           "(requests=N or time=T)", &value[i]);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/*
 * Once every listen is known (postconfiguration): an address of each
 * warm-up's server that speaks plain HTTP/1 (not TLS, not the PROXY
 * protocol, not HTTP/2 only), and the name it is asked for by.
 */

ngx_int_t
ngx_http_jvm_warmup_init(ngx_conf_t *cf)
{
    ngx_uint_t                  i, j, k, l;
    ngx_http_conf_addr_t       *addr, *found;
    ngx_http_conf_port_t       *port;
    ngx_http_jvm_warmup_t      *w;
    ngx_http_core_srv_conf_t  **servers;
    ngx_http_core_main_conf_t  *cmcf;
    ngx_http_jvm_main_conf_t   *jmcf;

    jmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_jvm_module);

    if (jmcf->warmups == NULL) {
        return NGX_OK;
    }

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);
    w = jmcf->warmups->elts;

    for (i = 0; i < jmcf->warmups->nelts; i++) {
        found = NULL;
        port = cmcf->ports ? cmcf->ports->elts : NULL;

        for (j = 0; found == NULL && port && j < cmcf->ports->nelts; j++) {
            addr = port[j].addrs.elts;

            for (k = 0; found == NULL && k < port[j].addrs.nelts; k++) {
                if (addr[k].opt.ssl || addr[k].opt.http2
                    || addr[k].opt.proxy_protocol)
                {
                    continue;
                }

                servers = addr[k].servers.elts;

                for (l = 0; l < addr[k].servers.nelts; l++) {
                    if (servers[l] == w[i].server) {
                        found = &addr[k];
                        break;
                    }
                }
            }
        }

        if (found == NULL) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "\"jvm_warmup\" in %V:%ui: its server has no "
                          "\"listen\" without ssl, http2 or proxy_protocol "
                          "for the warm-up's plain HTTP/1.1 requests",
                          &w[i].file, w[i].line);
            return NGX_ERROR;
        }

        w[i].sockaddr = found->opt.sockaddr;
        w[i].socklen = found->opt.socklen;

        /* a regex or wildcard name is no Host: the address's default hears */
        w[i].host = w[i].server->server_name;

        if (w[i].host.len == 0 || w[i].host.data[0] == '~'
            || w[i].host.data[0] == '*' || w[i].host.data[0] == '.')
        {
            ngx_str_set(&w[i].host, "localhost");
        }

        ngx_log_debug3(NGX_LOG_DEBUG_HTTP, cf->log, 0,
                       "jvm: warm-up of %V: through %V, Host \"%V\"",
                       &w[i].uri, &found->opt.addr_text, &w[i].host);
    }

    return NGX_OK;
}


/*
 * In a worker whose JVM is up, before it accepts: every warm-up at once,
 * each on its own connection, until each has its answers or its time is
 * up.  A quit or stop from the master, or a newer configuration, ends
 * them, and the worker does not accept: it leaves.
 */

void
ngx_http_jvm_warmup_run(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf)
{
    ngx_int_t                   disabled;
    ngx_uint_t                  i, n;
    ngx_http_jvm_warmup_t      *w;
    ngx_http_jvm_warmup_run_t  *runs;

    if (jmcf->warmups == NULL || !ngx_http_jvm_vm.ready) {
        return;
    }

    /*
     * What came during the JVM's start, before any warm-up request: a
     * worker told to leave then (its turn's wait had ended, on its limit
     * or not) sends itself none.
     */
    ngx_http_jvm_warmup_read_channel(cycle);

    if (ngx_terminate || ngx_quit) {
        ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                      "jvm: a %s came during the JVM's start: no warm-up",
                      ngx_terminate ? "stop" : "quit");
        return;
    }

    n = jmcf->warmups->nelts;

    runs = ngx_pcalloc(cycle->pool, n * sizeof(ngx_http_jvm_warmup_run_t));
    if (runs == NULL) {
        return;
    }

    /* the JVM's start took seconds: timers count from now */
    ngx_time_update();

    /*
     * With accept_mutex the worker takes the mutex (and accepts) only
     * while ngx_accept_disabled is not above 0; without, the listening
     * sockets' events are off.
     */
    disabled = ngx_accept_disabled;
    ngx_accept_disabled = NGX_MAX_INT32_VALUE;
    ngx_http_jvm_warmup_accept(cycle, 0);

    w = jmcf->warmups->elts;
    ngx_http_jvm_warmup_pending = 0;

    for (i = 0; i < n; i++) {
        runs[i].conf = &w[i];

        if (ngx_http_jvm_warmup_start(cycle, &runs[i]) == NGX_OK) {
            ngx_http_jvm_warmup_pending++;
        }
    }

    /* each command as it comes */
    (void) ngx_http_jvm_warmup_watch(cycle, 1);

    ngx_http_jvm_warmup_conf = jmcf;
    ngx_http_jvm_warmup_newer_ev.data = &ngx_http_jvm_warmup_dummy;
    ngx_http_jvm_warmup_newer_ev.handler = ngx_http_jvm_warmup_newer;
    ngx_http_jvm_warmup_newer_ev.log = cycle->log;
    ngx_http_jvm_warmup_newer(&ngx_http_jvm_warmup_newer_ev);

    for ( ;; ) {
        if (ngx_terminate || ngx_quit) {
            ngx_http_jvm_warmup_stop(runs, n);
        }

        if (ngx_http_jvm_warmup_pending == 0) {
            break;
        }

        ngx_process_events_and_timers(cycle);
    }

    if (ngx_http_jvm_warmup_newer_ev.timer_set) {
        ngx_del_timer(&ngx_http_jvm_warmup_newer_ev);
    }

    (void) ngx_http_jvm_warmup_watch(cycle, 0);

    if (ngx_http_jvm_warmup_taken) {
        /* the wake-up may have gone off here: nginx's loop is yet to come */
        ngx_http_jvm_warmup_wake();
    }

    if (ngx_terminate || ngx_quit) {
        /* leaving: nginx's loop closes the listening sockets */
        return;
    }

    ngx_http_jvm_warmup_accept(cycle, 1);
    ngx_accept_disabled = disabled;
}


/*
 * Every warm-up ends as a client that leaves: nginx sees the connection
 * close, as it would a client's, and aborts the request it serves.
 */

static void
ngx_http_jvm_warmup_stop(ngx_http_jvm_warmup_run_t *runs, ngx_uint_t n)
{
    ngx_uint_t   i;
    const char  *why;

    why = ngx_terminate ? "the worker stops"
          : ngx_http_jvm_warmup_why ? ngx_http_jvm_warmup_why
          : "the worker quits";

    for (i = 0; i < n; i++) {
        ngx_http_jvm_warmup_end(&runs[i], why);
    }
}


/*
 * nginx watches a worker's channel only once every init_process has
 * returned (ngx_worker_process_init).  Until then a worker that waits
 * for its turn or warms up reads it itself, each message as
 * ngx_channel_handler() would, so that a quit or stop is seen whatever
 * comes before it (the master sends an OPEN_CHANNEL to the older workers
 * for each one it starts).  The flags it sets end the wait and the
 * warm-up, and nginx's loop acts on them as on its own: a timer turns
 * that loop once.
 */

void
ngx_http_jvm_warmup_read_channel(ngx_cycle_t *cycle)
{
    ngx_int_t      n;
    ngx_channel_t  ch;

    /* a single process (master_process off) has no channel */
    if (ngx_process != NGX_PROCESS_WORKER
        || ngx_http_jvm_warmup_channel_gone)
    {
        return;
    }

    for ( ;; ) {
        n = ngx_read_channel(ngx_channel, &ch, sizeof(ngx_channel_t),
                             cycle->log);

        if (n == NGX_AGAIN) {
            return;
        }

        if (n == NGX_ERROR) {
            /* the master is gone: nginx closes the channel once it runs */
            ngx_http_jvm_warmup_channel_gone = 1;
            return;
        }

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, cycle->log, 0,
                       "jvm: channel command %ui before nginx's loop",
                       ch.command);

        switch (ch.command) {

        case NGX_CMD_QUIT:
            ngx_quit = 1;
            break;

        case NGX_CMD_TERMINATE:
            ngx_terminate = 1;
            break;

        case NGX_CMD_REOPEN:
            ngx_reopen = 1;
            break;

        case NGX_CMD_OPEN_CHANNEL:
            ngx_processes[ch.slot].pid = ch.pid;
            ngx_processes[ch.slot].channel[0] = ch.fd;
            continue;

        case NGX_CMD_CLOSE_CHANNEL:
            if (close(ngx_processes[ch.slot].channel[0]) == -1) {
                ngx_log_error(NGX_LOG_ALERT, cycle->log, ngx_errno,
                              "close() channel failed");
            }

            ngx_processes[ch.slot].channel[0] = -1;
            continue;

        default:
            continue;
        }

        ngx_http_jvm_warmup_taken = 1;
        ngx_http_jvm_warmup_wake();
    }
}


/*
 * nginx's loop blocks until an event: the messages that would have woken
 * it are read, so a timer turns it once, to act on the flags they set.
 */

static void
ngx_http_jvm_warmup_wake(void)
{
    ngx_http_jvm_warmup_wake_ev.data = &ngx_http_jvm_warmup_dummy;
    ngx_http_jvm_warmup_wake_ev.handler = ngx_http_jvm_warmup_woken;
    ngx_http_jvm_warmup_wake_ev.log = ngx_cycle->log;

    ngx_add_timer(&ngx_http_jvm_warmup_wake_ev, 1);
}


static void
ngx_http_jvm_warmup_woken(ngx_event_t *ev)
{
    /* void */
}


/*
 * During the warm-up the channel is an event of the loop, as nginx makes
 * it later (ngx_add_channel_event), and taken off again before nginx
 * adds its own: its connection is freed, the descriptor left open.
 */

static ngx_int_t
ngx_http_jvm_warmup_watch(ngx_cycle_t *cycle, ngx_uint_t on)
{
    ngx_connection_t  *c;

    if (ngx_process != NGX_PROCESS_WORKER) {
        return NGX_OK;
    }

    c = ngx_http_jvm_warmup_channel_conn;

    if (!on) {
        if (c == NULL) {
            return NGX_OK;
        }

        if (c->read->active) {
            (void) ngx_del_event(c->read, NGX_READ_EVENT, 0);
        }

        ngx_free_connection(c);
        c->fd = (ngx_socket_t) -1;
        ngx_http_jvm_warmup_channel_conn = NULL;

        return NGX_OK;
    }

    if (ngx_http_jvm_warmup_channel_gone) {
        return NGX_OK;
    }

    c = ngx_get_connection(ngx_channel, cycle->log);
    if (c == NULL) {
        return NGX_ERROR;
    }

    c->data = &ngx_http_jvm_warmup_dummy;
    c->read->handler = ngx_http_jvm_warmup_channel;
    c->read->log = cycle->log;
    c->write->log = cycle->log;

    ngx_http_jvm_warmup_channel_conn = c;

    if (ngx_add_event(c->read, NGX_READ_EVENT, 0) != NGX_OK) {
        (void) ngx_http_jvm_warmup_watch(cycle, 0);
        return NGX_ERROR;
    }

    return NGX_OK;
}


static void
ngx_http_jvm_warmup_channel(ngx_event_t *rev)
{
    ngx_http_jvm_warmup_read_channel((ngx_cycle_t *) ngx_cycle);

    /* the master is gone: a closed channel would be readable for ever */
    if (ngx_http_jvm_warmup_channel_gone && rev->active) {
        (void) ngx_del_event(rev, NGX_READ_EVENT, 0);
    }
}


/*
 * A newer configuration's workers are starting: this worker's warm-up
 * would take their CPU, and the master tells it to quit once they are
 * started (100 ms later).  It quits now.  The channel is read here too,
 * should its event have failed.
 */

static void
ngx_http_jvm_warmup_newer(ngx_event_t *ev)
{
    ngx_http_jvm_main_conf_t   *jmcf;
    ngx_http_jvm_generation_t  *gen;

    jmcf = ngx_http_jvm_warmup_conf;

    if (jmcf->zone == NULL || ngx_process != NGX_PROCESS_WORKER) {
        return;
    }

    ngx_http_jvm_warmup_read_channel((ngx_cycle_t *) ngx_cycle);

    gen = jmcf->zone->data;

    if (gen->generation != jmcf->generation) {
        ngx_log_error(NGX_LOG_NOTICE, ev->log, 0,
                      "jvm: reload: a newer configuration came during the "
                      "warm-up: quitting");

        ngx_http_jvm_warmup_why = "a newer configuration came";
        ngx_quit = 1;
        ngx_http_jvm_warmup_taken = 1;
        return;
    }

    ngx_add_timer(ev, NGX_HTTP_JVM_WARMUP_NEWER);
}


static ngx_int_t
ngx_http_jvm_warmup_start(ngx_cycle_t *cycle, ngx_http_jvm_warmup_run_t *run)
{
    u_char                 *p;
    size_t                  len;
    ngx_http_jvm_warmup_t  *w;

    w = run->conf;
    run->done = 1;

    /* with reuseport, this worker's socket */
    run->listening = ngx_http_jvm_local_listening(cycle, w->sockaddr,
                                                  w->socklen);

    if (run->listening == NULL) {
        ngx_log_error(NGX_LOG_WARN, cycle->log, 0,
                      "jvm: warm-up of %V: no listening socket of its "
                      "server in this worker, not warmed", &w->uri);
        return NGX_DECLINED;
    }

    len = sizeof("GET  HTTP/1.1" CRLF "Host: " CRLF
                 "User-Agent: " NGX_HTTP_JVM_WARMUP_AGENT CRLF
                 "Connection: close" CRLF CRLF) - 1
          + w->uri.len + w->host.len;

    run->request.data = ngx_pnalloc(cycle->pool, len);
    run->last.data = ngx_pnalloc(cycle->pool, len);
    run->out = ngx_create_temp_buf(cycle->pool, NGX_HTTP_JVM_WARMUP_BUF);

    if (run->request.data == NULL || run->last.data == NULL
        || run->out == NULL)
    {
        return NGX_ERROR;
    }

    p = ngx_sprintf(run->request.data, "GET %V HTTP/1.1" CRLF "Host: %V" CRLF
                    "User-Agent: " NGX_HTTP_JVM_WARMUP_AGENT CRLF CRLF,
                    &w->uri, &w->host);
    run->request.len = p - run->request.data;

    p = ngx_sprintf(run->last.data, "GET %V HTTP/1.1" CRLF "Host: %V" CRLF
                    "User-Agent: " NGX_HTTP_JVM_WARMUP_AGENT CRLF
                    "Connection: close" CRLF CRLF,
                    &w->uri, &w->host);
    run->last.len = p - run->last.data;

    run->done = 0;
    run->start = ngx_current_msec;

    if (ngx_http_jvm_warmup_connect(run) != NGX_OK) {
        run->done = 1;
        return NGX_ERROR;
    }

    /* nginx reads the first requests on the loop's next turn */
    run->quiet.next = ngx_http_jvm_vm.quiet;
    ngx_http_jvm_vm.quiet = &run->quiet;

    run->limit.data = run;
    run->limit.handler = ngx_http_jvm_warmup_timeout;
    run->limit.log = cycle->log;
    ngx_add_timer(&run->limit, w->time);

    return NGX_OK;
}


/*
 * A connection for the requests not answered yet: nginx closes one after
 * keepalive_requests (1000 by default), and the warm-up goes on on
 * another.
 */

static ngx_int_t
ngx_http_jvm_warmup_connect(ngx_http_jvm_warmup_run_t *run)
{
    ngx_socket_t       s[2];
    ngx_connection_t  *c;

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, s) == -1) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, ngx_socket_errno,
                      "jvm: warm-up of %V: socketpair() failed",
                      &run->conf->uri);
        return NGX_ERROR;
    }

    if (ngx_nonblocking(s[0]) == -1 || ngx_nonblocking(s[1]) == -1) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, ngx_socket_errno,
                      "jvm: warm-up of %V: " ngx_nonblocking_n " failed",
                      &run->conf->uri);
        (void) ngx_close_socket(s[0]);
        (void) ngx_close_socket(s[1]);
        return NGX_ERROR;
    }

    c = ngx_get_connection(s[1], ngx_cycle->log);
    if (c == NULL) {
        (void) ngx_close_socket(s[0]);
        (void) ngx_close_socket(s[1]);
        return NGX_ERROR;
    }

    c->data = run;
    c->recv = ngx_recv;
    c->send = ngx_send;
    c->read->log = ngx_cycle->log;
    c->write->log = ngx_cycle->log;
    c->read->handler = ngx_http_jvm_warmup_read;
    c->write->handler = ngx_http_jvm_warmup_write;
    c->write->ready = 1;

    run->client = c;
    run->queued = 0;
    run->sent = run->served;
    run->out->pos = run->out->start;
    run->out->last = run->out->start;

    if (ngx_http_jvm_warmup_serve(run->listening, s[0], run) != NGX_OK) {
        (void) ngx_close_socket(s[0]);
        ngx_close_connection(c);
        run->client = NULL;
        return NGX_ERROR;
    }

    if (ngx_handle_read_event(c->read, 0) != NGX_OK) {
        ngx_close_connection(c);
        run->client = NULL;
        return NGX_ERROR;
    }

    ngx_http_jvm_warmup_write(c->write);

    return NGX_OK;
}


/* The server end of the warm-up's pair, noted in its run, then served. */

static ngx_int_t
ngx_http_jvm_warmup_serve(ngx_listening_t *ls, ngx_socket_t fd,
    ngx_http_jvm_warmup_run_t *run)
{
    ngx_connection_t  *c;

    c = ngx_http_jvm_local_server(ls, fd, run->conf->sockaddr,
                                  run->conf->socklen,
                                  ngx_http_jvm_warmup_server_closed, run,
                                  &run->cleanup);
    if (c == NULL) {
        return NGX_ERROR;
    }

    run->server = c;
    run->quiet.log = c->log;

    ngx_http_jvm_local_serve(c);

    return NGX_OK;
}


static void
ngx_http_jvm_warmup_server_closed(void *data)
{
    ngx_http_jvm_warmup_run_t  *run = data;

    run->served += run->server->requests;
    run->server = NULL;
    run->quiet.log = NULL;

    if (run->done) {
        ngx_http_jvm_warmup_unquiet(run);
    }
}


/*
 * Requests up to the window (nginx begins the others as answers come
 * back), as many as the socket takes; the rest when it can take more.
 */

static void
ngx_http_jvm_warmup_write(ngx_event_t *wev)
{
    ssize_t                     n;
    ngx_str_t                  *req;
    ngx_buf_t                  *b;
    ngx_uint_t                  begun;
    ngx_connection_t           *c;
    ngx_http_jvm_warmup_run_t  *run;

    c = wev->data;
    run = c->data;
    b = run->out;

    while (!run->done) {

        if (b->pos == b->last) {
            b->pos = b->start;
            b->last = b->start;
            begun = run->server ? run->server->requests : run->queued;

            while (run->sent + run->queued < run->conf->requests
                   && run->queued - begun < NGX_HTTP_JVM_WARMUP_WINDOW)
            {
                req = (run->sent + run->queued + 1 == run->conf->requests)
                      ? &run->last : &run->request;

                if ((size_t) (b->end - b->last) < req->len) {
                    break;
                }

                b->last = ngx_cpymem(b->last, req->data, req->len);
                run->queued++;
            }

            if (b->pos == b->last) {
                return;                       /* every request is sent */
            }
        }

        n = c->send(c, b->pos, b->last - b->pos);

        if (n == NGX_AGAIN) {
            if (ngx_handle_write_event(wev, 0) != NGX_OK) {
                ngx_http_jvm_warmup_end(run, "its events failed");
            }

            return;
        }

        if (n == NGX_ERROR) {
            ngx_http_jvm_warmup_end(run, "the server end closed");
            return;
        }

        b->pos += n;
    }
}


/* The answers: the first one's status line kept, the rest read past. */

static void
ngx_http_jvm_warmup_read(ngx_event_t *rev)
{
    size_t                      k;
    ssize_t                     n;
    ngx_connection_t           *c;
    ngx_http_jvm_warmup_run_t  *run;
    u_char                      buf[NGX_HTTP_JVM_WARMUP_BUF];

    c = rev->data;
    run = c->data;

    while (!run->done) {
        n = c->recv(c, buf, sizeof(buf));

        if (n == NGX_AGAIN) {
            if (ngx_handle_read_event(rev, 0) != NGX_OK) {
                ngx_http_jvm_warmup_end(run, "its events failed");
                return;
            }

            /* answers came: nginx has begun more, the window has room */
            ngx_http_jvm_warmup_write(c->write);
            return;
        }

        if (n == 0 || n == NGX_ERROR) {
            ngx_http_jvm_warmup_closed(run);
            return;
        }

        k = ngx_min((size_t) n, sizeof(run->first) - run->first_len);
        ngx_memcpy(run->first + run->first_len, buf, k);
        run->first_len += k;
    }
}


/*
 * The server end closed, or shut its side (a lingering close, when
 * nginx ends a connection with requests unread): after the last request,
 * or after as many as a connection may have (the warm-up goes on on
 * another), or before any answer (another would meet the same).
 */

static void
ngx_http_jvm_warmup_closed(ngx_http_jvm_warmup_run_t *run)
{
    if (run->server) {
        run->served += run->server->requests;
        run->cleanup->handler = NULL;
        run->server = NULL;
        run->quiet.log = NULL;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "jvm: warm-up of %V: a connection closed, %ui of %ui "
                   "requests served", &run->conf->uri, run->served,
                   run->conf->requests);

    if (run->served >= run->conf->requests) {
        ngx_http_jvm_warmup_end(run, NULL);
        return;
    }

    if (run->served == run->sent) {
        ngx_http_jvm_warmup_end(run, "nginx closed a connection unanswered");
        return;
    }

    ngx_close_connection(run->client);
    run->client = NULL;

    if (ngx_http_jvm_warmup_connect(run) != NGX_OK) {
        ngx_http_jvm_warmup_end(run, "no new connection");
    }
}


static void
ngx_http_jvm_warmup_timeout(ngx_event_t *ev)
{
    ngx_http_jvm_warmup_end(ev->data, "its time was up");
}


/*
 * Done (why is NULL: nginx closed the connection after the last answer)
 * or given up: the client end closed, which the server end sees as a
 * client that left, and one line in the log.
 */

static void
ngx_http_jvm_warmup_end(ngx_http_jvm_warmup_run_t *run, const char *why)
{
    u_char      *p;
    ngx_uint_t   served;
    ngx_msec_t   took;

    if (run->done) {
        return;
    }

    run->done = 1;
    ngx_http_jvm_warmup_pending--;

    if (run->limit.timer_set) {
        ngx_del_timer(&run->limit);
    }

    if (run->client) {
        ngx_close_connection(run->client);
        run->client = NULL;
    }

    if (run->server == NULL) {
        ngx_http_jvm_warmup_unquiet(run);
    }

    served = run->served + (run->server ? run->server->requests : 0);
    took = ngx_current_msec - run->start;

    /* "HTTP/1.1 200"; none: stopped before any (the next line says so) */
    p = run->first + 9;

    if (run->first_len
        && (run->first_len < 12 || ngx_strncmp(run->first, "HTTP/1.", 7) != 0
            || p[0] < '2' || p[0] > '3'))
    {
        p = ngx_strlchr(run->first, run->first + run->first_len, CR);

        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "jvm: warm-up of %V: its first answer was \"%*s\"",
                      &run->conf->uri,
                      (size_t) ((p ? p : run->first + run->first_len)
                                - run->first),
                      run->first);
    }

    if (run->quiet.failed) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "jvm: warm-up of %V: %ui of its requests failed, "
                      "the first one logged above, the others only counted",
                      &run->conf->uri, run->quiet.failed);
    }

    if (why) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "jvm: warm-up of %V stopped after %M ms, %ui of %ui "
                      "requests served: %s",
                      &run->conf->uri, took, served, run->conf->requests,
                      why);
        return;
    }

    ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                  "jvm: warm-up of %V: %ui requests in %M ms",
                  &run->conf->uri, served, took);
}


/*
 * A run over, its server end closed: off the quiet list, which outlives
 * the cycle whose pool holds the run (master_process off and a reload).
 */

static void
ngx_http_jvm_warmup_unquiet(ngx_http_jvm_warmup_run_t *run)
{
    ngx_http_jvm_quiet_t  **q;

    for (q = &ngx_http_jvm_vm.quiet; *q; q = &(*q)->next) {
        if (*q == &run->quiet) {
            *q = run->quiet.next;
            return;
        }
    }
}


/*
 * The listening sockets' events off while the worker warms up, and on
 * again as nginx had them (ngx_event_process_init): none with
 * accept_mutex, which adds them when the worker holds the mutex.
 */

static void
ngx_http_jvm_warmup_accept(ngx_cycle_t *cycle, ngx_uint_t on)
{
    ngx_uint_t         i, flags;
    ngx_listening_t   *ls;
    ngx_connection_t  *c;

    if (ngx_use_accept_mutex) {
        return;
    }

    flags = 0;

#if (NGX_HAVE_EPOLLEXCLUSIVE)
    if (ngx_use_exclusive_accept) {
        flags = NGX_EXCLUSIVE_EVENT;
    }
#endif

    ls = cycle->listening.elts;

    for (i = 0; i < cycle->listening.nelts; i++) {
        c = ls[i].connection;

        if (c == NULL || c->read->active == on) {
            continue;
        }

        if (on) {
            (void) ngx_add_event(c->read, NGX_READ_EVENT, flags);

        } else {
            (void) ngx_del_event(c->read, NGX_READ_EVENT, NGX_DISABLE_EVENT);
        }
    }
}
