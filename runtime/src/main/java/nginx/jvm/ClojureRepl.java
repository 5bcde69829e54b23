package nginx.jvm;

import clojure.java.api.Clojure;
import clojure.lang.IFn;

/** The part of {@link Repl} that needs Clojure: loaded only when Clojure is there. */
final class ClojureRepl {
    private ClojureRepl() {
    }

    static void start(String address, int port) {
        IFn require = Clojure.var("clojure.core", "require");
        require.invoke(Clojure.read("clojure.core.server"));
        IFn startServer = Clojure.var("clojure.core.server", "start-server");
        startServer.invoke(Clojure.read("{:name \"nginx-jvm-repl\" :port " + port
                + " :address \"" + address + "\" :accept clojure.core.server/repl :server-daemon true}"));
    }
}
