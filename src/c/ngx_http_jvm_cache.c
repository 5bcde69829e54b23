
/*
 * nginx-jvm: the class cache (jvm_cache), in the master.
 *
 * A worker's JVM start is mostly Clojure loading and compiling the app's
 * namespaces and the JVM loading classes.  The cache keeps both from one
 * start to the next: the namespaces compiled ahead of time into a jar, and
 * a Class Data Sharing archive of every class a worker loads, which the
 * workers map read-only (shared between them, not loaded by each).
 *
 * An entry is a directory named by a hash of what the JVM would load: the
 * JVM library, the options, the handler names and the class path's files
 * (paths, sizes, modification times, directories walked).  Any change makes
 * another entry; an entry is used only when its "ok" file, written last,
 * matches its archive.  Anything else (no entry, half an entry, a corrupt
 * archive) is rebuilt, and a cache that cannot be built is done without.
 * The master builds it with JVMs in child processes (ngx_http_jvm_child.c),
 * the second of which is the configuration's trial start.
 */


#include "ngx_http_jvm_module.h"

#include <pthread.h>

#include <ngx_md5.h>


/* Entries kept in a cache directory, the most recently used. */
#define NGX_HTTP_JVM_CACHE_KEEP  4

/* The first bytes of a dynamic CDS archive (HotSpot's own magic). */
#define NGX_HTTP_JVM_CDS_MAGIC  0xf00baba8


static ngx_int_t ngx_http_jvm_cache_key(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf, u_char *hex);
static ngx_int_t ngx_http_jvm_cache_hash_file(ngx_tree_ctx_t *ctx,
    ngx_str_t *path);
static ngx_int_t ngx_http_jvm_cache_noop(ngx_tree_ctx_t *ctx,
    ngx_str_t *path);
