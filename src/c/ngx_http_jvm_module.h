
/*
 * nginx-jvm: JVM web applications served from inside nginx workers.
 *
 * The module is split by concern, in layers that only call downward
 * (tests/test_layers.py checks it: no file calls back into one that
 * calls it; only module.c's process hooks drive every layer in turn):
 *
 *   ngx_http_jvm_module.c    directives, configuration, process hooks
 *   ngx_http_jvm_cache.c     the class cache, in the master
 *   ngx_http_jvm_child.c     the master's JVMs in child processes: the
 *                            trial start, the cache's build
 *   ngx_http_jvm_natives.c   the natives Java calls up, registered at the
 *                            worker's start
 *   ngx_http_jvm_phase.c     rewrite, access, header filter, log, jvm_set
 *   ngx_http_jvm_trace.c     tracing: a traced request's server span ended
 *                            in the log phase (nginx.jvm.Tracing's spans)
 *   ngx_http_jvm_reload.c    reloads: old workers serve until new are ready,
 *                            then hand their connections over
 *   ngx_http_jvm_warmup.c    jvm_warmup: a worker's requests to itself
 *                            before it accepts
 *   ngx_http_jvm_body.c      jvm_body_filter: bodies chunk by chunk
 *   ngx_http_jvm_request.c   content handler: the request described to Java
 *   ngx_http_jvm_upload.c    request bodies handed to Java as they arrive
 *                            (jvm_request_buffering off)
 *   ngx_http_jvm_handler.c   the handlers directives name, by id
 *   ngx_http_jvm_subrequest.c subrequests answered in memory (loop only)
 *   ngx_http_jvm_client.c    jvm_client: Java's calls out through nginx's
 *                            upstreams, over a socket pair (loop only)
 *   ngx_http_jvm_local.c     the server end of a socket pair into the
 *                            worker's own server (warm-up, jvm_client)
 *   ngx_http_jvm_variable.c  variables read and set for Java (loop only);
 *                            $jvm_alloc_bytes, $jvm_cpu_us
 *   ngx_http_jvm_headers_in.c request header fields changed for Java
 *                            (loop only)
 *   ngx_http_jvm_topic.c     publish and subscribe across workers
 *                            (jvm_topic); publishing from any thread
 *   ngx_http_jvm_task.c      handlers off the event loop: eventfd, tasks,
 *                            response timeouts
 *   ngx_http_jvm_response.c  an encoded response into headers_out and the
 *                            output chain: inline and file bodies
 *   ngx_http_jvm_shared.c    shared dictionaries (jvm_shared_dict), from
 *                            any thread
 *   ngx_http_jvm_wire.c      a response's header fields encoded for Java
 *   ngx_http_jvm_ws_handshake.c the WebSocket's opening handshake (101),
 *                            the request freed
 *   ngx_http_jvm_websocket.c WebSocket frames and close (RFC 6455)
 *   ngx_http_jvm_deflate.c   WebSocket compression: permessage-deflate
 *                            (RFC 7692), the worker's zlib streams
 *   ngx_http_jvm_ws_check.c  what a WebSocket peer's frames must hold:
 *                            UTF-8 text, valid close codes
 *   ngx_http_jvm_stream.c    the request's context (and what its calls
 *                            into Java cost); bodies sent in pieces
 *   ngx_http_jvm_vm_create.c the worker's JVM created: libjvm.so (found
 *                            for "jvm_path auto"), options
 *   ngx_http_jvm_vm.c        every call down into the JVM, the WebSocket's
 *                            too
 *   ngx_http_jvm_gate.c      the one check of every string from Java on
 *                            its way to a wire (docs/security.md, "Doors")
 *   ngx_http_jvm_pipeline.c  the answers of a pipeline (HTTP/1.1), or of a
 *                            batch of streams (HTTP/2), sent together
 *                            (TCP_CORK)
 *
 * Only vm_create.c, vm.c, natives.c and child.c include jni.h (through
 * ngx_http_jvm_jni.h, the JNI state they share).
 *
 * The bytes that cross between C and Java, and the codes Java answers with,
 * are described once, in docs/internals.md; ngx_http_jvm_wire.h is the C
 * half of that description (its constants, reader and writer), and
 * nginx.jvm.Wire and nginx.jvm.Shm the Java half.
 */


