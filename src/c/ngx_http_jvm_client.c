
/*
 * nginx-jvm: Java's calls out through nginx's upstreams (jvm_client,
 * nginx.jvm.Upstream; docs/internals.md, "Calls out through nginx's
 * upstreams").
 *
 * A call is a request into a location marked "jvm_client NAME", whose
 * proxy_pass (balancing, keepalive, retries, timeouts, TLS, cache) does
 * the work.  As the warm-up does (ngx_http_jvm_warmup.c), one end of a
 * socket pair becomes a connection of the location's server's plain
 * HTTP/1 listen, as if accepted there; the other is the call's client
 * end, driven here on the event loop: the request's head written, the
 * answer read into the request buffer and handed to Java
 * (Worker.clientData) only while Java has room for it.  When it has not,
 * nothing is read: the pair's buffer fills, nginx's writes to its client
 * wait (send_timeout), and so does its upstream.
 *
 * A request in a jvm_client location from any connection but a server
 * end of ours is answered 404 (in the rewrite phase, before the
 * location's own return or rewrite): nobody outside reaches it, nor a
 * client's internal redirect or subrequest.
 */


#include "ngx_http_jvm_module.h"

#include <sys/socket.h>


/* reads a turn of the loop, at most, before others get theirs */
#define NGX_HTTP_JVM_CLIENT_READS   16

/* Worker.clientData's answers */
#define NGX_HTTP_JVM_CLIENT_MORE    0
#define NGX_HTTP_JVM_CLIENT_PAUSE   1
#define NGX_HTTP_JVM_CLIENT_DROP    2

/*
 * Worker.clientData's lengths that are no bytes: the worker leaves; a
 * piece of the request's body Java gave was written whole
 */
#define NGX_HTTP_JVM_CLIENT_LEAVING -2
#define NGX_HTTP_JVM_CLIENT_WRITTEN -3


/* a piece of a request body streamed from Java, to write */
typedef struct ngx_http_jvm_piece_s  ngx_http_jvm_piece_t;

struct ngx_http_jvm_piece_s {
    ngx_http_jvm_piece_t      *next;
    size_t                     len;
    size_t                     sent;
};


typedef struct {
    ngx_queue_t                queue;       /* of the calls in flight */
    ngx_int_t                  id;          /* Java's */
    ngx_connection_t          *client;      /* the end read here */
    ngx_connection_t          *server;      /* nginx's, until it closes */
    ngx_pool_cleanup_t        *cleanup;     /* of the server end's pool */
    ngx_http_jvm_client_t     *cl;          /* the location it names */
    u_char                    *head;        /* the request, to write */
    size_t                     len;
    size_t                     sent;
    ngx_http_jvm_piece_t      *out;         /* after the head, in order */
    ngx_http_jvm_piece_t     **last;
    unsigned                   paused:1;
} ngx_http_jvm_call_t;


static ngx_int_t ngx_http_jvm_client_find_listen(ngx_conf_t *cf,
    ngx_http_jvm_client_t *cl);
static ngx_int_t ngx_http_jvm_client_check(ngx_http_request_t *r);
static ngx_http_jvm_client_t *ngx_http_jvm_client_named(ngx_str_t *name);
static ngx_int_t ngx_http_jvm_client_pair(ngx_http_jvm_call_t *call,
    ngx_http_jvm_client_t *cl, const char **err);
static ngx_int_t ngx_http_jvm_client_serve(ngx_http_jvm_call_t *call,
    ngx_http_jvm_client_t *cl, ngx_listening_t *ls, ngx_socket_t fd);
static void ngx_http_jvm_client_server_closed(void *data);
static void ngx_http_jvm_client_write(ngx_event_t *wev);
static void ngx_http_jvm_client_read(ngx_event_t *rev);
static void ngx_http_jvm_client_end(ngx_http_jvm_call_t *call, ssize_t n);
static void ngx_http_jvm_client_free(ngx_http_jvm_call_t *call);


/* the worker's calls in flight, for its exit, and their number */
static ngx_queue_t  ngx_http_jvm_calls;
static ngx_uint_t   ngx_http_jvm_calls_n;


/* jvm_client NAME, in a prefix location */

