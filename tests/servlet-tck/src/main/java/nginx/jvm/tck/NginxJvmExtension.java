package nginx.jvm.tck;

import org.jboss.arquillian.container.spi.client.container.DeployableContainer;
import org.jboss.arquillian.core.spi.LoadableExtension;

/** Registers {@link NginxJvmContainer} with Arquillian (META-INF/services). */
public final class NginxJvmExtension implements LoadableExtension {
    @Override
    public void register(ExtensionBuilder builder) {
        builder.service(DeployableContainer.class, NginxJvmContainer.class);
    }
}
