package nginx.jvm;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The handler of {@code jvm_status} locations: every live worker's figures
 * (published by {@link Metrics} into shared memory), in the Prometheus text
 * exposition format (version 0.0.4). Request counters are totals over the
 * workers; JVM figures are one series per worker ({@code worker}, {@code pid}).
 * Under it, {@code .../profile} profiles every worker ({@link Profile}): the
 * C module runs jvm_status locations with jvm_async on, so that a profile
 * answers when its seconds are over without holding a thread or the loop.
 */
final class Status implements Handler, AsyncHandler {
    private static final String TYPE = "text/plain; version=0.0.4; charset=utf-8";

    @Override
    public void handle(Request request, Responder responder) {
        if (request.path().endsWith("/profile")) {
            profile(request, responder);
        } else {
            responder.respond(handle(request));
        }
    }

    private static void profile(Request request, Responder responder) {
        SharedDict dict = Metrics.dict();
        String[] why = new String[1];
        Profile.Ask ask = Profile.parse(request.queryString(), why);
        if (dict == null || ask == null) {
            responder.respond(Response.of(dict == null ? 500 : 400, "text/plain",
                    (dict == null ? "jvm_status: figures are not published" : "profile: " + why[0]) + "\n"));
            return;
        }
        String format = formatOf(request.queryString());
        if (format == null) {
            responder.respond(Response.of(400, "text/plain", "profile: format must be html, svg or folded\n"));
            return;
        }
        if (!Profile.claim(dict, ask)) {
            responder.respond(Response.of(409, "text/plain",
                    "profile: another profile is running; try again when it is over\n"));
            return;
        }
        List<Long> pids = new ArrayList<>();
        for (String key : dict.keys(4096)) {
            if (key.startsWith("w:")) {
                pids.add(Long.parseLong(key.substring(2)));
            }
        }
        Profile.start(ask);
        Thread t = new Thread(() -> {
            Response answer;
            try {
                List<Profile.Part> parts;
                try {
                    parts = Profile.collect(dict, ask, pids);
                } finally {
                    // free before the answer leaves: a client that asks again
                    // as soon as it has one must not find this profile running
                    Profile.release(dict, ask);
                }
                FlameGraph g = new FlameGraph(parts, ask.alloc(), ask.seconds(), pids.size());
                answer = switch (format) {
                    case "svg" -> Response.of(200, "image/svg+xml", g.svg());
                    case "folded" -> Response.of(200, "text/plain; charset=utf-8", g.folded());
                    default -> Response.of(200, "text/html; charset=utf-8", g.html());
                };
            } catch (Throwable e) {
                responder.raise(e);
                return;
            }
            responder.respond(answer);
        }, "nginx-jvm profile answer");
        t.setDaemon(true);
        t.start();
    }

    private static String formatOf(String query) {
        for (String kv : query == null ? new String[0] : query.split("&")) {
            if (kv.startsWith("format=")) {
                String f = kv.substring(7);
                return f.equals("html") || f.equals("svg") || f.equals("folded") ? f : null;
            }
        }
        return "html";
    }

    @Override
    public Response handle(Request request) {
        if (request.path().endsWith("/profile")) {
            return Response.of(400, "text/plain", "profile: the location has \"jvm_async off\";"
                    + " a profile answers through jvm_async on (jvm_status's default)\n");
        }
        SharedDict dict = Metrics.dict();
        if (dict == null) {
            return Response.of(500, "text/plain", "jvm_status: figures are not published\n");
        }
        Metrics.publish();              // this worker's, fresh
        List<Map<String, String>> workers = new ArrayList<>();
        for (String key : dict.keys(4096)) {
            if (key.startsWith("w:")) {
                String text = dict.getString(key);
                if (text != null) {
                    Map<String, String> w = parse(text);
                    w.put("pid", key.substring(2));
                    workers.add(w);
                }
            }
        }
        Object timeouts = dict.get("timeouts");
        return Response.of(200, TYPE, render(workers, timeouts == null ? 0 : ((Number) timeouts).longValue()));
    }

    static Map<String, String> parse(String text) {
        Map<String, String> m = new LinkedHashMap<>();
        for (String line : text.split("\n")) {
            int tab = line.indexOf('\t');
            if (tab > 0) {
                m.put(line.substring(0, tab), line.substring(tab + 1));
            }
        }
        return m;
    }

    private static double sum(List<Map<String, String>> workers, String name) {
        double s = 0;
        for (Map<String, String> w : workers) {
            String v = w.get(name);
            if (v != null) {
                s += Double.parseDouble(v);
            }
        }
        return s;
    }

    private static String num(double v) {
        if (v == Math.rint(v) && Math.abs(v) < 1e15) {
            return Long.toString((long) v);
        }
        return String.format(Locale.ROOT, "%.6f", v);
    }

