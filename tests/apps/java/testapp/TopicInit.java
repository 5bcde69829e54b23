package testapp;

import java.util.ArrayList;
import java.util.List;
import nginx.jvm.Topic;

/** jvm_init: subscribes to topic "t" before the worker serves; TopicApp shows what came. */
public final class TopicInit implements Runnable {
    static final List<String> received = new ArrayList<>();
    static final List<String> threads = new ArrayList<>();

    @Override
    public void run() {
        Topic.named("t").subscribe(m -> {
            synchronized (received) {
                received.add(m instanceof byte[] ? "bytes:" + ((byte[]) m).length : (String) m);
                threads.add(Thread.currentThread().getName());
            }
            if ("boom".equals(m)) {
                throw new IllegalStateException("listener-boom-marker");
            }
        });
    }
}