static ngx_int_t ngx_http_jvm_cache_ready(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
static ngx_int_t ngx_http_jvm_cache_trial(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
static ngx_int_t ngx_http_jvm_cache_paths(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
static ngx_int_t ngx_http_jvm_cache_valid(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
static void ngx_http_jvm_cache_done(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
static void ngx_http_jvm_cache_remove(ngx_cycle_t *cycle, ngx_str_t *dir);
static void ngx_http_jvm_cache_seal(ngx_cycle_t *cycle, ngx_str_t *dir);
static ngx_int_t ngx_http_jvm_cache_seal_path(ngx_tree_ctx_t *ctx,
    ngx_str_t *path);
static void ngx_http_jvm_cache_prune(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf);
static int ngx_libc_cdecl ngx_http_jvm_cache_newer(const void *one,
    const void *two);
static ngx_int_t ngx_http_jvm_cache_delete_file(ngx_tree_ctx_t *ctx,
    ngx_str_t *path);
static ngx_int_t ngx_http_jvm_cache_delete_dir(ngx_tree_ctx_t *ctx,
    ngx_str_t *path);
static u_char *ngx_http_jvm_cache_path(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf, char *prefix, char *name);


/*
 * For each configuration the master loads: the cache entry ready for the
 * workers (jmcf->cache_ready), built now if need be; or, without a cache,
 * the plain trial start.  NGX_ERROR: the build found a handler that cannot
 * be loaded, or a stop came during a start or a build, and the
 * configuration is refused.
 */

ngx_int_t
ngx_http_jvm_cache_prepare(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf)
{
    ngx_int_t  rc;
    sigset_t   old;

    /*
     * A stop that comes meanwhile ends the master's JVM at once
     * (ngx_http_jvm_vm_child) and is acted upon here, once the entry it
     * was building is removed: before its handlers are set, a first
     * start's master dies of it.
     */

    ngx_http_jvm_vm_block_signals(&old);
    rc = ngx_http_jvm_cache_ready(cycle, jmcf);
    pthread_sigmask(SIG_SETMASK, &old, NULL);

    return rc;
}


static ngx_int_t
ngx_http_jvm_cache_ready(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf)
{
    u_char           *path, hex[32];
    ngx_int_t         rc;
    ngx_err_t         err;
    ngx_core_conf_t  *ccf;

    jmcf->cache_ready = 0;

    if (jmcf->cache.len == 0) {
        return ngx_http_jvm_cache_trial(cycle, jmcf);
    }

    if (ngx_http_jvm_cache_key(cycle, jmcf, hex) != NGX_OK) {
        ngx_log_error(NGX_LOG_WARN, cycle->log, 0,
                      "jvm: the class cache is not used: the class path "
                      "cannot be read");
        return ngx_http_jvm_cache_trial(cycle, jmcf);
    }

    jmcf->cache_entry.len = jmcf->cache.len + 1 + 32;
    jmcf->cache_entry.data = ngx_pnalloc(cycle->pool,
                                         jmcf->cache_entry.len + 1);
    if (jmcf->cache_entry.data == NULL) {
        return NGX_OK;
    }

    ngx_sprintf(jmcf->cache_entry.data, "%V/%*s%Z", &jmcf->cache, 32, hex);

    if (ngx_http_jvm_cache_paths(cycle, jmcf) != NGX_OK) {
        return NGX_OK;
    }

    /* a ready entry is a trial start passed with these very files */

    rc = ngx_http_jvm_cache_valid(cycle, jmcf);

    ngx_log_debug2(NGX_LOG_DEBUG_CORE, cycle->log, 0,
                   "jvm: class cache \"%V\" %s", &jmcf->cache_entry,
                   rc == NGX_OK ? "found"
                   : rc == NGX_DECLINED ? "missing" : "broken");

    if (rc == NGX_OK) {
        ngx_log_error(NGX_LOG_INFO, cycle->log, 0,
                      "jvm: class cache \"%V\"", &jmcf->cache_entry);
        jmcf->cache_ready = 1;

        /* "ok"'s time is the entry's last use, for the pruning */
        path = ngx_http_jvm_cache_path(cycle, jmcf, "", "ok");
        if (path) {
            (void) ngx_set_file_time(path, NGX_INVALID_FILE, ngx_time());
        }

        return NGX_OK;
    }

    if (rc == NGX_ERROR) {
        ngx_log_error(NGX_LOG_WARN, cycle->log, 0,
                      "jvm: class cache \"%V\" is incomplete or corrupt: "
                      "ignored and built again", &jmcf->cache_entry);
    }

    ngx_http_jvm_cache_remove(cycle, &jmcf->cache_entry);

    /* the entry's directory, and the cache's with it when it is new */

    err = ngx_create_full_path(jmcf->cache_entry.data, 0755);

    if (err == 0 && ngx_create_dir(jmcf->cache_entry.data, 0755)
                    == NGX_FILE_ERROR)
    {
        err = ngx_errno;
    }

    /* the master's JVMs write into it as the workers' user */

    ccf = (ngx_core_conf_t *) ngx_get_conf(cycle->conf_ctx, ngx_core_module);

    if (err == 0 && geteuid() == 0
        && ccf->user != (ngx_uid_t) NGX_CONF_UNSET_UINT
        && chown((char *) jmcf->cache_entry.data, ccf->user, ccf->group)
           == -1)
    {
        err = ngx_errno;
    }

    if (err) {
        ngx_log_error(NGX_LOG_WARN, cycle->log, err,
                      "jvm: the class cache is not used: mkdir or chown "
                      "\"%V\" failed", &jmcf->cache_entry);
        return ngx_http_jvm_cache_trial(cycle, jmcf);
    }

    ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                  "jvm: building the class cache \"%V\"", &jmcf->cache_entry);

    rc = ngx_http_jvm_vm_build_cache(cycle, jmcf);

    ngx_log_debug2(NGX_LOG_DEBUG_CORE, cycle->log, 0,
                   "jvm: class cache \"%V\": the build JVM answered %i",
                   &jmcf->cache_entry, rc);

    if (rc == NGX_ABORT || rc == NGX_BUSY) {
        ngx_http_jvm_cache_remove(cycle, &jmcf->cache_entry);
        return NGX_ERROR;
    }

    if (rc == NGX_OK) {
        ngx_http_jvm_cache_seal(cycle, &jmcf->cache_entry);
        ngx_http_jvm_cache_done(cycle, jmcf);

        if (ngx_http_jvm_cache_valid(cycle, jmcf) == NGX_OK) {
            jmcf->cache_ready = 1;
            ngx_http_jvm_cache_prune(cycle, jmcf);
            return NGX_OK;
        }
    }

    ngx_log_error(NGX_LOG_WARN, cycle->log, 0,
                  "jvm: the class cache could not be built (the reason is "
                  "above); the workers start without it");

    ngx_http_jvm_cache_remove(cycle, &jmcf->cache_entry);
    return NGX_OK;
}


/* No cache: the trial start alone; a stop during it refuses the configuration. */

static ngx_int_t
ngx_http_jvm_cache_trial(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf)
{
    return ngx_http_jvm_vm_trial(cycle, jmcf) == NGX_BUSY ? NGX_ERROR : NGX_OK;
}


/* The entry's name: the MD5 of everything the JVM's start depends on. */

static ngx_int_t
ngx_http_jvm_cache_key(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf,
    u_char *hex)
{
    u_char           digest[16];
    ngx_md5_t        md5;
    ngx_str_t       *s;
    ngx_uint_t       i;
    ngx_file_info_t  fi;
    ngx_tree_ctx_t   tree;

    ngx_md5_init(&md5);
    ngx_md5_update(&md5, "nginx-jvm class cache 1", 24);

    /* the JDK: its path, and the library's size and time (an upgrade) */

    if (ngx_file_info(jmcf->jvm_path.data, &fi) == NGX_FILE_ERROR) {
        return NGX_ERROR;
    }

    ngx_md5_update(&md5, jmcf->jvm_path.data, jmcf->jvm_path.len + 1);
    ngx_md5_update(&md5, &fi.st_size, sizeof(fi.st_size));
    ngx_md5_update(&md5, &fi.st_mtime, sizeof(fi.st_mtime));

    if (jmcf->options) {
        s = jmcf->options->elts;

        for (i = 0; i < jmcf->options->nelts; i++) {
            ngx_md5_update(&md5, s[i].data, s[i].len + 1);
        }
    }

    s = jmcf->handlers.elts;

    for (i = 0; i < jmcf->handlers.nelts; i++) {
        ngx_md5_update(&md5, s[i].data, s[i].len + 1);
    }

    ngx_md5_update(&md5, jmcf->init.data, jmcf->init.len);
    ngx_md5_update(&md5, "", 1);

    tree.init_handler = NULL;
    tree.file_handler = ngx_http_jvm_cache_hash_file;
    tree.pre_tree_handler = ngx_http_jvm_cache_noop;
    tree.post_tree_handler = ngx_http_jvm_cache_noop;
    tree.spec_handler = ngx_http_jvm_cache_noop;
    tree.data = &md5;
    tree.alloc = 0;
    tree.log = cycle->log;

    s = jmcf->classpath->elts;

    for (i = 0; i < jmcf->classpath->nelts; i++) {
        if (ngx_file_info(s[i].data, &fi) == NGX_FILE_ERROR) {
            /* the JVM skips a missing entry: so does the key */
            ngx_md5_update(&md5, s[i].data, s[i].len + 1);
            continue;
        }

        if (ngx_is_dir(&fi)) {
            ngx_md5_update(&md5, s[i].data, s[i].len + 1);

            if (ngx_walk_tree(&tree, &s[i]) != NGX_OK) {
                return NGX_ERROR;
            }

            continue;
        }

        tree.size = ngx_file_size(&fi);
        tree.mtime = ngx_file_mtime(&fi);

        (void) ngx_http_jvm_cache_hash_file(&tree, &s[i]);
    }

    ngx_md5_final(digest, &md5);
    ngx_hex_dump(hex, digest, 16);

    return NGX_OK;
}


static ngx_int_t
ngx_http_jvm_cache_hash_file(ngx_tree_ctx_t *ctx, ngx_str_t *path)
{
    ngx_md5_t  *md5 = ctx->data;

    ngx_md5_update(md5, path->data, path->len);
    ngx_md5_update(md5, &ctx->size, sizeof(ctx->size));
    ngx_md5_update(md5, &ctx->mtime, sizeof(ctx->mtime));

    return NGX_OK;
}


static ngx_int_t
ngx_http_jvm_cache_noop(ngx_tree_ctx_t *ctx, ngx_str_t *path)
{
    return NGX_OK;
}


/*
 * The entry's class path: the compiled namespaces first, then the class
 * path with each directory replaced by its copy (ClassCache writes
 * cp<position>.jar), so that no class is loaded from a directory; and the
 * JVM options that use or write the archive.
 */

static ngx_int_t
ngx_http_jvm_cache_paths(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf)
{
    u_char           name[NGX_INT_T_LEN + sizeof("cp.jar")];
    ngx_str_t       *s, *cp;
    ngx_uint_t       i;
    ngx_file_info_t  fi;

    jmcf->cache_classpath = ngx_array_create(cycle->pool,
                                             jmcf->classpath->nelts + 1,
                                             sizeof(ngx_str_t));
    if (jmcf->cache_classpath == NULL) {
        return NGX_ERROR;
    }

    cp = ngx_array_push(jmcf->cache_classpath);
    if (cp == NULL) {
        return NGX_ERROR;
    }

    cp->data = ngx_http_jvm_cache_path(cycle, jmcf, "", "app.jar");
    if (cp->data == NULL) {
        return NGX_ERROR;
    }

    cp->len = ngx_strlen(cp->data);

    s = jmcf->classpath->elts;

    for (i = 0; i < jmcf->classpath->nelts; i++) {
        cp = ngx_array_push(jmcf->cache_classpath);
        if (cp == NULL) {
            return NGX_ERROR;
        }

        *cp = s[i];

        if (ngx_file_info(s[i].data, &fi) != NGX_FILE_ERROR
            && ngx_is_dir(&fi))
        {
            ngx_sprintf(name, "cp%ui.jar%Z", i);

            cp->data = ngx_http_jvm_cache_path(cycle, jmcf, "", (char *) name);
            if (cp->data == NULL) {
                return NGX_ERROR;
            }

            cp->len = ngx_strlen(cp->data);
        }
    }

    jmcf->cache_share.data = ngx_http_jvm_cache_path(cycle, jmcf,
                                                "-XX:SharedArchiveFile=",
                                                "app.jsa");
    jmcf->cache_dump.data = ngx_http_jvm_cache_path(cycle, jmcf,
                                                "-XX:ArchiveClassesAtExit=",
                                                "app.jsa");

    if (jmcf->cache_share.data == NULL || jmcf->cache_dump.data == NULL) {
        return NGX_ERROR;
    }

    jmcf->cache_share.len = ngx_strlen(jmcf->cache_share.data);
    jmcf->cache_dump.len = ngx_strlen(jmcf->cache_dump.data);

    ngx_log_debug2(NGX_LOG_DEBUG_CORE, cycle->log, 0,
                   "jvm: class cache mapped by the workers with \"%V\", "
                   "%ui class path entries", &jmcf->cache_share,
                   jmcf->cache_classpath->nelts);

    return NGX_OK;
}


/*
 * NGX_OK: the entry is complete ("ok" names the archive's size, and the
 * archive is one); NGX_DECLINED: there is no entry; NGX_ERROR: a broken one.
 */

static ngx_int_t
ngx_http_jvm_cache_valid(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf)
{
    u_char           *path, buf[NGX_OFF_T_LEN + 1];
    ssize_t           n;
    uint32_t          magic;
    ngx_fd_t          fd;
    ngx_file_info_t   fi;

    if (ngx_file_info(jmcf->cache_entry.data, &fi) == NGX_FILE_ERROR) {
        return NGX_DECLINED;
    }

    path = ngx_http_jvm_cache_path(cycle, jmcf, "", "ok");
    if (path == NULL) {
        return NGX_ERROR;
    }

    fd = ngx_open_file(path, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);
    if (fd == NGX_INVALID_FILE) {
        return NGX_ERROR;
    }

    n = read(fd, buf, NGX_OFF_T_LEN);
    (void) ngx_close_file(fd);

    if (n <= 0) {
        return NGX_ERROR;
    }

    path = ngx_http_jvm_cache_path(cycle, jmcf, "", "app.jsa");
    if (path == NULL) {
        return NGX_ERROR;
    }

    fd = ngx_open_file(path, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);
    if (fd == NGX_INVALID_FILE) {
        return NGX_ERROR;
    }

    if (ngx_fd_info(fd, &fi) == NGX_FILE_ERROR
        || read(fd, &magic, sizeof(magic)) != sizeof(magic))
    {
        (void) ngx_close_file(fd);
        return NGX_ERROR;
    }

    (void) ngx_close_file(fd);

    if (magic != NGX_HTTP_JVM_CDS_MAGIC
        || ngx_atoof(buf, n) != ngx_file_size(&fi))
    {
        ngx_log_debug5(NGX_LOG_DEBUG_CORE, cycle->log, 0,
                       "jvm: class cache archive \"%s\": magic %xD, "
                       "%O bytes, \"ok\" says \"%*s\"", path, magic,
                       ngx_file_size(&fi), (size_t) n, buf);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* The entry is complete: "ok", written last, names the archive's size. */

static void
ngx_http_jvm_cache_done(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf)
{
    u_char           *path, buf[NGX_OFF_T_LEN];
    ssize_t           n;
    ngx_fd_t          fd;
    ngx_file_info_t   fi;

    path = ngx_http_jvm_cache_path(cycle, jmcf, "", "app.jsa");

    if (path == NULL || ngx_file_info(path, &fi) == NGX_FILE_ERROR) {
        return;
    }

    path = ngx_http_jvm_cache_path(cycle, jmcf, "", "ok");
    if (path == NULL) {
        return;
    }

    fd = ngx_open_file(path, NGX_FILE_WRONLY, NGX_FILE_TRUNCATE,
                       NGX_FILE_DEFAULT_ACCESS);
    if (fd == NGX_INVALID_FILE) {
        ngx_log_error(NGX_LOG_WARN, cycle->log, ngx_errno,
                      ngx_open_file_n " \"%s\" failed", path);
        return;
    }

    n = ngx_sprintf(buf, "%O", ngx_file_size(&fi)) - buf;

    if (write(fd, buf, n) != n) {
        ngx_log_error(NGX_LOG_WARN, cycle->log, ngx_errno,
                      "write() to \"%s\" failed", path);
    }

    (void) ngx_close_file(fd);

    ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                  "jvm: class cache \"%V\" built", &jmcf->cache_entry);
}


/*
 * After a build: the entries of the cache directory beyond the
 * NGX_HTTP_JVM_CACHE_KEEP most recently used go, so that a directory
 * edited over and over does not fill the disk.  A running worker keeps an
 * entry it has mapped; a worker that starts later without its entry starts
 * without the cache (ngx_http_jvm_vm.c says so).
 */

typedef struct {
    ngx_str_t                 path;
    time_t                    used;
} ngx_http_jvm_cache_entry_t;


static void
ngx_http_jvm_cache_prune(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf)
{
    u_char                      *name;
    size_t                       len;
    ngx_dir_t                    dir;
    ngx_uint_t                   i;
    ngx_array_t                  entries;
    ngx_file_info_t              fi;
    ngx_http_jvm_cache_entry_t  *e;

    if (ngx_array_init(&entries, cycle->pool, 8,
                       sizeof(ngx_http_jvm_cache_entry_t))
        != NGX_OK)
    {
        return;
    }

    if (ngx_open_dir(&jmcf->cache, &dir) != NGX_OK) {
        return;
    }

    while (ngx_read_dir(&dir) == NGX_OK) {
        name = ngx_de_name(&dir);
        len = ngx_de_namelen(&dir);

        /* only what this module made: 32 hex digits */

        if (len != 32) {
            continue;
        }

        for (i = 0; i < 32; i++) {
            if (!((name[i] >= '0' && name[i] <= '9')
                  || (name[i] >= 'a' && name[i] <= 'f')))
            {
                break;
            }
        }

        if (i < 32) {
            continue;
        }

        e = ngx_array_push(&entries);
        if (e == NULL) {
            break;
        }

        e->path.len = jmcf->cache.len + 1 + 32;
        e->path.data = ngx_pnalloc(cycle->pool, e->path.len + sizeof("/ok"));
        if (e->path.data == NULL) {
            entries.nelts--;
            break;
        }

        ngx_sprintf(e->path.data, "%V/%*s/ok%Z", &jmcf->cache, 32, name);

        /* an entry without "ok" is being built, or was left half built */
        e->used = ngx_file_info(e->path.data, &fi) == NGX_FILE_ERROR
                  ? ngx_time() : ngx_file_mtime(&fi);

        e->path.data[e->path.len] = '\0';
    }

    (void) ngx_close_dir(&dir);

    if (entries.nelts <= NGX_HTTP_JVM_CACHE_KEEP) {
        return;
    }

    ngx_qsort(entries.elts, entries.nelts, sizeof(ngx_http_jvm_cache_entry_t),
              ngx_http_jvm_cache_newer);

    e = entries.elts;

    for (i = NGX_HTTP_JVM_CACHE_KEEP; i < entries.nelts; i++) {
        if (e[i].path.len == jmcf->cache_entry.len
            && ngx_strncmp(e[i].path.data, jmcf->cache_entry.data,
                           e[i].path.len) == 0)
        {
            continue;
        }

        ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                      "jvm: class cache \"%V\" removed (unused the longest)",
                      &e[i].path);

        ngx_http_jvm_cache_remove(cycle, &e[i].path);
    }
}


static int ngx_libc_cdecl
ngx_http_jvm_cache_newer(const void *one, const void *two)
{
    const ngx_http_jvm_cache_entry_t  *a = one, *b = two;

    return (a->used < b->used) - (a->used > b->used);
}


static void
ngx_http_jvm_cache_remove(ngx_cycle_t *cycle, ngx_str_t *dir)
{
    ngx_tree_ctx_t   tree;
    ngx_file_info_t  fi;

    if (ngx_file_info(dir->data, &fi) == NGX_FILE_ERROR) {
        return;
    }

    tree.init_handler = NULL;
    tree.file_handler = ngx_http_jvm_cache_delete_file;
    tree.pre_tree_handler = ngx_http_jvm_cache_noop;
    tree.post_tree_handler = ngx_http_jvm_cache_delete_dir;
    tree.spec_handler = ngx_http_jvm_cache_delete_file;
    tree.data = NULL;
    tree.alloc = 0;
    tree.log = cycle->log;

    if (ngx_walk_tree(&tree, dir) == NGX_OK) {
        (void) ngx_delete_dir(dir->data);
    }
}


/*
 * A built entry goes back to root, read-only for the workers' user: code
 * running as that user cannot change what every later start loads.
 */

static void
ngx_http_jvm_cache_seal(ngx_cycle_t *cycle, ngx_str_t *dir)
{
    ngx_tree_ctx_t  tree;

    if (geteuid() != 0) {
        return;
    }

    tree.init_handler = NULL;
    tree.file_handler = ngx_http_jvm_cache_seal_path;
    tree.pre_tree_handler = ngx_http_jvm_cache_noop;
    tree.post_tree_handler = ngx_http_jvm_cache_seal_path;
    tree.spec_handler = ngx_http_jvm_cache_seal_path;
    tree.data = NULL;
    tree.alloc = 0;
    tree.log = cycle->log;

    if (ngx_walk_tree(&tree, dir) == NGX_OK) {
        (void) ngx_http_jvm_cache_seal_path(&tree, dir);
    }
}


static ngx_int_t
ngx_http_jvm_cache_seal_path(ngx_tree_ctx_t *ctx, ngx_str_t *path)
{
    if (chown((char *) path->data, 0, 0) == -1) {
        ngx_log_error(NGX_LOG_WARN, ctx->log, ngx_errno,
                      "jvm: chown(\"%V\", root) failed", path);
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_jvm_cache_delete_file(ngx_tree_ctx_t *ctx, ngx_str_t *path)
{
    (void) ngx_delete_file(path->data);

    return NGX_OK;
}


static ngx_int_t
ngx_http_jvm_cache_delete_dir(ngx_tree_ctx_t *ctx, ngx_str_t *path)
{
    (void) ngx_delete_dir(path->data);

    return NGX_OK;
}


/* prefix + the entry's directory + "/" + name, NUL-terminated. */

static u_char *
ngx_http_jvm_cache_path(ngx_cycle_t *cycle, ngx_http_jvm_main_conf_t *jmcf,
    char *prefix, char *name)
{
    u_char  *p;

    p = ngx_pnalloc(cycle->pool, ngx_strlen(prefix) + jmcf->cache_entry.len
                                 + 1 + ngx_strlen(name) + 1);
    if (p == NULL) {
        return NULL;
    }

    ngx_sprintf(p, "%s%V/%s%Z", prefix, &jmcf->cache_entry, name);

    return p;
}
