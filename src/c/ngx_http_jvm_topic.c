
/*
 * nginx-jvm: topics, "jvm_topic NAME SIZE;": publish and subscribe across
 * the workers.
 *
 * A topic is a shared memory zone holding a ring of messages, written by
 * any thread of any worker under the zone's ngx_shmtx.  Every worker that
 * runs a JVM is a reader: it has a slot in the zone with the offset of
 * the next message it has not read, and its event loop reads when woken
 * and hands the messages to the JVM (ngx_http_jvm_vm_topic_deliver()).
 * A publisher wakes every worker of its generation through one eventfd
 * a worker, made by the master before it forks them; a timer reads too,
 * for messages of workers of another generation (during a reload).
 * All readers read the same ring, so every worker sees every message once,
 * in the one order in which they were published.
 *
 * The ring never overwrites a message some live reader has not read: a
 * publisher that finds no room is refused (and the refusal counted), it
 * never waits.  A reader slot whose worker died is freed by the next
 * publisher that needs its room; a worker that quits frees its own.
 *
 * Publishing is called by the natives of nginx.jvm.Shm from any thread, so
 * like the dictionaries it touches nothing of nginx but the zone (and the
 * log for a debug line, on the event loop's thread only).
 */


#include "ngx_http_jvm_module.h"

#include <signal.h>
#include <sys/eventfd.h>


/* Workers that may read one topic at once, of every generation. */
#define NGX_HTTP_JVM_TOPIC_READERS   64

/* How often a worker looks for messages nobody woke it for, in ms. */
#define NGX_HTTP_JVM_TOPIC_POLL      100

/* A message in the ring: this header, the payload, padding to 8 bytes. */
typedef struct {
    uint32_t                   len;
    uint32_t                   type;       /* NGX_HTTP_JVM_DICT_STRING... */
} ngx_http_jvm_topic_msg_t;


typedef struct {
    ngx_pid_t                  pid;        /* 0: free */
    uint64_t                   offset;     /* the next message to read */
} ngx_http_jvm_topic_reader_t;


struct ngx_http_jvm_topic_sh_s {
    uint64_t                   head;       /* where the next message goes */
    uint64_t                   published;
    uint64_t                   overflows;
    size_t                     size;       /* of ring, a multiple of 8 */
    ngx_http_jvm_topic_reader_t  readers[NGX_HTTP_JVM_TOPIC_READERS];
    u_char                     ring[1];
};


static ngx_int_t ngx_http_jvm_topic_init_zone(ngx_shm_zone_t *zone,
    void *data);
static void ngx_http_jvm_topic_close_wakes(void *data);
static void ngx_http_jvm_topic_woken(ngx_event_t *ev);
static void ngx_http_jvm_topic_poll(ngx_event_t *ev);
static void ngx_http_jvm_topic_read(ngx_log_t *log);
static void ngx_http_jvm_topic_copy_out(ngx_http_jvm_topic_sh_t *sh,
    uint64_t from, u_char *dst, size_t len);


static ngx_array_t       *ngx_http_jvm_topics;
static ngx_array_t       *ngx_http_jvm_topic_wakes;
static ngx_event_t        ngx_http_jvm_topic_ev;
static ngx_http_jvm_eventfd_t  ngx_http_jvm_topic_wake;  /* this worker's */
/* the timer's data: nginx's debug log reads an fd from it */
static ngx_connection_t   ngx_http_jvm_topic_dummy = { .fd = -1 };

#if (NGX_DEBUG)
/*
 * Publishing runs on any thread, and a JVM thread touches no log: only
 * the thread that called ngx_http_jvm_topics_names() (the event loop's)
 * writes its debug lines.
 */
static __thread ngx_uint_t  ngx_http_jvm_topic_loop;
#endif


/* jvm_topic NAME SIZE; at the http level. */

