
/*
 * nginx-jvm: a request's header fields changed by Java before the content
 * phase (Request#setHeader, addHeader, clearHeader), so that proxy_pass and
 * whatever follows see them as if the client had sent them.
 *
 * On the event loop only.  The fields live in r->headers_in.headers, and
 * nginx keeps some of them apart as well: pointers to a field (host,
 * user_agent, content_type, ...; in nginx 1.22 arrays of them for Cookie
 * and X-Forwarded-For) and values derived from one (the host name of
 * $host in headers_in.server, the browser flags of User-Agent, the
 * connection type).  After each change the list is the one truth: every
 * pointer is found again from it, through nginx's own table of the fields
 * it keeps apart (ngx_http_headers_in, the table its parser uses), so none
 * is left to a field that was removed or moved; what Host, User-Agent and
 * Connection determine is determined again when they change.
 *
 * Removing compacts the list in place (a list of nginx's has no removal),
 * so no memory grows with the number of changes.  A subrequest may share
 * its parent's list and arrays (ngx_http_subrequest copies the struct):
 * it gets copies of its own before its first change.
 *
 * Refused: a name that is no HTTP token, a value with a control character
 * other than HTAB (it would split the request to the upstream), a Host
 * that is no host, and Content-Length and Transfer-Encoding, which tell
 * nginx how to read the request body: it has not read it yet, and would
 * read the rest of the connection differently (proxy_pass sends its own).
 */


#include "ngx_http_jvm_module.h"


static ngx_int_t ngx_http_jvm_header_in_check(ngx_str_t *name,
    ngx_str_t *value, const char **err);
static ngx_int_t ngx_http_jvm_header_in_host(ngx_str_t *value,
    ngx_str_t *host, ngx_pool_t *pool);
static ngx_int_t ngx_http_jvm_header_in_own(ngx_http_request_t *r);
static ngx_uint_t ngx_http_jvm_header_in_drop(ngx_list_t *list,
    ngx_str_t *name, ngx_str_t *value);
static ngx_int_t ngx_http_jvm_header_in_push(ngx_http_request_t *r,
    ngx_str_t *name, ngx_str_t *value);
static ngx_int_t ngx_http_jvm_header_in_index(ngx_http_request_t *r);
#if (nginx_version < 1023000)
static ngx_uint_t ngx_http_jvm_header_in_multi(ngx_uint_t offset);
#endif
static ngx_int_t ngx_http_jvm_header_in_derive(ngx_http_request_t *r,
    ngx_str_t *name);
static void ngx_http_jvm_header_in_browser(ngx_http_request_t *r,
    ngx_str_t *ua);
static u_char *ngx_http_jvm_header_in_find(ngx_str_t *s, u_char *from,
    const char *what);


#define ngx_http_jvm_header_is(s, lit)                                        \
    ((s)->len == sizeof(lit) - 1                                              \
     && ngx_strncasecmp((s)->data, (u_char *) lit, sizeof(lit) - 1) == 0)

#if (NGX_DEBUG)
static ngx_str_t  ngx_http_jvm_header_in_none = ngx_string("(none)");
#endif

#if (nginx_version < 1023000)
/* a subrequest's array, still its parent's, starts empty of its own */
#define ngx_http_jvm_header_in_unshare(r, field)                              \
    if ((r)->headers_in.field.elts == (r)->parent->headers_in.field.elts) {   \
        ngx_memzero(&(r)->headers_in.field, sizeof(ngx_array_t));             \
    }
#endif


/*
 * Field "name" gets "value" in place of every field of that name (add 0),
 * in the place of the first one or at the end; or one more field (add 1);
 * with value NULL, every field of that name goes.  name and value are in
 * the request's pool and stay there.
 *
 * NGX_OK; NGX_DECLINED, a bad argument, and NGX_ABORT, too late, with *err
 * saying why; NGX_ERROR, no memory.
 */

