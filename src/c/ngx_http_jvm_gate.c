
/*
 * nginx-jvm: the one gate every string from Java passes on its way to a
 * wire (docs/security.md, "Doors").
 *
 * A handler's strings become response header fields, variables that nginx
 * puts into headers, redirects and upstream requests, the URI and args of
 * a request line, request header fields and subrequests.  Each door names
 * its kind; each kind has one rule, from RFC 9110 and nginx's own parser:
 *
 *   token     a method, a header field's name: tchar only (5.6.2), not
 *             empty: a colon, a space or a CR would end the name early
 *   value     a header field's or a variable's value: no control character
 *             but HTAB (5.5): CR or LF split the message, NUL, VT or DEL
 *             read differently to each client and proxy
 *   uri       a path as nginx routes on it (decoded, as $uri): "/" first,
 *             no control character, no ".." segment (nginx refuses such a
 *             URI in SSI and X-Accel-Redirect: ngx_http_parse_unsafe_uri);
 *             proxy_pass escapes the rest (space, "?", "%") on its way out
 *   args      a query string, which nginx sends as it is: no control
 *             character and no space, which would end the request target
 *
 * The refusal's text names the door and the field or variable, and shows
 * the value with its bytes escaped: the caller throws it into the handler
 * (a synchronous call) or logs it and answers 500.  nginx.jvm.Gate holds
 * the same rules, so that a handler's call fails early with the same text;
 * this file stays the authority.
 */


#include "ngx_http_jvm_module.h"


#define NGX_HTTP_JVM_RULE_TOKEN   0
#define NGX_HTTP_JVM_RULE_VALUE   1
#define NGX_HTTP_JVM_RULE_URI     2
#define NGX_HTTP_JVM_RULE_ARGS    3

#define NGX_HTTP_JVM_GATE_SHOW    64    /* bytes of a value a refusal shows */


typedef struct {
    const char    *what;
    ngx_uint_t     rule;
    const char    *prefix;              /* of the name shown: "$" */
} ngx_http_jvm_door_t;


static const char *ngx_http_jvm_gate_rule(ngx_uint_t rule, ngx_str_t *s,
    u_char *why, size_t size);
static u_char *ngx_http_jvm_gate_quote(u_char *p, u_char *last,
    ngx_str_t *s);


/* indexed by NGX_HTTP_JVM_DOOR_* (ngx_http_jvm_module.h) */

static ngx_http_jvm_door_t  ngx_http_jvm_doors[] = {
    { "response header field name", NGX_HTTP_JVM_RULE_TOKEN, "" },
    { "value of the response header field", NGX_HTTP_JVM_RULE_VALUE, "" },
    { "request header field name", NGX_HTTP_JVM_RULE_TOKEN, "" },
    { "value of the request header field", NGX_HTTP_JVM_RULE_VALUE, "" },
    { "subrequest method", NGX_HTTP_JVM_RULE_TOKEN, "" },
    { "subrequest URI", NGX_HTTP_JVM_RULE_URI, "" },
    { "subrequest args", NGX_HTTP_JVM_RULE_ARGS, "" },
    { "subrequest header field name", NGX_HTTP_JVM_RULE_TOKEN, "" },
    { "value of the subrequest header field", NGX_HTTP_JVM_RULE_VALUE, "" },
    { "value of the variable", NGX_HTTP_JVM_RULE_VALUE, "$" },
    { "URI", NGX_HTTP_JVM_RULE_URI, "" },
    { "args", NGX_HTTP_JVM_RULE_ARGS, "" }
};


/* RFC 9110, 5.6.2: tchar */

static uint32_t  ngx_http_jvm_tchar[] = {
    0x00000000, /* 0000 0000 0000 0000  0000 0000 0000 0000 */

                /* ?>=< ;:98 7654 3210  /.-, +*)( '&%$ #"!  */
    0x03ff6cfa, /* 0000 0011 1111 1111  0110 1100 1111 1010 */

                /* _^]\ [ZYX WVUT SRQP  ONML KJIH GFED CBA@ */
    0xc7fffffe, /* 1100 0111 1111 1111  1111 1111 1111 1110 */

                /*  ~}| {zyx wvut srqp  onml kjih gfed cba` */
    0x57ffffff, /* 0101 0111 1111 1111  1111 1111 1111 1111 */

    0x00000000, 0x00000000, 0x00000000, 0x00000000
};


/* the text of the last refusal: the event loop only, one at a time */

static u_char  ngx_http_jvm_gate_text[512];


/*
 * NULL when "value" may pass door "door"; else why not, naming the door
 * and "name" (the field or the variable; NULL where the value is its own
 * name: a method, a URI, args).  The text lives until the next refusal.
 */

