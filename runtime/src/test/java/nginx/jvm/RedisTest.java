package nginx.jvm;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** nginx.jvm.Redis without a Redis: URIs, and a server that is not there. */
@Timeout(30)
class RedisTest {
    @Test
    void refusesWhatIsNotARedisUri() {
        assertThrows(IllegalArgumentException.class, () -> Redis.connect("http://127.0.0.1:6379"));
        assertThrows(IllegalArgumentException.class, () -> Redis.connect("redis:///0"));
        assertThrows(IllegalArgumentException.class, () -> Redis.connect("redis://h:1/x"));
        assertThrows(IllegalArgumentException.class, () -> Redis.connect("redis://h:1", 0, 1));
    }

    @Test
    void aServerThatIsNotThereIsUnavailableAtOnce() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();                    // closed again: nobody listens
        }
        try (Redis r = Redis.connect("redis://:pw@127.0.0.1:" + port + "/1", 500, 2)) {
            long t0 = System.nanoTime();
            RedisUnavailable e = assertThrows(RedisUnavailable.class,
                    () -> r.get("k".getBytes(StandardCharsets.UTF_8), 0));
            assertTrue(e.getMessage().startsWith("Redis at 127.0.0.1:" + port + " is unavailable"),
                       e.getMessage());
            assertTrue(System.nanoTime() - t0 < 5_000_000_000L);
        }
    }

    @Test
    void aServerStillLoadingItsDataIsUnavailable() throws Exception {
        // a Redis just restarted answers LOADING until it has read its
        // append-only file: every command, as this one does
        try (ServerSocket loading = new ServerSocket(0)) {
            Thread server = new Thread(() -> answerEveryCommand(loading,
                    "-LOADING Redis is loading the dataset in memory\r\n"));
            server.setDaemon(true);
            server.start();
            try (Redis r = Redis.connect("redis://127.0.0.1:" + loading.getLocalPort(), 1000, 2)) {
                RedisUnavailable e = assertThrows(RedisUnavailable.class,
                        () -> r.get("k".getBytes(StandardCharsets.UTF_8), 0));
                assertTrue(e.getMessage().contains("is unavailable")
                           && e.getMessage().contains("LOADING"), e.getMessage());
            }
        }
    }

    /** Answers each RESP command of each connection with reply, until closed. */
    private static void answerEveryCommand(ServerSocket server, String reply) {
        try {
            while (true) {
                java.net.Socket s = server.accept();
                Thread t = new Thread(() -> {
                    try (s) {
                        java.io.InputStream in = s.getInputStream();
                        byte[] buf = new byte[4096];
                        boolean lineStart = true;
                        for (int n; (n = in.read(buf)) > 0; ) {
                            StringBuilder out = new StringBuilder();
                            for (int i = 0; i < n; i++) {
                                // a command is an array: "*" opening a line
                                if (lineStart && buf[i] == '*') {
                                    out.append(reply);
                                }
                                lineStart = buf[i] == '\n';
                            }
                            s.getOutputStream().write(out.toString().getBytes(StandardCharsets.UTF_8));
                        }
                    } catch (java.io.IOException e) {
                        // the client went away
                    }
                });
                t.setDaemon(true);
                t.start();
            }
        } catch (java.io.IOException e) {
            // the server socket was closed: the test is over
        }
    }

    @Test
    void aServerThatNeverAnswersTimesOut() throws Exception {
        try (ServerSocket silent = new ServerSocket(0);                // accepts, never answers
             Redis r = Redis.connect("redis://127.0.0.1:" + silent.getLocalPort(), 300, 2)) {
            long t0 = System.nanoTime();
            assertThrows(RedisUnavailable.class,
                    () -> r.set("k".getBytes(StandardCharsets.UTF_8), new byte[1], 0));
            assertTrue(System.nanoTime() - t0 < 5_000_000_000L, "bounded by the timeout");
        }
    }
}
