package nginx.jvm;

/**
 * {@code jvm_repl [ADDR:]PORT}: a Clojure socket REPL (clojure.core.server) in
 * the worker, on ADDR (default 127.0.0.1), port PORT + the worker's number.
 * Whoever connects runs any code in the worker, as its user: for development
 * only.
 */
final class Repl {
    private Repl() {
    }

    /** Starts the REPL when the C module passed a [address:]port; the result is logged. */
    static void start() {
        String base = System.getProperty("nginx.jvm.repl");
        if (base == null) {
            return;
        }
        // the C module checked both: an IP address (IPv6 in brackets), a port
        int colon = base.lastIndexOf(':');
        String address = colon < 0 ? "127.0.0.1" : base.substring(0, colon);
        int port = Integer.parseInt(base.substring(colon + 1))
                + Integer.parseInt(System.getProperty("nginx.jvm.worker", "0"));
        String at = address + ":" + port;
        try {
            Class.forName("clojure.lang.RT");
        } catch (ClassNotFoundException e) {
            Log.error("nginx.jvm.repl", "jvm_repl: Clojure is not on the class path (jvm_classpath)", null);
            return;
        }
        try {
            ClojureRepl.start(address, port);
            Log.notice("nginx.jvm.repl", "Clojure socket REPL listening on " + at
                    + " (jvm_repl; whoever connects runs code in this worker)");
        } catch (Throwable t) {
            Log.error("nginx.jvm.repl", "jvm_repl: cannot listen on " + at, t);
        }
    }
}
