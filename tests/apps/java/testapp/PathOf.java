package testapp;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/**
 * Answers the paths it saw, as JSON: {@code path()}, nginx's own
 * {@code $uri} read through {@code variable("uri")} to compare it with,
 * {@code uri()} and the query; {@code path()} percent-encoded in the
 * X-Path header field too (for an auth_request subrequest, whose body
 * nobody reads).
 */
public final class PathOf implements Handler {
    @Override
    public Response handle(Request r) {
        String json = "{\"path\":" + string(r.path())
                + ",\"uriVariable\":" + string(r.variable("uri"))
                + ",\"uri\":" + string(r.uri())
                + ",\"query\":" + string(r.queryString()) + "}";
        return Response.of(200, "application/json", json)
                .header("X-Path", URLEncoder.encode(r.path(), StandardCharsets.UTF_8));
    }

    /**
     * jvm_rewrite: routes to /path/from-rewrite followed by the path it saw,
     * which goes in ?before=; fails when path() does not follow setUri().
     */
    public static final class Rewrite implements Handler {
        @Override
        public Response handle(Request r) {
            String before = r.path();
            String next = "/path/from-rewrite" + before;
            r.setUri(next);
            if (!r.path().equals(next)) {
                throw new IllegalStateException("path() after setUri(): " + r.path());
            }
            r.setVariable("args", "before=" + URLEncoder.encode(before, StandardCharsets.UTF_8));
            return null;
        }
    }

    private static String string(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder j = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                j.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                j.append(String.format("\\u%04x", (int) c));
            } else {
                j.append(c);
            }
        }
        return j.append('"').toString();
    }
}