#ifndef _NGX_HTTP_JVM_MODULE_H_INCLUDED_
#define _NGX_HTTP_JVM_MODULE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>


/*
 * nginx versions: built and tested against Debian's 1.22.1, 1.26.3 and
 * 1.30.6 (make test-nginx-matrix).  The one change of nginx's API between
 * them the module meets is 1.23.0's: header fields of one name became a
 * list (ngx_table_elt_t's "next"), and headers_in's multi-valued fields
 * (Cookie, X-Forwarded-For) one ngx_table_elt_t * instead of an array;
 * the "#if (nginx_version >= 1023000)" guards in headers_in.c,
 * response.c, subrequest.c and websocket.c are that change.
 */
#if (nginx_version < 1022000)
#error "ngx_http_jvm_module needs nginx 1.22 or newer"
#endif


#include "ngx_http_jvm_wire.h"


/* Shared by every worker of every generation (ngx_http_jvm_reload.c). */
typedef struct {
    ngx_atomic_t              generation;   /* the newest configuration's */
    ngx_atomic_t              ready;        /* its workers that are ready */
    ngx_atomic_t              workers;      /* of it */
    ngx_atomic_t              jvm_failed;   /* the master's trial start */
    ngx_atomic_t              start_msec;   /* a full-priority start took */
    ngx_atomic_t              leaving;      /* a generation told to leave */
} ngx_http_jvm_generation_t;


/* A jvm_shared_dict: in the configuration's pool, its entries in the zone. */
typedef struct ngx_http_jvm_dict_sh_s  ngx_http_jvm_dict_sh_t;

typedef struct {
    ngx_str_t                 name;
    size_t                    size;
    ngx_shm_zone_t           *zone;
    ngx_slab_pool_t          *shpool;
    ngx_http_jvm_dict_sh_t   *sh;
} ngx_http_jvm_dict_t;


/*
 * jvm_status: its handler (nginx.jvm.Status) and the dictionary where each
 * worker publishes its figures; the C module counts 504s there itself.
 */
#define NGX_HTTP_JVM_STATUS_HANDLER   "nginx.jvm.Status"
#define NGX_HTTP_JVM_STATUS_DICT      "nginx.jvm.status"
#define NGX_HTTP_JVM_STATUS_SIZE      (1024 * 1024)
#define NGX_HTTP_JVM_STATUS_504       "timeouts"


/* A jvm_topic: in the configuration's pool, its ring in the zone. */
typedef struct ngx_http_jvm_topic_sh_s  ngx_http_jvm_topic_sh_t;

typedef struct {
    ngx_str_t                 name;
    size_t                    size;
    ngx_shm_zone_t           *zone;
    ngx_slab_pool_t          *shpool;
    ngx_http_jvm_topic_sh_t  *sh;
    ngx_int_t                 reader;       /* this worker's slot, or -1 */
} ngx_http_jvm_topic_t;


/* jvm_warmup: a server's requests a worker sends itself before it accepts */
typedef struct {
    ngx_str_t                 uri;
    ngx_uint_t                requests;
    ngx_msec_t                time;         /* the most it may take */
    ngx_http_core_srv_conf_t *server;
    struct sockaddr          *sockaddr;     /* a plain HTTP/1 listen of it */
    socklen_t                 socklen;
    ngx_str_t                 host;
    ngx_str_t                 file;         /* where it is, for errors */
    ngx_uint_t                line;
} ngx_http_jvm_warmup_t;


/* jvm_client NAME: a location Java's calls out (nginx.jvm.Upstream) go to */
typedef struct {
    ngx_str_t                 name;
    ngx_str_t                 prefix;       /* the location's */
    ngx_http_core_srv_conf_t *server;
    struct sockaddr          *sockaddr;     /* a plain HTTP/1 listen of it */
    socklen_t                 socklen;
    ngx_str_t                 host;
    ngx_str_t                 file;         /* where it is, for errors */
    ngx_uint_t                line;
} ngx_http_jvm_client_t;


