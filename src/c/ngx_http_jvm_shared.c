
/*
 * nginx-jvm: shared dictionaries, "jvm_shared_dict NAME SIZE;".
 *
 * A dictionary is a shared memory zone seen by every worker: a red-black
 * tree of entries keyed by a hash of the key, an LRU queue (most recently
 * used first) and the slab allocator, all under the zone's ngx_shmtx, in
 * the manner of nginx's own zones (limit_req) and lua-nginx-module's
 * lua_shared_dict.
 *
 * The operations below are called by the natives of nginx.jvm.Shm
 * (ngx_http_jvm_vm.c), on the event loop or on any JVM thread at once.  So
 * they touch nothing of nginx but the zone, its mutex and the slab
 * allocator: no pools, no cached time (ngx_current_msec is the event
 * loop's), and the log only on the loop's thread (debug lines).  Time is
 * CLOCK_MONOTONIC, the same in every worker.  The mutex is never held
 * across a call into the JVM.
 *
 * A reload keeps a zone of the same name and size (nginx maps it again and
 * calls init with the old configuration's data), so the entries survive.
 *
 * A list (lpush and the like) is an entry of type NGX_HTTP_JVM_DICT_LIST
 * whose value is a queue of items, each its own allocation of the slab:
 * the entry's value_len counts them, and the queue's head sits after the
 * key.  The entry is the list's one place in the tree and the LRU queue,
 * so a list expires and is evicted as a whole, its items with it; an
 * empty list is no entry at all.
 *
 * Readers (get, getStale, ttl, llen) leave an expired entry in place, as
 * lua-nginx-module does, so that getStale may still see it; writers
 * replace or remove it, and room is made of expired entries first.
 */


#include "ngx_http_jvm_module.h"

#include <time.h>


/* Entries evicted, least recently used first, to make room for one. */
#define NGX_HTTP_JVM_DICT_EVICT   64


typedef struct {
    ngx_rbtree_node_t          node;       /* node.key: the key's hash */
    ngx_queue_t                queue;      /* LRU, most recent first */
    uint64_t                   expires;    /* monotonic ms, 0: never */
    uint32_t                   value_len;
    uint16_t                   key_len;
    u_char                     type;       /* NGX_HTTP_JVM_DICT_STRING... */
    u_char                     data[1];    /* key, then value */
} ngx_http_jvm_dict_node_t;


/* An item of a list. */
typedef struct {
    ngx_queue_t                queue;      /* first to last */
    uint32_t                   value_len;
    u_char                     type;
    u_char                     data[1];
} ngx_http_jvm_dict_item_t;


/*
 * An operation on one key, between ngx_http_jvm_dict_lock() and _unlock():
 * the key's hash and the time, taken before the lock, and the evictions
 * ever counted when it was taken, for the debug line.
 */
typedef struct {
    ngx_uint_t                 hash;
    uint64_t                   now;
    size_t                     klen;
    ngx_uint_t                 evicted;
} ngx_http_jvm_dict_op_t;


/* The queue of a list's items, after its key (value_len counts them). */
#define ngx_http_jvm_dict_list(dn)                                            \
    ((ngx_queue_t *) ngx_align_ptr((dn)->data + (dn)->key_len, NGX_ALIGNMENT))


/* The part in shared memory. */
struct ngx_http_jvm_dict_sh_s {
    ngx_rbtree_t               rbtree;
    ngx_rbtree_node_t          sentinel;
    ngx_queue_t                lru;
    ngx_uint_t                 count;
    ngx_uint_t                 evicted;    /* to make room, ever */
};


static ngx_int_t ngx_http_jvm_dict_init_zone(ngx_shm_zone_t *zone,
    void *data);
static void ngx_http_jvm_dict_rbtree_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel);
static void ngx_http_jvm_dict_lock(ngx_http_jvm_dict_t *dict, u_char *key,
    size_t klen, ngx_http_jvm_dict_op_t *op);
static ngx_int_t ngx_http_jvm_dict_unlock(ngx_http_jvm_dict_t *dict,
    ngx_http_jvm_dict_op_t *op, const char *name, ngx_int_t rc);
static ngx_http_jvm_dict_node_t *ngx_http_jvm_dict_find_node(
    ngx_http_jvm_dict_t *dict, ngx_uint_t hash, u_char *key, size_t klen);
static ngx_http_jvm_dict_node_t *ngx_http_jvm_dict_lookup(
    ngx_http_jvm_dict_t *dict, ngx_uint_t hash, u_char *key, size_t klen,
    uint64_t now);
static void ngx_http_jvm_dict_remove(ngx_http_jvm_dict_t *dict,
    ngx_http_jvm_dict_node_t *dn);
static void *ngx_http_jvm_dict_alloc(ngx_http_jvm_dict_t *dict, size_t size,
    uint64_t now, ngx_http_jvm_dict_node_t *keep);
static ngx_http_jvm_dict_node_t *ngx_http_jvm_dict_new_list(
    ngx_http_jvm_dict_t *dict, ngx_uint_t hash, u_char *key, size_t klen,
    uint64_t now);
static ngx_int_t ngx_http_jvm_dict_insert(ngx_http_jvm_dict_t *dict,
    ngx_uint_t hash, u_char *key, size_t klen, u_char *value, size_t vlen,
    ngx_uint_t type, uint64_t expires, uint64_t now);


/*
 * The dictionaries of the worker's configuration, read by JVM threads: set
 * once at worker start, never changed afterwards.
 */
static ngx_array_t  *ngx_http_jvm_dicts;


#if (NGX_DEBUG)

/*
 * The operations run on any thread, and a JVM thread touches no log: only
 * the thread that called ngx_http_jvm_shared_init() (the event loop's, or
 * a child JVM process's main thread) writes their debug lines.
 */
