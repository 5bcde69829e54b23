
/*
 * nginx-jvm fuzzing: the small nginx the harnesses run the module's files
 * in (ngx_fuzz_nginx.c).  The module's .c files are compiled unchanged,
 * against the headers of the configured nginx tree (build/nginx-src); what
 * they call of nginx itself is here: pools, lists, logging with nginx's
 * format directives, posted events, timers, the calls of the HTTP core.
 * Each harness gives the JVM's side (ngx_http_jvm_vm_*) itself, since that
 * is where it checks what the module hands over.
 */

#ifndef _NGX_FUZZ_H_INCLUDED_
#define _NGX_FUZZ_H_INCLUDED_


#include "ngx_http_jvm_module.h"


/* what the fuzzer chose, read from both ends of its input */
typedef struct {
    const u_char             *data;   /* the bytes a client sends, in order */
    size_t                    len;
    const u_char             *ctl;    /* choices, taken from the end */
    size_t                    ctl_len;
} ngx_fuzz_input_t;


/* a choice byte, 0 once there are none left */
u_char ngx_fuzz_choice(ngx_fuzz_input_t *in);

/* a pool whose allocations are each malloc()'d, freed with the pool */
ngx_pool_t *ngx_fuzz_pool(void);

/* runs the posted events; NGX_ERROR if they seem endless */
ngx_int_t ngx_fuzz_run_posted(void);

/* a request on a connection, with the module's and core's conf */
ngx_http_request_t *ngx_fuzz_request(ngx_pool_t *pool,
    ngx_http_jvm_loc_conf_t *jlcf, ngx_http_core_loc_conf_t *clcf);

/* adds a request header field */
void ngx_fuzz_header(ngx_http_request_t *r, u_char *name, size_t name_len,
    u_char *value, size_t value_len);

/* ngx_http_close_connection() was called for this connection */
extern ngx_connection_t  *ngx_fuzz_closed;

/* what ngx_http_finalize_request() was given, or NGX_DECLINED */
extern ngx_int_t          ngx_fuzz_finalized;

/* when not 0, the allocation that fails (1: the next one), once */
extern ngx_uint_t         ngx_fuzz_fail_alloc;

extern ngx_log_t          ngx_fuzz_log;


#endif /* _NGX_FUZZ_H_INCLUDED_ */