typedef struct {
    ngx_str_t                 jvm_path;     /* libjvm.so, resolved */
    ngx_array_t              *classpath;    /* of ngx_str_t, expanded */
    ngx_array_t              *options;      /* of ngx_str_t */
    ngx_str_t                 init;         /* jvm_init handler name */
    ngx_str_t                 exit;         /* jvm_exit handler name */
    ngx_msec_t                exit_timeout;
    ngx_array_t               handlers;     /* of ngx_str_t; index = id */
    ngx_int_t                 pool_size;
    ngx_int_t                 queue;
    ngx_int_t                 ws_send_queue;
    ngx_msec_t                reload_timeout;
    ngx_msec_t                reload_drain;
    ngx_int_t                 reload_nice;
    ngx_str_t                 cache;        /* jvm_cache, or "" (off) */
    ngx_str_t                 cache_entry;  /* its directory for this start */
    ngx_array_t              *cache_classpath;
    ngx_str_t                 cache_share;  /* -XX:SharedArchiveFile=... */
    ngx_str_t                 cache_dump;   /* -XX:ArchiveClassesAtExit=... */
    ngx_shm_zone_t           *zone;         /* of ngx_http_jvm_generation_t */
    ngx_array_t              *dicts;        /* of ngx_http_jvm_dict_t * */
    ngx_array_t              *topics;       /* of ngx_http_jvm_topic_t * */
    ngx_array_t              *topic_wakes;  /* of ngx_fd_t, one a worker */
    ngx_array_t              *warmups;      /* of ngx_http_jvm_warmup_t */
    ngx_array_t              *clients;      /* of ngx_http_jvm_client_t * */
    ngx_http_jvm_dict_t      *status;       /* jvm_status's figures */
    ngx_int_t                 repl;         /* jvm_repl's port, 0: off */
    ngx_str_t                 repl_addr;    /* its address, "": 127.0.0.1 */
    ngx_array_t              *webapps;      /* jvm_webapp's context paths */
    ngx_atomic_uint_t         generation;   /* this configuration's */
    unsigned                  uses_pool:1;
    unsigned                  uses_virtual:1;
    unsigned                  uses_coloop:1;  /* jvm_mode coloop */
    unsigned                  uses_tasks:1; /* any location off the loop */
    unsigned                  uses_rewrite:1;
    unsigned                  uses_access:1;
    unsigned                  uses_filter:1;
    unsigned                  uses_body_filter:1;
    unsigned                  uses_log:1;
    unsigned                  uses_set:1;
    unsigned                  cache_ready:1;
} ngx_http_jvm_main_conf_t;


typedef struct {
    ngx_int_t                 handler;      /* index into handlers */
    ngx_int_t                 rewrite;      /* jvm_rewrite, the same */
    ngx_int_t                 access;       /* jvm_access */
    ngx_int_t                 header_filter;
    ngx_int_t                 body_filter;  /* jvm_body_filter */
    ngx_int_t                 log;          /* jvm_log */
    ngx_uint_t                mode;
    ngx_flag_t                async;
    ngx_flag_t                abort_interrupt; /* jvm_abort_interrupt */
    ngx_flag_t                request_buffering; /* jvm_request_buffering */
    ngx_msec_t                response_timeout;
    size_t                    ws_max_message;
    ngx_msec_t                ws_idle_timeout;
    ngx_msec_t                ws_ping_interval;
    ngx_flag_t                ws_deflate;   /* permessage-deflate */
    ngx_flag_t                webapp;       /* jvm_webapp: a servlet app */
    ngx_http_jvm_client_t    *client;       /* jvm_client, or inherited */
    ngx_flag_t                mode_said;    /* jvm_mode written, here or up */
} ngx_http_jvm_loc_conf_t;


/* jvm_body_filter's state for a response (ngx_http_jvm_body.c). */
typedef struct ngx_http_jvm_body_s  ngx_http_jvm_body_t;