char *
ngx_http_jvm_client_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_jvm_loc_conf_t *jlcf = conf;

    u_char                     c;
    ngx_str_t                 *value;
    ngx_uint_t                 i;
    ngx_http_jvm_client_t     *cl, **all, **slot;
    ngx_http_core_loc_conf_t  *clcf;
    ngx_http_jvm_main_conf_t  *jmcf;

    value = cf->args->elts;
    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    jmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_jvm_module);

    if (jlcf->client != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    if (clcf->named || clcf->noname || clcf->exact_match
#if (NGX_PCRE)
        || clcf->regex
#endif
        || clcf->name.len == 0 || clcf->name.data[0] != '/')
    {
        return "needs a prefix location (location /path/ {...}): the "
               "calls' URIs begin with its prefix";
    }

    for (i = 0; i < value[1].len; i++) {
        c = value[1].data[i];

        if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z')
            && !(c >= '0' && c <= '9') && c != '_' && c != '-' && c != '.')
        {
            return "takes a name of letters, digits, \"_\", \"-\" and \".\"";
        }
    }

    if (value[1].len == 0) {
        return "takes a name";
    }

    /* of pointers: a location keeps its own, which the array's growth
     * would move */
    if (jmcf->clients == NULL) {
        jmcf->clients = ngx_array_create(cf->pool, 2,
                                         sizeof(ngx_http_jvm_client_t *));
        if (jmcf->clients == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    all = jmcf->clients->elts;

    for (i = 0; i < jmcf->clients->nelts; i++) {
        if (all[i]->name.len == value[1].len
            && ngx_strncmp(all[i]->name.data, value[1].data, value[1].len)
               == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"jvm_client\": the name \"%V\" is already "
                               "in %V:%ui", &value[1], &all[i]->file,
                               all[i]->line);
            return NGX_CONF_ERROR;
        }
    }

    slot = ngx_array_push(jmcf->clients);
    cl = ngx_pcalloc(cf->pool, sizeof(ngx_http_jvm_client_t));

    if (slot == NULL || cl == NULL) {
        return NGX_CONF_ERROR;
    }

    *slot = cl;

    cl->name = value[1];
    cl->prefix = clcf->name;
    cl->server = ngx_http_conf_get_module_srv_conf(cf, ngx_http_core_module);
    cl->file = cf->conf_file->file.name;
    cl->line = cf->conf_file->line;

    jlcf->client = cl;

    return NGX_CONF_OK;
}


/*
 * Postconfiguration: each jvm_client's server's plain HTTP/1 address, and
 * the check that keeps outside clients out of the locations.
 */

