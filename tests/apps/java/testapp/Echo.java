package testapp;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/** Answers what it saw of the request, as JSON. */
public final class Echo implements Handler {
    @Override
    public Response handle(Request r) throws Exception {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        try (InputStream in = r.body()) {
            in.transferTo(body);
        }
        StringBuilder j = new StringBuilder("{");
        field(j, "method", r.method());
        field(j, "uri", r.uri());
        field(j, "query", r.queryString());
        field(j, "protocol", r.protocol());
        field(j, "scheme", r.scheme());
        j.append("\"https\":").append(r.isHttps()).append(',');
        field(j, "serverName", r.serverName());
        j.append("\"serverPort\":").append(r.serverPort()).append(',');
        field(j, "remoteAddr", r.remoteAddr());
        j.append("\"headerCount\":").append(r.headerCount()).append(',');
        j.append("\"headerNames\":[");
        for (int i = 0; i < r.headerCount(); i++) {
            j.append(i > 0 ? "," : "");
            string(j, r.headerName(i));
        }
        j.append("],\"headers\":{");
        boolean first = true;
        for (Map.Entry<String, String> e : r.headers().entrySet()) {
            j.append(first ? "" : ",");
            first = false;
            string(j, e.getKey());
            j.append(':');
            string(j, e.getValue());
        }
        j.append("},");
        field(j, "hostAnyCase", r.header("HoSt"));
        j.append("\"hasBody\":").append(r.hasBody()).append(',');
        j.append("\"sslClientCert\":").append(r.sslClientCert() != null).append(',');
        field(j, "body", new String(body.toByteArray(), StandardCharsets.ISO_8859_1));
        j.setLength(j.length() - 1);
        j.append('}');
        return Response.of(200, "application/json", j.toString());
    }

    private static void field(StringBuilder j, String name, String value) {
        string(j, name);
        j.append(':');
        if (value == null) {
            j.append("null");
        } else {
            string(j, value);
        }
        j.append(',');
    }

    private static void string(StringBuilder j, String s) {
        j.append('"');
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                j.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                j.append(String.format("\\u%04x", (int) c));
            } else {
                j.append(c);
            }
        }
        j.append('"');
    }
}