/* A request's state once it outlives one call into Java. */
typedef struct {
    ngx_http_request_t       *request;
    ngx_int_t                 stream;       /* Java's body id, or -1 */
    ngx_int_t                 ws;           /* Java's socket id, or -1 */
    ngx_event_handler_pt      read_handler; /* while the 101 is sent */
    ngx_event_handler_pt      write_handler;
    ngx_chain_t              *free;
    ngx_chain_t              *busy;
    off_t                     length;       /* Content-Length, or -1 */
    off_t                     sent;
    ngx_event_t               timer;        /* jvm_response_timeout */
    ngx_event_t               sr_run;       /* runs subrequests started */
    ngx_http_jvm_body_t      *body;         /* jvm_body_filter's, or NULL */
    int64_t                   alloc;        /* $jvm_alloc_bytes */
    int64_t                   cpu_ns;       /* $jvm_cpu_us, in ns */
    unsigned                  task:1;       /* Java knows it by its address */
    unsigned                  ready:1;      /* Java has something for it */
    unsigned                  responded:1;
    unsigned                  waiting:1;    /* for a piece of the body */
    unsigned                  phase_done:1; /* a task let its phase go on */
    unsigned                  var_failed:1; /* a jvm_set handler threw */
    unsigned                  interrupt:1;  /* jvm_abort_interrupt on */
    unsigned                  upload:1;     /* its body still arrives */
    unsigned                  upload_full:1; /* Java's pieces are full */
    unsigned                  upload_drop:1; /* nobody reads the body */
    unsigned                  metered:1;    /* alloc and cpu_ns are set */
    unsigned                  ws_raw:1;     /* ws is a byte tunnel */
} ngx_http_jvm_ctx_t;


/*
 * A connection whose handler failures are logged in full once, and only
 * counted after that (jvm_warmup's: one stack trace, not one a request).
 */
typedef struct ngx_http_jvm_quiet_s  ngx_http_jvm_quiet_t;

struct ngx_http_jvm_quiet_s {
    ngx_log_t                *log;          /* the connection's, or NULL */
    ngx_uint_t                failed;
    ngx_http_jvm_quiet_t     *next;
};


/* What other files may know of the worker's JVM: state and buffers. */
typedef struct {
    u_char                   *req_addr;     /* request buffer */
    size_t                    req_cap;
    u_char                   *resp_addr;    /* response buffer */
    size_t                    resp_cap;
    ngx_http_jvm_quiet_t     *quiet;        /* see ngx_http_jvm_log_text */
    int64_t                  *meter;        /* a call's cost, or NULL: off */
    uint64_t                 *ready_ids;    /* the ready buffer: task ids */
    unsigned                  ready:1;
    unsigned                  no_virtual:1; /* JDK older than 21 */
} ngx_http_jvm_vm_t;


extern ngx_module_t       ngx_http_jvm_module;
extern ngx_http_jvm_vm_t  ngx_http_jvm_vm;


/* ngx_http_jvm_cache.c */
ngx_int_t ngx_http_jvm_cache_prepare(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);

