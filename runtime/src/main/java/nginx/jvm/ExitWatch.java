package nginx.jvm;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * Says who ended the worker's JVM with {@code System.exit}: a shutdown hook
 * that finds the thread inside {@code Runtime.exit} and writes its stack to
 * stderr (the error log). Nothing can refuse the call on JDK 17 and later
 * (no security manager); the C module's exit hook logs the {@code [alert]}
 * that follows, for {@code Runtime.halt} too, which runs no hook.
 */
final class ExitWatch {
    private ExitWatch() {}

    /** Set as the worker leaves gracefully: the hooks run, nobody called exit. */
    static volatile boolean leaving;

    static void install() {
        Thread hook = new Thread(ExitWatch::report, "nginx-jvm-exit-watch");
        Runtime.getRuntime().addShutdownHook(hook);
    }

    private static void report() {
        if (leaving) {
            return;
        }
        String said = null;
        for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
            StackTraceElement[] stack = e.getValue();
            int at = exitFrame(stack);
            if (at >= 0) {
                StringBuilder b = new StringBuilder();
                for (int i = at; i < stack.length; i++) {
                    b.append("\tat ").append(stack[i]).append('\n');
                }
                said = say("thread \"" + e.getKey().getName() + "\"", b.toString());
            }
        }
        if (said == null) {
            virtualCaller();
        }
    }

    private static String say(String thread, String stack) {
        String text = "jvm: System.exit() called on " + thread + ": the worker ends\n" + stack;
        System.err.print(text);
        System.err.flush();
        return text;
    }

    /**
     * A virtual thread is not among Thread.getAllStackTraces(); JDK 21's
     * thread dump has it (HotSpotDiagnosticMXBean.dumpThreads, by reflection:
     * the runtime is built for 17). Only on the way out, so its cost is moot.
     */
    private static void virtualCaller() {
        Path file = null;
        try {
            Class<?> format = Class.forName("com.sun.management.HotSpotDiagnosticMXBean$ThreadDumpFormat");
            Class<?> bean = Class.forName("com.sun.management.HotSpotDiagnosticMXBean");
            Object mx = ManagementFactory.class.getMethod("getPlatformMXBean", Class.class)
                    .invoke(null, bean);
            file = Files.createTempDirectory("nginx-jvm-exit").resolve("threads.txt");
            bean.getMethod("dumpThreads", String.class, format)
                    .invoke(mx, file.toString(), format.getField("TEXT_PLAIN").get(null));
            for (String block : Files.readString(file).split("\n\\s*\n")) {
                int at = block.indexOf("java.lang.System.exit(");
                if (at < 0) {
                    continue;
                }
                String[] lines = block.split("\n");
                StringBuilder b = new StringBuilder();
                boolean from = false;
                for (String l : lines) {
                    from |= l.contains("java.lang.System.exit(");
                    if (from) {
                        String frame = l.trim();
                        b.append(frame.startsWith("at ") ? "\t" : "\tat ").append(frame).append('\n');
                    }
                }
                say("thread " + lines[0].trim(), b.toString());
            }
        } catch (ReflectiveOperationException | IOException | RuntimeException e) {
            // JDK 17 (no virtual threads there anyway), or no dump: the C alert follows alone
        } finally {
            if (file != null) {
                try {
                    Files.deleteIfExists(file);
                    Files.deleteIfExists(file.getParent());
                } catch (IOException e) {
                    // a temporary file left: nothing to do on the way out
                }
            }
        }
    }

    /** Where System.exit or Runtime.exit is on the stack, or -1. */
    static int exitFrame(StackTraceElement[] stack) {
        for (int i = 0; i < stack.length; i++) {
            String c = stack[i].getClassName(), m = stack[i].getMethodName();
            if (m.equals("exit") && (c.equals("java.lang.System") || c.equals("java.lang.Runtime"))) {
                // the caller's frames from System.exit on (Runtime.exit is under it)
                int j = i;
                while (j + 1 < stack.length && stack[j + 1].getMethodName().equals("exit")
                        && stack[j + 1].getClassName().startsWith("java.lang.")) {
                    j++;
                }
                return j;
            }
        }
        return -1;
    }
}
