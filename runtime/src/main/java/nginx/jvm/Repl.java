package nginx.jvm;

/**
 * {@code jvm_repl PORT}: a Clojure socket REPL (clojure.core.server) in the
 * worker, on 127.0.0.1, port PORT + the worker's number. Whoever connects
 * runs any code in the worker, as its user: for development only.
 */
final class Repl {
    private Repl() {
    }

    /** Starts the REPL when the C module passed a port; the result is logged. */
    static void start() {
        String base = System.getProperty("nginx.jvm.repl");
        if (base == null) {
            return;
        }
        int port = Integer.parseInt(base) + Integer.parseInt(System.getProperty("nginx.jvm.worker", "0"));
        try {
            Class.forName("clojure.lang.RT");
        } catch (ClassNotFoundException e) {
            Log.error("nginx.jvm.repl", "jvm_repl: Clojure is not on the class path (jvm_classpath)", null);
            return;
        }
        try {
            ClojureRepl.start(port);
            Log.notice("nginx.jvm.repl", "Clojure socket REPL listening on 127.0.0.1:" + port
                    + " (jvm_repl; whoever connects runs code in this worker)");
        } catch (Throwable t) {
            Log.error("nginx.jvm.repl", "jvm_repl: cannot listen on 127.0.0.1:" + port, t);
        }
    }
}