ngx_int_t
ngx_http_jvm_client_init(ngx_conf_t *cf)
{
    ngx_uint_t                  i;
    ngx_http_handler_pt        *h;
    ngx_http_jvm_client_t     **cl;
    ngx_http_core_main_conf_t  *cmcf;
    ngx_http_jvm_main_conf_t   *jmcf;

    jmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_jvm_module);

    if (jmcf->clients == NULL) {
        return NGX_OK;
    }

    cl = jmcf->clients->elts;

    for (i = 0; i < jmcf->clients->nelts; i++) {
        if (ngx_http_jvm_client_find_listen(cf, cl[i]) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    /*
     * In the rewrite phase, before the location's own "return" or
     * "rewrite" (a module loaded after nginx's rewrite module pushes its
     * handler later, and nginx runs a phase's handlers last pushed first).
     */
    h = ngx_array_push(&cmcf->phases[NGX_HTTP_REWRITE_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_jvm_client_check;

    return NGX_OK;
}


static ngx_int_t
ngx_http_jvm_client_find_listen(ngx_conf_t *cf, ngx_http_jvm_client_t *cl)
{
    ngx_uint_t                  j, k, l;
    ngx_http_conf_addr_t       *addr;
    ngx_http_conf_port_t       *port;
    ngx_http_core_srv_conf_t  **servers;
    ngx_http_core_main_conf_t  *cmcf;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);
    port = cmcf->ports ? cmcf->ports->elts : NULL;

    for (j = 0; port && j < cmcf->ports->nelts; j++) {
        addr = port[j].addrs.elts;

        for (k = 0; k < port[j].addrs.nelts; k++) {
            if (addr[k].opt.ssl || addr[k].opt.http2
                || addr[k].opt.proxy_protocol)
            {
                continue;
            }

            servers = addr[k].servers.elts;

            for (l = 0; l < addr[k].servers.nelts; l++) {
                if (servers[l] != cl->server) {
                    continue;
                }

                cl->sockaddr = addr[k].opt.sockaddr;
                cl->socklen = addr[k].opt.socklen;

                /* a regex or wildcard name is no Host */
                cl->host = cl->server->server_name;

                if (cl->host.len == 0 || cl->host.data[0] == '~'
                    || cl->host.data[0] == '*' || cl->host.data[0] == '.')
                {
                    ngx_str_set(&cl->host, "localhost");
                }

                return NGX_OK;
            }
        }
    }

    ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                  "\"jvm_client\" in %V:%ui: its server has no \"listen\" "
                  "without ssl, http2 or proxy_protocol for the calls' plain "
                  "HTTP/1.1 requests", &cl->file, cl->line);

    return NGX_ERROR;
}


/*
 * A request in a jvm_client location: a call's, or nobody's (404).  And a
 * call's request in the location it names: nginx decodes "%2e%2e", which
 * no check of Java's sees as "..", and would take a call to another
 * location of the server as a local client's (internal redirects, from
 * error_page and the like, are the location's own and go on).
 */

static ngx_int_t
ngx_http_jvm_client_check(ngx_http_request_t *r)
{
    ngx_pool_cleanup_t       *cln;
    ngx_http_jvm_call_t      *call;
    ngx_http_jvm_loc_conf_t  *jlcf;

    jlcf = ngx_http_get_module_loc_conf(r, ngx_http_jvm_module);

    for (cln = r->connection->pool->cleanup; cln; cln = cln->next) {
        if (cln->handler != ngx_http_jvm_client_server_closed) {
            continue;
        }

        call = cln->data;

        if (r->internal || (call && jlcf->client == call->cl)) {
            return NGX_DECLINED;
        }

        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "jvm: a call through jvm_client \"%V\" left its "
                      "location for \"%V\": 404",
                      call ? &call->cl->name : &r->uri, &r->uri);

        return NGX_HTTP_NOT_FOUND;
    }

    if (jlcf->client == NULL) {
        return NGX_DECLINED;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: \"%V\" is a jvm_client location: 404 to a client",
                   &r->uri);

    return NGX_HTTP_NOT_FOUND;
}


/*
 * Java's call id: a socket pair into the named location's server, the
 * request's head written: part[0] the method, part[1] the URI after the
 * location's prefix (with its args), part[2] the header fields Java
 * made, each with its CRLF (Content-Length among them for a body),
 * part[3] the body.  The call, or NULL and why (none: no room
 * for it now).
 */

