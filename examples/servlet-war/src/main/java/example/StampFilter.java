package example;

import jakarta.servlet.FilterChain;
import jakarta.servlet.FilterConfig;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpFilter;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;

/** Declared in web.xml: a header, named by its init-param, on every response. */
public class StampFilter extends HttpFilter {
    private String header;

    @Override
    public void init(FilterConfig config) {
        header = config.getInitParameter("header");
    }

    @Override
    protected void doFilter(HttpServletRequest req, HttpServletResponse res, FilterChain chain)
            throws IOException, ServletException {
        res.setHeader(header, "stamped");
        chain.doFilter(req, res);
    }
}