ngx_int_t
ngx_http_jvm_header_in_set(ngx_http_request_t *r, ngx_str_t *name,
    ngx_str_t *value, ngx_uint_t add, const char **err)
{
    if (ngx_http_jvm_header_in_check(name, value, err) != NGX_OK) {
        return NGX_DECLINED;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: %s request header \"%V: %V\"",
                   value == NULL ? "clear" : (add ? "add" : "set"),
                   name, value ? value : &ngx_http_jvm_header_in_none);

    /*
     * Java allows changes only while a rewrite or access handler runs;
     * nginx's own state says so too
     */

    if (r->header_sent || r->headers_in.headers.last == NULL) {
        *err = "the request is past its rewrite and access phases";
        return NGX_ABORT;
    }

    if (value && ngx_http_jvm_header_is(name, "Host")) {
        if (add && r->headers_in.host) {
            *err = "a request has one Host field at most (set it instead)";
            return NGX_DECLINED;
        }

        if (ngx_http_jvm_header_in_host(value, NULL, NULL) != NGX_OK) {
            *err = "not a host name or address with an optional port";
            return NGX_DECLINED;
        }
    }

    if (ngx_http_jvm_header_in_own(r) != NGX_OK) {
        return NGX_ERROR;
    }

    if (value == NULL) {
        (void) ngx_http_jvm_header_in_drop(&r->headers_in.headers, name,
                                           NULL);

    } else if (add
               || !ngx_http_jvm_header_in_drop(&r->headers_in.headers, name,
                                               value))
    {
        if (ngx_http_jvm_header_in_push(r, name, value) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    if (ngx_http_jvm_header_in_index(r) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_jvm_header_in_derive(r, name);
}


/*
 * What nginx itself would not have parsed from a client is refused: the
 * name and the value by the gate's rules (ngx_http_jvm_gate.c), and the
 * fields that frame the body.
 */

static ngx_int_t
ngx_http_jvm_header_in_check(ngx_str_t *name, ngx_str_t *value,
    const char **err)
{
    *err = ngx_http_jvm_gate(NGX_HTTP_JVM_DOOR_REQUEST_NAME, NULL, name);

    if (*err) {
        return NGX_DECLINED;
    }

    if (ngx_http_jvm_header_is(name, "Content-Length")
        || ngx_http_jvm_header_is(name, "Transfer-Encoding"))
    {
        *err = "Content-Length and Transfer-Encoding tell nginx how to read "
               "the request body, which it reads after this phase: they "
               "cannot be changed";
        return NGX_DECLINED;
    }

    if (value == NULL) {
        return NGX_OK;
    }

    *err = ngx_http_jvm_gate(NGX_HTTP_JVM_DOOR_REQUEST_VALUE, name, value);

    return *err ? NGX_DECLINED : NGX_OK;
}


/*
 * The host name of a Host value, as nginx's parser takes it for $host:
 * without the port, lower case, without a trailing dot.  NGX_DECLINED for
 * what is no host ("..", a path separator, a space, nothing).  With host
 * NULL, only checks.
 */

static ngx_int_t
ngx_http_jvm_header_in_host(ngx_str_t *value, ngx_str_t *host,
    ngx_pool_t *pool)
{
    u_char      c, *p;
    size_t      i, dot, len;
    ngx_uint_t  literal, port;

    p = value->data;
    len = value->len;
    dot = value->len;
    literal = 0;
    port = 0;

    for (i = 0; i < value->len && !port; i++) {
        c = p[i];

        if (c == '.') {
            if (dot + 1 == i) {
                return NGX_DECLINED;
            }

            dot = i;

        } else if (c == ':' && !literal) {
            len = i;
            port = 1;

        } else if (c == '[' && i == 0) {
            literal = 1;

        } else if (c == ']' && literal) {
            len = i + 1;
            literal = 0;

            if (i + 1 < value->len && p[i + 1] != ':') {
                return NGX_DECLINED;
            }

        } else if (c <= 0x20 || c == 0x7f || ngx_path_separator(c)) {
            return NGX_DECLINED;
        }
    }

    for ( /* void */ ; i < value->len; i++) {
        if (p[i] < '0' || p[i] > '9') {
            return NGX_DECLINED;
        }
    }

    if (literal) {
        return NGX_DECLINED;
    }

    if (len && dot == len - 1) {
        len--;
    }

    if (len == 0) {
        return NGX_DECLINED;
    }

    if (host == NULL) {
        return NGX_OK;
    }

    host->data = ngx_pnalloc(pool, len);
    if (host->data == NULL) {
        return NGX_ERROR;
    }

    ngx_strlow(host->data, p, len);
    host->len = len;

    return NGX_OK;
}


/*
 * A subrequest made by ngx_http_subrequest() shares its parent's list of
 * fields, and the arrays of nginx 1.22: a change would change the parent's.
 * It gets its own copies first.
 */

static ngx_int_t
ngx_http_jvm_header_in_own(ngx_http_request_t *r)
{
    ngx_uint_t        i, n;
    ngx_list_t        old;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h, *nh;

    if (r == r->main || r->parent == NULL) {
        return NGX_OK;
    }

#if (nginx_version < 1023000)

    ngx_http_jvm_header_in_unshare(r, cookies);

#if (NGX_HTTP_X_FORWARDED_FOR)
    ngx_http_jvm_header_in_unshare(r, x_forwarded_for);
#endif

#endif

    if (r->headers_in.headers.part.elts
        != r->parent->headers_in.headers.part.elts)
    {
        return NGX_OK;
    }

    old = r->headers_in.headers;

    n = 0;

    for (part = &old.part; part; part = part->next) {
        n += part->nelts;
    }

    if (ngx_list_init(&r->headers_in.headers, r->pool, n + 8,
                      sizeof(ngx_table_elt_t))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    for (part = &old.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            nh = ngx_list_push(&r->headers_in.headers);
            if (nh == NULL) {
                return NGX_ERROR;
            }

            *nh = h[i];
        }
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: subrequest's own copy of %ui request headers", n);

    return NGX_OK;
}


/*
 * Takes the fields named "name" out of the list, moving the others up in
 * their order; with a value, the first of them stays, with that value.
 * Whether one stayed.  The parts after the last one in use are let go
 * (they are in the request's pool); each part left is full but the last,
 * as ngx_list_push() leaves them.
 */

static ngx_uint_t
ngx_http_jvm_header_in_drop(ngx_list_t *list, ngx_str_t *name,
    ngx_str_t *value)
{
    ngx_uint_t        i, w, kept;
    ngx_list_part_t  *part, *wpart;
    ngx_table_elt_t  *h, *wh;

    kept = 0;
    wpart = &list->part;
    w = 0;

    for (part = &list->part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {

            if (h[i].key.len == name->len
                && ngx_strncasecmp(h[i].key.data, name->data, name->len)
                   == 0)
            {
                if (value == NULL || kept) {
                    continue;
                }

                h[i].value = *value;
                kept = 1;
            }

            /* the writer is never ahead of the reader: its part is done */

            if (w == wpart->nelts) {
                wpart = wpart->next;
                w = 0;
            }

            wh = wpart->elts;

            if (&wh[w] != &h[i]) {
                wh[w] = h[i];
            }

            w++;
        }
    }

    wpart->nelts = w;
    wpart->next = NULL;
    list->last = wpart;

    return kept;
}


static ngx_int_t
ngx_http_jvm_header_in_push(ngx_http_request_t *r, ngx_str_t *name,
    ngx_str_t *value)
{
    u_char           *low;
    ngx_table_elt_t  *h;

    low = ngx_pnalloc(r->pool, name->len);
    if (low == NULL) {
        return NGX_ERROR;
    }

    h = ngx_list_push(&r->headers_in.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = ngx_hash_strlow(low, name->data, name->len);
    h->key = *name;
    h->value = *value;
    h->lowcase_key = low;
#if (nginx_version >= 1023000)
    h->next = NULL;
#endif

    return NGX_OK;
}


/*
 * Every field nginx keeps apart is found again in the list, as its parser
 * finds them: the first of a name (nginx 1.23 chains the others to it), or
 * all of them for the arrays of nginx 1.22.
 */

static ngx_int_t
ngx_http_jvm_header_in_index(ngx_http_request_t *r)
{
    ngx_uint_t                  i;
    ngx_list_part_t            *part;
    ngx_table_elt_t            *h, **ph;
    ngx_http_header_t          *hh;
    ngx_http_core_main_conf_t  *cmcf;
#if (nginx_version < 1023000)
    ngx_array_t                *a;
#endif

    for (hh = ngx_http_headers_in; hh->name.len; hh++) {

        /* nginx 1.23's Cookie: no field of the struct (a handler parses) */

        if (hh->offset == 0) {
            continue;
        }

#if (nginx_version < 1023000)
        if (ngx_http_jvm_header_in_multi(hh->offset)) {
            a = (ngx_array_t *) ((char *) &r->headers_in + hh->offset);
            a->nelts = 0;
            continue;
        }
#endif

        *(ngx_table_elt_t **) ((char *) &r->headers_in + hh->offset) = NULL;
    }

    cmcf = ngx_http_get_module_main_conf(r, ngx_http_core_module);

    for (part = &r->headers_in.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
#if (nginx_version >= 1023000)
            h[i].next = NULL;
#endif

            /* hash 0: a field another module took out without removing */

            if (h[i].hash == 0) {
                continue;
            }

            hh = ngx_hash_find(&cmcf->headers_in_hash, h[i].hash,
                               h[i].lowcase_key, h[i].key.len);

            if (hh == NULL || hh->offset == 0) {
                continue;
            }

#if (nginx_version < 1023000)
            if (ngx_http_jvm_header_in_multi(hh->offset)) {
                a = (ngx_array_t *) ((char *) &r->headers_in + hh->offset);

                if (a->nalloc == 0
                    && ngx_array_init(a, r->pool, 1, sizeof(ngx_table_elt_t *))
                       != NGX_OK)
                {
                    return NGX_ERROR;
                }

                ph = ngx_array_push(a);
                if (ph == NULL) {
                    return NGX_ERROR;
                }

                *ph = &h[i];
                continue;
            }
#endif

            ph = (ngx_table_elt_t **) ((char *) &r->headers_in + hh->offset);

#if (nginx_version >= 1023000)
            while (*ph) {
                ph = &(*ph)->next;
            }

            *ph = &h[i];
#else
            if (*ph == NULL) {
                *ph = &h[i];
            }
#endif
        }
    }

    return NGX_OK;
}


#if (nginx_version < 1023000)

/* nginx 1.22 keeps every Cookie and X-Forwarded-For field, in an array. */

static ngx_uint_t
ngx_http_jvm_header_in_multi(ngx_uint_t offset)
{
    return offset == offsetof(ngx_http_headers_in_t, cookies)
#if (NGX_HTTP_X_FORWARDED_FOR)
           || offset == offsetof(ngx_http_headers_in_t, x_forwarded_for)
#endif
           ;
}

#endif


/* What nginx derived from Host, User-Agent or Connection, derived again. */

static ngx_int_t
ngx_http_jvm_header_in_derive(ngx_http_request_t *r, ngx_str_t *name)
{
    ngx_str_t  *v;

    if (ngx_http_jvm_header_is(name, "Host")) {

        /* $host: without a Host field, the server's name */

        if (r->headers_in.host == NULL) {
            ngx_str_null(&r->headers_in.server);
            return NGX_OK;
        }

        return ngx_http_jvm_header_in_host(&r->headers_in.host->value,
                                           &r->headers_in.server, r->pool)
               == NGX_ERROR ? NGX_ERROR : NGX_OK;
    }

    if (ngx_http_jvm_header_is(name, "User-Agent")) {
        ngx_http_jvm_header_in_browser(r, r->headers_in.user_agent
                                          ? &r->headers_in.user_agent->value
                                          : NULL);
        return NGX_OK;
    }

    if (ngx_http_jvm_header_is(name, "Connection")) {
        r->headers_in.connection_type = 0;

        if (r->headers_in.connection) {
            v = &r->headers_in.connection->value;

            if (ngx_strlcasestrn(v->data, v->data + v->len,
                                 (u_char *) "close", 5 - 1))
            {
                r->headers_in.connection_type = NGX_HTTP_CONNECTION_CLOSE;

            } else if (ngx_strlcasestrn(v->data, v->data + v->len,
                                        (u_char *) "keep-alive", 10 - 1))
            {
                r->headers_in.connection_type =
                                             NGX_HTTP_CONNECTION_KEEP_ALIVE;
            }
        }
    }

    return NGX_OK;
}


/*
 * The browser flags nginx's parser sets from User-Agent (msie_padding,
 * msie_refresh, gzip_disable "msie6" and the like read them), set again
 * as it sets them.
 */

static void
ngx_http_jvm_header_in_browser(ngx_http_request_t *r, ngx_str_t *ua)
{
    u_char  *msie, *end;

    r->headers_in.msie = 0;
    r->headers_in.msie6 = 0;
    r->headers_in.opera = 0;
    r->headers_in.gecko = 0;
    r->headers_in.chrome = 0;
    r->headers_in.safari = 0;
    r->headers_in.konqueror = 0;

    if (ua == NULL) {
        return;
    }

    end = ua->data + ua->len;
    msie = ngx_http_jvm_header_in_find(ua, ua->data, "MSIE ");

    if (msie && msie + 7 < end) {
        r->headers_in.msie = 1;

        if (msie[6] == '.') {
            if (msie[5] == '4' || msie[5] == '5'
                || (msie[5] == '6'
                    && ngx_http_jvm_header_in_find(ua, msie + 8, "SV1")
                       == NULL))
            {
                r->headers_in.msie6 = 1;
            }
        }
    }

    if (ngx_http_jvm_header_in_find(ua, ua->data, "Opera")) {
        r->headers_in.opera = 1;
        r->headers_in.msie = 0;
        r->headers_in.msie6 = 0;
    }

    if (r->headers_in.msie || r->headers_in.opera) {
        return;
    }

    if (ngx_http_jvm_header_in_find(ua, ua->data, "Gecko/")) {
        r->headers_in.gecko = 1;

    } else if (ngx_http_jvm_header_in_find(ua, ua->data, "Chrome/")) {
        r->headers_in.chrome = 1;

    } else if (ngx_http_jvm_header_in_find(ua, ua->data, "Safari/")
               && ngx_http_jvm_header_in_find(ua, ua->data, "Mac OS X"))
    {
        r->headers_in.safari = 1;

    } else if (ngx_http_jvm_header_in_find(ua, ua->data, "Konqueror")) {
        r->headers_in.konqueror = 1;
    }
}


/* "what" in s from "from" on, case counting; NULL when it is not there. */

static u_char *
ngx_http_jvm_header_in_find(ngx_str_t *s, u_char *from, const char *what)
{
    u_char  *p, *last;
    size_t   n;

    n = ngx_strlen(what);

    if (s->len < n) {
        return NULL;
    }

    last = s->data + s->len - n;

    for (p = from; p <= last; p++) {
        if (ngx_strncmp(p, what, n) == 0) {
            return p;
        }
    }

    return NULL;
}