void *
ngx_http_jvm_client_start(ngx_int_t id, ngx_str_t *name, ngx_str_t *part,
    const char **err)
{
    u_char                 *p;
    size_t                  len;
    ngx_str_t               prefix;
    ngx_http_jvm_call_t    *call;
    ngx_http_jvm_client_t  *cl;

    cl = ngx_http_jvm_client_named(name);
    if (cl == NULL) {
        *err = "no jvm_client location of that name";
        return NULL;
    }

    /*
     * A call takes three connections (the pair's two, the upstream's),
     * each a descriptor, the upstream's once nginx gets to it: while fewer
     * are free than that and a quarter of worker_connections kept for
     * clients, or calls hold three quarters of them, it waits in Java
     * (NULL, no error) until a call ends.
     */

    if (ngx_cycle->free_connection_n < 3 + ngx_cycle->connection_n / 4
        || ngx_http_jvm_calls_n >= ngx_cycle->connection_n / 4)
    {
        ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                       "jvm: call %i waits: %ui connections free, %ui calls",
                       id, ngx_cycle->free_connection_n, ngx_http_jvm_calls_n);
        *err = NULL;
        return NULL;
    }

    /* "/api/" and "/items": "/api/items" */
    prefix = cl->prefix;

    if (prefix.len && prefix.data[prefix.len - 1] == '/') {
        prefix.len--;
    }

    len = part[0].len + 1 + prefix.len + part[1].len
          + sizeof(" HTTP/1.1" CRLF "Host: " CRLF "Connection: close" CRLF)
          - 1 + cl->host.len + part[2].len + 2 + part[3].len;

    call = ngx_calloc(sizeof(ngx_http_jvm_call_t) + len, ngx_cycle->log);
    if (call == NULL) {
        *err = "no memory";
        return NULL;
    }

    call->id = id;
    call->cl = cl;
    call->head = (u_char *) (call + 1);

    p = ngx_sprintf(call->head, "%V %V%V HTTP/1.1" CRLF "Host: %V" CRLF
                    "Connection: close" CRLF "%V" CRLF "%V",
                    &part[0], &prefix, &part[1], &cl->host, &part[2],
                    &part[3]);
    call->len = p - call->head;

    if (ngx_http_jvm_client_pair(call, cl, err) != NGX_OK) {
        ngx_free(call);
        return NULL;
    }

    if (ngx_http_jvm_calls.next == NULL) {
        ngx_queue_init(&ngx_http_jvm_calls);
    }

    ngx_queue_insert_tail(&ngx_http_jvm_calls, &call->queue);
    ngx_http_jvm_calls_n++;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "jvm: call %i through jvm_client \"%V\"", id, &cl->name);

    ngx_http_jvm_client_write(call->client->write);

    return call;
}


static ngx_http_jvm_client_t *
ngx_http_jvm_client_named(ngx_str_t *name)
{
    ngx_uint_t                 i;
    ngx_array_t               *clients;
    ngx_http_jvm_client_t    **cl;
    ngx_http_conf_ctx_t       *ctx;
    ngx_http_jvm_main_conf_t  *jmcf;

    ctx = (ngx_http_conf_ctx_t *) ngx_get_conf(ngx_cycle->conf_ctx,
                                               ngx_http_module);
    if (ctx == NULL) {
        return NULL;
    }

    jmcf = ctx->main_conf[ngx_http_jvm_module.ctx_index];
    clients = jmcf->clients;

    if (clients == NULL) {
        return NULL;
    }

    cl = clients->elts;

    for (i = 0; i < clients->nelts; i++) {
        if (cl[i]->name.len == name->len
            && ngx_strncmp(cl[i]->name.data, name->data, name->len) == 0)
        {
            return cl[i];
        }
    }

    return NULL;
}


static ngx_int_t
ngx_http_jvm_client_pair(ngx_http_jvm_call_t *call,
    ngx_http_jvm_client_t *cl, const char **err)
{
    ngx_socket_t       s[2];
    ngx_listening_t   *ls;
    ngx_connection_t  *c;

    ls = ngx_http_jvm_local_listening((ngx_cycle_t *) ngx_cycle,
                                      cl->sockaddr, cl->socklen);
    if (ls == NULL) {
        *err = "its server's listening socket is not this worker's";
        return NGX_ERROR;
    }

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, s) == -1) {
        *err = "socketpair() failed (open files?)";
        return NGX_ERROR;
    }

    if (ngx_nonblocking(s[0]) == -1 || ngx_nonblocking(s[1]) == -1) {
        *err = ngx_nonblocking_n " failed";
        goto failed;
    }

    c = ngx_get_connection(s[1], ngx_cycle->log);
    if (c == NULL) {
        *err = "no free connection (worker_connections)";
        goto failed;
    }

    c->data = call;
    c->recv = ngx_recv;
    c->send = ngx_send;
    /* a reset of nginx's end is the call's failure, told to Java */
    c->log_error = NGX_ERROR_INFO;
    c->read->log = ngx_cycle->log;
    c->write->log = ngx_cycle->log;
    c->read->handler = ngx_http_jvm_client_read;
    c->write->handler = ngx_http_jvm_client_write;
    c->write->ready = 1;
    call->client = c;

    if (ngx_http_jvm_client_serve(call, cl, ls, s[0]) != NGX_OK) {
        *err = "no connection for the server end";
        (void) ngx_close_socket(s[0]);
        ngx_close_connection(c);
        call->client = NULL;
        return NGX_ERROR;
    }

    if (ngx_handle_read_event(c->read, 0) != NGX_OK) {
        *err = "its events failed";

        if (call->cleanup) {
            call->cleanup->data = NULL;
        }

        ngx_close_connection(c);
        call->client = NULL;
        return NGX_ERROR;
    }

    return NGX_OK;

