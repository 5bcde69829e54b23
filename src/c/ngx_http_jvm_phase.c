
/*
 * nginx-jvm: handlers in nginx's other phases and variables they compute.
 *
 *   jvm_rewrite, jvm_access   the rewrite and access phases.  A handler
 *                             answers nothing (the request goes on) or a
 *                             response.  nginx can suspend these phases, so
 *                             they run where jvm_mode says: off the loop the
 *                             request waits, and ngx_http_core_run_phases()
 *                             enters the phase again when the task answers.
 *   jvm_header_filter         the status and header fields of each response
 *                             of the location; always on the event loop,
 *                             since nginx cannot suspend a header filter.
 *   jvm_body_filter           the body of each response of the location,
 *                             chunk by chunk (ngx_http_jvm_body.c); its
 *                             header part is here.
 *   jvm_log                   the log phase, after the response has gone;
 *                             on a JVM thread in pool and virtual modes.
 *   jvm_set                   a variable's get handler: on the event loop,
 *                             once per request (nginx caches the value).
 *
 * Each handler gets the request described as a content handler does
 * (ngx_http_jvm_request.c), without its body, which is read later, in the
 * content phase.
 */


#include "ngx_http_jvm_module.h"


static ngx_int_t ngx_http_jvm_rewrite_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_jvm_access_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_jvm_phase_run(ngx_http_request_t *r,
    ngx_int_t handler, ngx_uint_t phase);
static void ngx_http_jvm_phase_resume(ngx_http_request_t *r);
static ngx_int_t ngx_http_jvm_header_filter(ngx_http_request_t *r);
static ngx_int_t ngx_http_jvm_response_headers(ngx_http_request_t *r,
    size_t at, size_t *len);
static ngx_int_t ngx_http_jvm_log_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_jvm_variable_handler(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);


/* a jvm_set variable: its handler, and its name for the log */

typedef struct {
    ngx_int_t                 handler;
    ngx_str_t                 name;
} ngx_http_jvm_set_t;


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;


/* jvm_rewrite, jvm_access, jvm_header_filter, jvm_body_filter, jvm_log */

char *
ngx_http_jvm_phase_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_int_t                 *field, index;
    ngx_str_t                 *value;
    ngx_http_jvm_main_conf_t  *jmcf;

    field = (ngx_int_t *) ((char *) conf + cmd->offset);

    if (*field != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    index = ngx_http_jvm_handler_index(cf, &value[1],
                                       (const char *) cmd->name.data);
    if (index == NGX_ERROR) {
        return NGX_CONF_ERROR;
    }

    *field = index;

    jmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_jvm_module);

    switch (cmd->offset) {

    case offsetof(ngx_http_jvm_loc_conf_t, rewrite):
        jmcf->uses_rewrite = 1;
        break;

    case offsetof(ngx_http_jvm_loc_conf_t, access):
        jmcf->uses_access = 1;
        break;

    case offsetof(ngx_http_jvm_loc_conf_t, header_filter):
        jmcf->uses_filter = 1;
        break;

    case offsetof(ngx_http_jvm_loc_conf_t, body_filter):
        jmcf->uses_body_filter = 1;
        break;

    default: /* log */
        jmcf->uses_log = 1;
        break;
    }

    return NGX_CONF_OK;
}


/*
 * jvm_set $variable HANDLER.  nginx's variables are global: the variable is
 * computed by this handler wherever it is read; "set" or setVariable() in
 * a location still assigns it there.
 */