static __thread ngx_uint_t  ngx_http_jvm_dict_loop;

static void ngx_http_jvm_dict_debug(ngx_http_jvm_dict_t *dict,
    const char *op, size_t klen, ngx_int_t rc, ngx_uint_t evicted);

#else

#define ngx_http_jvm_dict_debug(dict, op, klen, rc, evicted)  (void) evicted

#endif


/* jvm_shared_dict NAME SIZE; at the http level. */

char *
ngx_http_jvm_shared_dict(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_jvm_main_conf_t *jmcf = conf;

    ssize_t     size;
    ngx_str_t  *value;

    value = cf->args->elts;

    if (value[1].len == 0 || value[1].len > NGX_HTTP_JVM_DICT_NAME_MAX) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "jvm_shared_dict: invalid name \"%V\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    size = ngx_parse_size(&value[2]);

    if (size == NGX_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "jvm_shared_dict \"%V\": invalid size \"%V\"",
                           &value[1], &value[2]);
        return NGX_CONF_ERROR;
    }

    /* the slab allocator's own pages and a few of entries at least */

    if (size < (ssize_t) (8 * ngx_pagesize)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "jvm_shared_dict \"%V\": size \"%V\" is too "
                           "small, at least %uzk", &value[1], &value[2],
                           8 * ngx_pagesize / 1024);
        return NGX_CONF_ERROR;
    }

    if (ngx_http_jvm_dict_find_conf(jmcf, &value[1])) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "jvm_shared_dict \"%V\" is duplicate", &value[1]);
        return NGX_CONF_ERROR;
    }

    return ngx_http_jvm_dict_add(cf, jmcf, &value[1], size) ? NGX_CONF_OK
                                                             : NGX_CONF_ERROR;
}


/* The dictionary of that name in this configuration, or NULL. */

ngx_http_jvm_dict_t *
ngx_http_jvm_dict_find_conf(ngx_http_jvm_main_conf_t *jmcf, ngx_str_t *name)
{
    ngx_uint_t             i;
    ngx_http_jvm_dict_t  **dicts;

    if (jmcf->dicts == NULL) {
        return NULL;
    }

    dicts = jmcf->dicts->elts;

    for (i = 0; i < jmcf->dicts->nelts; i++) {
        if (dicts[i]->name.len == name->len
            && ngx_strncmp(dicts[i]->name.data, name->data, name->len) == 0)
        {
            return dicts[i];
        }
    }

    return NULL;
}


/* A dictionary and its zone (jvm_shared_dict, and jvm_status's own). */

ngx_http_jvm_dict_t *
ngx_http_jvm_dict_add(ngx_conf_t *cf, ngx_http_jvm_main_conf_t *jmcf,
    ngx_str_t *name, size_t size)
{
    ngx_str_t              zname;
    ngx_http_jvm_dict_t  **dicts, *dict;

    if (jmcf->dicts == NULL) {
        jmcf->dicts = ngx_array_create(cf->pool, 4,
                                       sizeof(ngx_http_jvm_dict_t *));
        if (jmcf->dicts == NULL) {
            return NULL;
        }
    }

    dict = ngx_pcalloc(cf->pool, sizeof(ngx_http_jvm_dict_t));
    if (dict == NULL) {
        return NULL;
    }

    dict->name = *name;
    dict->size = size;

    /* a prefix, so that no other module's zone of the same name clashes */

    zname.len = sizeof("jvm_shared_dict:") - 1 + name->len;
    zname.data = ngx_pnalloc(cf->pool, zname.len);
    if (zname.data == NULL) {
        return NULL;
    }

    ngx_sprintf(zname.data, "jvm_shared_dict:%V", name);

    dict->zone = ngx_shared_memory_add(cf, &zname, size,
                                       &ngx_http_jvm_module);
    if (dict->zone == NULL) {
        return NULL;
    }

    dict->zone->init = ngx_http_jvm_dict_init_zone;
    dict->zone->data = dict;

    dicts = ngx_array_push(jmcf->dicts);
    if (dicts == NULL) {
        return NULL;
    }

    *dicts = dict;

    return dict;
}


/*
 * data: the previous configuration's dictionary of this zone, when a
 * reload kept the zone (same name and size): its entries stay.
 */

