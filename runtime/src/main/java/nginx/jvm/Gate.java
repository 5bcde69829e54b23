package nginx.jvm;

/**
 * The rules every string from a handler obeys on its way to a wire, so
 * that a call fails early, in the handler, with the text the C module's
 * gate ({@code ngx_http_jvm_gate.c}, the authority) would log: one rule
 * set, documented in docs/security.md ("Doors").
 *
 * <ul>
 * <li>token (a method, a header field's name): RFC 9110's tchar only, not
 *     empty;</li>
 * <li>value (a header field's or a variable's value): no control character
 *     but HTAB;</li>
 * <li>URI (as nginx routes on it, decoded): "/" first, no control
 *     character, no ".." segment;</li>
 * <li>args (sent as they are): no control character, no space.</li>
 * </ul>
 *
 * Each check answers null, or the refusal's text.
 */
final class Gate {
    static final String RESPONSE_NAME = "response header field name";
    static final String RESPONSE_VALUE = "value of the response header field";
    static final String REQUEST_NAME = "request header field name";
    static final String REQUEST_VALUE = "value of the request header field";
    static final String SUB_METHOD = "subrequest method";
    static final String SUB_URI = "subrequest URI";
    static final String SUB_ARGS = "subrequest args";
    static final String SUB_NAME = "subrequest header field name";
    static final String SUB_VALUE = "value of the subrequest header field";
    static final String CALL_METHOD = "call's method";
    static final String CALL_URI = "call's URI";
    static final String CALL_ARGS = "call's args";
    static final String CALL_NAME = "call's header field name";
    static final String CALL_VALUE = "value of the call's header field";

    private static final int SHOW = 64;

    private Gate() {
    }

    /** A token: a method, a header field's name. */
    static String token(String door, String s) {
        if (s.isEmpty()) {
            return refused(door, s, "it is empty");
        }
        for (int i = 0; i < s.length(); i++) {
            if (!isTokenChar(s.charAt(i))) {
                return refused(door, s, "it is no HTTP token (RFC 9110, 5.6.2: letters, digits"
                        + " and !#$%&'*+-.^_`|~)");
            }
        }
        return null;
    }

    /** A character of an HTTP token (RFC 9110, 5.6.2: tchar). */
    static boolean isTokenChar(char c) {
        return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
                || c < 0x80 && "!#$%&'*+-.^_`|~".indexOf(c) >= 0;
    }

    /** A header field's value (of the field {@code name}). */
    static String value(String door, String name, String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x20 && c != '\t' || c == 0x7f) {
                return refused(door, name, control(c, "a value may hold none but HTAB: RFC 9110, 5.5"));
            }
        }
        return null;
    }

    /** A URI as nginx routes on it. */
    static String uri(String door, String s) {
        if (!s.startsWith("/")) {
            return refused(door, s, "it does not start with \"/\"");
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x20 || c == 0x7f) {
                return refused(door, s, control(c, "a request line's parts may hold none"));
            }
        }
        for (int i = s.indexOf("/.."); i >= 0; i = s.indexOf("/..", i + 1)) {
            if (i + 3 == s.length() || s.charAt(i + 3) == '/') {
                return refused(door, s, "it holds a \"..\" segment (nginx refuses such a URI, as"
                        + " ngx_http_parse_unsafe_uri() does)");
            }
        }
        return null;
    }

    /** A query string. */
    static String args(String door, String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == ' ') {
                return refused(door, s, "it holds a space (nginx sends args as they are: escape it)");
            }
            if (c < 0x20 || c == 0x7f) {
                return refused(door, s, control(c, "a request line's parts may hold none"));
            }
        }
        return null;
    }

    private static String control(char c, String rule) {
        return String.format("it holds the control character 0x%02X (%s)", (int) c, rule);
    }

    private static String refused(String door, String shown, String why) {
        return "refused the " + door + " \"" + quote(shown) + "\": " + why;
    }

    /** The first characters, each control, quote, backslash or non-ASCII one as \xNN. */
    static String quote(String s) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length() && i < SHOW; i++) {
            char c = s.charAt(i);
            if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
                b.append(String.format("\\x%02X", c & 0xff));
            } else {
                b.append(c);
            }
        }
        return s.length() > SHOW ? b.append("...").toString() : b.toString();
    }
}
