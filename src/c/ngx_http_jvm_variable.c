
/*
 * nginx-jvm: a request's variables and URI, read and set for Java; and the
 * module's own variables, what a request cost the JVM ($jvm_alloc_bytes,
 * $jvm_cpu_us).
 *
 * On the event loop only: variables live in the request's memory and are
 * evaluated by nginx's own code.  Java reaches these through the natives of
 * nginx.jvm.Worker in ngx_http_jvm_vm.c; JVM threads hop to the loop first.
 */


#include "ngx_http_jvm_module.h"


static ngx_http_variable_t *ngx_http_jvm_variable_find(ngx_http_request_t *r,
    ngx_str_t *name, ngx_uint_t *key, ngx_uint_t *prefix);
static ngx_int_t ngx_http_jvm_cost_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);


#define NGX_HTTP_JVM_COST_ALLOC  0
#define NGX_HTTP_JVM_COST_CPU    1


/*
 * A call's cost, written by Java (nginx.jvm.Meter, through the buffer
 * Natives.meter() makes of them): long bytes, long CPU nanoseconds; -1
 * bytes: nothing measured.
 */
static int64_t  ngx_http_jvm_meter_slots[2];


/*
 * Not cacheable: a value read before the handler ran (a "set" in the
 * rewrite phase) must not stand for the one the access log reads.
 */

static ngx_http_variable_t  ngx_http_jvm_variables[] = {

    { ngx_string("jvm_alloc_bytes"), NULL, ngx_http_jvm_cost_variable,
      NGX_HTTP_JVM_COST_ALLOC, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("jvm_cpu_us"), NULL, ngx_http_jvm_cost_variable,
      NGX_HTTP_JVM_COST_CPU, NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


/*
 * NGX_OK and the value; NGX_DECLINED when the variable has no value here;
 * NGX_ABORT when nginx knows no variable of that name.
 */

ngx_int_t
ngx_http_jvm_variable_get(ngx_http_request_t *r, ngx_str_t *name,
    ngx_str_t *value)
{
    ngx_uint_t                  key, prefix;
    ngx_http_variable_value_t  *vv;

    if (ngx_http_jvm_variable_find(r, name, &key, &prefix) == NULL
        && !prefix)
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "jvm: get variable \"%V\": unknown", name);
        return NGX_ABORT;
    }

    vv = ngx_http_get_variable(r, name, key);

    if (vv == NULL) {
        return NGX_ERROR;
    }

    if (vv->not_found) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "jvm: get variable \"%V\": not found", name);
        return NGX_DECLINED;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: get variable \"%V\": \"%v\"", name, vv);

    value->data = vv->data;
    value->len = vv->len;

    return NGX_OK;
}


/*
 * Sets a changeable variable: one with a setter of nginx's own ($args,
 * $limit_rate), or one declared by "set" or "jvm_set".  *err says why not.
 */

ngx_int_t
ngx_http_jvm_variable_set(ngx_http_request_t *r, ngx_str_t *name,
    ngx_str_t *value, const char **err)
{
    ngx_uint_t                  key, prefix;
    ngx_http_variable_t        *v;
    ngx_http_variable_value_t  *vv;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: set variable \"%V\" to \"%V\"", name, value);

    v = ngx_http_jvm_variable_find(r, name, &key, &prefix);

    if (v == NULL) {
        *err = prefix ? "a variable of a prefix ($arg_, $http_, ...) cannot "
                        "be set" : "unknown nginx variable";
        goto failed;
    }

    if (!(v->flags & NGX_HTTP_VAR_CHANGEABLE)) {
        *err = "this nginx variable cannot be set";
        goto failed;
    }

    /*
     * nginx puts $args into the upstream's request line as it is; any
     * other variable may go into a header field or a redirect
     */

    *err = (name->len == 4 && ngx_strncmp(name->data, "args", 4) == 0)
           ? ngx_http_jvm_gate(NGX_HTTP_JVM_DOOR_ARGS, NULL, value)
           : ngx_http_jvm_gate(NGX_HTTP_JVM_DOOR_VARIABLE, name, value);

    if (*err) {
        goto failed;
    }

    if (v->set_handler) {
        vv = ngx_palloc(r->pool, sizeof(ngx_http_variable_value_t));
        if (vv == NULL) {
            return NGX_ERROR;
        }

    } else if (v->flags & NGX_HTTP_VAR_INDEXED) {
        vv = &r->variables[v->index];

    } else {
        *err = "this nginx variable cannot be set";
        goto failed;
    }

    vv->data = value->data;
    vv->len = value->len;
    vv->valid = 1;
    vv->no_cacheable = 0;
    vv->not_found = 0;
    vv->escape = 0;

    if (v->set_handler) {
        v->set_handler(r, vv, v->data);
    }

    return NGX_OK;

