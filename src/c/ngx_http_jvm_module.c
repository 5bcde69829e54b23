
/*
 * nginx-jvm: directives, configuration and process hooks.
 */


#include "ngx_http_jvm_module.h"

#include <dirent.h>


static void *ngx_http_jvm_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_jvm_init_main_conf(ngx_conf_t *cf, void *conf);
static void *ngx_http_jvm_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_jvm_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static char *ngx_http_jvm_path(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_jvm_classpath(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_jvm_options(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_jvm_cache(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_jvm_exit(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_jvm_init(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_jvm_webapp(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_jvm_mode(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_jvm_content(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_jvm_status(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_jvm_repl(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_uint_t ngx_http_jvm_repl_addr(ngx_str_t *addr);
static ngx_int_t ngx_http_jvm_expand_dir(ngx_conf_t *cf,
    ngx_http_jvm_main_conf_t *jmcf, ngx_str_t *dir);
static ngx_int_t ngx_http_jvm_postconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_http_jvm_init_module(ngx_cycle_t *cycle);
static ngx_int_t ngx_http_jvm_init_process(ngx_cycle_t *cycle);
static void ngx_http_jvm_exit_process(ngx_cycle_t *cycle);


static ngx_conf_enum_t  ngx_http_jvm_modes[] = {
    { ngx_string("loop"), NGX_HTTP_JVM_LOOP },
    { ngx_string("pool"), NGX_HTTP_JVM_POOL },
    { ngx_string("virtual"), NGX_HTTP_JVM_VIRTUAL },
    { ngx_string("coloop"), NGX_HTTP_JVM_COLOOP },
    { ngx_null_string, 0 }
};


static ngx_str_t  ngx_http_jvm_zone_name = ngx_string("jvm_workers");


static ngx_conf_num_bounds_t  ngx_http_jvm_positive = {
    ngx_conf_check_num_bounds, 1, 100000
};


static ngx_conf_num_bounds_t  ngx_http_jvm_reload_nice_bounds = {
    ngx_conf_check_num_bounds, 0, 19
};


static ngx_command_t  ngx_http_jvm_commands[] = {

    { ngx_string("jvm_path"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_jvm_path,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("jvm_classpath"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_1MORE,
      ngx_http_jvm_classpath,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("jvm_options"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_1MORE,
      ngx_http_jvm_options,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("jvm_cache"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_jvm_cache,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("jvm_init"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_jvm_init,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("jvm_exit"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_jvm_exit,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("jvm_exit_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_jvm_main_conf_t, exit_timeout),
      NULL },

    { ngx_string("jvm_content"),
      NGX_HTTP_LOC_CONF|NGX_HTTP_LIF_CONF|NGX_CONF_TAKE1,
      ngx_http_jvm_content,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("jvm_webapp"),
      NGX_HTTP_LOC_CONF|NGX_CONF_TAKE12,
      ngx_http_jvm_webapp,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("jvm_rewrite"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_jvm_phase_directive,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_jvm_loc_conf_t, rewrite),
      NULL },

    { ngx_string("jvm_access"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_jvm_phase_directive,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_jvm_loc_conf_t, access),
      NULL },

    { ngx_string("jvm_header_filter"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_jvm_phase_directive,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_jvm_loc_conf_t, header_filter),
      NULL },

    { ngx_string("jvm_body_filter"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_jvm_phase_directive,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_jvm_loc_conf_t, body_filter),
      NULL },

    { ngx_string("jvm_log"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_jvm_phase_directive,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_jvm_loc_conf_t, log),
      NULL },

    { ngx_string("jvm_set"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE2,
      ngx_http_jvm_set,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("jvm_mode"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_HTTP_LIF_CONF
                        |NGX_CONF_TAKE1,
      ngx_http_jvm_mode,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_jvm_loc_conf_t, mode),
      &ngx_http_jvm_modes },

    { ngx_string("jvm_async"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_HTTP_LIF_CONF
                        |NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_jvm_loc_conf_t, async),
      NULL },

    { ngx_string("jvm_abort_interrupt"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_HTTP_LIF_CONF
                        |NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_jvm_loc_conf_t, abort_interrupt),
      NULL },

    { ngx_string("jvm_request_buffering"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_HTTP_LIF_CONF
                        |NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_jvm_loc_conf_t, request_buffering),
      NULL },

    { ngx_string("jvm_response_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_HTTP_LIF_CONF
                        |NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_jvm_loc_conf_t, response_timeout),
      NULL },

    { ngx_string("jvm_pool_size"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_jvm_main_conf_t, pool_size),
      &ngx_http_jvm_positive },

    { ngx_string("jvm_queue"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_jvm_main_conf_t, queue),
      &ngx_http_jvm_positive },

    { ngx_string("jvm_reload_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_jvm_main_conf_t, reload_timeout),
      NULL },

    { ngx_string("jvm_reload_drain"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_jvm_main_conf_t, reload_drain),
      NULL },

    { ngx_string("jvm_reload_nice"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_jvm_main_conf_t, reload_nice),
      &ngx_http_jvm_reload_nice_bounds },

    { ngx_string("jvm_client"),
      NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_jvm_client_directive,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("jvm_warmup"),
      NGX_HTTP_SRV_CONF|NGX_CONF_1MORE,
      ngx_http_jvm_warmup_directive,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("jvm_websocket_max_message"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_jvm_loc_conf_t, ws_max_message),
      NULL },

    { ngx_string("jvm_websocket_idle_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_jvm_loc_conf_t, ws_idle_timeout),
      NULL },

    { ngx_string("jvm_websocket_ping_interval"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_jvm_loc_conf_t, ws_ping_interval),
      NULL },

    { ngx_string("jvm_websocket_deflate"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_jvm_loc_conf_t, ws_deflate),
      NULL },

    { ngx_string("jvm_websocket_send_queue"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_jvm_main_conf_t, ws_send_queue),
      &ngx_http_jvm_positive },

    { ngx_string("jvm_shared_dict"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE2,
      ngx_http_jvm_shared_dict,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("jvm_topic"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE2,
      ngx_http_jvm_topic,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("jvm_status"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_jvm_status,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("jvm_repl"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_jvm_repl,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_jvm_module_ctx = {
    ngx_http_jvm_variables_add,            /* preconfiguration */
    ngx_http_jvm_postconfiguration,        /* postconfiguration */

    ngx_http_jvm_create_main_conf,         /* create main configuration */
    ngx_http_jvm_init_main_conf,           /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_jvm_create_loc_conf,          /* create location configuration */
    ngx_http_jvm_merge_loc_conf            /* merge location configuration */
};


ngx_module_t  ngx_http_jvm_module = {
    NGX_MODULE_V1,
    &ngx_http_jvm_module_ctx,              /* module context */
    ngx_http_jvm_commands,                 /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    ngx_http_jvm_init_module,              /* init module */
    ngx_http_jvm_init_process,             /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_jvm_exit_process,             /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static void *
ngx_http_jvm_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_jvm_main_conf_t  *jmcf;

    jmcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_jvm_main_conf_t));
    if (jmcf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     jmcf->jvm_path = { 0, NULL };
     *     jmcf->classpath = NULL;
     *     jmcf->options = NULL;
     *     jmcf->init = { 0, NULL };
     *     jmcf->exit = { 0, NULL };
     *     jmcf->dicts = NULL;
     *     jmcf->topics = NULL;
     *     jmcf->uses_pool = 0;
     *     jmcf->uses_virtual = 0;
     *     jmcf->uses_coloop = 0;
     *     jmcf->uses_tasks = 0;
     */

    jmcf->pool_size = NGX_CONF_UNSET;
    jmcf->queue = NGX_CONF_UNSET;
    jmcf->ws_send_queue = NGX_CONF_UNSET;
    jmcf->reload_timeout = NGX_CONF_UNSET_MSEC;
    jmcf->reload_drain = NGX_CONF_UNSET_MSEC;
    jmcf->reload_nice = NGX_CONF_UNSET;
    jmcf->exit_timeout = NGX_CONF_UNSET_MSEC;
    jmcf->repl = NGX_CONF_UNSET;

    if (ngx_array_init(&jmcf->handlers, cf->pool, 4, sizeof(ngx_str_t))
        != NGX_OK)
    {
        return NULL;
    }

    return jmcf;
}


static char *
ngx_http_jvm_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_jvm_main_conf_t *jmcf = conf;

    ngx_conf_init_value(jmcf->pool_size, 16);
    ngx_conf_init_value(jmcf->queue, 1024);
    ngx_conf_init_value(jmcf->ws_send_queue, 64);
    ngx_conf_init_msec_value(jmcf->reload_timeout, 60000);
    ngx_conf_init_msec_value(jmcf->reload_drain, 5000);
    ngx_conf_init_value(jmcf->reload_nice, 10);
    ngx_conf_init_msec_value(jmcf->exit_timeout, 5000);
    ngx_conf_init_value(jmcf->repl, 0);

    if (jmcf->handlers.nelts == 0 && jmcf->init.len == 0) {
        /* the module is loaded but unused: no JVM is needed */
        return NGX_CONF_OK;
    }

    if (jmcf->jvm_path.len == 0) {
        if (ngx_http_jvm_find_libjvm(cf, &jmcf->jvm_path) != NGX_OK) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "jvm_path auto: no libjvm.so found in "
                               "$JAVA_HOME, from the \"java\" on $PATH or in "
                               "/usr/lib/jvm/default-java; install a JDK or "
                               "set \"jvm_path\"");
            return NGX_CONF_ERROR;
        }
    }

    if (jmcf->classpath == NULL || jmcf->classpath->nelts == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"jvm_classpath\" is required where "
                           "\"jvm_content\" or \"jvm_init\" is used "
                           "(it must hold nginx-jvm.jar)");
        return NGX_CONF_ERROR;
    }

    /* where workers of successive reloads say they are ready */

    jmcf->zone = ngx_shared_memory_add(cf, &ngx_http_jvm_zone_name,
                                       8 * ngx_pagesize, &ngx_http_jvm_module);
    if (jmcf->zone == NULL) {
        return NGX_CONF_ERROR;
    }

    jmcf->zone->init = ngx_http_jvm_reload_zone_init;

    return NGX_CONF_OK;
}


static void *
ngx_http_jvm_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_jvm_loc_conf_t  *jlcf;

    jlcf = ngx_palloc(cf->pool, sizeof(ngx_http_jvm_loc_conf_t));
    if (jlcf == NULL) {
        return NULL;
    }

    jlcf->handler = NGX_CONF_UNSET;
    jlcf->rewrite = NGX_CONF_UNSET;
    jlcf->access = NGX_CONF_UNSET;
    jlcf->header_filter = NGX_CONF_UNSET;
    jlcf->body_filter = NGX_CONF_UNSET;
    jlcf->log = NGX_CONF_UNSET;
    jlcf->mode = NGX_CONF_UNSET_UINT;
    jlcf->async = NGX_CONF_UNSET;
    jlcf->abort_interrupt = NGX_CONF_UNSET;
    jlcf->request_buffering = NGX_CONF_UNSET;
    jlcf->response_timeout = NGX_CONF_UNSET_MSEC;
    jlcf->ws_max_message = NGX_CONF_UNSET_SIZE;
    jlcf->ws_idle_timeout = NGX_CONF_UNSET_MSEC;
    jlcf->ws_ping_interval = NGX_CONF_UNSET_MSEC;
    jlcf->ws_deflate = NGX_CONF_UNSET;
    jlcf->webapp = NGX_CONF_UNSET;
    jlcf->client = NGX_CONF_UNSET_PTR;
    jlcf->mode_said = NGX_CONF_UNSET;

    return jlcf;
}


static char *
ngx_http_jvm_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_jvm_loc_conf_t *prev = parent;
    ngx_http_jvm_loc_conf_t *conf = child;

    ngx_http_jvm_main_conf_t  *jmcf;
    ngx_http_core_loc_conf_t  *clcf;

    ngx_conf_merge_value(conf->handler, prev->handler, NGX_CONF_UNSET);
    ngx_conf_merge_value(conf->rewrite, prev->rewrite, NGX_CONF_UNSET);
    ngx_conf_merge_value(conf->access, prev->access, NGX_CONF_UNSET);
    ngx_conf_merge_value(conf->header_filter, prev->header_filter,
                         NGX_CONF_UNSET);
    ngx_conf_merge_value(conf->body_filter, prev->body_filter,
                         NGX_CONF_UNSET);
    ngx_conf_merge_value(conf->log, prev->log, NGX_CONF_UNSET);
    ngx_conf_merge_value(conf->webapp, prev->webapp, 0);
    ngx_conf_merge_ptr_value(conf->client, prev->client, NULL);
    ngx_conf_merge_value(conf->mode_said, prev->mode_said, 0);
    ngx_conf_merge_uint_value(conf->mode, prev->mode, NGX_HTTP_JVM_LOOP);

    /*
     * A servlet blocks its thread: a web application runs off the event
     * loop, in a pool unless a jvm_mode says otherwise, and answers
     * through a responder (an async servlet answers from any thread).
     */

    if (conf->webapp && !conf->mode_said) {
        conf->mode = NGX_HTTP_JVM_POOL;
    }

    if (conf->webapp) {
        if (conf->mode == NGX_HTTP_JVM_LOOP) {
            clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"jvm_webapp\" in location \"%V\" cannot "
                               "run in \"jvm_mode loop\": a servlet blocks "
                               "its thread, and that one is the event "
                               "loop's; take \"jvm_mode pool\" (the "
                               "default with \"jvm_webapp\"), \"virtual\" "
                               "or \"coloop\"", &clcf->name);
            return NGX_CONF_ERROR;
        }

        conf->async = 1;
    }

    ngx_conf_merge_value(conf->async, prev->async, 0);
    ngx_conf_merge_value(conf->abort_interrupt, prev->abort_interrupt, 0);
    ngx_conf_merge_value(conf->request_buffering, prev->request_buffering, 1);
    ngx_conf_merge_msec_value(conf->response_timeout, prev->response_timeout,
                              60000);
    ngx_conf_merge_size_value(conf->ws_max_message, prev->ws_max_message,
                              1024 * 1024);
    ngx_conf_merge_msec_value(conf->ws_idle_timeout, prev->ws_idle_timeout, 0);
    ngx_conf_merge_msec_value(conf->ws_ping_interval, prev->ws_ping_interval,
                              0);
    ngx_conf_merge_value(conf->ws_deflate, prev->ws_deflate, 0);

    if (conf->ws_max_message > NGX_MAX_INT32_VALUE / 2) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"jvm_websocket_max_message\" must be less "
                           "than 1g");
        return NGX_CONF_ERROR;
    }

    /* nginx cannot suspend a header filter (docs/handlers.md) */

    if (conf->header_filter != NGX_CONF_UNSET
        && conf->mode != NGX_HTTP_JVM_LOOP
        && (conf->header_filter != prev->header_filter
            || conf->mode != prev->mode))
    {
        ngx_conf_log_error(NGX_LOG_NOTICE, cf, 0,
                           "jvm_header_filter and jvm_set handlers run on "
                           "the event loop whatever \"jvm_mode\" says");
    }

    /* nor a body filter */

    if (conf->body_filter != NGX_CONF_UNSET
        && conf->mode != NGX_HTTP_JVM_LOOP
        && (conf->body_filter != prev->body_filter
            || conf->mode != prev->mode))
    {
        ngx_conf_log_error(NGX_LOG_NOTICE, cf, 0,
                           "jvm_body_filter handlers run on the event loop "
                           "whatever \"jvm_mode\" says");
    }

    /*
     * A body read as it arrives blocks the thread that reads it until the
     * client sends more: never the event loop's (docs/directives.md).  An
     * asynchronous handler off the loop may read it from any thread but
     * the loop's (a servlet's ReadListener asks first whether a read would
     * block: Request.bodyReadable).
     */

    if (!conf->request_buffering && conf->handler != NGX_CONF_UNSET
        && conf->mode == NGX_HTTP_JVM_LOOP)
    {
        clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"jvm_request_buffering off\" needs a "
                           "jvm_content handler in \"jvm_mode pool\", "
                           "\"virtual\" or \"coloop\": "
                           "location \"%V\" runs its handler on the event "
                           "loop (\"jvm_request_buffering on\" there)",
                           &clcf->name);
        return NGX_CONF_ERROR;
    }

    /* the worker starts only the executors that some location uses */

    if (conf->handler != NGX_CONF_UNSET || conf->rewrite != NGX_CONF_UNSET
        || conf->access != NGX_CONF_UNSET || conf->log != NGX_CONF_UNSET)
    {
        jmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_jvm_module);

        if (conf->mode == NGX_HTTP_JVM_POOL) {
            jmcf->uses_pool = 1;
        }

        if (conf->mode == NGX_HTTP_JVM_VIRTUAL) {
            jmcf->uses_virtual = 1;
        }

        if (conf->mode == NGX_HTTP_JVM_COLOOP) {
            jmcf->uses_coloop = 1;
        }

        if (conf->mode != NGX_HTTP_JVM_LOOP || conf->async) {
            jmcf->uses_tasks = 1;
        }
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_jvm_path(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_jvm_main_conf_t *jmcf = conf;

    ngx_str_t        *value;
    ngx_file_info_t   fi;

    if (jmcf->jvm_path.data != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_strcmp(value[1].data, "auto") == 0) {
        if (ngx_http_jvm_find_libjvm(cf, &jmcf->jvm_path) != NGX_OK) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "jvm_path auto: no libjvm.so found in "
                               "$JAVA_HOME, from the \"java\" on $PATH or in "
                               "/usr/lib/jvm/default-java");
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    if (ngx_conf_full_name(cf->cycle, &value[1], 0) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    if (ngx_file_info(value[1].data, &fi) == NGX_FILE_ERROR
        || !ngx_is_file(&fi))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           "jvm_path: \"%V\" is not a file", &value[1]);
        return NGX_CONF_ERROR;
    }

    jmcf->jvm_path = value[1];

    return NGX_CONF_OK;
}


static char *
ngx_http_jvm_classpath(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_jvm_main_conf_t *jmcf = conf;

    ngx_str_t        *value, *entry, dir;
    ngx_uint_t        i;
    ngx_file_info_t   fi;

    if (jmcf->classpath == NULL) {
        jmcf->classpath = ngx_array_create(cf->pool, 8, sizeof(ngx_str_t));
        if (jmcf->classpath == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {

        if (value[i].len == 0 || ngx_strchr(value[i].data, ':') != NULL) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "jvm_classpath: invalid entry \"%V\" (give "
                               "entries as separate arguments, not joined "
                               "with \":\")", &value[i]);
            return NGX_CONF_ERROR;
        }

        if (ngx_conf_full_name(cf->cycle, &value[i], 0) != NGX_OK) {
            return NGX_CONF_ERROR;
        }

        /* an entry that ends in "/" and "*": every jar in that directory */

        if (value[i].len >= 2
            && value[i].data[value[i].len - 1] == '*'
            && value[i].data[value[i].len - 2] == '/')
        {
            dir.len = value[i].len - 2;
            dir.data = ngx_pnalloc(cf->pool, dir.len + 1);
            if (dir.data == NULL) {
                return NGX_CONF_ERROR;
            }

            ngx_cpystrn(dir.data, value[i].data, dir.len + 1);

            if (ngx_http_jvm_expand_dir(cf, jmcf, &dir) != NGX_OK) {
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_file_info(value[i].data, &fi) == NGX_FILE_ERROR) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                               "jvm_classpath: \"%V\" does not exist",
                               &value[i]);
            return NGX_CONF_ERROR;
        }

        entry = ngx_array_push(jmcf->classpath);
        if (entry == NULL) {
            return NGX_CONF_ERROR;
        }

        *entry = value[i];
    }

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_jvm_expand_dir(ngx_conf_t *cf, ngx_http_jvm_main_conf_t *jmcf,
    ngx_str_t *dir)
{
    DIR             *d;
    size_t           len;
    ngx_str_t       *entry;
    struct dirent  **names;
    int              n, k;

    d = opendir((char *) dir->data);
    if (d == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           "jvm_classpath: directory \"%V\" cannot be read",
                           dir);
        return NGX_ERROR;
    }

    closedir(d);

    /* sorted, so that the class path is the same on every start */
    n = scandir((char *) dir->data, &names, NULL, alphasort);
    if (n < 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           "jvm_classpath: directory \"%V\" cannot be read",
                           dir);
        return NGX_ERROR;
    }

    for (k = 0; k < n; k++) {
        len = ngx_strlen(names[k]->d_name);

        if (len > 4
            && ngx_strncasecmp((u_char *) names[k]->d_name + len - 4,
                               (u_char *) ".jar", 4) == 0)
        {
            entry = ngx_array_push(jmcf->classpath);
            if (entry == NULL) {
                break;
            }

            entry->len = dir->len + 1 + len;
            entry->data = ngx_pnalloc(cf->pool, entry->len + 1);
            if (entry->data == NULL) {
                break;
            }

            ngx_sprintf(entry->data, "%V/%s%Z", dir, names[k]->d_name);
        }

        free(names[k]);
    }

    for ( /* void */ ; k < n; k++) {
        free(names[k]);
    }

    free(names);

    return NGX_OK;
}


static char *
ngx_http_jvm_options(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_jvm_main_conf_t *jmcf = conf;

    ngx_str_t   *value, *opt;
    ngx_uint_t   i;

    if (jmcf->options == NULL) {
        jmcf->options = ngx_array_create(cf->pool, 8, sizeof(ngx_str_t));
        if (jmcf->options == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {

        if (value[i].len < 2 || value[i].data[0] != '-') {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "jvm_options: \"%V\" is not a JVM option "
                               "(JVM options start with \"-\")", &value[i]);
            return NGX_CONF_ERROR;
        }

        if (ngx_strncmp(value[i].data, "-Djava.class.path=", 18) == 0
            || ngx_strcmp(value[i].data, "-cp") == 0
            || ngx_strcmp(value[i].data, "-classpath") == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "jvm_options: use \"jvm_classpath\" instead "
                               "of \"%V\"", &value[i]);
            return NGX_CONF_ERROR;
        }

        if (ngx_http_jvm_vm_option(&value[i], 0, NULL) == NGX_ERROR) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "jvm_options: \"%V\" has a \"%%{\" that is "
                               "not \"%%{N+w}\" (N plus the worker's "
                               "number)", &value[i]);
            return NGX_CONF_ERROR;
        }

        opt = ngx_array_push(jmcf->options);
        if (opt == NULL) {
            return NGX_CONF_ERROR;
        }

        *opt = value[i];
    }

    return NGX_CONF_OK;
}


/* jvm_cache PATH | off: a directory of the master's, relative to the prefix */

static char *
ngx_http_jvm_cache(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_jvm_main_conf_t *jmcf = conf;

    ngx_str_t  *value;

    if (jmcf->cache.data != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_strcmp(value[1].data, "off") == 0) {
        ngx_str_set(&jmcf->cache, "");
        return NGX_CONF_OK;
    }

    if (value[1].len == 0) {
        return "needs a directory or \"off\"";
    }

    while (value[1].len > 1 && value[1].data[value[1].len - 1] == '/') {
        value[1].len--;
    }

    if (ngx_conf_full_name(cf->cycle, &value[1], 0) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    jmcf->cache = value[1];

    return NGX_CONF_OK;
}


static char *
ngx_http_jvm_init(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_jvm_main_conf_t *jmcf = conf;

    ngx_str_t  *value;

    if (jmcf->init.data != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_http_jvm_valid_handler_name(&value[1]) != NGX_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "jvm_init: invalid handler \"%V\": expected a "
                           "Clojure var (my.ns/init) or a Java class "
                           "(com.example.Init)", &value[1]);
        return NGX_CONF_ERROR;
    }

    jmcf->init = value[1];

    return NGX_CONF_OK;
}


static char *
ngx_http_jvm_exit(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_jvm_main_conf_t *jmcf = conf;

    ngx_str_t  *value;

    if (jmcf->exit.data != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_http_jvm_valid_handler_name(&value[1]) != NGX_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "jvm_exit: invalid handler \"%V\": expected a "
                           "Clojure var (my.ns/stop) or a Java class "
                           "(com.example.Stop)", &value[1]);
        return NGX_CONF_ERROR;
    }

    jmcf->exit = value[1];

    return NGX_CONF_OK;
}


/* jvm_mode: its enum, and that it was written (jvm_webapp's default) */

static char *
ngx_http_jvm_mode(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_jvm_loc_conf_t *jlcf = conf;

    char  *rv;

    rv = ngx_conf_set_enum_slot(cf, cmd, conf);

    if (rv == NGX_CONF_OK) {
        jlcf->mode_said = 1;
    }

    return rv;
}


/*
 * jvm_webapp PATH [context=/app]: the location serves a servlet web
 * application (a WAR or its directory) from each worker's Tomcat, the
 * handler of the servlet engine's jar (which jvm_classpath must name).
 * The applications reach the workers' JVMs as system properties, one each,
 * "-Dnginx.jvm.servlet.webapp.N=CONTEXT PATH" (docs/servlet.md).
 */

static char *
ngx_http_jvm_webapp(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_jvm_loc_conf_t *jlcf = conf;

    u_char                    *p;
    ngx_str_t                 *value, context, *ctx, *opt, name;
    ngx_uint_t                 i;
    ngx_file_info_t            fi;
    ngx_http_jvm_main_conf_t  *jmcf;
    ngx_http_core_loc_conf_t  *clcf;

    if (jlcf->handler != NGX_CONF_UNSET) {
        return "is duplicate (or the location has \"jvm_content\")";
    }

    value = cf->args->elts;

    if (ngx_conf_full_name(cf->cycle, &value[1], 0) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    if (ngx_strlchr(value[1].data, value[1].data + value[1].len, '%')) {
        return "cannot take a path with \"%\" in it";
    }

    if (ngx_file_info(value[1].data, &fi) == NGX_FILE_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           "jvm_webapp: " ngx_file_info_n " \"%V\" failed "
                           "(it must be a WAR file or its directory)",
                           &value[1]);
        return NGX_CONF_ERROR;
    }

    ngx_str_null(&context);

    if (cf->args->nelts == 3) {
        if (value[2].len < 8
            || ngx_strncmp(value[2].data, "context=", 8) != 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "jvm_webapp: \"%V\" is not "
                               "\"context=/PATH\"", &value[2]);
            return NGX_CONF_ERROR;
        }

        context.data = value[2].data + 8;
        context.len = value[2].len - 8;

        /* "/" and "/app/" are said as "" and "/app", as Tomcat says them */

        while (context.len && context.data[context.len - 1] == '/') {
            context.len--;
        }

        for (i = 0; i < context.len; i++) {
            if (context.data[0] != '/'
                || context.data[i] <= ' ' || context.data[i] >= 0x7f
                || ngx_strchr(";%?#\\", context.data[i]) != NULL
                || (context.data[i] == '/' && i + 1 < context.len
                    && context.data[i + 1] == '/'))
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "jvm_webapp: the context path \"%V\" is "
                                   "not a path such as /app", &value[2]);
                return NGX_CONF_ERROR;
            }
        }
    }

    jmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_jvm_module);

    if (jmcf->webapps == NULL) {
        jmcf->webapps = ngx_array_create(cf->pool, 4, sizeof(ngx_str_t));
        if (jmcf->webapps == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    /* one Tomcat per worker, one application per context path */

    ctx = jmcf->webapps->elts;

    for (i = 0; i < jmcf->webapps->nelts; i++) {
        if (ctx[i].len == context.len
            && ngx_strncmp(ctx[i].data, context.data, context.len) == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "jvm_webapp: the context path \"%V\" is "
                               "another application's already",
                               context.len ? &context : &value[1]);
            return NGX_CONF_ERROR;
        }
    }

    if (jmcf->options == NULL) {
        jmcf->options = ngx_array_create(cf->pool, 8, sizeof(ngx_str_t));
        if (jmcf->options == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    opt = ngx_array_push(jmcf->options);
    ctx = ngx_array_push(jmcf->webapps);
    if (opt == NULL || ctx == NULL) {
        return NGX_CONF_ERROR;
    }

    *ctx = context;

    opt->len = sizeof("-Dnginx.jvm.servlet.webapp.=") - 1 + NGX_INT_T_LEN
               + context.len + 1 + value[1].len;
    opt->data = ngx_pnalloc(cf->pool, opt->len + 1);
    if (opt->data == NULL) {
        return NGX_CONF_ERROR;
    }

    p = ngx_sprintf(opt->data, "-Dnginx.jvm.servlet.webapp.%ui=%V %V%Z",
                    jmcf->webapps->nelts - 1, &context, &value[1]);
    opt->len = p - opt->data - 1;

    ngx_str_set(&name, "nginx.jvm.servlet.TomcatHandler");

    jlcf->handler = ngx_http_jvm_handler_index(cf, &name, "jvm_webapp");
    if (jlcf->handler == NGX_ERROR) {
        return NGX_CONF_ERROR;
    }

    jlcf->webapp = 1;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_jvm_content_handler;

    return NGX_CONF_OK;
}


static char *
ngx_http_jvm_content(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_jvm_loc_conf_t *jlcf = conf;

    ngx_str_t                 *value;
    ngx_http_core_loc_conf_t  *clcf;

    if (jlcf->handler != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    jlcf->handler = ngx_http_jvm_handler_index(cf, &value[1], "jvm_content");
    if (jlcf->handler == NGX_ERROR) {
        return NGX_CONF_ERROR;
    }

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_jvm_content_handler;

    return NGX_CONF_OK;
}


/*
 * jvm_status: the location answers the workers' figures, in Prometheus's
 * text format, from a handler of the runtime (nginx.jvm.Status) and a
 * dictionary of its own where each worker publishes them.
 */

static char *
ngx_http_jvm_status(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_jvm_loc_conf_t *jlcf = conf;

    ngx_str_t                  name;
    ngx_http_jvm_main_conf_t  *jmcf;
    ngx_http_core_loc_conf_t  *clcf;

    if (jlcf->handler != NGX_CONF_UNSET) {
        return "is duplicate (or the location has \"jvm_content\")";
    }

    jmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_jvm_module);

    if (jmcf->status == NULL) {
        ngx_str_set(&name, NGX_HTTP_JVM_STATUS_DICT);

        if (ngx_http_jvm_dict_find_conf(jmcf, &name)) {
            return "conflicts with a \"jvm_shared_dict\" named "
                   "\"" NGX_HTTP_JVM_STATUS_DICT "\"";
        }

        jmcf->status = ngx_http_jvm_dict_add(cf, jmcf, &name,
                                             NGX_HTTP_JVM_STATUS_SIZE);
        if (jmcf->status == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    /*
     * A profile (.../profile under the location) answers when its seconds
     * are over: through a responder, so that it holds no thread meanwhile.
     */

    if (jlcf->async == NGX_CONF_UNSET) {
        jlcf->async = 1;
    }

    ngx_str_set(&name, NGX_HTTP_JVM_STATUS_HANDLER);

    jlcf->handler = ngx_http_jvm_handler_index(cf, &name, "jvm_status");
    if (jlcf->handler == NGX_ERROR) {
        return NGX_CONF_ERROR;
    }

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_jvm_content_handler;

    return NGX_CONF_OK;
}


/*
 * jvm_repl [ADDR:]PORT | off: a Clojure socket REPL in each worker, worker N
 * on PORT+N, on 127.0.0.1 unless ADDR (an IP address) names another: in a
 * container, loopback is the container's own, which a published port
 * cannot reach
 */

static char *
ngx_http_jvm_repl(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_jvm_main_conf_t *jmcf = conf;

    u_char     *colon;
    ngx_int_t   port;
    ngx_str_t  *value, addr, num;

    if (jmcf->repl != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len == 3 && ngx_strncmp(value[1].data, "off", 3) == 0) {
        jmcf->repl = 0;
        return NGX_CONF_OK;
    }

    num = value[1];
    ngx_str_null(&addr);

    colon = ngx_strlchr(num.data, num.data + num.len, ']');
    colon = ngx_strlchr(colon ? colon : num.data, num.data + num.len, ':');

    if (colon) {
        addr.data = num.data;
        addr.len = colon - num.data;
        num.data = colon + 1;
        num.len = value[1].len - addr.len - 1;

        if (!ngx_http_jvm_repl_addr(&addr)) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "jvm_repl: invalid address \"%V\" in \"%V\": "
                               "an IP address, such as 0.0.0.0 or [::], "
                               "before \":PORT\"", &addr, &value[1]);
            return NGX_CONF_ERROR;
        }
    }

    port = ngx_atoi(num.data, num.len);

    if (port < 1 || port > 65535) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "jvm_repl: invalid port \"%V\": a port number "
                           "(worker N listens on PORT+N), ADDR:PORT "
                           "or \"off\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    jmcf->repl = port;
    jmcf->repl_addr = addr;

    return NGX_CONF_OK;
}


/* an IPv4 address, or an IPv6 one in brackets: Java's InetAddress reads both */

static ngx_uint_t
ngx_http_jvm_repl_addr(ngx_str_t *addr)
{
#if (NGX_HAVE_INET6)
    u_char  buf[16];

    if (addr->len > 2
        && addr->data[0] == '[' && addr->data[addr->len - 1] == ']')
    {
        return ngx_inet6_addr(addr->data + 1, addr->len - 2, buf) == NGX_OK;
    }
#endif

    return addr->len && ngx_inet_addr(addr->data, addr->len) != INADDR_NONE;
}


/*
 * Postconfiguration: each file installs its own phase handlers and filters,
 * deciding from the main configuration whether some directive needs them.
 *
 * The order matters.  nginx calls a chain's filters in the reverse order of
 * their installation, and every module loaded before this one has installed
 * its own: the reload filter, installed after phase.c's header filter, is
 * called before it, so while draining a response's keep-alive is given up
 * (r->keepalive) before a jvm_header_filter handler sees the response or
 * its failure turns it into a 500.  The body filter is in the other chain,
 * above nginx's own (gzip, chunked, the copy filter).  The warm-ups come
 * last: they look up addresses, and install nothing.
 */

static ngx_int_t
ngx_http_jvm_postconfiguration(ngx_conf_t *cf)
{
    if (ngx_http_jvm_phase_init(cf) != NGX_OK
        || ngx_http_jvm_body_init(cf) != NGX_OK
        || ngx_http_jvm_reload_filter_init(cf) != NGX_OK
        || ngx_http_jvm_warmup_init(cf) != NGX_OK
        || ngx_http_jvm_client_init(cf) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * In the master, for each configuration loaded: a new generation, and the
 * JVM's options tried once (in a child process).
 */

static ngx_int_t
ngx_http_jvm_init_module(ngx_cycle_t *cycle)
{
    ngx_http_jvm_main_conf_t  *jmcf;

    jmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_jvm_module);

    if (jmcf && jmcf->zone) {
        ngx_http_jvm_reload_new_generation(cycle, jmcf);

        /* "nginx -s": a signal to send, not a configuration to start */

        if (ngx_process != NGX_PROCESS_SIGNALLER) {
            if (ngx_http_jvm_cache_prepare(cycle, jmcf) != NGX_OK) {
                return NGX_ERROR;
            }

            (void) ngx_http_jvm_topics_prepare(cycle, jmcf);
        }
    }

    return NGX_OK;
}


/*
 * A worker's start, in order: its turn (one JVM start at a time); the JVM
 * and the Worker class; the handlers, loaded now so that a missing one is
 * reported once; the executors and the eventfd JVM threads wake the loop
 * with; the jvm_init handler; then the news that this worker is ready, for
 * the workers of an older generation and the next one's turn.  With
 * jvm_warmup the worker sends itself requests before that news.
 */

static ngx_int_t
ngx_http_jvm_init_process(ngx_cycle_t *cycle)
{
    ngx_str_t                 *name;
    ngx_uint_t                 i;
    ngx_http_jvm_main_conf_t  *jmcf;

    /* cache manager and loader processes never serve requests */

    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    jmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_jvm_module);

    if (jmcf == NULL
        || (jmcf->handlers.nelts == 0 && jmcf->init.len == 0))
    {
        return NGX_OK;
    }

    /*
     * A JVM that cannot start is logged once here; the worker keeps
     * serving everything else and its jvm locations answer 500.  Failing
     * the worker instead would make the master respawn it in a loop.
     */

    /*
     * Before the JVM: jvm_init may use the dictionaries and topics.  A
     * worker reads every topic, JVM or not, so that no topic waits for it.
     */
    ngx_http_jvm_shared_init(jmcf);
    ngx_http_jvm_topics_names(jmcf);
    (void) ngx_http_jvm_topics_init(cycle, jmcf);

    if (ngx_http_jvm_reload_worker_turn(cycle, jmcf) == NGX_DECLINED) {
        return NGX_OK;
    }

    ngx_http_jvm_reload_start_priority(cycle, jmcf);

    if (ngx_http_jvm_vm_start(cycle, jmcf) == NGX_OK
        && ngx_http_jvm_natives_init(cycle) == NGX_OK)
    {
        ngx_http_jvm_reload_lower_priority(cycle, jmcf);

        name = jmcf->handlers.elts;

        for (i = 0; i < jmcf->handlers.nelts; i++) {
            (void) ngx_http_jvm_vm_register(cycle, &name[i]);
        }

        ngx_http_jvm_cost_init(cycle, jmcf);

        if (ngx_http_jvm_tasks_init(cycle, jmcf) == NGX_OK
            && jmcf->init.len)
        {
            (void) ngx_http_jvm_vm_init(cycle, &jmcf->init);
        }

        /* before it accepts, and before an older generation quits */
        ngx_http_jvm_warmup_run(cycle, jmcf);
    }

    if (ngx_quit || ngx_terminate) {
        /* read from its channel during the JVM's start or the warm-up */
        ngx_http_jvm_reload_leaving(cycle);
    }

    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, cycle->log, 0, "jvm: worker ready");

    /* ready or failed for good: either way it accepts from now on */
    ngx_http_jvm_reload_worker_ready(cycle, jmcf);

    return NGX_OK;
}


static void
ngx_http_jvm_exit_process(ngx_cycle_t *cycle)
{
    if (ngx_exiting || ngx_quit || ngx_terminate) {
        ngx_http_jvm_reload_leaving(cycle);
    }

    ngx_http_jvm_topics_exit();
    ngx_http_jvm_client_exit(cycle);
    ngx_http_jvm_vm_stop(cycle);
}
