package nginx.jvm.servlet;

import nginx.jvm.Response;

/** The one rule for the engine's response header fields on their way to nginx. */
public final class Fields {
    private Fields() {
    }

    /**
     * Adds the field unless nginx owns it: the connection's fields
     * (Connection, Keep-Alive, Transfer-Encoding: nginx frames the response
     * for HTTP/1.1, 2 and 3 alike) and, for a body passed whole, its length
     * (nginx counts the bytes it is given).
     */
    public static void add(Response r, String name, String value, boolean keepLength) {
        switch (name.length()) {
            case 10:
                if (name.equalsIgnoreCase("Connection") || name.equalsIgnoreCase("Keep-Alive")) {
                    return;
                }
                break;
            case 14:
                if (!keepLength && name.equalsIgnoreCase("Content-Length")) {
                    return;
                }
                break;
            case 17:
                if (name.equalsIgnoreCase("Transfer-Encoding")) {
                    return;
                }
                break;
            default:
                break;
        }
        r.header(name, value);
    }

    /** True when the response to {@code method} with {@code status} has no body. */
    public static boolean noBody(String method, int status) {
        return status < 200 || status == 204 || status == 205 || status == 304 || "HEAD".equals(method);
    }
}
