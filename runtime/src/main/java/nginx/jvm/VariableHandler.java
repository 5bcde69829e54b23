package nginx.jvm;

/**
 * Computes an nginx variable declared with {@code jvm_set $name Class}: the
 * value (null: the variable has none) nginx uses wherever it reads the
 * variable ({@code return}, {@code proxy_set_header}, {@code log_format},
 * {@code if}, {@code map}). Called on the event loop the first time the
 * request reads the variable, whatever {@code jvm_mode} says: nginx cannot
 * wait for a variable, so keep it quick. An exception is logged with its
 * stack trace and fails what read the variable (a 500 for {@code return}).
 */
@FunctionalInterface
public interface VariableHandler {
    String value(Request request) throws Exception;
}
