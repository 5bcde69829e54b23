
/*
 * nginx-jvm: the one encoder of header fields for Java: a list of them
 * (the request's, as received, in ngx_http_jvm_request.c), and a
 * response's as the client gets them (a header filter's handler in
 * ngx_http_jvm_phase.c, a subrequest's answer).  The writer and the
 * reader of the layouts are inline, in ngx_http_jvm_wire.h.
 */


#include "ngx_http_jvm_module.h"


#define NGX_HTTP_JVM_HTTP_TIME  sizeof("Mon, 28 Sep 1970 06:00:00 GMT")


/*
 * What ngx_http_jvm_put_header_list() writes for list, at most: a name and
 * a value string for each field.
 */

size_t
ngx_http_jvm_header_list_size(ngx_list_t *list)
{
    size_t            size;
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    size = 0;
    part = &list->part;
    h = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        size += 2 * sizeof(uint32_t) + h[i].key.len + h[i].value.len;
    }

    return size;
}


/*
 * Each field of list as a name and a value string; *n counts them.  With
 * "live", those with hash 0 are left out: nginx's header filter skips
 * them, they are deleted.  The request's fields go as received, all of
 * them.  The caller writes the count where it wants it.
 */

u_char *
ngx_http_jvm_put_header_list(u_char *p, ngx_list_t *list, ngx_uint_t live,
    uint32_t *n)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    part = &list->part;
    h = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (live && h[i].hash == 0) {
            continue;
        }

        p = ngx_http_jvm_put_str(p, h[i].key.data, h[i].key.len);
        p = ngx_http_jvm_put_str(p, h[i].value.data, h[i].value.len);
        (*n)++;
    }

    return p;
}


/* What ngx_http_jvm_put_headers_out() writes for r, at most. */

size_t
ngx_http_jvm_headers_out_size(ngx_http_request_t *r)
{
    return sizeof(uint32_t)
           + 3 * 2 * sizeof(uint32_t) + sizeof("Content-Type")
           + sizeof("Content-Length") + sizeof("Last-Modified")
           + r->headers_out.content_type.len
           + NGX_OFF_T_LEN + NGX_HTTP_JVM_HTTP_TIME
           + ngx_http_jvm_header_list_size(&r->headers_out.headers);
}


/*
 * A response's header fields as the client gets them from nginx's header
 * filter: those nginx keeps apart (Content-Type, Content-Length,
 * Last-Modified), then those of the list.  An int count, then a name and
 * a value string each.  The same for a response a phase handler sees and
 * for a subrequest's.
 */

u_char *
ngx_http_jvm_put_headers_out(ngx_http_request_t *r, u_char *p)
{
    u_char    *count;
    u_char     num[NGX_OFF_T_LEN], time[NGX_HTTP_JVM_HTTP_TIME];
    uint32_t   n;

    count = p;
    p = ngx_http_jvm_put_int(p, 0);
    n = 0;

    if (r->headers_out.content_type.len) {
        p = ngx_http_jvm_put_str(p, (u_char *) "Content-Type",
                                 sizeof("Content-Type") - 1);
        p = ngx_http_jvm_put_str(p, r->headers_out.content_type.data,
                                 r->headers_out.content_type.len);
        n++;
    }

    if (r->headers_out.content_length == NULL
        && r->headers_out.content_length_n >= 0)
    {
        p = ngx_http_jvm_put_str(p, (u_char *) "Content-Length",
                                 sizeof("Content-Length") - 1);
        p = ngx_http_jvm_put_str(p, num,
                                 ngx_sprintf(num, "%O",
                                     r->headers_out.content_length_n)
                                 - num);
        n++;
    }

    if (r->headers_out.last_modified == NULL
        && r->headers_out.last_modified_time != -1)
    {
        p = ngx_http_jvm_put_str(p, (u_char *) "Last-Modified",
                                 sizeof("Last-Modified") - 1);
        p = ngx_http_jvm_put_str(p, time,
                                 ngx_http_time(time,
                                     r->headers_out.last_modified_time)
                                 - time);
        n++;
    }

    p = ngx_http_jvm_put_header_list(p, &r->headers_out.headers, 1, &n);

    (void) ngx_http_jvm_put_int(count, n);

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "jvm: response header fields for Java: %uD, %uz bytes",
                   n, (size_t) (p - count));

    return p;
}
