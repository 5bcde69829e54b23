package nginx.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ProfileTest {
    /** Many distinct stacks, with their weights. */
    private static Map<String, Long> stacks(int n) {
        Random random = new Random(48);
        Map<String, Long> m = new HashMap<>();
        for (int i = 0; i < n; i++) {
            m.put("pool;a.B.c" + i + ";d.E.f" + random.nextInt(1 << 30), (long) (i + 1));
        }
        return m;
    }

    @Test
    void aPartThatFitsKeepsEveryStack() throws Exception {
        Map<String, Long> s = stacks(50);
        Profile.Part p = Profile.read(Profile.fit("# pid 7\n# worker 1\n# total 1275\n", s, 1 << 20));
        assertEquals(7, p.pid());
        assertEquals("1", p.worker());
        assertEquals(1275, p.total());
        assertEquals(s, p.folded());
    }

    @Test
    void aPartTooLargeKeepsTheHeaviestAndSumsTheRest() throws Exception {
        Map<String, Long> s = stacks(20_000);
        long all = s.values().stream().mapToLong(Long::longValue).sum();
        byte[] part = Profile.fit("# pid 7\n", s, 16 * 1024);
        assertTrue(part.length <= 16 * 1024, "part of " + part.length + " bytes");
        Map<String, Long> kept = Profile.read(part).folded();
        long rest = kept.remove("(lighter stacks)");
        assertTrue(kept.size() > 10 && kept.size() < s.size(), kept.size() + " kept");
        // the heaviest are there, each with its own weight; nothing is lost
        assertEquals(20_000L, kept.get(kept.keySet().stream()
                .filter(k -> s.get(k) == 20_000L).findFirst().orElseThrow()));
        long min = kept.values().stream().mapToLong(Long::longValue).min().orElseThrow();
        assertTrue(s.values().stream().filter(v -> v > min).count() <= kept.size());
        assertEquals(all, rest + kept.values().stream().mapToLong(Long::longValue).sum());
    }
}