char *
ngx_http_jvm_set(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_int_t                  index;
    ngx_str_t                 *value, name;
    ngx_http_jvm_set_t        *set;
    ngx_http_variable_t       *v;
    ngx_http_jvm_main_conf_t  *jmcf;

    value = cf->args->elts;

    if (value[1].len < 2 || value[1].data[0] != '$') {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "jvm_set: invalid variable name \"%V\" (expected "
                           "$name)", &value[1]);
        return NGX_CONF_ERROR;
    }

    name.len = value[1].len - 1;
    name.data = value[1].data + 1;

    index = ngx_http_jvm_handler_index(cf, &value[2], "jvm_set");
    if (index == NGX_ERROR) {
        return NGX_CONF_ERROR;
    }

    v = ngx_http_add_variable(cf, &name, NGX_HTTP_VAR_CHANGEABLE);
    if (v == NULL) {
        return NGX_CONF_ERROR;
    }

    if (v->get_handler == ngx_http_jvm_variable_handler
        && ((ngx_http_jvm_set_t *) v->data)->handler != index)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "jvm_set: the variable \"%V\" is already "
                           "computed by another handler (nginx's variables "
                           "are global)", &value[1]);
        return NGX_CONF_ERROR;
    }

    set = ngx_palloc(cf->pool, sizeof(ngx_http_jvm_set_t));
    if (set == NULL) {
        return NGX_CONF_ERROR;
    }

    set->handler = index;
    set->name = name;

    v->get_handler = ngx_http_jvm_variable_handler;
    v->data = (uintptr_t) set;

    /* its failures turn the response into a 500 (the header filter) */
    jmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_jvm_module);
    jmcf->uses_set = 1;

    /* indexed: computed at the first read, then cached for the request */

    if (ngx_http_get_variable_index(cf, &name) == NGX_ERROR) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/*
 * Postconfiguration (ngx_http_jvm_module.c): the phases some directive
 * uses, and only those, and the header filter.
 */

