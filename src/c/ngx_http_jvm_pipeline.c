
/*
 * nginx-jvm: the answers to pipelined HTTP/1.x requests leave together.
 *
 * nginx answers a pipeline's requests one after the other, and writes each
 * answer as it is made: on a connection with TCP_NODELAY every write is a
 * segment of its own, and on loopback (or a fast link) each one makes the
 * kernel deliver it and wake the client.  Sixteen pipelined requests cost
 * sixteen deliveries.  When one of this module's answers is written while
 * the whole header of the next request already waits in the connection's
 * buffer, the socket is corked (TCP_CORK) first: the answers that follow
 * gather in the socket and leave as full segments.
 *
 * The cork comes off in the loop's next iteration (an event posted to
 * ngx_posted_next_events): by then nginx has answered every request of the
 * pipeline that it could answer at once, since it takes a pipeline's next
 * request from the posted events of the same iteration.  A request that
 * waits (for a task, a body, an upstream) holds nothing back past that.
 * Closing or half-closing the connection sends what is corked too.  Cost
 * when there is no pipeline: a comparison of two pointers.
 */


#include "ngx_http_jvm_module.h"


typedef struct {
    ngx_connection_t  *connection;
    ngx_atomic_uint_t  number;        /* c->number: the slot may be reused */
} ngx_http_jvm_corked_t;


static void ngx_http_jvm_pipeline_push(ngx_event_t *ev);


/* Connections corked in this iteration of the loop, and their push. */
static ngx_array_t  *ngx_http_jvm_corked;
static ngx_event_t   ngx_http_jvm_push_ev;


void
ngx_http_jvm_pipeline_cork(ngx_http_request_t *r)
{
    ngx_buf_t                 *b;
    ngx_uint_t                 i;
    ngx_connection_t          *c;
    ngx_http_jvm_corked_t     *k;
    ngx_http_core_loc_conf_t  *clcf;

    c = r->connection;

    if (r != r->main
        || r->http_version > NGX_HTTP_VERSION_11
        || !r->keepalive
        || r->headers_in.content_length_n > 0
        || r->headers_in.chunked
        || r->headers_in.upgrade
        || c->tcp_nopush == NGX_TCP_NOPUSH_SET
        || (c->sockaddr->sa_family != AF_INET
#if (NGX_HAVE_INET6)
            && c->sockaddr->sa_family != AF_INET6
#endif
           ))
    {
        /*
         * Not a pipeline's (HTTP/2 and 3 multiplex), the bytes after the
         * request may be its body (or a WebSocket's frames) rather than
         * the next request, nginx corked the connection itself (sendfile
         * with tcp_nopush: it pushes it), or not TCP.
         */
        return;
    }

    b = r->header_in;

    if (b == NULL || b->pos == b->last
        || ngx_strlcasestrn(b->pos, b->last, (u_char *) "\r\n\r\n", 4 - 1)
           == NULL)
    {
        /* no next request, or not all of it: it may wait for the client */
        return;
    }

    /*
     * nginx's c->tcp_nopush says whether nginx corked the connection for
     * sendfile (tcp_nopush), and each request's location sets it anew:
     * the connections corked here are only in this list, the last first
     * (a pipeline's requests follow each other on the loop; at most one
     * epoll batch of connections is here).
     */

    if (ngx_http_jvm_corked != NULL) {
        k = ngx_http_jvm_corked->elts;

        for (i = ngx_http_jvm_corked->nelts; i-- > 0; /* void */) {
            if (k[i].connection == c && k[i].number == c->number) {
                return;
            }
        }
    }

    /*
     * Linux takes the cork off without sending the last, partial segment
     * while Nagle's algorithm waits for an ACK (the client's delayed ACK:
     * 40 ms), and nginx sets TCP_NODELAY only when it goes to wait for the
     * next request: it is set here.  With tcp_nodelay off, no cork either.
     */

    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    if (!clcf->tcp_nodelay || ngx_tcp_nodelay(c) != NGX_OK) {
        return;
    }

    if (ngx_http_jvm_corked == NULL) {
        ngx_http_jvm_corked = ngx_array_create(ngx_cycle->pool, 16,
                                               sizeof(ngx_http_jvm_corked_t));
        if (ngx_http_jvm_corked == NULL) {
            return;
        }

        ngx_http_jvm_push_ev.handler = ngx_http_jvm_pipeline_push;
        ngx_http_jvm_push_ev.data = ngx_http_jvm_corked;
        ngx_http_jvm_push_ev.log = ngx_cycle->log;
    }

    k = ngx_array_push(ngx_http_jvm_corked);
    if (k == NULL) {
        return;
    }

    if (ngx_tcp_nopush(c->fd) == -1) {
        ngx_http_jvm_corked->nelts--;
        ngx_log_error(NGX_LOG_INFO, c->log, ngx_socket_errno,
                      ngx_tcp_nopush_n " failed");
        return;
    }

    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, c->log, 0,
                   "jvm: pipelined request, the connection is corked");

    k->connection = c;
    k->number = c->number;

    if (!ngx_http_jvm_push_ev.posted) {
        ngx_post_event(&ngx_http_jvm_push_ev, &ngx_posted_next_events);
    }
}


/*
 * The loop's next iteration: what the pipelines answered leaves now.  A
 * connection closed since pushed what it had (its slot may serve another
 * connection by now: the number tells).
 */

static void
ngx_http_jvm_pipeline_push(ngx_event_t *ev)
{
    ngx_uint_t              i;
    ngx_connection_t       *c;
    ngx_http_jvm_corked_t  *k;

    k = ngx_http_jvm_corked->elts;

    for (i = 0; i < ngx_http_jvm_corked->nelts; i++) {
        c = k[i].connection;

        if (c->fd == (ngx_socket_t) -1 || c->number != k[i].number) {
            continue;
        }

        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, c->log, 0,
                       "jvm: the pipeline's answers are pushed");

        if (ngx_tcp_push(c->fd) == -1) {
            ngx_log_error(NGX_LOG_INFO, c->log, ngx_socket_errno,
                          ngx_tcp_push_n " failed");
        }

        if (c->tcp_nopush == NGX_TCP_NOPUSH_SET) {
            c->tcp_nopush = NGX_TCP_NOPUSH_UNSET;
        }
    }

    ngx_http_jvm_corked->nelts = 0;
}
