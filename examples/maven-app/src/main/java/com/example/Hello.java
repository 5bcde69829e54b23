package com.example;

import nginx.jvm.Handler;
import nginx.jvm.Request;
import nginx.jvm.Response;
import nginx.jvm.SharedDict;

/**
 * A plain Java handler: a greeting, and a counter every nginx worker
 * shares ({@code --shared-dict app:1m}, jvm_shared_dict app 1m).
 */
public final class Hello implements Handler {
    private static final String TEXT = "text/plain; charset=utf-8";

    @Override
    public Response handle(Request request) {
        switch (request.uri()) {
            case "/":
                return Response.of(200, TEXT, "Hello from a Maven project, "
                        + request.method() + " " + request.uri() + "\n");
            case "/hits":
                long n = SharedDict.named("app").incr("hits", 1);
                return Response.of(200, TEXT, n + "\n");
            default:
                return Response.of(404, TEXT, "not found\n");
        }
    }
}
