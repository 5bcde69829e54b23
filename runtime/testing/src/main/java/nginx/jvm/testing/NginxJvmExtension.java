package nginx.jvm.testing;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * The JUnit 5 extension behind {@link NginxJvmTest}: one {@link NginxJvm}
 * per test class, started before its first test and closed after its last.
 */
public final class NginxJvmExtension implements BeforeAllCallback, AfterAllCallback, ParameterResolver {
    private static final ExtensionContext.Namespace NS =
            ExtensionContext.Namespace.create(NginxJvmExtension.class);

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        Class<?> c = context.getRequiredTestClass();
        NginxJvmTest spec = c.getAnnotation(NginxJvmTest.class);
        if (spec == null) {
            throw new IllegalStateException(c.getName() + " uses NginxJvmExtension without @NginxJvmTest");
        }
        NginxJvm server = NginxJvm.builder(spec.handler()).args(spec.args())
                .workers(spec.workers()).start();
        context.getStore(NS).put(c, server);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        NginxJvm server = context.getStore(NS).remove(context.getRequiredTestClass(), NginxJvm.class);
        if (server != null) {
            server.close();
        }
    }

    @Override
    public boolean supportsParameter(ParameterContext p, ExtensionContext context) {
        return p.getParameter().getType() == NginxJvm.class;
    }

    @Override
    public Object resolveParameter(ParameterContext p, ExtensionContext context) {
        NginxJvm server = context.getStore(NS).get(context.getRequiredTestClass(), NginxJvm.class);
        if (server == null) {
            throw new IllegalStateException("no nginx-jvm started for " + context.getRequiredTestClass().getName());
        }
        return server;
    }
}