/* ngx_http_jvm_reload.c */
ngx_int_t ngx_http_jvm_reload_zone_init(ngx_shm_zone_t *zone, void *data);
void ngx_http_jvm_reload_new_generation(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
ngx_int_t ngx_http_jvm_reload_worker_turn(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
void ngx_http_jvm_reload_leaving(ngx_cycle_t *cycle);
void ngx_http_jvm_reload_worker_ready(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
void ngx_http_jvm_reload_start_priority(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
void ngx_http_jvm_reload_lower_priority(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
ngx_int_t ngx_http_jvm_reload_filter_init(ngx_conf_t *cf);

/* ngx_http_jvm_warmup.c */
char *ngx_http_jvm_warmup_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_jvm_warmup_init(ngx_conf_t *cf);
void ngx_http_jvm_warmup_run(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
void ngx_http_jvm_warmup_read_channel(ngx_cycle_t *cycle);

/* ngx_http_jvm_local.c: requests of the module's own, over a socket pair */
ngx_listening_t *ngx_http_jvm_local_listening(ngx_cycle_t *cycle,
    struct sockaddr *sockaddr, socklen_t socklen);
ngx_connection_t *ngx_http_jvm_local_server(ngx_listening_t *ls,
    ngx_socket_t fd, struct sockaddr *local, socklen_t local_len,
    ngx_pool_cleanup_pt closed, void *data, ngx_pool_cleanup_t **cln);
void ngx_http_jvm_local_serve(ngx_connection_t *c);

/* ngx_http_jvm_client.c: calls out through a jvm_client location */
char *ngx_http_jvm_client_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_jvm_client_init(ngx_conf_t *cf);
void *ngx_http_jvm_client_start(ngx_int_t id, ngx_str_t *name,
    ngx_str_t *part, const char **err);
void ngx_http_jvm_client_resume(void *call);
ngx_int_t ngx_http_jvm_client_send(void *call, u_char *buf, size_t len);
void ngx_http_jvm_client_close(void *call);
void ngx_http_jvm_client_exit(ngx_cycle_t *cycle);

/* ngx_http_jvm_shared.c: the dictionary operations are for any thread */
char *ngx_http_jvm_shared_dict(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
void ngx_http_jvm_shared_init(ngx_http_jvm_main_conf_t *jmcf);
ngx_http_jvm_dict_t *ngx_http_jvm_dict_find_conf(
    ngx_http_jvm_main_conf_t *jmcf, ngx_str_t *name);
ngx_http_jvm_dict_t *ngx_http_jvm_dict_add(ngx_conf_t *cf,
    ngx_http_jvm_main_conf_t *jmcf, ngx_str_t *name, size_t size);
ngx_http_jvm_dict_t *ngx_http_jvm_dict_find(u_char *name, size_t len);
ngx_uint_t ngx_http_jvm_dict_fits(ngx_http_jvm_dict_t *dict, size_t klen,
    size_t vlen);
ngx_int_t ngx_http_jvm_dict_get(ngx_http_jvm_dict_t *dict, u_char *key,
    size_t klen, u_char *buf, size_t cap, size_t *len, ngx_uint_t *type,
    ngx_uint_t *stale);
ngx_int_t ngx_http_jvm_dict_set(ngx_http_jvm_dict_t *dict, ngx_uint_t op,
    u_char *key, size_t klen, u_char *value, size_t vlen, ngx_uint_t type,
    int64_t ttl);
ngx_int_t ngx_http_jvm_dict_incr(ngx_http_jvm_dict_t *dict, u_char *key,
    size_t klen, int64_t delta, int64_t init, int64_t ttl, int64_t *result);
ngx_int_t ngx_http_jvm_dict_delete(ngx_http_jvm_dict_t *dict, u_char *key,
    size_t klen);
ngx_int_t ngx_http_jvm_dict_keys(ngx_http_jvm_dict_t *dict, ngx_uint_t limit,
    u_char **out, size_t *len);
ngx_uint_t ngx_http_jvm_dict_size(ngx_http_jvm_dict_t *dict,
    ngx_uint_t *evicted);
void ngx_http_jvm_dict_clear(ngx_http_jvm_dict_t *dict);
ngx_int_t ngx_http_jvm_dict_push(ngx_http_jvm_dict_t *dict, ngx_uint_t end,
    u_char *key, size_t klen, u_char *value, size_t vlen, ngx_uint_t type,
    size_t *length);
ngx_int_t ngx_http_jvm_dict_pop(ngx_http_jvm_dict_t *dict, ngx_uint_t end,
    u_char *key, size_t klen, u_char *buf, size_t cap, u_char **out,
    size_t *len, ngx_uint_t *type);
ngx_int_t ngx_http_jvm_dict_llen(ngx_http_jvm_dict_t *dict, u_char *key,
    size_t klen, size_t *length);
ngx_int_t ngx_http_jvm_dict_ttl(ngx_http_jvm_dict_t *dict, u_char *key,
    size_t klen, int64_t *ttl);
ngx_int_t ngx_http_jvm_dict_expire(ngx_http_jvm_dict_t *dict, u_char *key,
    size_t klen, int64_t ttl);
ngx_uint_t ngx_http_jvm_dict_flush_expired(ngx_http_jvm_dict_t *dict,
    ngx_uint_t max);

/* ngx_http_jvm_topic.c: publishing is for any thread */
char *ngx_http_jvm_topic(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
ngx_int_t ngx_http_jvm_topics_prepare(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
ngx_int_t ngx_http_jvm_topics_init(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
void ngx_http_jvm_topics_names(ngx_http_jvm_main_conf_t *jmcf);
void ngx_http_jvm_topics_exit(void);
ngx_http_jvm_topic_t *ngx_http_jvm_topic_find(u_char *name, size_t len);
size_t ngx_http_jvm_topic_max(ngx_http_jvm_topic_t *topic);
ngx_int_t ngx_http_jvm_topic_publish(ngx_http_jvm_topic_t *topic,
    u_char *data, size_t len, ngx_uint_t type);
void ngx_http_jvm_topic_stats(ngx_http_jvm_topic_t *topic,
    uint64_t *published, uint64_t *overflows);

/* ngx_http_jvm_handler.c: the handlers directives name */
ngx_int_t ngx_http_jvm_handler_index(ngx_conf_t *cf, ngx_str_t *name,
    const char *directive);
ngx_int_t ngx_http_jvm_valid_handler_name(ngx_str_t *name);

/* ngx_http_jvm_request.c */
ngx_int_t ngx_http_jvm_content_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_jvm_request_encode(ngx_http_request_t *r, size_t *len);

/* ngx_http_jvm_upload.c: the event loop only */
ngx_int_t ngx_http_jvm_upload_submit(ngx_http_request_t *r,
    ngx_int_t handler, size_t len);

/* ngx_http_jvm_phase.c */
char *ngx_http_jvm_phase_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_jvm_set(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
ngx_int_t ngx_http_jvm_phase_init(ngx_conf_t *cf);

/* ngx_http_jvm_trace.c: the event loop only */
extern ngx_uint_t  ngx_http_jvm_tracing;

ngx_int_t ngx_http_jvm_trace_init(ngx_conf_t *cf);
void ngx_http_jvm_trace_on(void);
int64_t ngx_http_jvm_trace_start(ngx_http_request_t *r);

/* ngx_http_jvm_body.c: the event loop only */
ngx_int_t ngx_http_jvm_body_init(ngx_conf_t *cf);
ngx_int_t ngx_http_jvm_body_header(ngx_http_request_t *r, ngx_int_t handler);

/* ngx_http_jvm_subrequest.c: the event loop only */
const char *ngx_http_jvm_subrequest_start(ngx_http_request_t *r,
    ngx_int_t id, u_char *spec, size_t len);
ngx_uint_t ngx_http_jvm_method(ngx_str_t *name);

/* ngx_http_jvm_variable.c: the event loop only */
ngx_int_t ngx_http_jvm_variable_get(ngx_http_request_t *r, ngx_str_t *name,
    ngx_str_t *value);
ngx_int_t ngx_http_jvm_variable_set(ngx_http_request_t *r, ngx_str_t *name,
    ngx_str_t *value, const char **err);
const char *ngx_http_jvm_set_uri(ngx_http_request_t *r, ngx_str_t *uri);
ngx_int_t ngx_http_jvm_variables_add(ngx_conf_t *cf);
void ngx_http_jvm_cost_init(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
void ngx_http_jvm_cost_on(void);

/* ngx_http_jvm_headers_in.c: the event loop only */
ngx_int_t ngx_http_jvm_header_in_set(ngx_http_request_t *r, ngx_str_t *name,
    ngx_str_t *value, ngx_uint_t add, const char **err);

/* ngx_http_jvm_gate.c: the event loop only; the doors, by kind of string */
#define NGX_HTTP_JVM_DOOR_RESPONSE_NAME    0
#define NGX_HTTP_JVM_DOOR_RESPONSE_VALUE   1
#define NGX_HTTP_JVM_DOOR_REQUEST_NAME     2
#define NGX_HTTP_JVM_DOOR_REQUEST_VALUE    3
#define NGX_HTTP_JVM_DOOR_SUB_METHOD       4
#define NGX_HTTP_JVM_DOOR_SUB_URI          5
#define NGX_HTTP_JVM_DOOR_SUB_ARGS         6
#define NGX_HTTP_JVM_DOOR_SUB_NAME         7
#define NGX_HTTP_JVM_DOOR_SUB_VALUE        8
#define NGX_HTTP_JVM_DOOR_VARIABLE         9
#define NGX_HTTP_JVM_DOOR_URI              10
#define NGX_HTTP_JVM_DOOR_ARGS             11

const char *ngx_http_jvm_gate(ngx_uint_t door, ngx_str_t *name,
    ngx_str_t *value);
ngx_int_t ngx_http_jvm_gate_log(ngx_log_t *log, ngx_uint_t door,
    ngx_str_t *name, ngx_str_t *value);
ngx_uint_t ngx_http_jvm_gate_refused(const char *text);

/* ngx_http_jvm_task.c */
/* An eventfd on the event loop, outside the worker's connection pool. */
typedef struct {
    ngx_connection_t          conn;
    ngx_event_t               read;
    ngx_event_t               write;
} ngx_http_jvm_eventfd_t;

ngx_int_t ngx_http_jvm_eventfd_add(ngx_http_jvm_eventfd_t *efd, ngx_fd_t fd,
    ngx_event_handler_pt handler, ngx_log_t *log);
ngx_int_t ngx_http_jvm_tasks_init(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
ngx_int_t ngx_http_jvm_task_submit(ngx_http_request_t *r, ngx_int_t handler,
    ngx_uint_t phase, size_t len);
ngx_int_t ngx_http_jvm_task_take(ngx_http_request_t *r, size_t *len,
    ngx_uint_t *done);
void ngx_http_jvm_task_respond(ngx_http_request_t *r);

/* ngx_http_jvm_response.c */
ngx_int_t ngx_http_jvm_send_response(ngx_http_request_t *r, size_t len);
ngx_uint_t ngx_http_jvm_response_declined(size_t len);
void ngx_http_jvm_response_log(ngx_http_request_t *r, size_t len);
ngx_int_t ngx_http_jvm_edit_headers(ngx_http_request_t *r, size_t len);

/* ngx_http_jvm_pipeline.c */
void ngx_http_jvm_pipeline_cork(ngx_http_request_t *r);
void ngx_http_jvm_pipeline_cork_frames(ngx_connection_t *c);

/* ngx_http_jvm_ws_handshake.c */
ngx_uint_t ngx_http_jvm_ws_request(ngx_http_request_t *r);
ngx_int_t ngx_http_jvm_ws_upgrade(ngx_http_request_t *r, ngx_int_t id,
    ngx_uint_t raw);

/* ngx_http_jvm_websocket.c */
void ngx_http_jvm_ws_ready(ngx_int_t id, ngx_uint_t resume);

/* ngx_http_jvm_ws_check.c: a peer's UTF-8 (read by read), close codes */
ngx_int_t ngx_http_jvm_utf8(uint8_t *need, uint8_t *first, u_char *p,
    size_t len);
ngx_int_t ngx_http_jvm_ws_valid_close_code(ngx_uint_t code);

/* ngx_http_jvm_deflate.c: the event loop only */
ngx_int_t ngx_http_jvm_deflate_negotiate(ngx_http_request_t *r,
    ngx_str_t *answer, ngx_uint_t *window_bits);
u_char *ngx_http_jvm_deflate_frame(ngx_uint_t bits, ngx_uint_t opcode,
    u_char *p, size_t len, size_t *start, size_t *end, ngx_log_t *log);
ngx_int_t ngx_http_jvm_inflate_message(u_char *in, size_t len, size_t max,
    u_char **out, size_t *out_len, ngx_log_t *log);

/* ngx_http_jvm_stream.c */
ngx_http_jvm_ctx_t *ngx_http_jvm_get_ctx(ngx_http_request_t *r);
void ngx_http_jvm_cost_take(ngx_http_request_t *r);
ngx_int_t ngx_http_jvm_send_stream(ngx_http_request_t *r, ngx_int_t id);
void ngx_http_jvm_ctx_release(ngx_http_jvm_ctx_t *ctx);
void ngx_http_jvm_ctx_resuming(uint64_t *ids, ngx_uint_t n);

/* ngx_http_jvm_child.c: the master's JVMs, in child processes */
ngx_int_t ngx_http_jvm_vm_trial(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
ngx_int_t ngx_http_jvm_vm_build_cache(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);

/* ngx_http_jvm_natives.c: what Java calls up, registered at worker start */
ngx_int_t ngx_http_jvm_natives_init(ngx_cycle_t *cycle);

/* ngx_http_jvm_vm_create.c: the worker's JVM created */
ngx_int_t ngx_http_jvm_find_libjvm(ngx_conf_t *cf, ngx_str_t *path);
ngx_int_t ngx_http_jvm_vm_start(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
ngx_int_t ngx_http_jvm_vm_option(ngx_str_t *opt, ngx_int_t worker,
    u_char *out);

/* ngx_http_jvm_vm.c: one function per nginx.jvm.Worker entry point */
void ngx_http_jvm_vm_block_signals(sigset_t *old);
ngx_int_t ngx_http_jvm_vm_register(ngx_cycle_t *cycle, ngx_str_t *name);
ngx_int_t ngx_http_jvm_vm_init(ngx_cycle_t *cycle, ngx_str_t *name);
ngx_int_t ngx_http_jvm_vm_configure(ngx_cycle_t *cycle, ngx_fd_t notify_fd,
    ngx_int_t pool_size, ngx_int_t carriers, ngx_int_t queue,
    ngx_uint_t virtual, ngx_uint_t coloop, ngx_int_t ws_send_queue);
ngx_int_t ngx_http_jvm_vm_request_buffer(ngx_log_t *log, size_t size);
ngx_int_t ngx_http_jvm_vm_handle(ngx_http_request_t *r, ngx_int_t handler,
    ngx_uint_t phase, size_t len, size_t *out);
ngx_int_t ngx_http_jvm_vm_submit(ngx_http_request_t *r, ngx_int_t handler,
    ngx_uint_t phase, size_t len, void *id, ngx_uint_t mode,
    ngx_uint_t async, size_t *out);
ngx_int_t ngx_http_jvm_vm_variable(ngx_http_request_t *r, ngx_int_t handler,
    size_t len, ngx_str_t *value);
ngx_int_t ngx_http_jvm_vm_filter(ngx_http_request_t *r, ngx_int_t handler,
    size_t len, size_t headers, size_t *out);
ngx_int_t ngx_http_jvm_vm_body(ngx_http_request_t *r, ngx_int_t handler,
    void *id, size_t len, size_t size, ngx_uint_t last, ngx_str_t *out);
void ngx_http_jvm_vm_body_end(void *id);
ngx_int_t ngx_http_jvm_vm_wake(ngx_log_t *log, ngx_uint_t timers);
ngx_int_t ngx_http_jvm_vm_take(ngx_log_t *log, void *id, size_t *out,
    ngx_uint_t *done);
ngx_int_t ngx_http_jvm_vm_upload(ngx_log_t *log, void *id, size_t len,
    ngx_uint_t status);
void ngx_http_jvm_vm_cancel(void *id);
void ngx_http_jvm_vm_abort(void *id, ngx_uint_t interrupt);
ngx_int_t ngx_http_jvm_vm_next(ngx_log_t *log, ngx_int_t stream,
    size_t *out);
void ngx_http_jvm_vm_close(ngx_int_t stream);
ngx_int_t ngx_http_jvm_vm_ws_open(ngx_log_t *log, ngx_int_t id);
void ngx_http_jvm_vm_ws_abandon(ngx_int_t id);
ngx_int_t ngx_http_jvm_vm_ws_message(ngx_log_t *log, ngx_int_t id,
    ngx_uint_t opcode, u_char *data, size_t len);
void ngx_http_jvm_vm_ws_closed(ngx_log_t *log, ngx_int_t id, ngx_uint_t code,
    u_char *reason, size_t len);
ngx_int_t ngx_http_jvm_vm_ws_poll(ngx_log_t *log);
ngx_int_t ngx_http_jvm_vm_ws_take(ngx_log_t *log, ngx_int_t id, size_t *out);
void ngx_http_jvm_vm_topic_deliver(ngx_log_t *log,
    ngx_http_jvm_topic_t *topic, ngx_uint_t n, size_t len);
void ngx_http_jvm_vm_subrequest_done(ngx_log_t *log, ngx_int_t id,
    size_t len);
ngx_int_t ngx_http_jvm_vm_client_data(ngx_log_t *log, ngx_int_t id,
    ssize_t n);
void ngx_http_jvm_vm_trace_end(ngx_http_request_t *r);
void ngx_http_jvm_vm_quitting(ngx_log_t *log);
void ngx_http_jvm_vm_stop(ngx_cycle_t *cycle);
void ngx_http_jvm_log_text(ngx_uint_t level, ngx_log_t *log, u_char *text,
    size_t len);


#endif /* _NGX_HTTP_JVM_MODULE_H_INCLUDED_ */
