package com.example.boot;

import jakarta.servlet.http.HttpServletRequest;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.core.env.Environment;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

@RestController
public class HelloController {
    private final Environment env;

    @Value("${app.greeting}")
    private String greeting;

    public HelloController(Environment env) {
        this.env = env;
    }

    @GetMapping("/hello")
    public String hello(@RequestParam(defaultValue = "world") String name) {
        return greeting + ", " + name + "!";
    }

    /** What the application sees of its request and of its environment, as JSON. */
    @GetMapping("/info")
    public Map<String, Object> info(HttpServletRequest request) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("greeting", greeting);
        m.put("profiles", env.getActiveProfiles());
        m.put("requestURI", request.getRequestURI());
        m.put("query", request.getQueryString());
        m.put("remoteAddr", request.getRemoteAddr());
        m.put("serverName", request.getServerName());
        m.put("serverPort", request.getServerPort());
        m.put("scheme", request.getScheme());
        m.put("userAgent", request.getHeader("User-Agent"));
        m.put("pid", ProcessHandle.current().pid());
        return m;
    }

    @PostMapping("/echo")
    public String echo(@RequestBody String body) {
        return "echo " + body.length() + ": " + body;
    }

    /** Spring MVC's async request processing: the servlet's startAsync, answered from another thread. */
    @GetMapping("/later")
    public Callable<String> later(@RequestParam(defaultValue = "10") long ms) {
        return () -> {
            Thread.sleep(ms);
            return "later, after " + ms + " ms on " + (Thread.currentThread().getName().startsWith("nginx-jvm")
                    ? "a pool thread" : "another thread");
        };
    }

    /** A visit counter in the HttpSession: "count N, pid P". */
    @GetMapping("/count")
    public String count(jakarta.servlet.http.HttpSession session) {
        Integer n = (Integer) session.getAttribute("count");
        n = n == null ? 1 : n + 1;
        session.setAttribute("count", n);
        return "count " + n + ", pid " + ProcessHandle.current().pid();
    }

    /** Ends the visit: the session is gone for every worker. */
    @PostMapping("/forget")
    public String forget(jakarta.servlet.http.HttpSession session) {
        session.invalidate();
        return "forgotten";
    }

    /** What nginx keeps from the world: nginx.conf says "location /admin/ { return 403; }". */
    @GetMapping("/admin/secret")
    public String secret() {
        return "the secret";
    }

    @GetMapping("/boom")
    public String boom() {
        throw new IllegalStateException("example failure on purpose");
    }
}
