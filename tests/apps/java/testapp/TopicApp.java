package testapp;

import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;
import nginx.jvm.Topic;

/**
 * Topic "t" from query parameters (op, msg, n, bytes); answers text with
 * the worker's pid in X-Pid.
 */
public final class TopicApp implements Handler {
    private static final AtomicInteger second = new AtomicInteger();
    private static volatile AutoCloseable secondSub;

    @Override
    public Response handle(Request r) throws Exception {
        Map<String, String> q = Shared.query(r.queryString());
        String pid = Long.toString(ProcessHandle.current().pid());
        String body;
        try {
            body = run(q, pid);
        } catch (IllegalArgumentException e) {
            return Response.of(400, "text/plain", e.getMessage()).header("X-Pid", pid);
        }
        return Response.of(200, "text/plain", body).header("X-Pid", pid);
    }

    private static String run(Map<String, String> q, String pid) throws Exception {
        Topic t = Topic.named(q.getOrDefault("topic", "t"));
        switch (q.get("op")) {
            case "publish": {
                int n = Integer.parseInt(q.getOrDefault("n", "1"));
                int ok = 0;
                for (int i = 0; i < n; i++) {
                    if (t.publish(q.get("msg").replace("{pid}", pid).replace("{i}", Integer.toString(i)))) {
                        ok++;
                    }
                }
                return Integer.toString(ok);
            }
            case "publish-bytes":
                return Boolean.toString(t.publish(new byte[Integer.parseInt(q.get("bytes"))]));
            case "publish-bad":
                return Boolean.toString(t.publish(42));
            case "flood": {
                // until the ring is full: the event loop is busy here, so this worker reads nothing
                byte[] m = new byte[Integer.parseInt(q.get("bytes"))];
                int ok = 0, refused = 0;
                for (int i = 0; i < 100000 && refused < 10; i++) {
                    if (t.publish(m)) {
                        ok++;
                    } else {
                        refused++;
                    }
                }
                return ok + " " + refused;
            }
            case "received":
                synchronized (TopicInit.received) {
                    return String.join("\n", TopicInit.received);
                }
            case "threads":
                synchronized (TopicInit.received) {
                    return String.join("\n", TopicInit.threads);
                }
            case "clear":
                synchronized (TopicInit.received) {
                    TopicInit.received.clear();
                    TopicInit.threads.clear();
                }
                return "ok";
            case "stats":
                return t.published() + " " + t.overflows() + " " + t.maxMessage();
            case "sub2":
                secondSub = t.subscribe(m -> second.incrementAndGet());
                return Integer.toString(t.subscribers());
            case "unsub2":
                secondSub.close();
                return Integer.toString(t.subscribers());
            case "second":
                return Integer.toString(second.get());
            default:
                throw new IllegalArgumentException("no op");
        }
    }
}