static ngx_int_t
ngx_http_jvm_dict_init_zone(ngx_shm_zone_t *zone, void *data)
{
    ngx_http_jvm_dict_t *odict = data;

    size_t                   len;
    ngx_slab_pool_t         *shpool;
    ngx_http_jvm_dict_t     *dict;
    ngx_http_jvm_dict_sh_t  *sh;

    dict = zone->data;
    shpool = (ngx_slab_pool_t *) zone->shm.addr;

    if (odict) {
        dict->sh = odict->sh;
        dict->shpool = odict->shpool;
        return NGX_OK;
    }

    dict->shpool = shpool;

    if (zone->shm.exists) {
        dict->sh = shpool->data;
        return NGX_OK;
    }

    sh = ngx_slab_alloc(shpool, sizeof(ngx_http_jvm_dict_sh_t));
    if (sh == NULL) {
        return NGX_ERROR;
    }

    ngx_memzero(sh, sizeof(ngx_http_jvm_dict_sh_t));
    ngx_rbtree_init(&sh->rbtree, &sh->sentinel,
                    ngx_http_jvm_dict_rbtree_insert);
    ngx_queue_init(&sh->lru);

    dict->sh = sh;
    shpool->data = sh;

    len = sizeof(" in jvm_shared_dict \"\"") + dict->name.len;

    shpool->log_ctx = ngx_slab_alloc(shpool, len);
    if (shpool->log_ctx == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(shpool->log_ctx, " in jvm_shared_dict \"%V\"%Z", &dict->name);

    /*
     * A full zone is normal for a cache: an entry is evicted or the put
     * fails, and the caller is told.  Nothing to log (and logging is for
     * the event loop only).
     */
    shpool->log_nomem = 0;

    return NGX_OK;
}


/*
 * The dictionaries JVM threads may look up by name: at worker start, and
 * in the master's compiling and archiving JVMs (the topics' names are
 * ngx_http_jvm_topics_names(), called beside this).
 */

void
ngx_http_jvm_shared_init(ngx_http_jvm_main_conf_t *jmcf)
{
    ngx_http_jvm_dicts = jmcf->dicts;

#if (NGX_DEBUG)
    ngx_http_jvm_dict_loop = 1;
#endif
}


#if (NGX_DEBUG)

/* After the operation, its lock released: the log is written unlocked. */

static void
ngx_http_jvm_dict_debug(ngx_http_jvm_dict_t *dict, const char *op,
    size_t klen, ngx_int_t rc, ngx_uint_t evicted)
{
    static const char  *results[] = {
        "ok", "not found", "exists", "no memory", "not a number",
        "too small a buffer", "too large", "not a list", "overflow"
    };

    if (!ngx_http_jvm_dict_loop) {
        return;
    }

    ngx_log_debug5(NGX_LOG_DEBUG_CORE, ngx_cycle->log, 0,
                   "jvm: dict \"%V\" %s, key of %uz bytes: %s, %ui evicted",
                   &dict->name, op, klen,
                   (rc >= 0 && rc < (ngx_int_t) (sizeof(results)
                                                 / sizeof(results[0])))
                   ? results[rc] : "?",
                   evicted);
}

#endif


/* The dictionary named so, or NULL; any thread. */

ngx_http_jvm_dict_t *
ngx_http_jvm_dict_find(u_char *name, size_t len)
{
    ngx_uint_t             i;
    ngx_http_jvm_dict_t  **dicts;

    if (ngx_http_jvm_dicts == NULL) {
        return NULL;
    }

    dicts = ngx_http_jvm_dicts->elts;

    for (i = 0; i < ngx_http_jvm_dicts->nelts; i++) {
        if (dicts[i]->name.len == len
            && ngx_strncmp(dicts[i]->name.data, name, len) == 0)
        {
            return dicts[i];
        }
    }

    return NULL;
}


static uint64_t
ngx_http_jvm_dict_now(void)
{
    struct timespec  ts;

    (void) clock_gettime(CLOCK_MONOTONIC, &ts);

    return (uint64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


static ngx_inline ngx_uint_t
ngx_http_jvm_dict_expired(ngx_http_jvm_dict_node_t *dn, uint64_t now)
{
    return dn->expires != 0 && dn->expires <= now;
}


static ngx_inline uint64_t
ngx_http_jvm_dict_expires(int64_t ttl, uint64_t now)
{
    return ttl > 0 ? now + (uint64_t) ttl : 0;
}


/* Whether n + delta is beyond an int64_t (computed without overflowing). */

static ngx_inline ngx_uint_t
ngx_http_jvm_dict_overflows(int64_t n, int64_t delta)
{
    return (delta > 0 && n > INT64_MAX - delta)
           || (delta < 0 && n < INT64_MIN - delta);
}


/* Starts an operation on key: its hash and the time, then the lock. */

static void
ngx_http_jvm_dict_lock(ngx_http_jvm_dict_t *dict, u_char *key, size_t klen,
    ngx_http_jvm_dict_op_t *op)
{
    op->hash = ngx_crc32_short(key, klen);
    op->now = ngx_http_jvm_dict_now();
    op->klen = klen;

    ngx_shmtx_lock(&dict->shpool->mutex);

    op->evicted = dict->sh->evicted;
}


/*
 * Ends it: the lock released, then its debug line (name, and the entries
 * evicted meanwhile); answers rc.
 */

static ngx_int_t
ngx_http_jvm_dict_unlock(ngx_http_jvm_dict_t *dict, ngx_http_jvm_dict_op_t *op,
    const char *name, ngx_int_t rc)
{
    ngx_uint_t  evicted;

    evicted = dict->sh->evicted - op->evicted;

    ngx_shmtx_unlock(&dict->shpool->mutex);

    ngx_http_jvm_dict_debug(dict, name, op->klen, rc, evicted);

    return rc;
}


static void
ngx_http_jvm_dict_rbtree_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel)
{
    ngx_rbtree_node_t         **p;
    ngx_http_jvm_dict_node_t   *dn, *dt;

    for ( ;; ) {

        if (node->key < temp->key) {
            p = &temp->left;

        } else if (node->key > temp->key) {
            p = &temp->right;

        } else { /* node->key == temp->key */

            dn = (ngx_http_jvm_dict_node_t *) node;
            dt = (ngx_http_jvm_dict_node_t *) temp;

            p = (ngx_memn2cmp(dn->data, dt->data, dn->key_len, dt->key_len)
                 < 0) ? &temp->left : &temp->right;
        }

        if (*p == sentinel) {
            break;
        }

        temp = *p;
    }

    *p = node;
    node->parent = temp;
    node->left = sentinel;
    node->right = sentinel;
    ngx_rbt_red(node);
}


/* The entry of key, live or expired, or NULL: for the readers. */

static ngx_http_jvm_dict_node_t *
ngx_http_jvm_dict_find_node(ngx_http_jvm_dict_t *dict, ngx_uint_t hash,
    u_char *key, size_t klen)
{
    ngx_int_t                  rc;
    ngx_rbtree_node_t         *node, *sentinel;
    ngx_http_jvm_dict_node_t  *dn;

    node = dict->sh->rbtree.root;
    sentinel = dict->sh->rbtree.sentinel;

    while (node != sentinel) {

        if (hash < node->key) {
            node = node->left;
            continue;
        }

        if (hash > node->key) {
            node = node->right;
            continue;
        }

        dn = (ngx_http_jvm_dict_node_t *) node;

        rc = ngx_memn2cmp(key, dn->data, klen, dn->key_len);

        if (rc == 0) {
            return dn;
        }

        node = (rc < 0) ? node->left : node->right;
    }

    return NULL;
}


/*
 * The live entry of key, or NULL; an expired one is removed on the way:
 * for the writers.
 */

static ngx_http_jvm_dict_node_t *
ngx_http_jvm_dict_lookup(ngx_http_jvm_dict_t *dict, ngx_uint_t hash,
    u_char *key, size_t klen, uint64_t now)
{
    ngx_http_jvm_dict_node_t  *dn;

    dn = ngx_http_jvm_dict_find_node(dict, hash, key, klen);

    if (dn && ngx_http_jvm_dict_expired(dn, now)) {
        ngx_http_jvm_dict_remove(dict, dn);
        return NULL;
    }

    return dn;
}


/* An entry goes, and a list's items with it. */

static void
ngx_http_jvm_dict_remove(ngx_http_jvm_dict_t *dict,
    ngx_http_jvm_dict_node_t *dn)
{
    ngx_queue_t               *list, *q;
    ngx_http_jvm_dict_item_t  *item;

    if (dn->type == NGX_HTTP_JVM_DICT_LIST) {
        list = ngx_http_jvm_dict_list(dn);

        while (!ngx_queue_empty(list)) {
            q = ngx_queue_head(list);
            item = ngx_queue_data(q, ngx_http_jvm_dict_item_t, queue);
            ngx_queue_remove(q);
            ngx_slab_free_locked(dict->shpool, item);
        }
    }

    ngx_queue_remove(&dn->queue);
    ngx_rbtree_delete(&dict->sh->rbtree, &dn->node);
    ngx_slab_free_locked(dict->shpool, dn);
    dict->sh->count--;
}


/*
 * Room for an entry (or a list's item) of size bytes: expired entries and
 * then the least recently used ones make way, a bounded number of them, so
 * that one operation never holds the lock for long.  keep, when not NULL,
 * is the list that grows: the most recent entry, it never makes way for
 * its own item (its turn would come only when it is the last one left).
 */

static void *
ngx_http_jvm_dict_alloc(ngx_http_jvm_dict_t *dict, size_t size, uint64_t now,
    ngx_http_jvm_dict_node_t *keep)
{
    void                      *p;
    ngx_uint_t                 n;
    ngx_queue_t               *q;
    ngx_http_jvm_dict_node_t  *dn;

    for (n = 0; /* void */; n++) {

        p = ngx_slab_alloc_locked(dict->shpool, size);
        if (p != NULL) {
            return p;
        }

        if (n == NGX_HTTP_JVM_DICT_EVICT || ngx_queue_empty(&dict->sh->lru)) {
            return NULL;
        }

        q = ngx_queue_last(&dict->sh->lru);
        dn = ngx_queue_data(q, ngx_http_jvm_dict_node_t, queue);

        /* expired entries near the tail go first, without counting */

        while (dn != keep && ngx_http_jvm_dict_expired(dn, now)) {
            ngx_http_jvm_dict_remove(dict, dn);

            if (ngx_queue_empty(&dict->sh->lru)) {
                break;
            }

            q = ngx_queue_last(&dict->sh->lru);
            dn = ngx_queue_data(q, ngx_http_jvm_dict_node_t, queue);
        }

        p = ngx_slab_alloc_locked(dict->shpool, size);
        if (p != NULL) {
            return p;
        }

        if (ngx_queue_empty(&dict->sh->lru)) {
            return NULL;
        }

        q = ngx_queue_last(&dict->sh->lru);
        dn = ngx_queue_data(q, ngx_http_jvm_dict_node_t, queue);

        if (dn == keep) {
            return NULL;
        }

        ngx_http_jvm_dict_remove(dict, dn);
        dict->sh->evicted++;
    }
}


static ngx_int_t
ngx_http_jvm_dict_insert(ngx_http_jvm_dict_t *dict, ngx_uint_t hash,
    u_char *key, size_t klen, u_char *value, size_t vlen, ngx_uint_t type,
    uint64_t expires, uint64_t now)
{
    size_t                     size;
    ngx_http_jvm_dict_node_t  *dn;

    size = offsetof(ngx_http_jvm_dict_node_t, data) + klen + vlen;

    dn = ngx_http_jvm_dict_alloc(dict, size, now, NULL);
    if (dn == NULL) {
        return NGX_HTTP_JVM_DICT_NO_MEMORY;
    }

    dn->node.key = hash;
    dn->key_len = (uint16_t) klen;
    dn->value_len = (uint32_t) vlen;
    dn->type = (u_char) type;
    dn->expires = expires;
    ngx_memcpy(dn->data, key, klen);
    ngx_memcpy(dn->data + klen, value, vlen);

    ngx_rbtree_insert(&dict->sh->rbtree, &dn->node);
    ngx_queue_insert_head(&dict->sh->lru, &dn->queue);
    dict->sh->count++;

    return NGX_HTTP_JVM_DICT_OK;
}


/* Whether an entry of these sizes could ever fit in the dictionary. */

ngx_uint_t
ngx_http_jvm_dict_fits(ngx_http_jvm_dict_t *dict, size_t klen, size_t vlen)
{
    return klen <= NGX_HTTP_JVM_DICT_KEY_MAX
           && vlen < dict->size
           && offsetof(ngx_http_jvm_dict_node_t, data) + klen + vlen
              < dict->size;
}


/*
 * The value of key, copied into buf when it fits: NGX_HTTP_JVM_DICT_OK,
 * its length and type; NGX_HTTP_JVM_DICT_AGAIN: *len is the length, and
 * buf too small; NGX_HTTP_JVM_DICT_NOT_FOUND.  A list answers its type
 * and no bytes.  stale NULL: an expired entry is not found; else an
 * expired entry not yet removed is answered too, and *stale says so.
 */

ngx_int_t
ngx_http_jvm_dict_get(ngx_http_jvm_dict_t *dict, u_char *key, size_t klen,
    u_char *buf, size_t cap, size_t *len, ngx_uint_t *type, ngx_uint_t *stale)
{
    ngx_int_t                  rc;
    ngx_http_jvm_dict_node_t  *dn;
    ngx_http_jvm_dict_op_t     ctx;

    ngx_http_jvm_dict_lock(dict, key, klen, &ctx);

    dn = ngx_http_jvm_dict_find_node(dict, ctx.hash, key, klen);

    if (dn && ngx_http_jvm_dict_expired(dn, ctx.now)) {
        if (stale == NULL) {
            dn = NULL;

        } else {
            *stale = 1;
        }

    } else if (stale) {
        *stale = 0;
    }

    if (dn == NULL) {
        rc = NGX_HTTP_JVM_DICT_NOT_FOUND;

    } else if (dn->type == NGX_HTTP_JVM_DICT_LIST) {
        *len = 0;
        *type = dn->type;
        rc = NGX_HTTP_JVM_DICT_OK;

    } else {
        *len = dn->value_len;
        *type = dn->type;

        if (dn->value_len <= cap) {
            ngx_memcpy(buf, dn->data + dn->key_len, dn->value_len);

            /* a stale value is no use of the entry: it stays to go first */

            if (!ngx_http_jvm_dict_expired(dn, ctx.now)) {
                ngx_queue_remove(&dn->queue);
                ngx_queue_insert_head(&dict->sh->lru, &dn->queue);
            }

            rc = NGX_HTTP_JVM_DICT_OK;

        } else {
            rc = NGX_HTTP_JVM_DICT_AGAIN;
        }
    }

    return ngx_http_jvm_dict_unlock(dict, &ctx, "get", rc);
}


/*
 * Sets key, as op says: NGX_HTTP_JVM_DICT_SET always, _ADD only when
 * absent, _REPLACE only when present.  ttl in ms, 0: never expires.
 * Answers _OK, _EXISTS (add), _NOT_FOUND (replace) or _NO_MEMORY (no room
 * even after evictions; the key is then absent).
 */

ngx_int_t
ngx_http_jvm_dict_set(ngx_http_jvm_dict_t *dict, ngx_uint_t op, u_char *key,
    size_t klen, u_char *value, size_t vlen, ngx_uint_t type, int64_t ttl)
{
    ngx_int_t                  rc;
    ngx_http_jvm_dict_node_t  *dn;
    ngx_http_jvm_dict_op_t     ctx;

    ngx_http_jvm_dict_lock(dict, key, klen, &ctx);

    dn = ngx_http_jvm_dict_lookup(dict, ctx.hash, key, klen, ctx.now);

    if (dn && op == NGX_HTTP_JVM_DICT_ADD) {
        rc = NGX_HTTP_JVM_DICT_EXISTS;
        goto done;
    }

    if (dn == NULL && op == NGX_HTTP_JVM_DICT_REPLACE) {
        rc = NGX_HTTP_JVM_DICT_NOT_FOUND;
        goto done;
    }

    if (dn && dn->value_len == vlen && dn->type != NGX_HTTP_JVM_DICT_LIST) {
        /* the same size: in place */
        ngx_memcpy(dn->data + klen, value, vlen);
        dn->type = (u_char) type;
        dn->expires = ngx_http_jvm_dict_expires(ttl, ctx.now);
        ngx_queue_remove(&dn->queue);
        ngx_queue_insert_head(&dict->sh->lru, &dn->queue);
        rc = NGX_HTTP_JVM_DICT_OK;
        goto done;
    }

    if (dn) {
        ngx_http_jvm_dict_remove(dict, dn);
    }

    rc = ngx_http_jvm_dict_insert(dict, ctx.hash, key, klen, value, vlen,
                                  type, ngx_http_jvm_dict_expires(ttl, ctx.now),
                                  ctx.now);

done:

    return ngx_http_jvm_dict_unlock(dict, &ctx, "set", rc);
}


/*
 * Adds delta to the number at key, atomically; a missing key counts as
 * init (and then expires after ttl ms, if ttl > 0).  Answers _OK and the
 * new value, _NOT_NUMBER, _NO_MEMORY, or _OVERFLOW and the number delta
 * was to be added to, when the sum is beyond an int64_t: a quota or rate
 * counter must not flip sign, so the entry is left as it was (Redis's
 * INCRBY answers an error there too).
 */

ngx_int_t
ngx_http_jvm_dict_incr(ngx_http_jvm_dict_t *dict, u_char *key, size_t klen,
    int64_t delta, int64_t init, int64_t ttl, int64_t *result)
{
    int64_t                    n;
    ngx_int_t                  rc;
    ngx_http_jvm_dict_node_t  *dn;
    ngx_http_jvm_dict_op_t     ctx;

    ngx_http_jvm_dict_lock(dict, key, klen, &ctx);

    dn = ngx_http_jvm_dict_lookup(dict, ctx.hash, key, klen, ctx.now);

    if (dn == NULL) {
        if (ngx_http_jvm_dict_overflows(init, delta)) {
            *result = init;
            rc = NGX_HTTP_JVM_DICT_OVERFLOW;
            goto done;
        }

        n = init + delta;

        rc = ngx_http_jvm_dict_insert(dict, ctx.hash, key, klen, (u_char *) &n,
                                      sizeof(int64_t),
                                      NGX_HTTP_JVM_DICT_NUMBER,
                                      ngx_http_jvm_dict_expires(ttl, ctx.now),
                                      ctx.now);
        if (rc == NGX_HTTP_JVM_DICT_OK) {
            *result = n;
        }

        goto done;
    }

    if (dn->type != NGX_HTTP_JVM_DICT_NUMBER
        || dn->value_len != sizeof(int64_t))
    {
        rc = NGX_HTTP_JVM_DICT_NOT_NUMBER;
        goto done;
    }

    ngx_memcpy(&n, dn->data + dn->key_len, sizeof(int64_t));

    if (ngx_http_jvm_dict_overflows(n, delta)) {
        *result = n;
        rc = NGX_HTTP_JVM_DICT_OVERFLOW;
        goto done;
    }

    n += delta;
    ngx_memcpy(dn->data + dn->key_len, &n, sizeof(int64_t));

    ngx_queue_remove(&dn->queue);
    ngx_queue_insert_head(&dict->sh->lru, &dn->queue);

    *result = n;
    rc = NGX_HTTP_JVM_DICT_OK;

done:

    return ngx_http_jvm_dict_unlock(dict, &ctx, "incr", rc);
}


/* Removes key: _OK, or _NOT_FOUND (absent or expired). */

ngx_int_t
ngx_http_jvm_dict_delete(ngx_http_jvm_dict_t *dict, u_char *key, size_t klen)
{
    ngx_int_t                  rc;
    ngx_http_jvm_dict_node_t  *dn;
    ngx_http_jvm_dict_op_t     ctx;

    ngx_http_jvm_dict_lock(dict, key, klen, &ctx);

    dn = ngx_http_jvm_dict_lookup(dict, ctx.hash, key, klen, ctx.now);

    if (dn == NULL) {
        rc = NGX_HTTP_JVM_DICT_NOT_FOUND;

    } else {
        ngx_http_jvm_dict_remove(dict, dn);
        rc = NGX_HTTP_JVM_DICT_OK;
    }

    return ngx_http_jvm_dict_unlock(dict, &ctx, "delete", rc);
}


/*
 * At most limit live keys, most recently used first, into a buffer of
 * malloc() (not a pool: any thread), each a uint16_t length and the bytes.
 * *out is NULL when there is no memory.
 */

ngx_int_t
ngx_http_jvm_dict_keys(ngx_http_jvm_dict_t *dict, ngx_uint_t limit,
    u_char **out, size_t *len)
{
    u_char                    *buf, *p;
    size_t                     cap, used, need;
    uint16_t                   klen;
    uint64_t                   now;
    ngx_uint_t                 n;
    ngx_queue_t               *q;
    ngx_http_jvm_dict_node_t  *dn;

    now = ngx_http_jvm_dict_now();
    cap = 4096;
    used = 0;

    buf = malloc(cap);
    if (buf == NULL) {
        return NGX_HTTP_JVM_DICT_NO_MEMORY;
    }

    ngx_shmtx_lock(&dict->shpool->mutex);

    n = 0;

    for (q = ngx_queue_head(&dict->sh->lru);
         q != ngx_queue_sentinel(&dict->sh->lru) && n < limit;
         q = ngx_queue_next(q))
    {
        dn = ngx_queue_data(q, ngx_http_jvm_dict_node_t, queue);

        if (ngx_http_jvm_dict_expired(dn, now)) {
            continue;
        }

        need = sizeof(uint16_t) + dn->key_len;

        if (used + need > cap) {
            cap = ngx_max(cap * 2, used + need);
            p = realloc(buf, cap);

            if (p == NULL) {
                break;
            }

            buf = p;
        }

        klen = dn->key_len;
        ngx_memcpy(buf + used, &klen, sizeof(uint16_t));
        ngx_memcpy(buf + used + sizeof(uint16_t), dn->data, dn->key_len);
        used += need;
        n++;
    }

    ngx_shmtx_unlock(&dict->shpool->mutex);

    *out = buf;
    *len = used;

    return NGX_HTTP_JVM_DICT_OK;
}


/*
 * Live entries (expired ones are removed on the way: a walk of the whole
 * dictionary), and how many entries were ever evicted to make room.
 */

ngx_uint_t
ngx_http_jvm_dict_size(ngx_http_jvm_dict_t *dict, ngx_uint_t *evicted)
{
    uint64_t                   now;
    ngx_uint_t                 count;
    ngx_queue_t               *q, *next;
    ngx_http_jvm_dict_node_t  *dn;

    now = ngx_http_jvm_dict_now();

    ngx_shmtx_lock(&dict->shpool->mutex);

    for (q = ngx_queue_head(&dict->sh->lru);
         q != ngx_queue_sentinel(&dict->sh->lru);
         q = next)
    {
        next = ngx_queue_next(q);
        dn = ngx_queue_data(q, ngx_http_jvm_dict_node_t, queue);

        if (ngx_http_jvm_dict_expired(dn, now)) {
            ngx_http_jvm_dict_remove(dict, dn);
        }
    }

    count = dict->sh->count;
    *evicted = dict->sh->evicted;

    ngx_shmtx_unlock(&dict->shpool->mutex);

    return count;
}


/* Removes every entry. */

void
ngx_http_jvm_dict_clear(ngx_http_jvm_dict_t *dict)
{
    ngx_queue_t               *q;
    ngx_http_jvm_dict_node_t  *dn;

    ngx_shmtx_lock(&dict->shpool->mutex);

    while (!ngx_queue_empty(&dict->sh->lru)) {
        q = ngx_queue_head(&dict->sh->lru);
        dn = ngx_queue_data(q, ngx_http_jvm_dict_node_t, queue);
        ngx_http_jvm_dict_remove(dict, dn);
    }

    ngx_shmtx_unlock(&dict->shpool->mutex);
}


/* A new, empty list at key, the most recent entry; NULL: no room. */

static ngx_http_jvm_dict_node_t *
ngx_http_jvm_dict_new_list(ngx_http_jvm_dict_t *dict, ngx_uint_t hash,
    u_char *key, size_t klen, uint64_t now)
{
    size_t                     size;
    ngx_http_jvm_dict_node_t  *dn;

    size = offsetof(ngx_http_jvm_dict_node_t, data) + klen + NGX_ALIGNMENT
           + sizeof(ngx_queue_t);

    dn = ngx_http_jvm_dict_alloc(dict, size, now, NULL);
    if (dn == NULL) {
        return NULL;
    }

    dn->node.key = hash;
    dn->key_len = (uint16_t) klen;
    dn->value_len = 0;
    dn->type = NGX_HTTP_JVM_DICT_LIST;
    dn->expires = 0;
    ngx_memcpy(dn->data, key, klen);
    ngx_queue_init(ngx_http_jvm_dict_list(dn));

    ngx_rbtree_insert(&dict->sh->rbtree, &dn->node);
    ngx_queue_insert_head(&dict->sh->lru, &dn->queue);
    dict->sh->count++;

    return dn;
}


/*
 * Pushes a value at one end (NGX_HTTP_JVM_DICT_LEFT or _RIGHT) of the list
 * at key; a missing or expired key is a new list that never expires.
 * Answers _OK and the list's new length, _NOT_LIST, or _NO_MEMORY (no room
 * even after evictions, as for set; the list is as it was).
 */

ngx_int_t
ngx_http_jvm_dict_push(ngx_http_jvm_dict_t *dict, ngx_uint_t end,
    u_char *key, size_t klen, u_char *value, size_t vlen, ngx_uint_t type,
    size_t *length)
{
    ngx_int_t                  rc;
    ngx_uint_t                 created;
    ngx_queue_t               *list;
    ngx_http_jvm_dict_node_t  *dn;
    ngx_http_jvm_dict_item_t  *item;
    ngx_http_jvm_dict_op_t     ctx;

    ngx_http_jvm_dict_lock(dict, key, klen, &ctx);

    created = 0;

    dn = ngx_http_jvm_dict_lookup(dict, ctx.hash, key, klen, ctx.now);

    if (dn && dn->type != NGX_HTTP_JVM_DICT_LIST) {
        rc = NGX_HTTP_JVM_DICT_NOT_LIST;
        goto done;
    }

    if (dn == NULL) {
        dn = ngx_http_jvm_dict_new_list(dict, ctx.hash, key, klen, ctx.now);
        if (dn == NULL) {
            rc = NGX_HTTP_JVM_DICT_NO_MEMORY;
            goto done;
        }

        created = 1;

    } else {
        ngx_queue_remove(&dn->queue);
        ngx_queue_insert_head(&dict->sh->lru, &dn->queue);
    }

    item = ngx_http_jvm_dict_alloc(dict,
                                   offsetof(ngx_http_jvm_dict_item_t, data)
                                   + vlen, ctx.now, dn);
    if (item == NULL) {
        if (created) {
            ngx_http_jvm_dict_remove(dict, dn);
        }

        rc = NGX_HTTP_JVM_DICT_NO_MEMORY;
        goto done;
    }

    item->value_len = (uint32_t) vlen;
    item->type = (u_char) type;
    ngx_memcpy(item->data, value, vlen);

    list = ngx_http_jvm_dict_list(dn);

    if (end == NGX_HTTP_JVM_DICT_LEFT) {
        ngx_queue_insert_head(list, &item->queue);

    } else {
        ngx_queue_insert_tail(list, &item->queue);
    }

    dn->value_len++;
    *length = dn->value_len;
    rc = NGX_HTTP_JVM_DICT_OK;

done:

    return ngx_http_jvm_dict_unlock(dict, &ctx, "push", rc);
}


/*
 * Takes the value at one end of the list at key: _OK, its type and bytes
 * (in buf when they fit, else in malloc()'s memory at *out: the caller
 * frees it), _NOT_FOUND (no list, or expired), _NOT_LIST, or _NO_MEMORY
 * (no memory for the copy: the list is as it was).  A list left empty is
 * removed.
 */

ngx_int_t
ngx_http_jvm_dict_pop(ngx_http_jvm_dict_t *dict, ngx_uint_t end,
    u_char *key, size_t klen, u_char *buf, size_t cap, u_char **out,
    size_t *len, ngx_uint_t *type)
{
    u_char                    *p;
    ngx_int_t                  rc;
    ngx_queue_t               *list, *q;
    ngx_http_jvm_dict_node_t  *dn;
    ngx_http_jvm_dict_item_t  *item;
    ngx_http_jvm_dict_op_t     ctx;

    ngx_http_jvm_dict_lock(dict, key, klen, &ctx);

    dn = ngx_http_jvm_dict_lookup(dict, ctx.hash, key, klen, ctx.now);

    if (dn == NULL) {
        rc = NGX_HTTP_JVM_DICT_NOT_FOUND;
        goto done;
    }

    if (dn->type != NGX_HTTP_JVM_DICT_LIST) {
        rc = NGX_HTTP_JVM_DICT_NOT_LIST;
        goto done;
    }

    list = ngx_http_jvm_dict_list(dn);
    q = (end == NGX_HTTP_JVM_DICT_LEFT) ? ngx_queue_head(list)
                                        : ngx_queue_last(list);
    item = ngx_queue_data(q, ngx_http_jvm_dict_item_t, queue);

    /* process memory, not the zone's: no JVM call, no nginx pool */

    p = (item->value_len <= cap) ? buf : malloc(item->value_len);
    if (p == NULL) {
        rc = NGX_HTTP_JVM_DICT_NO_MEMORY;
        goto done;
    }

    ngx_memcpy(p, item->data, item->value_len);
    *out = p;
    *len = item->value_len;
    *type = item->type;

    ngx_queue_remove(q);
    ngx_slab_free_locked(dict->shpool, item);
    dn->value_len--;

    if (dn->value_len == 0) {
        ngx_http_jvm_dict_remove(dict, dn);

    } else {
        ngx_queue_remove(&dn->queue);
        ngx_queue_insert_head(&dict->sh->lru, &dn->queue);
    }

    rc = NGX_HTTP_JVM_DICT_OK;

done:

    return ngx_http_jvm_dict_unlock(dict, &ctx, "pop", rc);
}


/* The length of the list at key: _OK (0 when absent), or _NOT_LIST. */

ngx_int_t
ngx_http_jvm_dict_llen(ngx_http_jvm_dict_t *dict, u_char *key, size_t klen,
    size_t *length)
{
    ngx_int_t                  rc;
    ngx_http_jvm_dict_node_t  *dn;
    ngx_http_jvm_dict_op_t     ctx;

    ngx_http_jvm_dict_lock(dict, key, klen, &ctx);

    dn = ngx_http_jvm_dict_find_node(dict, ctx.hash, key, klen);

    if (dn == NULL || ngx_http_jvm_dict_expired(dn, ctx.now)) {
        *length = 0;
        rc = NGX_HTTP_JVM_DICT_OK;

    } else if (dn->type != NGX_HTTP_JVM_DICT_LIST) {
        rc = NGX_HTTP_JVM_DICT_NOT_LIST;

    } else {
        *length = dn->value_len;
        rc = NGX_HTTP_JVM_DICT_OK;
    }

    return ngx_http_jvm_dict_unlock(dict, &ctx, "llen", rc);
}


/*
 * The time key has left to live, in ms: _OK and *ttl (0: it never
 * expires), or _NOT_FOUND (absent or expired).
 */

ngx_int_t
ngx_http_jvm_dict_ttl(ngx_http_jvm_dict_t *dict, u_char *key, size_t klen,
    int64_t *ttl)
{
    ngx_int_t                  rc;
    ngx_http_jvm_dict_node_t  *dn;
    ngx_http_jvm_dict_op_t     ctx;

    ngx_http_jvm_dict_lock(dict, key, klen, &ctx);

    dn = ngx_http_jvm_dict_find_node(dict, ctx.hash, key, klen);

    if (dn == NULL || ngx_http_jvm_dict_expired(dn, ctx.now)) {
        rc = NGX_HTTP_JVM_DICT_NOT_FOUND;

    } else {
        /* a live entry's expiry is later than now: at least 1 ms */
        *ttl = (dn->expires == 0) ? 0 : (int64_t) (dn->expires - ctx.now);
        rc = NGX_HTTP_JVM_DICT_OK;
    }

    return ngx_http_jvm_dict_unlock(dict, &ctx, "ttl", rc);
}


/*
 * Gives key a new time to live, ttl ms from now (0: never expires):
 * _OK, or _NOT_FOUND (absent or expired: an expired entry is removed).
 */

ngx_int_t
ngx_http_jvm_dict_expire(ngx_http_jvm_dict_t *dict, u_char *key, size_t klen,
    int64_t ttl)
{
    ngx_int_t                  rc;
    ngx_http_jvm_dict_node_t  *dn;
    ngx_http_jvm_dict_op_t     ctx;

    ngx_http_jvm_dict_lock(dict, key, klen, &ctx);

    dn = ngx_http_jvm_dict_lookup(dict, ctx.hash, key, klen, ctx.now);

    if (dn == NULL) {
        rc = NGX_HTTP_JVM_DICT_NOT_FOUND;

    } else {
        dn->expires = ngx_http_jvm_dict_expires(ttl, ctx.now);
        rc = NGX_HTTP_JVM_DICT_OK;
    }

    return ngx_http_jvm_dict_unlock(dict, &ctx, "expire", rc);
}


/*
 * Removes expired entries, least recently used first, at most max of them
 * (0: all): how many went.  A walk of the dictionary under its lock.
 */

ngx_uint_t
ngx_http_jvm_dict_flush_expired(ngx_http_jvm_dict_t *dict, ngx_uint_t max)
{
    uint64_t                   now;
    ngx_uint_t                 n;
    ngx_queue_t               *q, *prev;
    ngx_http_jvm_dict_node_t  *dn;

    now = ngx_http_jvm_dict_now();
    n = 0;

    ngx_shmtx_lock(&dict->shpool->mutex);

    for (q = ngx_queue_last(&dict->sh->lru);
         q != ngx_queue_sentinel(&dict->sh->lru) && (max == 0 || n < max);
         q = prev)
    {
        prev = ngx_queue_prev(q);
        dn = ngx_queue_data(q, ngx_http_jvm_dict_node_t, queue);

        if (ngx_http_jvm_dict_expired(dn, now)) {
            ngx_http_jvm_dict_remove(dict, dn);
            n++;
        }
    }

    ngx_shmtx_unlock(&dict->shpool->mutex);

    return n;
}
