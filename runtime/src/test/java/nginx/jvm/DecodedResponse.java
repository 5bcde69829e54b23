package nginx.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * An encoded response read back the way ngx_http_jvm_response.c reads it,
 * following the layout documented in ResponseEncoder.
 */
final class DecodedResponse {
    static final String[] KINDS = {"NONE", "INLINE", "FILE", "STREAM", "ERROR", "MOVED", "UPGRADE",
        "DECLINED", "EDITS"};

    int status;
    String kind;
    long contentLength;
    /** Name and value pairs, in the order they were encoded. */
    final List<List<String>> headers = new ArrayList<>();
    /** INLINE: the body. */
    byte[] body;
    /** FILE: the path; ERROR: the message. */
    String text;
    /** STREAM: the id of the body, for Worker.next() and close(). */
    int stream = -1;

    /** Decodes {@code length} bytes from the start of {@code buffer}; they must be exactly one response. */
    static DecodedResponse decode(ByteBuffer buffer, int length) {
        ByteBuffer b = buffer.duplicate().order(ByteOrder.nativeOrder());
        b.position(0).limit(length);
        DecodedResponse r = new DecodedResponse();
        r.status = b.getInt();
        r.kind = KINDS[b.getInt()];
        r.contentLength = b.getLong();
        int count = b.getInt();
        for (int i = 0; i < count; i++) {
            r.headers.add(List.of(latin1(bytes(b)), latin1(bytes(b))));
        }
        switch (r.kind) {
            case "INLINE":
                r.body = bytes(b);
                break;
            case "FILE":
                r.text = new String(bytes(b), StandardCharsets.UTF_8);
                break;
            case "ERROR":
                r.text = new String(bytes(b), StandardCharsets.UTF_8);
                break;
            case "STREAM":
                r.stream = b.getInt();
                break;
            default:
                break;
        }
        assertEquals(length, b.position(), "the encoded length covers exactly one response");
        return r;
    }

    String bodyText() {
        return new String(body, StandardCharsets.UTF_8);
    }

    private static byte[] bytes(ByteBuffer b) {
        byte[] out = new byte[b.getInt()];
        b.get(out);
        return out;
    }

    private static String latin1(byte[] b) {
        return new String(b, StandardCharsets.ISO_8859_1);
    }
}