    static String render(List<Map<String, String>> workers, long timeouts) {
        StringBuilder b = new StringBuilder(4096);
        head(b, "nginx_jvm_workers", "gauge", "Workers whose figures are included.");
        b.append("nginx_jvm_workers ").append(workers.size()).append('\n');

        head(b, "nginx_jvm_requests_total", "counter",
                "Responses of JVM handlers, by jvm_mode and status class, all workers.");
        for (String mode : Metrics.MODES) {
            for (int c = 1; c <= 5; c++) {
                b.append("nginx_jvm_requests_total{mode=\"").append(mode).append("\",status=\"")
                        .append(c).append("xx\"} ")
                        .append(num(sum(workers, "responses " + mode + " " + c + "xx"))).append('\n');
            }
        }
        total(b, workers, "nginx_jvm_requests_in_flight", "gauge", "in_flight",
                "Requests a JVM handler is serving, all workers.");
        total(b, workers, "nginx_jvm_queue_depth", "gauge", "queued",
                "Requests waiting for a pool thread, all workers.");
        total(b, workers, "nginx_jvm_rejected_total", "counter", "refused",
                "Requests answered 503: the pool's queue or the virtual threads' limit was full.");
        total(b, workers, "nginx_jvm_aborted_total", "counter", "aborted",
                "Requests whose client left before the response was complete (handlers off the loop, async).");
        total(b, workers, "nginx_jvm_loop_held_total", "counter", "loop_held",
                "jvm_mode coloop handlers that held the event loop beyond the watchdog's threshold.");
        total(b, workers, "nginx_jvm_trace_dropped_total", "counter", "trace_dropped",
                "Spans the tracing export queue dropped, full: the collector slow or gone (0 untraced).");
        total(b, workers, "nginx_jvm_calls_in_flight", "gauge", "calls_in_flight",
                "Calls out through jvm_client locations (nginx.jvm.Upstream) begun and not ended, all workers.");
        total(b, workers, "nginx_jvm_calls_waiting", "gauge", "calls_waiting",
                "Calls out waiting for connections to spare before they begin, all workers.");
        total(b, workers, "nginx_jvm_calls_total", "counter", "calls_total",
                "Calls out begun, all workers.");
        total(b, workers, "nginx_jvm_calls_failed_total", "counter", "calls_failed",
                "Calls out that failed: no answer (garbage, nginx closed, the worker leaving) or a body cut short.");
        head(b, "nginx_jvm_timeouts_total", "counter",
                "Requests answered 504: no response within jvm_response_timeout.");
        b.append("nginx_jvm_timeouts_total ").append(timeouts).append('\n');

        head(b, "nginx_jvm_handler_seconds", "histogram",
                "Time from the request reaching the JVM to its response, all workers.");
        for (int i = 0; i <= Metrics.BUCKETS.length; i++) {
            String le = i < Metrics.BUCKETS.length ? Double.toString(Metrics.BUCKETS[i]) : "+Inf";
            b.append("nginx_jvm_handler_seconds_bucket{le=\"").append(le).append("\"} ")
                    .append(num(sum(workers, "bucket " + le))).append('\n');
        }
        b.append("nginx_jvm_handler_seconds_sum ").append(num(sum(workers, "time_sum"))).append('\n');
        b.append("nginx_jvm_handler_seconds_count ").append(num(sum(workers, "time_count"))).append('\n');

        if (workers.stream().anyMatch(w -> w.containsKey("alloc_count"))) {
            histogram(b, workers, "nginx_jvm_handler_alloc_bytes", "alloc", Metrics.ALLOC_BUCKETS,
                    "Bytes the JVM allocated for a request, on the threads that ran it ($jvm_alloc_bytes)," +
                    " all workers.");
            histogram(b, workers, "nginx_jvm_handler_cpu_seconds", "cpu", Metrics.CPU_BUCKETS,
                    "CPU time of the threads that ran a request's JVM code ($jvm_cpu_us), all workers.");
        }
        perWorker(b, workers, "nginx_jvm_heap_used_bytes", "gauge", "Java heap in use.", "heap_used");
        perWorker(b, workers, "nginx_jvm_heap_committed_bytes", "gauge", "Java heap committed.",
                "heap_committed");
        perWorker(b, workers, "nginx_jvm_gc_collections_total", "counter", "Garbage collections.",
                "gc_count");
        perWorker(b, workers, "nginx_jvm_gc_seconds_total", "counter", "Time spent in garbage collection.",
                "gc_seconds");
        perWorker(b, workers, "nginx_jvm_threads", "gauge", "Live JVM threads.", "threads");
        perWorker(b, workers, "nginx_jvm_classes_loaded", "gauge", "Classes loaded.", "classes");
        return b.toString();
    }

    /** A histogram the workers publish as NAME_bucket LE lines, NAME_sum and NAME_count. */
    private static void histogram(StringBuilder b, List<Map<String, String>> workers, String metric,
            String name, double[] bounds, String help) {
        head(b, metric, "histogram", help);
        for (int i = 0; i <= bounds.length; i++) {
            String le = Metrics.le(bounds, i);
            b.append(metric).append("_bucket{le=\"").append(le).append("\"} ")
                    .append(num(sum(workers, name + "_bucket " + le))).append('\n');
        }
        b.append(metric).append("_sum ").append(num(sum(workers, name + "_sum"))).append('\n');
        b.append(metric).append("_count ").append(num(sum(workers, name + "_count"))).append('\n');
    }

    /** A gauge or counter of all workers together: the sum of each one's figure {@code key}. */
    private static void total(StringBuilder b, List<Map<String, String>> workers, String name, String type,
            String key, String help) {
        head(b, name, type, help);
        b.append(name).append(' ').append(num(sum(workers, key))).append('\n');
    }

    private static void head(StringBuilder b, String name, String type, String help) {
        b.append("# HELP ").append(name).append(' ').append(help).append('\n');
        b.append("# TYPE ").append(name).append(' ').append(type).append('\n');
    }

    private static void perWorker(StringBuilder b, List<Map<String, String>> workers, String metric,
            String type, String help, String name) {
        head(b, metric, type, help + " One series per worker.");
        for (Map<String, String> w : workers) {
            String v = w.get(name);
            if (v != null) {
                b.append(metric).append("{worker=\"").append(w.get("worker")).append("\",pid=\"")
                        .append(w.get("pid")).append("\"} ").append(num(Double.parseDouble(v))).append('\n');
            }
        }
    }
}
