package nginx.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class LongMapTest {
    @Test
    void agreesWithHashMapOverRandomPutsAndRemoves() {
        // few distinct keys, many operations: long probe chains, removals
        // in their middle, growth, and keys that collide in the low bits
        Random random = new Random(42);
        LongMap<Long> map = new LongMap<>();
        Map<Long, Long> ref = new HashMap<>();
        for (int n = 0; n < 200_000; n++) {
            long key = random.nextInt(300) * (random.nextBoolean() ? 1L : 1L << 40);
            switch (random.nextInt(3)) {
                case 0:
                    assertEquals(ref.put(key, Long.valueOf(n)), map.put(key, Long.valueOf(n)));
                    break;
                case 1:
                    assertEquals(ref.remove(key), map.remove(key));
                    break;
                default:
                    assertEquals(ref.get(key), map.get(key));
            }
            assertEquals(ref.size(), map.size());
        }
        for (Map.Entry<Long, Long> e : ref.entrySet()) {
            assertEquals(e.getValue(), map.get(e.getKey().longValue()));
        }
        // read as a Map (the tests' apps do, by reflection)
        assertEquals(ref, new HashMap<>(map));
        Map<Long, Long> asMap = map;
        assertEquals(ref.size(), asMap.size());
    }

    @Test
    void sequentialIdsAsTheTasksHave() {
        LongMap<String> map = new LongMap<>();
        for (long id = 1; id <= 10_000; id++) {
            map.put(id, "t" + id);
            if (id > 50) {
                assertEquals("t" + (id - 50), map.remove(id - 50));
            }
        }
        assertEquals(50, map.size());
        assertNull(map.get(1));
        assertEquals("t10000", map.get(10_000));
        assertNull(map.remove(3));
        map.clear();
        assertEquals(0, map.size());
        assertNull(map.get(10_000));
    }

    @Test
    void refusesNullValues() {
        assertThrows(NullPointerException.class, () -> new LongMap<String>().put(1, null));
    }
}
