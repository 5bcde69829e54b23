package nginx.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class ResponseTest {
    /** The first field is kept apart from the others: every count reads back in order. */
    @Test
    void fieldsReadBackInOrderWhateverTheirCount() {
        for (int count = 0; count <= 20; count++) {
            Response r = new Response(200);
            for (int i = 0; i < count; i++) {
                r.header(i % 3 == 0 ? "Set-Cookie" : "X-" + i, "v" + i);
            }
            assertEquals(count, r.headerCount());
            for (int i = 0; i < count; i++) {
                assertEquals(i % 3 == 0 ? "Set-Cookie" : "X-" + i, r.headerName(i));
                assertEquals("v" + i, r.headerValue(i));
            }
            // the first of a repeated name, any case
            assertEquals(count > 0 ? "v0" : null, r.header("set-cookie"));
            assertEquals(count > 5 ? "v5" : null, r.header("x-5"));
            int n = count;
            assertThrows(IndexOutOfBoundsException.class, () -> r.headerName(n));
            assertThrows(IndexOutOfBoundsException.class, () -> r.headerValue(-1));
        }
        assertNull(new Response(204).header("Content-Type"));
    }
}
