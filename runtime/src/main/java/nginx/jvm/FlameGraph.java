package nginx.jvm;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The workers' profiles ({@link Profile.Part}) merged into one flame graph:
 * an SVG (one box a frame, as wide as its samples, callers below callees,
 * a tooltip each), inside an HTML page with the top frames of each worker
 * and how long its event loop ran Java. Also the merged stacks folded, one
 * line a stack, which flame graph tools and speedscope read.
 */
final class FlameGraph {
    static final int WIDTH = 1200;
    static final int ROW = 16;
    /** Deeper frames are cut: a Clojure stack can be hundreds deep. */
    static final int MAX_DEPTH = 200;
    /** Boxes narrower than this (pixels) are not drawn; their parent's width holds them. */
    static final double MIN_WIDTH = 0.3;

    private static final class Node {
        final String name;
        long total;
        final Map<String, Node> children = new TreeMap<>();

        Node(String name) {
            this.name = name;
        }

        Node child(String n) {
            return children.computeIfAbsent(n, Node::new);
        }
    }

    private final List<Profile.Part> parts;
    private final boolean alloc;
    private final int seconds;
    private final int expected;
    private final Node root = new Node("all");
    private int depth;

    FlameGraph(List<Profile.Part> parts, boolean alloc, int seconds, int expected) {
        this.parts = parts;
        this.alloc = alloc;
        this.seconds = seconds;
        this.expected = expected;
        for (Map.Entry<String, Long> e : merged().entrySet()) {
            Node n = root;
            n.total += e.getValue();
            String[] frames = e.getKey().split(";");
            for (int i = 0; i < frames.length && i < MAX_DEPTH; i++) {
                n = n.child(frames[i]);
                n.total += e.getValue();
            }
            depth = Math.max(depth, Math.min(frames.length, MAX_DEPTH));
        }
    }

    Map<String, Long> merged() {
        Map<String, Long> all = new HashMap<>();
        for (Profile.Part p : parts) {
            p.folded().forEach((k, v) -> all.merge(k, v, Long::sum));
        }
        return all;
    }

    String folded() {
        StringBuilder b = new StringBuilder();
        merged().entrySet().stream().sorted(Map.Entry.comparingByKey())
                .forEach(e -> b.append(e.getKey()).append(' ').append(e.getValue()).append('\n'));
        return b.toString();
    }

    private String unit(long v) {
        if (alloc) {
            return v >= 1 << 20 ? String.format(Locale.ROOT, "%.1f MB", v / 1048576.0)
                    : v >= 1024 ? String.format(Locale.ROOT, "%.1f KB", v / 1024.0) : v + " B";
        }
        return v + (v == 1 ? " sample" : " samples");
    }

    private String percent(long v, long of) {
        return of == 0 ? "0%" : String.format(Locale.ROOT, "%.2f%%", 100.0 * v / of);
    }

