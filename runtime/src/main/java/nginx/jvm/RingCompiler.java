package nginx.jvm;

import clojure.lang.Compiler;
import clojure.lang.IFn;
import clojure.lang.RT;
import clojure.lang.Symbol;
import clojure.lang.Var;
import java.util.List;

/**
 * Compiles the namespaces of Ring handler vars ahead of time, for
 * {@link ClassCache}: with {@code *compile-files*} on, every namespace that
 * loads (the handlers', what they require, and the Ring adapter's own) is
 * written as classes into the directory. Reached by reflection only, so that
 * the runtime loads without Clojure.
 */
final class RingCompiler {
    private RingCompiler() {
    }

    static void compile(String classes, List<String> vars) throws Exception {
        // RT first: Compiler's own initialization needs it done
        IFn require = RT.var("clojure.core", "require");
        Var.pushThreadBindings(RT.mapUniqueKeys(
                Compiler.COMPILE_PATH, classes,
                Compiler.COMPILE_FILES, Boolean.TRUE));
        try {
            // the adapter's namespaces (Ring's protocols, the websocket API)
            Class.forName("nginx.jvm.RingHandler", true, RingCompiler.class.getClassLoader());
            for (String name : vars) {
                require.invoke(Symbol.intern(name.substring(0, name.indexOf('/'))));
            }
        } finally {
            Var.popThreadBindings();
        }
    }
}
