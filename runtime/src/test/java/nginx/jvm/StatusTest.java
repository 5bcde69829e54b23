package nginx.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.logging.Level;
import org.junit.jupiter.api.Test;

/** Metrics' snapshot read back by Status and added up; JUL's level mapping. */
class StatusTest {
    @Test
    void snapshotsOfTwoWorkersAddUp() {
        Metrics.response(Wire.POOL, 201, 2_000_000);       // 2 ms
        Metrics.response(Wire.POOL, 404, 20_000_000_000L); // 20 s: +Inf
        Map<String, String> a = Status.parse(Metrics.snapshot());
        Map<String, String> b = Status.parse(Metrics.snapshot());
        a.put("pid", "1");
        b.put("pid", "2");
        long twoxx = Long.parseLong(a.get("responses pool 2xx"));
        assertTrue(twoxx >= 1);
        String text = Status.render(List.of(a, b), 7);
        assertTrue(text.contains("nginx_jvm_workers 2\n"), text);
        assertTrue(text.contains("nginx_jvm_requests_total{mode=\"pool\",status=\"2xx\"} "
                + (2 * twoxx) + "\n"), text);
        assertTrue(text.contains("nginx_jvm_timeouts_total 7\n"), text);
        long count = 2 * Long.parseLong(a.get("time_count"));
        assertTrue(text.contains("nginx_jvm_handler_seconds_bucket{le=\"+Inf\"} " + count + "\n"), text);
        assertTrue(text.contains("nginx_jvm_heap_used_bytes{worker=\"0\",pid=\"2\"} "), text);
        // every line is a comment or "name[{labels}] value"
        for (String line : text.split("\n")) {
            assertTrue(line.startsWith("# ") || line.matches("[a-z_]+(\\{[^}]*\\})? [0-9.e+-]+"), line);
        }
    }

    @Test
    void costHistogramsOnlyWhereMeasuredAndAddedUp() {
        Map<String, String> off = Status.parse(Metrics.snapshot());
        off.put("pid", "1");
        assertFalse(Status.render(List.of(off), 0).contains("nginx_jvm_handler_alloc_bytes"));
        Meter.on = true;
        try {
            Metrics.cost(300, 20_000);              // 300 B, 20 µs
            Metrics.cost(10_000_000, 300_000_000);  // 10 MB, 0.3 s
            Map<String, String> a = Status.parse(Metrics.snapshot());
            Map<String, String> b = Status.parse(Metrics.snapshot());
            a.put("pid", "1");
            b.put("pid", "2");
            String text = Status.render(List.of(a, b), 0);
            long n = 2 * Long.parseLong(a.get("alloc_count"));
            assertTrue(n >= 4, text);
            assertTrue(text.contains("# TYPE nginx_jvm_handler_alloc_bytes histogram\n"), text);
            assertTrue(text.contains("nginx_jvm_handler_alloc_bytes_bucket{le=\"+Inf\"} " + n + "\n"), text);
            assertTrue(text.contains("nginx_jvm_handler_alloc_bytes_count " + n + "\n"), text);
            assertTrue(text.contains("nginx_jvm_handler_alloc_bytes_bucket{le=\"256\"} "), text);
            assertTrue(text.contains("nginx_jvm_handler_cpu_seconds_bucket{le=\"0.00001\"} "), text);
            assertTrue(text.contains("nginx_jvm_handler_cpu_seconds_bucket{le=\"0.000025\"} "), text);
            // the 10 MB request is above 4 MB, within 16 MB; the 300 B one within 1 KB
            long le1k = Long.parseLong(a.get("alloc_bucket 1024"));
            long le4m = Long.parseLong(a.get("alloc_bucket 4194304"));
            long le16m = Long.parseLong(a.get("alloc_bucket 16777216"));
            assertTrue(le1k >= 1 && le16m >= le4m + 1, a.toString());
            for (String line : text.split("\n")) {
                assertTrue(line.startsWith("# ") || line.matches("[a-z_]+(\\{[^}]*\\})? [0-9.e+-]+"), line);
            }
        } finally {
            Meter.on = false;
        }
    }

    @Test
    void julLevelsMapToNginxLevels() {
        assertEquals(Log.ERROR, JulHandler.nginxLevel(Level.SEVERE));
        assertEquals(Log.WARN, JulHandler.nginxLevel(Level.WARNING));
        assertEquals(Log.INFO, JulHandler.nginxLevel(Level.INFO));
        assertEquals(Log.DEBUG, JulHandler.nginxLevel(Level.CONFIG));
        assertEquals(Log.DEBUG, JulHandler.nginxLevel(Level.FINEST));
        assertEquals(Level.WARNING, JulHandler.julLevel(Log.WARN));
        assertEquals(Level.SEVERE, JulHandler.julLevel(Log.ERROR));
        assertEquals(Level.ALL, JulHandler.julLevel(Log.DEBUG));
    }
}