failed:

    (void) ngx_close_socket(s[0]);
    (void) ngx_close_socket(s[1]);

    return NGX_ERROR;
}


/* The server end of the call's pair, noted in the call, then served. */

static ngx_int_t
ngx_http_jvm_client_serve(ngx_http_jvm_call_t *call,
    ngx_http_jvm_client_t *cl, ngx_listening_t *ls, ngx_socket_t fd)
{
    ngx_connection_t  *c;

    c = ngx_http_jvm_local_server(ls, fd, cl->sockaddr, cl->socklen,
                                  ngx_http_jvm_client_server_closed, call,
                                  &call->cleanup);
    if (c == NULL) {
        return NGX_ERROR;
    }

    call->server = c;

    ngx_http_jvm_local_serve(c);

    return NGX_OK;
}


/* The server end's pool is gone; its handler also marks it as ours. */

static void
ngx_http_jvm_client_server_closed(void *data)
{
    ngx_http_jvm_call_t  *call = data;

    if (call) {
        call->server = NULL;
        call->cleanup = NULL;
    }
}


/* The request's head, as much as the pair takes; the rest when it can. */

static void
ngx_http_jvm_client_write(ngx_event_t *wev)
{
    u_char                *p;
    size_t                 len;
    ssize_t                n;
    ngx_connection_t      *c;
    ngx_http_jvm_piece_t  *piece;
    ngx_http_jvm_call_t   *call;

    c = wev->data;
    call = c->data;

    for ( ;; ) {
        piece = NULL;

        if (call->sent < call->len) {
            p = call->head + call->sent;
            len = call->len - call->sent;

        } else if (call->out) {
            piece = call->out;
            p = (u_char *) (piece + 1) + piece->sent;
            len = piece->len - piece->sent;

        } else {
            return;
        }

        n = c->send(c, p, len);

        if (n == NGX_AGAIN) {
            if (ngx_handle_write_event(wev, 0) != NGX_OK) {
                ngx_post_event(c->read, &ngx_posted_events);
            }

            return;
        }

        if (n == NGX_ERROR) {
            /* the server end closed: the read sees it */
            ngx_post_event(c->read, &ngx_posted_events);
            return;
        }

        if (piece == NULL) {
            call->sent += n;
            continue;
        }

        piece->sent += n;

        if (piece->sent < piece->len) {
            continue;
        }

        call->out = piece->next;

        if (call->out == NULL) {
            call->last = &call->out;
        }

        ngx_free(piece);

        /* Java sends the next piece when one is written (back-pressure) */
        if (ngx_http_jvm_vm_client_data(c->log, call->id,
                                        NGX_HTTP_JVM_CLIENT_WRITTEN)
            == NGX_HTTP_JVM_CLIENT_DROP)
        {
            ngx_http_jvm_client_free(call);
            return;
        }
    }
}


/*
 * A piece of the request's body from Java (loop only): written after what
 * is there, on the loop's next turn (Java is on the stack now).
 */

ngx_int_t
ngx_http_jvm_client_send(void *data, u_char *buf, size_t len)
{
    ngx_http_jvm_call_t   *call = data;
    ngx_http_jvm_piece_t  *piece;

    if (call->client == NULL) {
        return NGX_DECLINED;
    }

    piece = ngx_alloc(sizeof(ngx_http_jvm_piece_t) + len, ngx_cycle->log);
    if (piece == NULL) {
        return NGX_ERROR;
    }

    piece->next = NULL;
    piece->len = len;
    piece->sent = 0;
    ngx_memcpy(piece + 1, buf, len);

    if (call->last == NULL) {
        call->last = &call->out;
    }

    *call->last = piece;
    call->last = &piece->next;

    ngx_post_event(call->client->write, &ngx_posted_events);

    return NGX_OK;
}


/*
 * The answer's bytes, into the request buffer and on to Java, while Java
 * has room; a few reads a turn, then the loop's other events.
 */

