package nginx.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The queue of a streamed body: the room callback of a producer that must not wait. */
@Timeout(30)
class HandoffTest {
    private final Handoff<Object> queue = new Handoff<>(2);
    private final AtomicInteger called = new AtomicInteger();

    @Test
    void roomIsTrueUntilFullThenTheCallbackRunsOnceWhenAPieceIsTaken() {
        assertTrue(queue.room(called::incrementAndGet));
        queue.put(new byte[1]);
        queue.put(new byte[1]);
        assertTrue(!queue.room(called::incrementAndGet));
        // a null callback only asks
        assertTrue(!queue.room(null));
        assertEquals(0, called.get());
        queue.poll();
        assertEquals(1, called.get());
        queue.poll();
        assertEquals(1, called.get());
        assertTrue(queue.room(null));
    }

    @Test
    void closingRunsTheCallback() {
        queue.put(new byte[1]);
        queue.put(new byte[1]);
        assertTrue(!queue.room(called::incrementAndGet));
        queue.close();
        assertEquals(1, called.get());
        // closed: a write fails at once, so it never waits
        assertTrue(queue.room(null));
    }
}
