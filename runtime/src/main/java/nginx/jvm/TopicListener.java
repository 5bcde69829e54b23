package nginx.jvm;

/**
 * Receives the messages of a {@link Topic}: each message published by any
 * worker, once, in the order they were published.
 *
 * <p>Called on the worker's event loop: a listener that blocks stalls
 * every connection of its worker. Hand slow work to a thread of your own.
 * An exception is logged to the error log and the next message comes all
 * the same.
 */
@FunctionalInterface
public interface TopicListener {
    /** {@code message} is a String or a byte[], as it was published. */
    void onMessage(Object message) throws Exception;
}