    String svg() {
        int height = (depth + 1) * ROW + 8;
        StringBuilder b = new StringBuilder(256 * 1024);
        b.append("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"").append(WIDTH)
                .append("\" height=\"").append(height).append("\" viewBox=\"0 0 ").append(WIDTH)
                .append(' ').append(height).append("\" font-family=\"monospace\" font-size=\"11\">\n");
        if (root.total == 0) {
            b.append("<text x=\"10\" y=\"20\">no samples</text>\n");
        } else {
            box(b, root, 0, 0, height);
        }
        return b.append("</svg>\n").toString();
    }

    /** A node's box at {@code level} (0 the root, at the bottom) and its children to its right. */
    private void box(StringBuilder b, Node n, double x, int level, int height) {
        double w = (double) n.total * WIDTH / root.total;
        if (w < MIN_WIDTH) {
            return;
        }
        double y = height - (level + 1) * ROW - 4;
        b.append("<g><title>").append(escape(n.name)).append(" (").append(unit(n.total)).append(", ")
                .append(percent(n.total, root.total)).append(")</title><rect x=\"").append(fmt(x))
                .append("\" y=\"").append(fmt(y)).append("\" width=\"").append(fmt(w))
                .append("\" height=\"").append(ROW - 1).append("\" fill=\"").append(color(n.name, level))
                .append("\" rx=\"2\"/>");
        int chars = (int) ((w - 6) / 7);
        if (chars >= 3) {
            String label = n.name.length() <= chars ? n.name : n.name.substring(0, chars - 2) + "..";
            b.append("<text x=\"").append(fmt(x + 3)).append("\" y=\"").append(fmt(y + ROW - 4))
                    .append("\">").append(escape(label)).append("</text>");
        }
        b.append("</g>\n");
        double cx = x;
        for (Node c : n.children.values()) {
            box(b, c, cx, level + 1, height);
            cx += (double) c.total * WIDTH / root.total;
        }
    }

    /** Warm colours, the same for the same frame; the runtime's own greener, the thread roots grey. */
    private static String color(String name, int level) {
        if (level <= 1) {
            return "rgb(200,200,200)";
        }
        int h = name.hashCode();
        int r = 205 + Math.floorMod(h, 50), g = 80 + Math.floorMod(h >> 8, 120), bl = 40 + Math.floorMod(h >> 16, 40);
        if (name.startsWith("nginx.jvm.")) {
            return "rgb(" + (r - 110) + "," + Math.min(255, g + 80) + "," + bl + ")";
        }
        return "rgb(" + r + "," + g + "," + bl + ")";
    }

    private static String fmt(double v) {
        return String.format(Locale.ROOT, "%.1f", v);
    }

    static String escape(String s) {
        StringBuilder b = new StringBuilder(s.length() + 8);
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '<' -> b.append("&lt;");
                case '>' -> b.append("&gt;");
                case '&' -> b.append("&amp;");
                case '"' -> b.append("&quot;");
                default -> b.append(c);
            }
        }
        return b.toString();
    }

    /** The frames a worker's samples were in when taken (the stacks' tops), most first. */
    static List<Map.Entry<String, Long>> top(Profile.Part p, int n) {
        Map<String, Long> self = new HashMap<>();
        p.folded().forEach((k, v) -> self.merge(k.substring(k.lastIndexOf(';') + 1), v, Long::sum));
        List<Map.Entry<String, Long>> l = new ArrayList<>(self.entrySet());
        l.sort((a, c) -> Long.compare(c.getValue(), a.getValue()));
        return l.subList(0, Math.min(n, l.size()));
    }

    String html() {
        StringBuilder b = new StringBuilder(300 * 1024);
        String what = alloc ? "allocation" : "CPU";
        b.append("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>nginx-jvm ").append(what)
                .append(" profile</title>\n<style>body{font-family:sans-serif;margin:1em}"
                        + "table{border-collapse:collapse}td,th{padding:2px 8px;text-align:left}"
                        + "td.n{text-align:right}tr:nth-child(even){background:#f3f3f3}"
                        + "svg text{pointer-events:none}</style></head><body>\n");
        b.append("<h1>nginx-jvm: ").append(what).append(" profile, ").append(seconds).append(" s, ")
                .append(parts.size()).append(parts.size() == 1 ? " worker" : " workers").append("</h1>\n");
        b.append("<p id=\"summary\">").append(unit(root.total)).append(alloc
                ? " allocated (JFR's weighted allocation samples)"
                : " (a sample each " + Profile.PERIOD_MILLIS + " ms of a thread running Java, by "
                        + (parts.stream().allMatch(p -> p.sampler().equals("jfr"))
                        ? "JFR" : "reading the threads' stacks at safepoints") + ")");
        if (parts.size() < expected) {
            b.append("; ").append(expected - parts.size()).append(" of ").append(expected)
                    .append(" workers sent nothing in time");
        }
        b.append(". Hover a box for its frame and share.</p>\n");
        b.append(svg());
        b.append("<h2>Each worker</h2>\n");
        for (Profile.Part p : parts) {
            b.append("<h3 class=\"worker\">worker ").append(escape(p.worker())).append(" (pid ").append(p.pid())
                    .append(")</h3>\n<p class=\"loop\">");
            if (alloc) {
                b.append("allocated on the event loop: ").append(unit(p.loop())).append(" of ").append(unit(p.total()));
            } else {
                b.append("event loop held by Java: ").append(p.loop()).append(" samples, about ")
                        .append(p.loop() * Profile.PERIOD_MILLIS).append(" ms of ").append(seconds * 1000L)
                        .append(" ms (").append(percent(p.loop() * Profile.PERIOD_MILLIS, seconds * 1000L))
                        .append(")");
            }
            b.append("; coloop handlers past the watchdog's threshold: ").append(p.held()).append("</p>\n");
            b.append("<table><tr><th>frame</th><th>").append(alloc ? "bytes" : "samples")
                    .append("</th><th>share</th></tr>\n");
            for (Map.Entry<String, Long> e : top(p, 15)) {
                b.append("<tr><td>").append(escape(e.getKey())).append("</td><td class=\"n\">")
                        .append(alloc ? unit(e.getValue()) : e.getValue()).append("</td><td class=\"n\">")
                        .append(percent(e.getValue(), p.total())).append("</td></tr>\n");
            }
            b.append("</table>\n");
        }
        return b.append("</body></html>\n").toString();
    }
}
