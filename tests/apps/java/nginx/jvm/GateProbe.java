package nginx.jvm;

import java.io.ByteArrayOutputStream;
import java.net.URLDecoder;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;

/**
 * The doors test (tests/test_doors.py): the C module's gate alone.  In the
 * runtime's package (the test classes share its class loader), it hands
 * nginx the bytes of a subrequest or a request header field as the natives
 * take them, past nginx.jvm.Gate's early checks, so that what the test
 * sees is what ngx_http_jvm_gate.c refuses.
 */
public final class GateProbe implements AsyncHandler {
    static String door(Request r) {
        return r.variable("arg_d");
    }

    static String v(Request r) {
        String v = r.variable("arg_v");
        return v == null ? "" : URLDecoder.decode(v, StandardCharsets.ISO_8859_1);
    }

    /** jvm_async on: a subrequest whose spec no Java code checked. */
    @Override
    public void handle(Request r, Responder responder) {
        String v = v(r);
        String method = "GET", uri = "/up/sub", args = "", name = null, value = null;
        switch (door(r)) {
            case "psm": method = "GET" + v; break;
            case "psu": uri = "/up/sub/" + v; break;
            case "psa": args = "a=" + v; break;
            case "pshn": name = "X-D" + v; value = "1"; break;
            default: name = "X-Door"; value = "a" + v + "b"; break;
        }
        byte[] spec = spec(method, uri, args, name, value);
        CompletableFuture<Response> f = new CompletableFuture<>();
        LoopCalls.call(() -> {
            r.started(Subrequests.start(r.live(), spec, f));
            return null;
        });
        f.whenComplete((sub, e) -> {
            if (e != null) {
                responder.raise(e);
            } else {
                responder.respond(Response.of(200, "text/plain", "sub " + sub.status()));
            }
        });
    }

    /** jvm_rewrite: a request header field no Java code checked. */
    public static final class Rewrite implements Handler {
        @Override
        public Response handle(Request r) {
            String v = v(r);
            byte[] name = latin1("phdrn".equals(door(r)) ? "X-D" + v : "X-Door");
            byte[] value = latin1("phdrn".equals(door(r)) ? "1" : "a" + v + "b");
            LoopCalls.call(() -> {
                Natives.setHeader(r.live(), name, value, false);
                return null;
            });
            return null;
        }
    }

    static byte[] latin1(String s) {
        return s.getBytes(StandardCharsets.ISO_8859_1);
    }

    static byte[] spec(String method, String uri, String args, String name, String value) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (String s : new String[] {method, uri, args}) {
            put(out, latin1(s));
        }
        putInt(out, name == null ? 0 : 1);
        if (name != null) {
            put(out, latin1(name));
            put(out, latin1(value));
        }
        put(out, new byte[0]);
        return out.toByteArray();
    }

    static void put(ByteArrayOutputStream out, byte[] b) {
        putInt(out, b.length);
        out.write(b, 0, b.length);
    }

    static void putInt(ByteArrayOutputStream out, int v) {
        byte[] b = new byte[4];
        ByteBuffer.wrap(b).order(ByteOrder.nativeOrder()).putInt(v);
        out.write(b, 0, 4);
    }
}
