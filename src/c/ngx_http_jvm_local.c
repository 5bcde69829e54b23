
/*
 * nginx-jvm: requests of the module's own making, sent over a socket pair
 * into the worker's own server (jvm_warmup's, and Java's calls out through
 * a jvm_client location).  nginx serves the pair's server end as a
 * connection it accepted, so every rule of the server and its locations
 * applies.  This file finds the listening socket and makes that server
 * end; each user keeps its own client end.
 */


#include "ngx_http_jvm_module.h"


/*
 * The listening socket that serves an address in this worker: its own, or
 * a wildcard one of its port (nginx binds one socket for a port's
 * addresses unless told "bind"); with reuseport, this worker's.  NULL when
 * there is none.
 */

ngx_listening_t *
ngx_http_jvm_local_listening(ngx_cycle_t *cycle, struct sockaddr *sockaddr,
    socklen_t socklen)
{
    ngx_uint_t        i;
    ngx_listening_t  *ls, *wildcard;

    ls = cycle->listening.elts;
    wildcard = NULL;

    for (i = 0; i < cycle->listening.nelts; i++) {
        if (ls[i].handler != ngx_http_init_connection
            || ls[i].connection == NULL
            || ls[i].sockaddr->sa_family != sockaddr->sa_family)
        {
            continue;
        }

        if (ngx_cmp_sockaddr(ls[i].sockaddr, ls[i].socklen,
                             sockaddr, socklen, 1)
            == NGX_OK)
        {
            return &ls[i];
        }

        if (ls[i].wildcard && wildcard == NULL
            && ngx_inet_get_port(ls[i].sockaddr)
               == ngx_inet_get_port(sockaddr))
        {
            wildcard = &ls[i];
        }
    }

    return wildcard;
}


/*
 * The server end fd of a pair: a connection of ls, set up as nginx sets up
 * one it accepts (ngx_event_accept), but for a local peer: its address
 * "unix:", its local address the given one, so that the server chosen is
 * the one whose address it is.  closed(data) runs when its pool goes
 * (*cln, for the caller to clear when it goes first).  The caller notes
 * the connection, then starts it with ngx_http_jvm_local_serve().  NULL
 * on failure, fd left open.
 */

ngx_connection_t *
ngx_http_jvm_local_server(ngx_listening_t *ls, ngx_socket_t fd,
    struct sockaddr *local, socklen_t local_len, ngx_pool_cleanup_pt closed,
    void *data, ngx_pool_cleanup_t **cln)
{
    ngx_log_t           *log;
    ngx_connection_t    *c;
    ngx_pool_cleanup_t  *cl;

    c = ngx_get_connection(fd, ngx_cycle->log);
    if (c == NULL) {
        return NULL;
    }

    c->pool = ngx_create_pool(ls->pool_size, ngx_cycle->log);
    if (c->pool == NULL) {
        goto failed;
    }

    log = ngx_palloc(c->pool, sizeof(ngx_log_t));
    c->sockaddr = ngx_pcalloc(c->pool, sizeof(struct sockaddr));
    c->local_sockaddr = ngx_palloc(c->pool, local_len);
    cl = ngx_pool_cleanup_add(c->pool, 0);

    if (log == NULL || c->sockaddr == NULL || c->local_sockaddr == NULL
        || cl == NULL)
    {
        goto failed;
    }

    *log = ls->log;
    c->log = log;
    c->pool->log = log;
    c->read->log = log;
    c->write->log = log;

    c->type = SOCK_STREAM;
    c->sockaddr->sa_family = AF_UNIX;
    c->socklen = sizeof(sa_family_t);
    ngx_str_set(&c->addr_text, "unix:");

    ngx_memcpy(c->local_sockaddr, local, local_len);
    c->local_socklen = local_len;

    c->recv = ngx_recv;
    c->send = ngx_send;
    c->recv_chain = ngx_recv_chain;
    c->send_chain = ngx_send_chain;

    c->listening = ls;
    c->tcp_nopush = NGX_TCP_NOPUSH_DISABLED;
    c->tcp_nodelay = NGX_TCP_NODELAY_DISABLED;
    c->number = ngx_atomic_fetch_add(ngx_connection_counter, 1);
    c->start_time = ngx_current_msec;
    c->write->ready = 1;

    cl->handler = closed;
    cl->data = data;
    *cln = cl;

    return c;

failed:

    if (c->pool) {
        ngx_destroy_pool(c->pool);
    }

    ngx_free_connection(c);

    return NULL;
}


/* The server end goes to nginx's HTTP, as an accepted connection does. */

void
ngx_http_jvm_local_serve(ngx_connection_t *c)
{
#if (NGX_STAT_STUB)
    /* ngx_http_close_connection() takes it off again */
    (void) ngx_atomic_fetch_add(ngx_stat_active, 1);
#endif

    c->listening->handler(c);
}