failed:

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: set variable \"%V\" refused: %s", name, *err);

    return NGX_ERROR;
}


/*
 * A new URI for the request, as nginx routes on it (decoded, as $uri).  In
 * the rewrite phase nginx then looks for its location again (the
 * post-rewrite phase sees uri_changed), as after a "rewrite ... last".
 * NULL, or why it cannot be.
 */

const char *
ngx_http_jvm_set_uri(ngx_http_request_t *r, ngx_str_t *uri)
{
    const char  *err;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: set uri \"%V\"", uri);

    err = ngx_http_jvm_gate(NGX_HTTP_JVM_DOOR_URI, NULL, uri);

    if (err) {
        return err;
    }

    r->uri = *uri;
    r->valid_unparsed_uri = 0;
    r->uri_changed = 1;

    /*
     * proxy_pass escapes such a URI on its way out (a space, "?", "%"),
     * as it does a URI nginx decoded from the client's
     */
    r->quoted_uri = 1;

    ngx_http_set_exten(r);

    return NULL;
}


/*
 * Looks the name up as nginx does (lower case, in the variables' hash);
 * *prefix is set when it is no variable of its own but begins with a
 * prefix nginx knows ($arg_, $cookie_, $http_, ...).
 */

static ngx_http_variable_t *
ngx_http_jvm_variable_find(ngx_http_request_t *r, ngx_str_t *name,
    ngx_uint_t *key, ngx_uint_t *prefix)
{
    ngx_uint_t                  i;
    ngx_http_variable_t        *v, *pv;
    ngx_http_core_main_conf_t  *cmcf;

    cmcf = ngx_http_get_module_main_conf(r, ngx_http_core_module);

    *key = ngx_hash_strlow(name->data, name->data, name->len);
    *prefix = 0;

    v = ngx_hash_find(&cmcf->variables_hash, *key, name->data, name->len);

    if (v) {
        return v;
    }

    pv = cmcf->prefix_variables.elts;

    for (i = 0; i < cmcf->prefix_variables.nelts; i++) {
        if (name->len >= pv[i].name.len
            && ngx_strncmp(name->data, pv[i].name.data, pv[i].name.len) == 0)
        {
            *prefix = 1;
            break;
        }
    }

    return NULL;
}


/* preconfiguration: the module's own variables, before a directive names one */

ngx_int_t
ngx_http_jvm_variables_add(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var, *v;

    for (v = ngx_http_jvm_variables; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}


/*
 * At the worker's start: measuring what requests cost the JVM takes two
 * reads of the thread's CPU clock (system calls) a request, so it is on
 * only where something reads the figures: a jvm_status location, or a
 * configuration that names $jvm_alloc_bytes or $jvm_cpu_us (log_format,
 * set, ...: nginx has indexed them).  A name only looked up at run time (a
 * handler's Request.variable, SSI) finds them empty then.
 */

void
ngx_http_jvm_cost_init(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf)
{
    ngx_uint_t                  i, used;
    ngx_http_variable_t        *v, *own;
    ngx_http_core_main_conf_t  *cmcf;

    cmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_core_module);

    used = (jmcf->status != NULL);
    v = cmcf->variables.elts;

    for (i = 0; i < cmcf->variables.nelts && !used; i++) {
        for (own = ngx_http_jvm_variables; own->name.len; own++) {
            if (v[i].name.len == own->name.len
                && ngx_strncmp(v[i].name.data, own->name.data,
                               own->name.len) == 0)
            {
                used = 1;
            }
        }
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, cycle->log, 0,
                   "jvm: requests' JVM cost measured: %ui", used);

    if (used) {
        ngx_http_jvm_cost_on();
    }
}


/* Before Worker.configure's Meter.start, which asks for it (Natives.meter). */

void
ngx_http_jvm_cost_on(void)
{
    ngx_http_jvm_meter_slots[0] = -1;
    ngx_http_jvm_vm.meter = ngx_http_jvm_meter_slots;
}


/* $jvm_alloc_bytes, $jvm_cpu_us: not found ("-") where no JVM handler ran */

static ngx_int_t
ngx_http_jvm_cost_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char              *p;
    ngx_http_jvm_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_jvm_module);

    if (ctx == NULL || !ctx->metered) {
        v->not_found = 1;
        return NGX_OK;
    }

    p = ngx_pnalloc(r->pool, NGX_INT64_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    v->len = ngx_sprintf(p, "%L", data == NGX_HTTP_JVM_COST_ALLOC
                                  ? ctx->alloc : ctx->cpu_ns / 1000)
             - p;
    v->data = p;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}
