package com.example.notes;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import org.springframework.stereotype.Component;
import org.springframework.web.filter.OncePerRequestFilter;

/** Which process answered (X-Served-By: pid): several may serve one application. */
@Component
public class WorkerHeader extends OncePerRequestFilter {
    private static final String PID = Long.toString(ProcessHandle.current().pid());

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response,
                                    FilterChain chain) throws ServletException, IOException {
        response.setHeader("X-Served-By", PID);
        chain.doFilter(request, response);
    }
}