const char *
ngx_http_jvm_gate(ngx_uint_t door, ngx_str_t *name, ngx_str_t *value)
{
    u_char               *p, *last, why[128];
    const char           *err;
    ngx_http_jvm_door_t  *d;

    d = &ngx_http_jvm_doors[door];

    err = ngx_http_jvm_gate_rule(d->rule, value, why, sizeof(why));

    if (err == NULL) {
        return NULL;
    }

    p = ngx_http_jvm_gate_text;
    last = p + sizeof(ngx_http_jvm_gate_text) - 1;

    p = ngx_slprintf(p, last, "refused the %s \"%s", d->what, d->prefix);
    p = ngx_http_jvm_gate_quote(p, last, name ? name : value);
    p = ngx_slprintf(p, last, "\": %s", err);
    *p = '\0';

    return (const char *) ngx_http_jvm_gate_text;
}


/* As ngx_http_jvm_gate(), a refusal logged: the caller answers 500. */

ngx_int_t
ngx_http_jvm_gate_log(ngx_log_t *log, ngx_uint_t door, ngx_str_t *name,
    ngx_str_t *value)
{
    const char  *err;

    err = ngx_http_jvm_gate(door, name, value);

    if (err == NULL) {
        return NGX_OK;
    }

    ngx_log_error(NGX_LOG_ERR, log, 0, "jvm: %s", err);

    return NGX_DECLINED;
}


/* True for a text of ngx_http_jvm_gate(): it names its field itself. */

ngx_uint_t
ngx_http_jvm_gate_refused(const char *text)
{
    return text == (const char *) ngx_http_jvm_gate_text;
}


/* NULL, or why s breaks the rule (a constant, or written into why). */

static const char *
ngx_http_jvm_gate_rule(ngx_uint_t rule, ngx_str_t *s, u_char *why,
    size_t size)
{
    u_char      c, *p, *last;
    ngx_uint_t  i;

    last = why + size - 1;

    if (rule == NGX_HTTP_JVM_RULE_URI
        && (s->len == 0 || s->data[0] != '/'))
    {
        return "it does not start with \"/\"";
    }

    if (rule == NGX_HTTP_JVM_RULE_TOKEN && s->len == 0) {
        return "it is empty";
    }

    for (i = 0; i < s->len; i++) {
        c = s->data[i];

        if (rule == NGX_HTTP_JVM_RULE_TOKEN) {
            if (ngx_http_jvm_tchar[c >> 5] & (1U << (c & 0x1f))) {
                continue;
            }

            return "it is no HTTP token (RFC 9110, 5.6.2: letters, digits "
                   "and !#$%&'*+-.^_`|~)";
        }

        if (rule == NGX_HTTP_JVM_RULE_ARGS && c == ' ') {
            return "it holds a space (nginx sends args as they are: "
                   "escape it)";
        }

        if ((c >= 0x20 && c != 0x7f)
            || (c == '\t' && rule == NGX_HTTP_JVM_RULE_VALUE))
        {
            continue;
        }

        p = ngx_slprintf(why, last, "it holds the control character 0x%02Xd "
                         "(%s)", (int) c,
                         rule == NGX_HTTP_JVM_RULE_VALUE
                         ? "a value may hold none but HTAB: RFC 9110, 5.5"
                         : "a request line's parts may hold none");
        *p = '\0';

        return (const char *) why;
    }

    if (rule != NGX_HTTP_JVM_RULE_URI) {
        return NULL;
    }

    /* a ".." segment: "/../", or "/.." at the end */

    for (i = 0; i + 2 < s->len; i++) {
        if (s->data[i] == '/' && s->data[i + 1] == '.'
            && s->data[i + 2] == '.'
            && (i + 3 == s->len || s->data[i + 3] == '/'))
        {
            return "it holds a \"..\" segment (nginx refuses such a URI, as "
                   "ngx_http_parse_unsafe_uri() does)";
        }
    }

    return NULL;
}


/*
 * The value's first bytes, each control, quote, backslash or 8-bit byte as
 * \xNN: a log line stays one line, whatever the handler gave.
 */

static u_char *
ngx_http_jvm_gate_quote(u_char *p, u_char *last, ngx_str_t *s)
{
    u_char      c;
    ngx_uint_t  i;

    for (i = 0; i < s->len && i < NGX_HTTP_JVM_GATE_SHOW; i++) {
        c = s->data[i];

        if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
            p = ngx_slprintf(p, last, "\\x%02Xd", (int) c);

        } else if (p < last) {
            *p++ = c;
        }
    }

    if (s->len > NGX_HTTP_JVM_GATE_SHOW) {
        p = ngx_slprintf(p, last, "...");
    }

    return p;
}