static void
ngx_http_jvm_client_read(ngx_event_t *rev)
{
    ssize_t               n;
    ngx_int_t             rc;
    ngx_uint_t            i;
    ngx_connection_t     *c;
    ngx_http_jvm_call_t  *call;

    c = rev->data;
    call = c->data;

    for (i = 0; i < NGX_HTTP_JVM_CLIENT_READS; i++) {

        if (call->paused) {
            return;
        }

        n = c->recv(c, ngx_http_jvm_vm.req_addr, ngx_http_jvm_vm.req_cap);

        if (n == NGX_AGAIN) {
            if (ngx_handle_read_event(rev, 0) != NGX_OK) {
                ngx_http_jvm_client_end(call, -1);
            }

            return;
        }

        if (n == 0 || n == NGX_ERROR) {
            ngx_http_jvm_client_end(call, n == 0 ? 0 : -1);
            return;
        }

        rc = ngx_http_jvm_vm_client_data(c->log, call->id, n);

        if (rc == NGX_HTTP_JVM_CLIENT_DROP || rc == NGX_ERROR) {
            ngx_http_jvm_client_free(call);
            return;
        }

        call->paused = (rc == NGX_HTTP_JVM_CLIENT_PAUSE);
    }

    ngx_post_event(rev, &ngx_posted_events);
}


/* The answer is over (n 0: its end; -1: failed): Java is told, and done. */

static void
ngx_http_jvm_client_end(ngx_http_jvm_call_t *call, ssize_t n)
{
    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "jvm: call %i: the answer %s", call->id,
                   n == 0 ? "ended" : "failed");

    (void) ngx_http_jvm_vm_client_data(ngx_cycle->log, call->id, n);

    ngx_http_jvm_client_free(call);
}


/* Java may read again (on the loop): the read on the loop's next turn. */

void
ngx_http_jvm_client_resume(void *data)
{
    ngx_http_jvm_call_t  *call = data;

    call->paused = 0;

    if (call->client && !call->client->read->posted) {
        ngx_post_event(call->client->read, &ngx_posted_events);
    }
}


/*
 * Java is done with the call (its body closed early, on the loop): the
 * client end closed, which nginx sees as a client that left.
 */

void
ngx_http_jvm_client_close(void *data)
{
    ngx_http_jvm_call_t  *call = data;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "jvm: call %i closed by Java", call->id);

    ngx_http_jvm_client_free(call);
}


/*
 * The worker leaves (exit_process, before the JVM stops): the calls still
 * in flight fail in Java at once ("the worker is leaving"), and their ends
 * close, before nginx counts the sockets left open.  A graceful quit
 * waited for their requests as for any client's, bounded by the
 * locations' timeouts; a call whose body Java stopped reading (paused)
 * is still here when nginx's end of it timed out (send_timeout).
 */

void
ngx_http_jvm_client_exit(ngx_cycle_t *cycle)
{
    ngx_queue_t          *q;
    ngx_http_jvm_call_t  *call;

    if (ngx_http_jvm_calls.next == NULL) {
        return;
    }

    while (!ngx_queue_empty(&ngx_http_jvm_calls)) {
        q = ngx_queue_head(&ngx_http_jvm_calls);
        call = ngx_queue_data(q, ngx_http_jvm_call_t, queue);

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, cycle->log, 0,
                       "jvm: call %i in flight as the worker leaves",
                       call->id);

        (void) ngx_http_jvm_vm_client_data(cycle->log, call->id,
                                           NGX_HTTP_JVM_CLIENT_LEAVING);
        ngx_http_jvm_client_free(call);
    }
}


static void
ngx_http_jvm_client_free(ngx_http_jvm_call_t *call)
{
    ngx_http_jvm_piece_t  *piece;

    ngx_queue_remove(&call->queue);
    ngx_http_jvm_calls_n--;

    while (call->out) {
        piece = call->out;
        call->out = piece->next;
        ngx_free(piece);
    }

    if (call->cleanup) {
        /* the handler stays: it marks the connection as a call's */
        call->cleanup->data = NULL;
    }

    if (call->client) {
        ngx_close_connection(call->client);
    }

    ngx_free(call);
}
