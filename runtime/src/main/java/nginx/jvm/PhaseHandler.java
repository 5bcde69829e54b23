package nginx.jvm;

/**
 * A handler that may answer nothing: how the Ring adapter serves the
 * rewrite, access and log phases (nil lets the request go on), where a Java
 * {@link Handler} answers null.
 */
interface PhaseHandler {
    Response handlePhase(Request request) throws Exception;
}
