
/*
 * nginx-jvm: the answers to pipelined HTTP/1.x requests, and to a batch of
 * HTTP/2 streams, leave together.
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
 *
 * HTTP/2 is the same story with streams: nginx's read handler takes every
 * frame a read brought and runs each stream whose header is complete, and
 * each answer is written at once (its own TLS record, its own segment).
 * An answer made inside that handler corks the connection, and the cork
 * comes off once the loop has run the handlers of this iteration's events
 * (ngx_posted_events): the next iteration would be too late, since the
 * client, waiting for these answers, sends nothing more meanwhile.
 * A WebSocket listener's answers to a batch of messages, likewise.
 */


#include "ngx_http_jvm_module.h"


typedef struct {
    ngx_connection_t  *connection;
    ngx_atomic_uint_t  number;        /* c->number: the slot may be reused */
} ngx_http_jvm_corked_t;


typedef struct {
    ngx_array_t        corked;
    ngx_event_t        push;
    ngx_queue_t       *when;          /* the posted events it pushes from */
} ngx_http_jvm_corks_t;


static void ngx_http_jvm_cork(ngx_http_request_t *r, ngx_connection_t *c,
    ngx_http_jvm_corks_t **corks, ngx_queue_t *when);
static void ngx_http_jvm_pipeline_push(ngx_event_t *ev);


/*
 * Connections corked in this iteration of the loop, and their push: those
 * of HTTP/1.x pipelines, and HTTP/2's and WebSockets', pushed sooner.
 */
static ngx_http_jvm_corks_t  *ngx_http_jvm_pipelines;
static ngx_http_jvm_corks_t  *ngx_http_jvm_batches;


void
ngx_http_jvm_pipeline_cork(ngx_http_request_t *r)
{
    ngx_buf_t         *b;
    ngx_connection_t  *c;

    c = r->connection;

#if (NGX_HTTP_V2)
    if (r->stream) {
        /*
         * h2c->blocked: nginx's read handler (or its write handler, whose
         * streams finish later, from posted events) is on the connection.
         * An answer made elsewhere (a task's, a body's) is not held:
         * nothing says another follows it.
         */

        if (r == r->main && r->stream->connection->blocked) {
            ngx_http_jvm_cork(r, r->stream->connection->connection,
                              &ngx_http_jvm_batches, &ngx_posted_events);
        }

        return;
    }
#endif

    if (r != r->main
        || r->http_version > NGX_HTTP_VERSION_11
        || !r->keepalive
        || r->headers_in.content_length_n > 0
        || r->headers_in.chunked
        || r->headers_in.upgrade)
    {
        /*
         * Not a pipeline's (HTTP/3 multiplexes), or the bytes after the
         * request may be its body (or a WebSocket's frames) rather than
         * the next request.
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

    ngx_http_jvm_cork(r, c, &ngx_http_jvm_pipelines, &ngx_posted_next_events);
}


/*
 * A WebSocket's frames (ngx_http_jvm_websocket.c): from the second frame
 * a listener answered a batch of messages with, pushed as HTTP/2's are.
 * Not with Nagle's algorithm on (tcp_nodelay off).
 */

void
ngx_http_jvm_pipeline_cork_frames(ngx_connection_t *c)
{
    if (c->tcp_nodelay == NGX_TCP_NODELAY_SET) {
        ngx_http_jvm_cork(NULL, c, &ngx_http_jvm_batches, &ngx_posted_events);
    }
}


/*
 * Corks connection c (of request r, whose location says tcp_nodelay; no
 * r: the caller checked it), to be pushed from "when".
 */

static void
ngx_http_jvm_cork(ngx_http_request_t *r, ngx_connection_t *c,
    ngx_http_jvm_corks_t **corks, ngx_queue_t *when)
{
    ngx_uint_t                 i;
    ngx_http_jvm_corks_t      *ck;
    ngx_http_jvm_corked_t     *k;
    ngx_http_core_loc_conf_t  *clcf;

    if (c->tcp_nopush == NGX_TCP_NOPUSH_SET
        || (c->sockaddr->sa_family != AF_INET
#if (NGX_HAVE_INET6)
            && c->sockaddr->sa_family != AF_INET6
#endif
           ))
    {
        /* nginx corked it itself (sendfile with tcp_nopush), or not TCP */
        return;
    }

    ck = *corks;

    /*
     * nginx's c->tcp_nopush says whether nginx corked the connection for
     * sendfile (tcp_nopush), and each request's location sets it anew:
     * the connections corked here are only in this list, the last first
     * (a connection's answers follow each other on the loop; at most one
     * epoll batch of connections is here).
     */

    if (ck != NULL) {
        k = ck->corked.elts;

        for (i = ck->corked.nelts; i-- > 0; /* void */) {
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

    if (r != NULL) {
        clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

        if (!clcf->tcp_nodelay || ngx_tcp_nodelay(c) != NGX_OK) {
            return;
        }
    }

    if (ck == NULL) {
        ck = ngx_pcalloc(ngx_cycle->pool, sizeof(ngx_http_jvm_corks_t));
        if (ck == NULL
            || ngx_array_init(&ck->corked, ngx_cycle->pool, 16,
                              sizeof(ngx_http_jvm_corked_t))
               != NGX_OK)
        {
            return;
        }

        ck->push.handler = ngx_http_jvm_pipeline_push;
        ck->push.data = ck;
        ck->push.log = ngx_cycle->log;
        ck->when = when;

        *corks = ck;
    }

    k = ngx_array_push(&ck->corked);
    if (k == NULL) {
        return;
    }

    if (ngx_tcp_nopush(c->fd) == -1) {
        ck->corked.nelts--;
        ngx_log_error(NGX_LOG_INFO, c->log, ngx_socket_errno,
                      ngx_tcp_nopush_n " failed");
        return;
    }

    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, c->log, 0,
                   "jvm: answers follow, the connection is corked");

    k->connection = c;
    k->number = c->number;

    if (!ck->push.posted) {
        ngx_post_event(&ck->push, ck->when);
    }
}


/*
 * The loop's next iteration (this one's end for HTTP/2 and WebSockets):
 * what was answered leaves now.  A connection closed since pushed what it
 * had (its slot may serve another connection by now: the number tells).
 */

static void
ngx_http_jvm_pipeline_push(ngx_event_t *ev)
{
    ngx_uint_t              i;
    ngx_connection_t       *c;
    ngx_http_jvm_corks_t   *ck;
    ngx_http_jvm_corked_t  *k;

    ck = ev->data;
    k = ck->corked.elts;

    for (i = 0; i < ck->corked.nelts; i++) {
        c = k[i].connection;

        if (c->fd == (ngx_socket_t) -1 || c->number != k[i].number) {
            continue;
        }

        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, c->log, 0,
                       "jvm: the corked answers are pushed");

        if (ngx_tcp_push(c->fd) == -1) {
            ngx_log_error(NGX_LOG_INFO, c->log, ngx_socket_errno,
                          ngx_tcp_push_n " failed");
        }

        if (c->tcp_nopush == NGX_TCP_NOPUSH_SET) {
            c->tcp_nopush = NGX_TCP_NOPUSH_UNSET;
        }
    }

    ck->corked.nelts = 0;
}
