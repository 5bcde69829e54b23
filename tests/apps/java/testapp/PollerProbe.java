package testapp;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

/**
 * Reads a line from 127.0.0.1:?port= and answers how long after the
 * handler began the read returned ("read N ms"): whether a virtual
 * thread's socket I/O goes on while something else holds the event loop
 * (the JDK's I/O pollers must not run on the loop: test_coloop.py).
 */
public final class PollerProbe implements Handler {
    @Override
    public Response handle(Request r) throws Exception {
        long start = System.nanoTime();
        int port = Integer.parseInt(r.queryString().replaceAll(".*port=(\\d+).*", "$1"));
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.getOutputStream().write("hi\n".getBytes(StandardCharsets.US_ASCII));
            String line = new BufferedReader(new InputStreamReader(s.getInputStream(),
                    StandardCharsets.US_ASCII)).readLine();
            long ms = (System.nanoTime() - start) / 1_000_000;
            return Response.of(200, "text/plain", "read " + ms + " ms: " + line);
        }
    }
}
