package nginx.jvm.servlet.tomcat;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.ObjectInputFilter;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Pattern;
import nginx.jvm.servlet.session.SharedSessionException;
import org.apache.catalina.util.CustomObjectInputStream;
import org.apache.juli.logging.Log;
import org.apache.juli.logging.LogFactory;

/**
 * A session as the store keeps it: its fields, then each attribute's value
 * serialized on its own (Java serialization, as Tomcat's stores and
 * clusters do), so that a change to one attribute is merged into what the
 * store holds without reading the others' objects:
 *
 * <pre>
 * byte 'S', byte 1 (the format)
 * UTF id; long creation time; long last write; int max inactive interval (s)
 * int n, n bytes: the authentication Tomcat caches (auth type, principal,
 *     FORM login's notes), serialized; 0 for none
 * int count; count times: UTF name, int n, n bytes (the value, serialized)
 * </pre>
 */
final class SharedSessionCodec {
    private static final Log log = LogFactory.getLog(SharedSessionCodec.class);
    private static final int MAGIC = 'S';
    private static final int FORMAT = 1;
    /** How deep a value's objects nest, at most, when read: no stack overflow from what a store holds. */
    private static final ObjectInputFilter DEPTH = ObjectInputFilter.Config.createFilter("maxdepth=500");

    private SharedSessionCodec() {
    }

    /** A stored session with its attributes still serialized. */
    static final class Entry {
        String id;
        long creationTime;
        long lastWrite;
        int maxInactiveInterval;
        byte[] auth = new byte[0];
        final Map<String, byte[]> attributes = new LinkedHashMap<>();
    }

    static byte[] encode(Entry e) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(MAGIC);
            out.writeByte(FORMAT);
            out.writeUTF(e.id);
            out.writeLong(e.creationTime);
            out.writeLong(e.lastWrite);
            out.writeInt(e.maxInactiveInterval);
            out.writeInt(e.auth.length);
            out.write(e.auth);
            out.writeInt(e.attributes.size());
            for (Map.Entry<String, byte[]> a : e.attributes.entrySet()) {
                out.writeUTF(a.getKey());
                out.writeInt(a.getValue().length);
                out.write(a.getValue());
            }
        } catch (IOException x) {
            // writeUTF of a name over 64 KB in UTF-8: setAttribute refuses those
            throw new SharedSessionException("session " + e.id + " cannot be written: " + x, x);
        }
        return bytes.toByteArray();
    }

    /** The entry in {@code b}; IOException when it is not one of ours (or is cut short). */
    static Entry decode(byte[] b) throws IOException {
        DataInputStream in = new DataInputStream(new ByteArrayInputStream(b));
        if (b.length < 2 || in.readUnsignedByte() != MAGIC || in.readUnsignedByte() != FORMAT) {
            throw new IOException("not a session of this format");
        }
        Entry e = new Entry();
        e.id = in.readUTF();
        e.creationTime = in.readLong();
        e.lastWrite = in.readLong();
        e.maxInactiveInterval = in.readInt();
        e.auth = bytes(in);
        int count = in.readInt();
        if (count < 0 || count > in.available()) {
            throw new IOException("a session of " + count + " attributes in " + b.length + " bytes");
        }
        for (int i = 0; i < count; i++) {
            String name = in.readUTF();
            e.attributes.put(name, bytes(in));
        }
        if (in.available() != 0) {
            throw new IOException("bytes after the session's end");
        }
        return e;
    }

    private static byte[] bytes(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > in.available()) {
            throw new IOException("a length of " + n + " with " + in.available() + " bytes left");
        }
        byte[] b = new byte[n];
        in.readFully(b);
        return b;
    }

    /** Java serialization of one object; NotSerializableException names the class that is not. */
    static byte[] serialize(Object value) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(128);
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(value);
        }
        return bytes.toByteArray();
    }

    /**
     * The object in {@code b}, its classes from {@code loader} (the web
     * application's) and, when the manager has one, only those whose names
     * match {@code allowed} (Tomcat's sessionAttributeValueClassNameFilter).
     */
    static Object deserialize(byte[] b, ClassLoader loader, Pattern allowed)
            throws IOException, ClassNotFoundException {
        try (ObjectInputStream in = new CustomObjectInputStream(new ByteArrayInputStream(b), loader,
                log, allowed, true)) {
            try {
                ObjectInputFilter had = in.getObjectInputFilter();
                in.setObjectInputFilter(had == null ? DEPTH : ObjectInputFilter.merge(DEPTH, had));
            } catch (IllegalStateException e) {
                // a filter already set for good: it stays
            }
            return in.readObject();
        }
    }

    static int utf8Length(String s) {
        return s.getBytes(StandardCharsets.UTF_8).length;
    }
}
