package nginx.jvm;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The coloop self-test where it must fail: the tests' JVM is started
 * without --add-opens, which reflection needs (and may be a JDK 17, which
 * has no such builder). In a worker, JNI reaches the builder instead.
 * Where it passes is tests/test_coloop.py, on the Temurin 25 JDK.
 */
class LoopSchedulerTest {
    @Test
    void saysWhyThisJvmCannotHaveIt() {
        String[] why = new String[1];
        assertNull(LoopScheduler.open(() -> { }, why, LoopScheduler.REFLECTION));
        int feature = Runtime.version().feature();
        String expected = feature < 21 ? "has no virtual-thread builder" : LoopScheduler.OPENS;
        assertTrue(why[0].contains(expected), why[0]);
    }

    @Test
    void noThreadIsCarriedHere() {
        assertTrue(!LoopScheduler.carried());
    }
}
