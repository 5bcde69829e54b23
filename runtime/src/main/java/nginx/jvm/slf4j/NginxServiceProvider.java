package nginx.jvm.slf4j;

import org.slf4j.ILoggerFactory;
import org.slf4j.IMarkerFactory;
import org.slf4j.helpers.BasicMarkerFactory;
import org.slf4j.helpers.BasicMDCAdapter;
import org.slf4j.spi.MDCAdapter;
import org.slf4j.spi.SLF4JServiceProvider;

/**
 * SLF4J 2 into nginx's error log. Found by slf4j-api through
 * META-INF/services when it is on the class path; these classes are never
 * loaded otherwise, so the runtime needs no slf4j-api of its own.
 */
public final class NginxServiceProvider implements SLF4JServiceProvider {
    private ILoggerFactory loggers;
    private IMarkerFactory markers;
    private MDCAdapter mdc;

    @Override
    public ILoggerFactory getLoggerFactory() {
        return loggers;
    }

    @Override
    public IMarkerFactory getMarkerFactory() {
        return markers;
    }

    @Override
    public MDCAdapter getMDCAdapter() {
        return mdc;
    }

    @Override
    public String getRequestedApiVersion() {
        return "2.0.99";
    }

    @Override
    public void initialize() {
        loggers = new NginxLoggerFactory();
        markers = new BasicMarkerFactory();
        mdc = new BasicMDCAdapter();
    }
}
