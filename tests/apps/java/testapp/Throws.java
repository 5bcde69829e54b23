package testapp;

import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;

public final class Throws implements Handler {
    @Override
    public Response handle(Request r) {
        throw new IllegalStateException("java-boom-marker");
    }
}