char *
ngx_http_jvm_topic(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_jvm_main_conf_t *jmcf = conf;

    ssize_t                 size;
    ngx_str_t              *value, zname;
    ngx_uint_t              i;
    ngx_http_jvm_topic_t  **topics, *topic;

    value = cf->args->elts;

    if (value[1].len == 0 || value[1].len > NGX_HTTP_JVM_DICT_NAME_MAX) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "jvm_topic: invalid name \"%V\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    size = ngx_parse_size(&value[2]);

    if (size == NGX_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "jvm_topic \"%V\": invalid size \"%V\"",
                           &value[1], &value[2]);
        return NGX_CONF_ERROR;
    }

    if (size < (ssize_t) (8 * ngx_pagesize)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "jvm_topic \"%V\": size \"%V\" is too small, at "
                           "least %uzk", &value[1], &value[2],
                           8 * ngx_pagesize / 1024);
        return NGX_CONF_ERROR;
    }

    if (jmcf->topics == NULL) {
        jmcf->topics = ngx_array_create(cf->pool, 4,
                                        sizeof(ngx_http_jvm_topic_t *));
        if (jmcf->topics == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    topics = jmcf->topics->elts;

    for (i = 0; i < jmcf->topics->nelts; i++) {
        if (topics[i]->name.len == value[1].len
            && ngx_strncmp(topics[i]->name.data, value[1].data,
                           value[1].len) == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "jvm_topic \"%V\" is duplicate", &value[1]);
            return NGX_CONF_ERROR;
        }
    }

    topic = ngx_pcalloc(cf->pool, sizeof(ngx_http_jvm_topic_t));
    if (topic == NULL) {
        return NGX_CONF_ERROR;
    }

    topic->name = value[1];
    topic->size = size;
    topic->reader = -1;

    zname.len = sizeof("jvm_topic:") - 1 + value[1].len;
    zname.data = ngx_pnalloc(cf->pool, zname.len);
    if (zname.data == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_sprintf(zname.data, "jvm_topic:%V", &value[1]);

    topic->zone = ngx_shared_memory_add(cf, &zname, size,
                                        &ngx_http_jvm_module);
    if (topic->zone == NULL) {
        return NGX_CONF_ERROR;
    }

    topic->zone->init = ngx_http_jvm_topic_init_zone;
    topic->zone->data = topic;

    topics = ngx_array_push(jmcf->topics);
    if (topics == NULL) {
        return NGX_CONF_ERROR;
    }

    *topics = topic;

    return NGX_CONF_OK;
}


/*
 * The ring takes the zone's memory left after the slab allocator's own.
 * A reload that keeps the zone keeps the ring and its readers' slots
 * (the old workers free theirs as they quit).
 */

static ngx_int_t
ngx_http_jvm_topic_init_zone(ngx_shm_zone_t *zone, void *data)
{
    ngx_http_jvm_topic_t *otopic = data;

    size_t                    size;
    ngx_slab_pool_t          *shpool;
    ngx_http_jvm_topic_t     *topic;
    ngx_http_jvm_topic_sh_t  *sh;

    topic = zone->data;
    shpool = (ngx_slab_pool_t *) zone->shm.addr;

    if (otopic) {
        topic->sh = otopic->sh;
        topic->shpool = otopic->shpool;
        return NGX_OK;
    }

    topic->shpool = shpool;

    if (zone->shm.exists) {
        topic->sh = shpool->data;
        return NGX_OK;
    }

    /* about half the zone: the slab allocator keeps page headers */

    size = ngx_align((size_t) (shpool->end - shpool->start) / 2, 8);

    for ( ;; ) {
        sh = ngx_slab_alloc(shpool,
                            offsetof(ngx_http_jvm_topic_sh_t, ring) + size);
        if (sh != NULL || size < 1024) {
            break;
        }

        size = ngx_align(size * 3 / 4, 8);
    }

    if (sh == NULL) {
        return NGX_ERROR;
    }

    ngx_memzero(sh, offsetof(ngx_http_jvm_topic_sh_t, ring));
    sh->size = size;

    topic->sh = sh;
    shpool->data = sh;

    return NGX_OK;
}


/* The largest message a topic takes. */

size_t
ngx_http_jvm_topic_max(ngx_http_jvm_topic_t *topic)
{
    return topic->sh->size / 4;
}


ngx_http_jvm_topic_t *
ngx_http_jvm_topic_find(u_char *name, size_t len)
{
    ngx_uint_t              i;
    ngx_http_jvm_topic_t  **topics;

    if (ngx_http_jvm_topics == NULL) {
        return NULL;
    }

    topics = ngx_http_jvm_topics->elts;

    for (i = 0; i < ngx_http_jvm_topics->nelts; i++) {
        if (topics[i]->name.len == len
            && ngx_strncmp(topics[i]->name.data, name, len) == 0)
        {
            return topics[i];
        }
    }

    return NULL;
}


/*
 * Publishes a message: NGX_HTTP_JVM_DICT_OK, _NO_MEMORY (the ring is full
 * of messages a reader has not read yet: refused and counted) or
 * _TOO_LARGE.  Any thread.
 */

ngx_int_t
ngx_http_jvm_topic_publish(ngx_http_jvm_topic_t *topic, u_char *data,
    size_t len, ngx_uint_t type)
{
    size_t                        need, at, first;
    uint64_t                      oldest, one;
    ngx_fd_t                     *fd;
    ngx_int_t                     rc;
    ngx_uint_t                    i, reaped, woken;
    ngx_http_jvm_topic_sh_t      *sh;
    ngx_http_jvm_topic_msg_t      msg;
    ngx_http_jvm_topic_reader_t  *r;

    sh = topic->sh;
    woken = 0;

    if (len > ngx_http_jvm_topic_max(topic)) {
        return NGX_HTTP_JVM_DICT_TOO_LARGE;
    }

    need = sizeof(ngx_http_jvm_topic_msg_t) + ngx_align(len, 8);
    reaped = 0;
    one = 1;

    ngx_shmtx_lock(&topic->shpool->mutex);

again:

    oldest = sh->head;

    for (i = 0; i < NGX_HTTP_JVM_TOPIC_READERS; i++) {
        r = &sh->readers[i];

        if (r->pid != 0 && r->offset < oldest) {
            oldest = r->offset;
        }
    }

    if (sh->head + need - oldest > sh->size) {

        /* a reader whose worker died (kill: any thread) reads no more */

        if (!reaped) {
            reaped = 1;

            for (i = 0; i < NGX_HTTP_JVM_TOPIC_READERS; i++) {
                r = &sh->readers[i];

                if (r->pid != 0 && r->pid != ngx_pid
                    && kill(r->pid, 0) == -1 && errno == ESRCH)
                {
                    r->pid = 0;
                    reaped = 2;
                }
            }

            if (reaped == 2) {
                goto again;
            }
        }

        sh->overflows++;
        rc = NGX_HTTP_JVM_DICT_NO_MEMORY;
        goto done;
    }

    msg.len = (uint32_t) len;
    msg.type = (uint32_t) type;

    /* need and size are multiples of 8: a header never wraps */

    at = (size_t) (sh->head % sh->size);
    ngx_memcpy(sh->ring + at, &msg, sizeof(msg));
    at = (at + sizeof(msg)) % sh->size;

    first = ngx_min(len, sh->size - at);
    ngx_memcpy(sh->ring + at, data, first);
    ngx_memcpy(sh->ring, data + first, len - first);

    sh->head += need;
    sh->published++;
    rc = NGX_HTTP_JVM_DICT_OK;

done:

    ngx_shmtx_unlock(&topic->shpool->mutex);

    if (rc == NGX_HTTP_JVM_DICT_OK && ngx_http_jvm_topic_wakes) {
        fd = ngx_http_jvm_topic_wakes->elts;

        for (i = 0; i < ngx_http_jvm_topic_wakes->nelts; i++) {
            /* EAGAIN: the counter is full, the worker woken already */
            if (write(fd[i], &one, sizeof(uint64_t)) == sizeof(uint64_t)) {
                woken++;
            }
        }
    }

#if (NGX_DEBUG)
    if (ngx_http_jvm_topic_loop) {
        ngx_log_debug4(NGX_LOG_DEBUG_CORE, ngx_cycle->log, 0,
                       "jvm: topic \"%V\" publish of %uz bytes: %s, "
                       "%ui workers woken", &topic->name, len,
                       rc == NGX_HTTP_JVM_DICT_OK ? "ok" : "ring full",
                       woken);
    }
#else
    (void) woken;
#endif

    return rc;
}


/* Messages published and refused, ever. */

void
ngx_http_jvm_topic_stats(ngx_http_jvm_topic_t *topic, uint64_t *published,
    uint64_t *overflows)
{
    ngx_shmtx_lock(&topic->shpool->mutex);

    *published = topic->sh->published;
    *overflows = topic->sh->overflows;

    ngx_shmtx_unlock(&topic->shpool->mutex);
}


static void
ngx_http_jvm_topic_copy_out(ngx_http_jvm_topic_sh_t *sh, uint64_t from,
    u_char *dst, size_t len)
{
    size_t  at, first;

    at = (size_t) (from % sh->size);
    first = ngx_min(len, sh->size - at);
    ngx_memcpy(dst, sh->ring + at, first);
    ngx_memcpy(dst + first, sh->ring, len - first);
}


/*
 * In the master, before it forks the workers: an eventfd for each, which
 * every worker inherits.  Without them (eventfd() failed) the workers
 * still read on their timer.
 */

ngx_int_t
ngx_http_jvm_topics_prepare(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf)
{
    ngx_fd_t            *fd;
    ngx_uint_t           i, n;
    ngx_core_conf_t     *ccf;
    ngx_pool_cleanup_t  *cln;

    if (jmcf->topics == NULL) {
        return NGX_OK;
    }

    ccf = (ngx_core_conf_t *) ngx_get_conf(cycle->conf_ctx, ngx_core_module);

    /* without a master, the one process is worker 0 */
    n = ccf->master ? (ngx_uint_t) ccf->worker_processes : 1;

    jmcf->topic_wakes = ngx_array_create(cycle->pool, n, sizeof(ngx_fd_t));
    if (jmcf->topic_wakes == NULL) {
        return NGX_ERROR;
    }

    cln = ngx_pool_cleanup_add(cycle->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_jvm_topic_close_wakes;
    cln->data = jmcf->topic_wakes;

    for (i = 0; i < n; i++) {
        fd = ngx_array_push(jmcf->topic_wakes);
        if (fd == NULL) {
            return NGX_ERROR;
        }

        *fd = eventfd(0, EFD_NONBLOCK|EFD_CLOEXEC);

        if (*fd == -1) {
            jmcf->topic_wakes->nelts--;
            ngx_log_error(NGX_LOG_WARN, cycle->log, ngx_errno,
                          "jvm_topic: eventfd() failed, workers read "
                          "topics every %d ms", NGX_HTTP_JVM_TOPIC_POLL);
            ngx_http_jvm_topic_close_wakes(jmcf->topic_wakes);
            jmcf->topic_wakes = NULL;
            cln->handler = NULL;
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static void
ngx_http_jvm_topic_close_wakes(void *data)
{
    ngx_array_t *wakes = data;

    ngx_fd_t    *fd;
    ngx_uint_t   i;

    fd = wakes->elts;

    for (i = 0; i < wakes->nelts; i++) {
        (void) close(fd[i]);
    }

    wakes->nelts = 0;
}


/*
 * At worker start: a reader's slot in each topic, from the messages
 * published from now on; the eventfd that wakes it and the timer.
 */

ngx_int_t
ngx_http_jvm_topics_init(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf)
{
    ngx_fd_t                     *fd;
    ngx_uint_t                    i, k;
    ngx_http_jvm_topic_t        **topics, *topic;
    ngx_http_jvm_topic_sh_t      *sh;
    ngx_http_jvm_topic_reader_t  *r;

    if (jmcf->topics == NULL) {
        return NGX_OK;
    }

    topics = jmcf->topics->elts;

    for (i = 0; i < jmcf->topics->nelts; i++) {
        topic = topics[i];
        sh = topic->sh;

        ngx_shmtx_lock(&topic->shpool->mutex);

        for (k = 0; k < NGX_HTTP_JVM_TOPIC_READERS; k++) {
            r = &sh->readers[k];

            if (r->pid == 0
                || (kill(r->pid, 0) == -1 && ngx_errno == ESRCH))
            {
                r->pid = ngx_pid;
                r->offset = sh->head;
                topic->reader = k;
                break;
            }
        }

        ngx_shmtx_unlock(&topic->shpool->mutex);

        if (topic->reader == -1) {
            ngx_log_error(NGX_LOG_ERR, cycle->log, 0,
                          "jvm_topic \"%V\": more than %d workers read it; "
                          "this one gets none of its messages",
                          &topic->name, NGX_HTTP_JVM_TOPIC_READERS);
        }
    }

    if (jmcf->topic_wakes && ngx_worker < jmcf->topic_wakes->nelts) {
        fd = jmcf->topic_wakes->elts;

        if (ngx_http_jvm_eventfd_add(&ngx_http_jvm_topic_wake, fd[ngx_worker],
                                     ngx_http_jvm_topic_woken, cycle->log)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    ngx_http_jvm_topic_ev.handler = ngx_http_jvm_topic_poll;
    ngx_http_jvm_topic_ev.data = &ngx_http_jvm_topic_dummy;
    ngx_http_jvm_topic_ev.log = cycle->log;

    /* a graceful quit does not wait for it */
    ngx_http_jvm_topic_ev.cancelable = 1;

    ngx_add_timer(&ngx_http_jvm_topic_ev, NGX_HTTP_JVM_TOPIC_POLL);

    return NGX_OK;
}


/* The topics JVM threads may look up by name, beside the dictionaries. */

void
ngx_http_jvm_topics_names(ngx_http_jvm_main_conf_t *jmcf)
{
    ngx_http_jvm_topics = jmcf->topics;
    ngx_http_jvm_topic_wakes = jmcf->topic_wakes;

#if (NGX_DEBUG)
    ngx_http_jvm_topic_loop = 1;
#endif
}


/* A worker that quits reads no more: its slot no longer holds the ring. */

void
ngx_http_jvm_topics_exit(void)
{
    ngx_uint_t             i;
    ngx_http_jvm_topic_t  **topics, *topic;

    if (ngx_http_jvm_topics == NULL) {
        return;
    }

    topics = ngx_http_jvm_topics->elts;

    for (i = 0; i < ngx_http_jvm_topics->nelts; i++) {
        topic = topics[i];

        if (topic->reader == -1) {
            continue;
        }

        ngx_shmtx_lock(&topic->shpool->mutex);

        if (topic->sh->readers[topic->reader].pid == ngx_pid) {
            topic->sh->readers[topic->reader].pid = 0;
        }

        ngx_shmtx_unlock(&topic->shpool->mutex);

        topic->reader = -1;
    }
}


static void
ngx_http_jvm_topic_woken(ngx_event_t *ev)
{
    uint64_t  count;

    if (read(ngx_http_jvm_topic_wake.conn.fd, &count, sizeof(uint64_t)) == -1) {
        /* EAGAIN: woken for messages an earlier pass already read */
    }

    ngx_http_jvm_topic_read(ev->log);
}


static void
ngx_http_jvm_topic_poll(ngx_event_t *ev)
{
    ngx_http_jvm_topic_read(ev->log);

    if (!ngx_exiting && !ngx_quit && !ngx_terminate) {
        ngx_add_timer(ev, NGX_HTTP_JVM_TOPIC_POLL);
    }
}


/*
 * On the event loop: the messages this worker has not read, in batches
 * copied into the JVM's request buffer (under the lock: it is plain
 * memory) and handed to Java after the lock is released.
 */

static void
ngx_http_jvm_topic_read(ngx_log_t *log)
{
    u_char                       *buf;
    size_t                        cap, used, need;
    uint64_t                      offset, head;
    ngx_uint_t                    i, n, more;
    ngx_http_jvm_topic_t        **topics, *topic;
    ngx_http_jvm_topic_sh_t      *sh;
    ngx_http_jvm_topic_msg_t      msg;
    ngx_http_jvm_topic_reader_t  *r;

    if (ngx_exiting || ngx_quit || ngx_terminate) {
        ngx_http_jvm_topics_exit();
        return;
    }

    topics = ngx_http_jvm_topics->elts;

    for (i = 0; i < ngx_http_jvm_topics->nelts; i++) {
        topic = topics[i];
        sh = topic->sh;

        if (topic->reader == -1) {
            continue;
        }

        r = &sh->readers[topic->reader];

        do {
            /*
             * Nothing new, nothing to do: an aligned 64-bit word read
             * without the lock (atomic on the 64-bit platforms we build
             * for); a publisher wakes the reader after it unlocks.
             */
            if (*(volatile uint64_t *) &sh->head == r->offset) {
                break;
            }

            more = 0;
            n = 0;

            buf = ngx_http_jvm_vm.req_addr;
            cap = ngx_http_jvm_vm.req_cap;
            used = 0;

            ngx_shmtx_lock(&topic->shpool->mutex);

            offset = r->offset;
            head = sh->head;

            while (offset < head) {
                ngx_http_jvm_topic_copy_out(sh, offset, (u_char *) &msg,
                                            sizeof(msg));

                need = sizeof(msg) + ngx_align(msg.len, 8);

                if (buf == NULL || used + sizeof(msg) + msg.len > cap) {
                    more = (n > 0);
                    break;
                }

                ngx_memcpy(buf + used, &msg, sizeof(msg));
                ngx_http_jvm_topic_copy_out(sh, offset + sizeof(msg),
                                            buf + used + sizeof(msg),
                                            msg.len);

                used += sizeof(msg) + msg.len;
                offset += need;
                n++;
            }

            if (buf == NULL) {
                /* no JVM: passed over, so that the ring does not fill */
                offset = head;
            }

            r->offset = offset;

            ngx_shmtx_unlock(&topic->shpool->mutex);

            if (n == 0 && offset < head && buf != NULL) {
                /* one message larger than the buffer: a larger buffer */
                if (ngx_http_jvm_vm_request_buffer(log,
                                                   sizeof(msg) + msg.len)
                    != NGX_OK)
                {
                    break;
                }

                more = 1;
                continue;
            }

            ngx_log_debug5(NGX_LOG_DEBUG_CORE, log, 0,
                           "jvm: topic \"%V\": %ui messages, %uz bytes to "
                           "the JVM, %uL unread%s", &topic->name, n, used,
                           head - offset, more ? ", more" : "");

            if (n) {
                ngx_http_jvm_vm_topic_deliver(log, topic, n, used);
            }

        } while (more);
    }
}
