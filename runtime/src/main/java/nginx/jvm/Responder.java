package nginx.jvm;

/**
 * How an {@link AsyncHandler} answers. Safe to call from any thread; the
 * first call wins, later ones are ignored (and logged at debug level).
 */
public interface Responder {
    void respond(Response response);

    /** Answers 500 and logs {@code error} with its stack trace. */
    void raise(Throwable error);
}
