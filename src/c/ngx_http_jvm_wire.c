
/*
 * nginx-jvm: what the layouts of the wire protocol share between the
 * request, its phases and subrequests: a response's header fields.
 */


#include "ngx_http_jvm_module.h"


#define NGX_HTTP_JVM_HTTP_TIME  sizeof("Mon, 28 Sep 1970 06:00:00 GMT")


/* What ngx_http_jvm_put_headers_out() writes for r, at most. */

size_t
ngx_http_jvm_headers_out_size(ngx_http_request_t *r)
{
    size_t            size;
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    size = 4 + 3 * 8 + sizeof("Content-Type") + sizeof("Content-Length")
           + sizeof("Last-Modified") + r->headers_out.content_type.len
           + NGX_OFF_T_LEN + NGX_HTTP_JVM_HTTP_TIME;

    part = &r->headers_out.headers.part;
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

        size += 8 + h[i].key.len + h[i].value.len;
    }

    return size;
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
    u_char           *count;
    u_char            num[NGX_OFF_T_LEN], time[NGX_HTTP_JVM_HTTP_TIME];
    uint32_t          n;
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    count = p;
    p += sizeof(uint32_t);
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

    part = &r->headers_out.headers.part;
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

        if (h[i].hash == 0) {
            continue;
        }

        p = ngx_http_jvm_put_str(p, h[i].key.data, h[i].key.len);
        p = ngx_http_jvm_put_str(p, h[i].value.data, h[i].value.len);
        n++;
    }

    (void) ngx_http_jvm_put_int(count, n);

    return p;
}
