
/*
 * nginx-jvm: the handlers a configuration names.  Every directive that
 * names one (jvm_content, jvm_status, the phase directives, jvm_set) gets
 * its id here, so that each name is loaded once when the worker starts
 * (Worker.register, in the order of the ids).
 */


#include "ngx_http_jvm_module.h"


/*
 * The id of a handler named by a directive: one instance per name, shared
 * by every directive naming it, loaded when the worker starts.
 */

ngx_int_t
ngx_http_jvm_handler_index(ngx_conf_t *cf, ngx_str_t *value,
    const char *directive)
{
    ngx_str_t                 *name;
    ngx_uint_t                 i;
    ngx_http_jvm_main_conf_t  *jmcf;

    if (ngx_http_jvm_valid_handler_name(value) != NGX_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%s: invalid handler \"%V\": expected a "
                           "Clojure var (my.ns/handler) or a Java class "
                           "(com.example.Hello)", directive, value);
        return NGX_ERROR;
    }

    jmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_jvm_module);

    name = jmcf->handlers.elts;

    for (i = 0; i < jmcf->handlers.nelts; i++) {
        if (name[i].len == value->len
            && ngx_strncmp(name[i].data, value->data, value->len) == 0)
        {
            ngx_log_debug3(NGX_LOG_DEBUG_HTTP, cf->log, 0,
                           "jvm: %s \"%V\": handler %ui, shared",
                           directive, value, i);
            return i;
        }
    }

    name = ngx_array_push(&jmcf->handlers);
    if (name == NULL) {
        return NGX_ERROR;
    }

    *name = *value;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, cf->log, 0,
                   "jvm: %s \"%V\": handler %ui, new", directive, value, i);

    return i;
}


/*
 * A Clojure var "ns/name" or a Java class name "a.b.C": non-empty parts of
 * characters that can appear in either, at most one "/" and not at an end.
 */

ngx_int_t
ngx_http_jvm_valid_handler_name(ngx_str_t *name)
{
    u_char      c;
    ngx_uint_t  i, slashes;

    if (name->len == 0
        || name->data[0] == '/' || name->data[0] == '.'
        || name->data[name->len - 1] == '/'
        || name->data[name->len - 1] == '.')
    {
        return NGX_ERROR;
    }

    slashes = 0;

    for (i = 0; i < name->len; i++) {
        c = name->data[i];

        if (c == '/') {
            if (++slashes > 1) {
                return NGX_ERROR;
            }

            continue;
        }

        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
            || (c >= '0' && c <= '9') || c >= 0x80
            || ngx_strchr("._$-*+!?<>='", c) != NULL)
        {
            continue;
        }

        return NGX_ERROR;
    }

    return NGX_OK;
}
