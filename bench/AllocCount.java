import com.sun.tools.attach.VirtualMachine;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import javax.management.MBeanServerConnection;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * The bytes the JVMs of the given PIDs allocated so far, exactly: jcmd's
 * Thread.print -e rounds each thread's figure (to 1 MB above 100 MB), which
 * blurs a per-request figure of a few hundred bytes. bench/alloc.py runs it
 * with a JDK 21 or newer ({@code java bench/AllocCount.java PID...}); it
 * attaches to each JVM (which must run with -XX:+StartAttachListener, as
 * the benchmarks' do), starts its local JMX agent, and for every line read
 * on stdin prints one line: the sum over the JVMs of their threads'
 * allocated bytes (ThreadMXBean: getTotalThreadAllocatedBytes on a JDK 21
 * or newer, which counts threads that ended too; on older ones the live
 * threads' sum). The JMX calls allocate on the JVM's own RMI threads: a
 * constant per sample, which bench/alloc.py measures and states.
 */
public final class AllocCount {
    public static void main(String[] args) throws Exception {
        List<com.sun.management.ThreadMXBean> beans = new ArrayList<>();
        List<JMXConnector> connectors = new ArrayList<>();
        for (String pid : args) {
            VirtualMachine vm = VirtualMachine.attach(pid);
            String address = vm.startLocalManagementAgent();
            vm.detach();
            JMXConnector c = JMXConnectorFactory.connect(new JMXServiceURL(address));
            connectors.add(c);
            MBeanServerConnection server = c.getMBeanServerConnection();
            beans.add(ManagementFactory.newPlatformMXBeanProxy(server,
                    ManagementFactory.THREAD_MXBEAN_NAME, com.sun.management.ThreadMXBean.class));
        }
        System.out.println("ready");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        while (in.readLine() != null) {
            long total = 0;
            for (com.sun.management.ThreadMXBean b : beans) {
                total += allocated(b);
            }
            System.out.println(total);
        }
        for (JMXConnector c : connectors) {
            c.close();
        }
    }

    private static long allocated(com.sun.management.ThreadMXBean b) {
        try {
            return b.getTotalThreadAllocatedBytes();
        } catch (RuntimeException | LinkageError e) {
            // an older JVM: its live threads
            long sum = 0;
            for (long n : b.getThreadAllocatedBytes(b.getAllThreadIds())) {
                sum += Math.max(0, n);
            }
            return sum;
        }
    }
}
