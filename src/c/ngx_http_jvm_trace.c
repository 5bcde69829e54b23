
/*
 * nginx-jvm: what tracing needs of nginx (docs/operations.md, "Tracing").
 * The spans are Java's (nginx.jvm.Tracing): a request's server span starts
 * at nginx's own start of the request, when its JVM handler is called, and
 * ends in the log phase, where nginx's figures for it are final.  With
 * tracing off (the worker's JVM found no OpenTelemetry configuration) a
 * request costs one flag test here.
 */


#include "ngx_http_jvm_module.h"


static void ngx_http_jvm_trace_mark(void *data);
static ngx_int_t ngx_http_jvm_trace_log_handler(ngx_http_request_t *r);


ngx_uint_t  ngx_http_jvm_tracing;


/* Postconfiguration: the log phase's handler, idle until tracing is on. */

ngx_int_t
ngx_http_jvm_trace_init(ngx_conf_t *cf)
{
    ngx_http_handler_pt        *h;
    ngx_http_core_main_conf_t  *cmcf;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_LOG_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_jvm_trace_log_handler;

    return NGX_OK;
}


/*
 * Natives.tracing(), at the worker's start, before Java asks whether to
 * measure calls: a span carries $jvm_cpu_us and $jvm_alloc_bytes.
 */

void
ngx_http_jvm_trace_on(void)
{
    ngx_http_jvm_tracing = 1;
    ngx_http_jvm_cost_on();
}


/*
 * Natives.traceStart(): Java begins r's server span.  Answers when nginx
 * began the request (ms since the epoch), or -1 for a subrequest (its
 * handler's spans belong to its main request's trace) and for jvm_warmup's
 * requests (on the quiet list while they last: no one's).  The request is
 * marked (a cleanup that does nothing: its pool holds it, and no other
 * state is needed) so that its log phase ends the span.
 */

int64_t
ngx_http_jvm_trace_start(ngx_http_request_t *r)
{
    ngx_pool_cleanup_t    *cln;
    ngx_http_jvm_quiet_t  *q;

    if (r != r->main) {
        return -1;
    }

    for (q = ngx_http_jvm_vm.quiet; q; q = q->next) {
        if (q->log == r->connection->log) {
            return -1;
        }
    }

    for (cln = r->pool->cleanup; cln; cln = cln->next) {
        if (cln->handler == ngx_http_jvm_trace_mark) {
            /* begun already: a second JVM handler (an internal redirect) */
            return -1;
        }
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return -1;
    }

    cln->handler = ngx_http_jvm_trace_mark;
    cln->data = NULL;

    return (int64_t) r->start_sec * 1000 + r->start_msec;
}


static void
ngx_http_jvm_trace_mark(void *data)
{
    /* nothing to release: only a mark (ngx_http_jvm_trace_start) */
}


/*
 * Every main request is logged once (ngx_http_free_request), its client
 * gone or not: the span Java began for it ends here, with the figures
 * Java reads from nginx's variables ($status, $bytes_sent, ...).
 */

static ngx_int_t
ngx_http_jvm_trace_log_handler(ngx_http_request_t *r)
{
    ngx_pool_cleanup_t  *cln;

    if (!ngx_http_jvm_tracing || r != r->main || !ngx_http_jvm_vm.ready) {
        return NGX_OK;
    }

    for (cln = r->pool->cleanup; cln; cln = cln->next) {
        if (cln->handler == ngx_http_jvm_trace_mark) {
            ngx_http_jvm_vm_trace_end(r);
            break;
        }
    }

    return NGX_OK;
}