ngx_int_t
ngx_http_jvm_phase_init(ngx_conf_t *cf)
{
    ngx_http_handler_pt        *h;
    ngx_http_core_main_conf_t  *cmcf;
    ngx_http_jvm_main_conf_t   *jmcf;

    jmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_jvm_module);
    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    if (jmcf->uses_rewrite) {
        h = ngx_array_push(&cmcf->phases[NGX_HTTP_REWRITE_PHASE].handlers);
        if (h == NULL) {
            return NGX_ERROR;
        }

        *h = ngx_http_jvm_rewrite_handler;
    }

    if (jmcf->uses_access) {
        h = ngx_array_push(&cmcf->phases[NGX_HTTP_ACCESS_PHASE].handlers);
        if (h == NULL) {
            return NGX_ERROR;
        }

        *h = ngx_http_jvm_access_handler;
    }

    if (jmcf->uses_log) {
        h = ngx_array_push(&cmcf->phases[NGX_HTTP_LOG_PHASE].handlers);
        if (h == NULL) {
            return NGX_ERROR;
        }

        *h = ngx_http_jvm_log_handler;
    }

    if (ngx_http_jvm_trace_init(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    /* the body filter's header part, and the failures of jvm_set, too */

    if (jmcf->uses_filter || jmcf->uses_set || jmcf->uses_body_filter) {
        ngx_http_next_header_filter = ngx_http_top_header_filter;
        ngx_http_top_header_filter = ngx_http_jvm_header_filter;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_jvm_rewrite_handler(ngx_http_request_t *r)
{
    ngx_http_jvm_loc_conf_t  *jlcf;

    jlcf = ngx_http_get_module_loc_conf(r, ngx_http_jvm_module);

    if (jlcf->rewrite == NGX_CONF_UNSET) {
        return NGX_DECLINED;
    }

    return ngx_http_jvm_phase_run(r, jlcf->rewrite,
                                  NGX_HTTP_JVM_PHASE_REWRITE);
}


static ngx_int_t
ngx_http_jvm_access_handler(ngx_http_request_t *r)
{
    ngx_http_jvm_loc_conf_t  *jlcf;

    jlcf = ngx_http_get_module_loc_conf(r, ngx_http_jvm_module);

    /* nginx's access phase never runs for subrequests */

    if (jlcf->access == NGX_CONF_UNSET) {
        return NGX_DECLINED;
    }

    return ngx_http_jvm_phase_run(r, jlcf->access, NGX_HTTP_JVM_PHASE_ACCESS);
}


/*
 * NGX_DECLINED: the request goes on to the phase's next handler; NGX_DONE:
 * the request is answered or waits for a task (the phase engine stops);
 * an HTTP code: nginx answers it (ngx_http_core_rewrite_phase and
 * ngx_http_core_access_phase finalize with it).
 */

static ngx_int_t
ngx_http_jvm_phase_run(ngx_http_request_t *r, ngx_int_t handler,
    ngx_uint_t phase)
{
    size_t                    len;
    ngx_int_t                 rc;
    ngx_http_jvm_ctx_t       *ctx;
    ngx_http_jvm_loc_conf_t  *jlcf;

    ctx = ngx_http_get_module_ctx(r, ngx_http_jvm_module);

    if (ctx && ctx->phase_done) {
        /* entered again after the task let the request go on */
        ctx->phase_done = 0;
        return NGX_DECLINED;
    }

    if (!ngx_http_jvm_vm.ready) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (ngx_http_jvm_request_encode(r, &len) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    jlcf = ngx_http_get_module_loc_conf(r, ngx_http_jvm_module);

    if (jlcf->mode != NGX_HTTP_JVM_LOOP || jlcf->async) {
        rc = ngx_http_jvm_task_submit(r, handler, phase, len);

        if (rc != NGX_DONE) {
            return rc;
        }

        /*
         * The task counted the request, as a content handler's does; in
         * the content phase nginx then finalizes with NGX_DONE, which
         * uncounts it.  These phases do not, so it is done here: the
         * request is kept by the connection, and its cleanup cancels the
         * task if the client goes.
         */
        r->main->count--;
        r->write_event_handler = ngx_http_jvm_phase_resume;

        return NGX_DONE;
    }

    rc = ngx_http_jvm_vm_handle(r, handler, phase, len, &len);

    /* whatever the answer: a figure left would go to the next call's */
    ngx_http_jvm_cost_take(r);

    if (rc != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (ngx_http_jvm_response_declined(len)) {
        return NGX_DECLINED;
    }

    ngx_http_finalize_request(r, ngx_http_jvm_send_response(r, len));

    return NGX_DONE;
}


/* A phase handler's task answered: the response, or the phases go on. */

static void
ngx_http_jvm_phase_resume(ngx_http_request_t *r)
{
    size_t               len;
    ngx_int_t            rc;
    ngx_http_jvm_ctx_t  *ctx;

    /*
     * Whether Java is done with the task does not matter here: the task is
     * forgotten below when it lets the request go on, and by the request's
     * cleanup otherwise.
     */
    rc = ngx_http_jvm_task_take(r, &len, NULL);

    if (rc == NGX_AGAIN) {
        return;
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_jvm_module);

    if (rc != NGX_OK) {
        rc = NGX_HTTP_INTERNAL_SERVER_ERROR;

    } else if (ngx_http_jvm_response_declined(len)) {

        /* Java forgets the task: a content task may take its id next */
        ctx->task = 0;
        ngx_http_jvm_vm_cancel(ctx);

        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "jvm: phase handler let the request go on");

        ctx->phase_done = 1;
        r->read_event_handler = ngx_http_block_reading;
        r->write_event_handler = ngx_http_core_run_phases;
        ngx_http_core_run_phases(r);
        return;

    } else {
        rc = ngx_http_jvm_send_response(r, len);
    }

    ctx->responded = 1;
    ngx_http_finalize_request(r, rc);
}


/*
 * The handler sees the request, its status (in the request's description)
 * and the response's header fields (after it in the request buffer), and
 * answers edits: a new status, names with their new values (none: the
 * field is removed).  A handler that fails turns the response into a 500.
 */

static ngx_int_t
ngx_http_jvm_header_filter(ngx_http_request_t *r)
{
    size_t                    len, all;
    ngx_int_t                 rc;
    ngx_http_jvm_ctx_t       *ctx;
    ngx_http_jvm_loc_conf_t  *jlcf;

    /*
     * nginx's scripts read a variable whose handler failed as empty; the
     * failure (logged when it happened) answers 500 instead, if the
     * response has not started.
     */

    ctx = ngx_http_get_module_ctx(r, ngx_http_jvm_module);

    if (ctx && ctx->var_failed) {
        ctx->var_failed = 0;
        return ngx_http_filter_finalize_request(r, &ngx_http_jvm_module,
                                                NGX_HTTP_INTERNAL_SERVER_ERROR);
    }

    jlcf = ngx_http_get_module_loc_conf(r, ngx_http_jvm_module);

    /* first: a header filter then sees the fields the client will get */

    if (jlcf->body_filter != NGX_CONF_UNSET && ngx_http_jvm_vm.ready
        && !r->filter_finalize
        && ngx_http_jvm_body_header(r, jlcf->body_filter) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (jlcf->header_filter == NGX_CONF_UNSET || !ngx_http_jvm_vm.ready
        || r->filter_finalize)
    {
        return ngx_http_next_header_filter(r);
    }

    if (ngx_http_jvm_request_encode(r, &len) != NGX_OK
        || ngx_http_jvm_response_headers(r, len, &all) != NGX_OK)
    {
        return NGX_ERROR;
    }

    rc = ngx_http_jvm_vm_filter(r, jlcf->header_filter, len, len, &all);

    if (rc == NGX_DECLINED) {
        return ngx_http_next_header_filter(r);
    }

    if (rc != NGX_OK || ngx_http_jvm_edit_headers(r, all) != NGX_OK) {
        return ngx_http_filter_finalize_request(r, &ngx_http_jvm_module,
                                                NGX_HTTP_INTERNAL_SERVER_ERROR);
    }

    return ngx_http_next_header_filter(r);
}


/*
 * The response's header fields, as the client will get them from nginx's
 * header filter (ngx_http_jvm_put_headers_out()), after the request's
 * description at "at".
 */

static ngx_int_t
ngx_http_jvm_response_headers(ngx_http_request_t *r, size_t at, size_t *len)
{
    u_char  *start;
    size_t   size;

    size = ngx_http_jvm_headers_out_size(r);

    if (at + size > ngx_http_jvm_vm.req_cap) {
        /*
         * Java's larger buffer is a new one, empty (nothing is copied):
         * the request is described into it again, before the fields
         */
        if (ngx_http_jvm_vm_request_buffer(r->connection->log, at + size)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        if (ngx_http_jvm_request_encode(r, &at) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    start = ngx_http_jvm_vm.req_addr + at;
    *len = ngx_http_jvm_put_headers_out(r, start) - start;

    return NGX_OK;
}


/*
 * After the response: the handler's result is ignored, a failure logged.
 * Off the loop in pool and virtual modes; the request is gone by the time
 * such a handler runs, which has its description (status and bytes sent
 * included) but cannot read variables.
 */

static ngx_int_t
ngx_http_jvm_log_handler(ngx_http_request_t *r)
{
    size_t                    len;
    ngx_int_t                 rc;
    ngx_http_jvm_loc_conf_t  *jlcf;

    jlcf = ngx_http_get_module_loc_conf(r, ngx_http_jvm_module);

    if (jlcf->log == NGX_CONF_UNSET || !ngx_http_jvm_vm.ready) {
        return NGX_OK;
    }

    if (ngx_http_jvm_request_encode(r, &len) != NGX_OK) {
        return NGX_OK;
    }

    if (jlcf->mode == NGX_HTTP_JVM_LOOP
        || (jlcf->mode == NGX_HTTP_JVM_VIRTUAL && ngx_http_jvm_vm.no_virtual))
    {
        rc = ngx_http_jvm_vm_handle(r, jlcf->log, NGX_HTTP_JVM_PHASE_LOG,
                                    len, &len);

    } else {
        rc = ngx_http_jvm_vm_submit(r, jlcf->log, NGX_HTTP_JVM_PHASE_LOG,
                                    len, NULL, jlcf->mode, 0, &len);

        if (rc == NGX_OK) {
            return NGX_OK;
        }

        rc = (rc == NGX_DECLINED) ? NGX_OK : rc;
    }

    if (rc == NGX_OK && !ngx_http_jvm_response_declined(len)) {
        /* an error response: its message is what there is to log */
        ngx_http_jvm_response_log(r, len);
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_jvm_variable_handler(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    size_t               len;
    ngx_int_t            rc;
    ngx_str_t            value;
    ngx_http_jvm_ctx_t  *ctx;
    ngx_http_jvm_set_t  *set;

    set = (ngx_http_jvm_set_t *) data;
    rc = NGX_ERROR;

    if (ngx_http_jvm_vm.ready
        && ngx_http_jvm_request_encode(r, &len) == NGX_OK)
    {
        rc = ngx_http_jvm_vm_variable(r, set->handler, len, &value);
    }

    /*
     * nginx puts the value where the configuration says: a header field,
     * a redirect, an upstream request.  One it may not carry fails as a
     * handler that threw does.
     */

    if (rc == NGX_OK
        && ngx_http_jvm_gate_log(r->connection->log,
                                 NGX_HTTP_JVM_DOOR_VARIABLE, &set->name,
                                 &value)
           != NGX_OK)
    {
        rc = NGX_ERROR;
    }

    if (rc == NGX_ERROR) {
        ctx = ngx_http_jvm_get_ctx(r);
        if (ctx) {
            ctx->var_failed = 1;
        }

        return NGX_ERROR;
    }

    if (rc == NGX_DECLINED) {
        v->not_found = 1;
        return NGX_OK;
    }

    v->data = value.data;
    v->len = value.len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return NGX_OK;
}
