package nginx.jvm;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The entry points the C module calls (ngx_http_jvm_vm.c binds them by name
 * and signature), on the worker's event-loop thread only; the natives Java
 * calls up are {@link Natives} and {@link Shm}. Everything here is
 * static because there is one JVM, one event loop and one set of buffers per
 * nginx worker process. What the values mean is the wire protocol
 * ({@link Wire}, docs/internals.md).
 *
 * <p>None of these methods throws: a failure becomes a value the C module
 * understands (an error message, or a response that answers 500).
 */
final class Worker {
    static {
        // first: a handler's namespace may print or log as it loads
        if (Log.install()) {
            JulHandler.install(Log.threshold());
        }
    }

    private static final int BUFFER_SIZE = 64 * 1024;

    private static final List<Object> handlers = new ArrayList<>();
    /** The names the directives gave them, by the same index. */
    private static final List<String> names = new ArrayList<>();
    private static final Tasks tasks = new Tasks(Natives::wake, Natives::batch);
    private static final WebSockets sockets = new WebSockets(Natives::wake);
    private static ByteBuffer requestBuffer =
            ByteBuffer.allocateDirect(BUFFER_SIZE).order(ByteOrder.nativeOrder());
    /** The ids {@link #wake} names to the C module. */
    private static final ByteBuffer readyBuffer =
            ByteBuffer.allocateDirect(8 * Wire.READY_MAX).order(ByteOrder.nativeOrder());
    /** Bodies sent in pieces, by the id their response gave the C module. */
    private static final Map<Integer, BodySource> streams = new HashMap<>();
    private static int nextStream;
    /**
     * Event loop: the request whose handler runs on the loop, while it holds
     * its body's files; a body sent in pieces that its response registers
     * takes them (into {@link #held}) until {@link #close}.
     */
    private static Request encoding;
    private static final Map<Integer, Request> held = new HashMap<>();
    private static final ResponseEncoder encoder =
            new ResponseEncoder(BUFFER_SIZE, Worker::stream, sockets::register);

    private Worker() {
    }

    /** The buffer the C module writes requests into, at least {@code capacity} bytes. */
    static ByteBuffer requestBuffer(int capacity) {
        if (requestBuffer.capacity() < capacity) {
            requestBuffer = ByteBuffer.allocateDirect(Math.max(capacity, requestBuffer.capacity() * 2))
                    .order(ByteOrder.nativeOrder());
        }
        return requestBuffer;
    }

    /** The buffer {@link #wake} writes the ids of ready tasks into. */
    static ByteBuffer readyBuffer() {
        return readyBuffer;
    }

    /** The buffer responses and body pieces are written into. */
    static ByteBuffer responseBuffer() {
        return encoder.buffer();
    }

    /**
     * Loads the handler named in a {@code jvm_content} directive and gives it
     * the next index. Returns null on success, otherwise what went wrong.
     */
    static String register(String name) {
        names.add(name);
        try {
            handlers.add(Handlers.load(name));
            return null;
        } catch (Throwable t) {
            handlers.add(null);
            if (Dev.ON) {
                loadErrors.put(handlers.size() - 1, t);
            }
            return Failure.describe("cannot load handler \"" + name + "\"", t);
        }
    }

    // nginx-jvm dev: why each handler that failed to load did
    // (written by the dev watcher's thread too)
    private static final Map<Integer, Throwable> loadErrors = new java.util.concurrent.ConcurrentHashMap<>();

    /** nginx-jvm dev, after a reload: the handlers that failed to load are tried again. */
    static void reloadHandlers() {
        for (int i = 0; i < handlers.size(); i++) {
            if (handlers.get(i) == null) {
                try {
                    handlers.set(i, Handlers.load(names.get(i)));
                    loadErrors.remove(i);
                    Log.notice("nginx.jvm.dev", "handler \"" + names.get(i) + "\" loaded");
                } catch (Throwable t) {
                    loadErrors.put(i, t);
                }
            }
        }
    }

    /**
     * nginx-jvm dev, before a request: what changed is reloaded; while the
     * last reload failed, a content handler's request answers its page
     * (the length of the encoded response), otherwise -1.
     */
    private static int devBefore(int phase, int mode) {
        if (Dev.beforeRequest() != null && phase == Wire.PHASE_CONTENT) {
            return encoder.encode(Dev.reloadPage(), mode);
        }
        return -1;
    }

    /** Runs the {@code jvm_init} handler; returns null on success, otherwise what went wrong. */
    static String init(String name) {
        try {
            Handlers.runInit(name);
            return null;
        } catch (Throwable t) {
            return Failure.describe("jvm_init \"" + name + "\" failed", t);
        }
    }

    /**
     * Serves the request of {@code length} bytes in the request buffer with
     * handler {@code index} of {@code phase}, on the event loop; {@code r} is
     * nginx's request, whose variables the handler may read while it runs.
     * Returns the length of the encoded response in the response buffer
     * ({@link Wire#BODY_DECLINED} when a rewrite, access or log handler
     * answered nothing).
     */
    static int handle(int index, int length, long r, int phase) {
        if (Dev.ON) {
            int page = devBefore(phase, Wire.LOOP);
            if (page >= 0) {
                return page;
            }
        }
        Object handler = handlers.get(index);
        if (!(handler instanceof Handler)) {
            return notLoaded(index, handler, Handler.class);
        }
        // measured from the request's decoding on, as docs/operations.md
        // says; a log handler is not counted: it runs after the access log's
        // line, and nothing would take its figure (the next call's would)
        boolean metered = Meter.on && phase != Wire.PHASE_LOG;
        long alloc = metered ? Meter.allocNow() : 0, cpu = metered ? Meter.cpuNow() : 0;
        Request request = request(length);
        request.handle = r;
        request.beforeContent = phase == Wire.PHASE_REWRITE || phase == Wire.PHASE_ACCESS;
        if (Tracing.on && phase == Wire.PHASE_CONTENT) {
            Tracing.begin(request, r, names.get(index));
        }
        long started = System.nanoTime();
        boolean answered = true;
        Metrics.inFlight.incrementAndGet();
        // a body sent in pieces may read the request's body: it keeps the files
        encoding = request.holdsFiles() ? request : null;
        int n;
        try {
            if (phase == Wire.PHASE_CONTENT) {
                n = encoder.encode(Handlers.call((Handler) handler, request), Wire.LOOP);
            } else {
                Response response = Handlers.callPhase(handler, request, phase);
                answered = response != null && phase != Wire.PHASE_LOG;
                n = answered ? encoder.encode(response, Wire.LOOP) : encoder.declined();
            }
        } catch (Failure f) {
            n = Dev.ON && phase == Wire.PHASE_CONTENT
                    ? encoder.encode(Dev.failed(f.getMessage(), f.getCause()), Wire.LOOP)
                    : encoder.error(500, f.getMessage(), f.getCause());
        } catch (Throwable t) {
            n = Dev.ON && phase == Wire.PHASE_CONTENT
                    ? encoder.encode(Dev.failed("the handler failed", t), Wire.LOOP)
                    : encoder.error(500, "the handler failed", t);
        } finally {
            request.handle = 0;
            Metrics.inFlight.decrementAndGet();
            if (encoding == request) {
                encoding = null;
                request.end();
            }
        }
        if (answered) {
            // a rewrite or access handler that let the request go on answered nothing
            Metrics.response(Wire.LOOP, encoder.buffer().getInt(0), System.nanoTime() - started);
        }
        if (metered) {
            alloc = Meter.allocNow() - alloc;
            cpu = Meter.cpuNow() - cpu;
            if (answered) {
                Metrics.cost(alloc, cpu);
            }
            Meter.report(alloc, cpu);
        }
        return n;
    }

    /**
     * Computes a {@code jvm_set} variable with handler {@code index} for the
     * request in the request buffer, on the event loop. Returns the value's
     * length (the bytes at the start of the response buffer),
     * {@link Wire#VAR_NULL}, or {@link Wire#VAR_FAILED} with an int length and
     * the message there.
     */
    static int variable(int index, int length, long r) {
        Object handler = handlers.get(index);
        ByteBuffer out = encoder.buffer();
        String message;
        Throwable error = null;
        if (handler instanceof VariableHandler) {
            Request request = request(length);
            request.handle = r;
            try {
                String v = ((VariableHandler) handler).value(request);
                if (v == null) {
                    return Wire.VAR_NULL;
                }
                byte[] b = v.getBytes(StandardCharsets.UTF_8);
                if (b.length > out.capacity()) {
                    encoder.grow(b.length);
                    out = encoder.buffer();
                }
                Wire.put(out, 0, b, 0, b.length);
                return b.length;
            } catch (Throwable t) {
                message = "the jvm_set handler threw";
                error = t;
            } finally {
                request.handle = 0;
                request.end();
            }
        } else {
            message = handler == null
                    ? "the jvm_set handler failed to load (see the log at worker start)"
                    : handler.getClass().getName() + " does not implement " + VariableHandler.class.getName();
        }
        byte[] msg = Failure.describe(message, error).getBytes(StandardCharsets.UTF_8);
        int n = Math.min(msg.length, out.capacity() - 4);
        out.putInt(0, n);
        out.put(4, msg, 0, n);
        return Wire.VAR_FAILED;
    }

    /**
     * Runs the header filter {@code index} for the request in the request
     * buffer, whose response's header fields follow at {@code headersAt}
     * (int count, then name and value strings). Returns
     * {@link Wire#FILTER_SAME}, or the length of the edits
     * ({@link ResponseEncoder#edits}) or of an error, in the response buffer.
     */
    static int filter(int index, int length, long r, int headersAt) {
        Object handler = handlers.get(index);
        if (!(handler instanceof HeaderFilter)) {
            return notLoaded(handler, HeaderFilter.class);
        }
        Request request = request(headersAt);
        request.handle = r;
        try {
            Response before = new Response(request.status());
            ByteBuffer in = requestBuffer;
            int at = headersAt;
            int count = in.getInt(at);
            at += 4;
            for (int i = 0; i < count; i++) {
                String name = string(in, at);
                at += 4 + in.getInt(at);
                String value = string(in, at);
                at += 4 + in.getInt(at);
                before.header(name, value);
            }
            Response after;
            try {
                after = ((HeaderFilter) handler).filter(request, before);
            } catch (BadResponseException e) {
                throw new Failure(e.getMessage(), null);
            } catch (Throwable t) {
                throw new Failure("the jvm_header_filter handler threw", t);
            }
            return after == null ? Wire.FILTER_SAME : encoder.edits(before, after);
        } catch (Failure f) {
            return encoder.error(500, f.getMessage(), f.getCause());
        } catch (Throwable t) {
            return encoder.error(500, "the header filter failed", t);
        } finally {
            request.handle = 0;
            request.end();
        }
    }

    /**
     * The filters of the responses whose bodies are being filtered, by the
     * id the C module gives each response, from its first chunk to its last
     * one or to {@link #bodyEnd}.
     */
    private static final Map<Long, BodyFilter> filtering = new HashMap<>();

    /**
     * Runs the body filter {@code index} on a chunk of the response
     * {@code id} of the request in the request buffer: {@code size} bytes
     * after the request's {@code length}; {@code last}: the body's last
     * chunk. The filter's {@link BodyFilter#start} runs at the response's
     * first chunk. Returns
     * {@link Wire#CHUNK_SAME}, the length of what replaces the chunk, at the
     * start of the response buffer, or {@link Wire#CHUNK_FAILED} with an int
     * length and the message there.
     */
    static int body(int index, int length, long r, long id, int size, boolean last) {
        Object handler = handlers.get(index);
        String message;
        Throwable error = null;
        if (handler instanceof BodyFilter) {
            Request request = request(length);
            request.handle = r;
            try {
                BodyFilter filter = last ? filtering.remove(id) : filtering.get(id);
                if (filter == null) {
                    filter = ((BodyFilter) handler).start(request);
                    if (filter == null) {
                        throw new IllegalStateException("BodyFilter.start answered null");
                    }
                    if (!last) {
                        filtering.put(id, filter);
                    }
                }
                ByteBuffer chunk = requestBuffer.slice(length, size).asReadOnlyBuffer();
                byte[] b = filter.filter(request, chunk, last);
                if (b == null) {
                    return Wire.CHUNK_SAME;
                }
                ByteBuffer out = encoder.buffer();
                if (b.length > out.capacity()) {
                    encoder.grow(b.length);
                    out = encoder.buffer();
                }
                Wire.put(out, 0, b, 0, b.length);
                return b.length;
            } catch (Throwable t) {
                filtering.remove(id);
                message = "the jvm_body_filter handler threw";
                error = t;
            } finally {
                request.handle = 0;
                request.end();
            }
        } else {
            message = handler == null
                    ? "the jvm_body_filter handler failed to load (see the log at worker start)"
                    : handler.getClass().getName() + " does not implement " + BodyFilter.class.getName();
        }
        ByteBuffer out = encoder.buffer();
        byte[] msg = Failure.describe(message, error).getBytes(StandardCharsets.UTF_8);
        int n = Math.min(msg.length, out.capacity() - 4);
        out.putInt(0, n);
        out.put(4, msg, 0, n);
        return Wire.CHUNK_FAILED;
    }

    /** The body of response {@code id} ended before its last chunk: its filter goes. */
    static void bodyEnd(long id) {
        filtering.remove(id);
    }

    /** How many responses have a body filter started (tests). */
    static int filtering() {
        return filtering.size();
    }

    private static String string(ByteBuffer b, int at) {
        byte[] s = new byte[b.getInt(at)];
        Wire.get(b, at + 4, s, 0, s.length);
        return new String(s, StandardCharsets.ISO_8859_1);
    }

    /** The log phase of nginx's request {@code r}, whose span tracing began: it ends. */
    static void traceEnd(long r) {
        try {
            Tracing.end(r);
        } catch (Throwable t) {
            System.err.println(Failure.describe("jvm: tracing: a request's span cannot end", t));
        }
    }

    /** Subrequest {@code id} is over: its answer is in the request buffer. */
    static void subrequestDone(int id, int length) {
        try {
            Subrequests.done(id, requestBuffer, length);
        } catch (Throwable t) {
            System.err.println(Failure.describe("jvm: completing a subrequest failed", t));
        }
    }

    /**
     * {@code n} bytes of call {@code id}'s answer at the start of the request
     * buffer (0: its end; -1: it failed): {@link UpstreamCall#MORE}, {@link
     * UpstreamCall#PAUSE} or {@link UpstreamCall#DROP}.
     */
    static int clientData(int id, int n) {
        try {
            return UpstreamCall.data(id, requestBuffer, n);
        } catch (Throwable t) {
            System.err.println(Failure.describe("jvm: a call's answer failed", t));
            return UpstreamCall.DROP;
        }
    }

    private static Request request(int length) {
        byte[] data = new byte[length];
        Wire.get(requestBuffer, 0, data, 0, length);
        return new Request(data);
    }

    private static int notLoaded(int index, Object handler, Class<?> kind) {
        if (handler == null && Dev.ON) {
            return encoder.encode(Dev.page("cannot load handler \"" + names.get(index) + "\"",
                    loadErrors.get(index)), Wire.LOOP);
        }
        return notLoaded(handler, kind);
    }

    private static int notLoaded(Object handler, Class<?> kind) {
        if (handler == null) {
            return encoder.error(500, "the handler of this location failed to load"
                    + " (see the log at worker start)", null);
        }
        return encoder.error(500, handler.getClass().getName() + " does not implement "
                + kind.getName() + " (check jvm_async)", null);
    }

    /**
     * Sets up where handlers may run: a pool of {@code poolSize} threads
     * (none if 0) with {@code queueSize} waiting requests; virtual threads,
     * on {@code carriers} carrier threads of the worker's own (0: the JDK's
     * scheduler); with {@code coloop}, the virtual threads the event loop
     * carries (jvm_mode coloop), or one [warn] saying why this JVM cannot
     * have them and those locations run as jvm_mode virtual; and the
     * outgoing queue of each WebSocket ({@code wsSendQueue} messages).
     * Returns null, or why virtual threads cannot be had.
     */
    static String configure(int poolSize, int carriers, int queueSize, boolean virtual, boolean coloop,
                            int wsSendQueue) {
        try {
            LoopCalls.bind(Natives::wake);
            sockets.configure(wsSendQueue);
            Timers.start(Natives::wake, 2);
            ExitWatch.install();
            // first: tracing has the C module measure calls, which Meter.start asks
            Tracing.start();
            Meter.start();
            String error = tasks.configure(poolSize, carriers, queueSize, virtual, coloop);
            Metrics.start(tasks);
            Repl.start();
            Dev.start();
            return error;
        } catch (Throwable t) {
            return Failure.describe("cannot start the thread pool", t);
        }
    }

    /**
     * Starts the request in the request buffer as task {@code id}: on the
     * loop (async handlers), a pool thread or a virtual thread. Returns
     * {@link Wire#ACCEPTED}: {@link #wake} names the task when its response
     * is ready. Otherwise returns the length of an encoded error response
     * (503 when refused).
     */
    static int submit(int index, int length, long id, int mode, boolean async, long r, int phase) {
        if (Dev.ON) {
            int page = devBefore(phase, Wire.LOOP);
            if (page >= 0) {
                return page;
            }
        }
        Object handler = handlers.get(index);
        if (phase == Wire.PHASE_LOG) {
            return log(handler, length, mode);
        }
        if (!(async ? handler instanceof AsyncHandler : handler instanceof Handler)) {
            return notLoaded(index, handler, async ? AsyncHandler.class : Handler.class);
        }
        Request request = null;
        boolean counted = false;
        // the loop's share: the request's decoding, the task's start (and a coloop task's first slice)
        long alloc = Meter.on ? Meter.allocNow() : 0, cpu = Meter.on ? Meter.cpuNow() : 0;
        try {
            request = request(length);
            request.handle = r;
            request.beforeContent = phase == Wire.PHASE_REWRITE || phase == Wire.PHASE_ACCESS;
            request.suspended = true;
            if (Tracing.on && phase == Wire.PHASE_CONTENT) {
                Tracing.begin(request, r, names.get(index));
            }
            mode = tasks.effective(mode);
            Task task = tasks.task(id, mode, phase, handler, request, async);
            task.what = names.get(index);
            request.abort = task;
            if (request.streamsBody()) {
                request.upload = new UploadBody(() -> tasks.room(task));
            }
            // in flight from before its handler can run: an async handler on
            // the loop runs within submit, and jvm_status counts itself
            Metrics.inFlight.incrementAndGet();
            counted = true;
            String refused = tasks.submit(task, mode);
            if (refused == null) {
                if (tasks.answeredInline(task)) {
                    // a coloop handler that answered before it first parked: as on the loop
                    Metrics.inFlight.decrementAndGet();
                    counted = false;
                    int n = task.encode(encoder);
                    Metrics.response(mode, encoder.buffer().getInt(0), System.nanoTime() - task.started);
                    tasks.forget(task);
                    report(task, alloc, cpu, true);
                    // over: kept for the next coloop request
                    tasks.recycle(task);
                    return n;
                }
                if (task.meter != null) {
                    task.meter.addLoop(alloc, cpu);
                }
                return Wire.ACCEPTED;
            }
            Metrics.inFlight.decrementAndGet();
            counted = false;
            request.end();
            Metrics.refused();
            return encoder.error(503, refused, null);
        } catch (Throwable t) {
            if (counted) {
                Metrics.inFlight.decrementAndGet();
            }
            if (request != null) {
                request.end();
            }
            return encoder.error(500, "cannot start the handler", t);
        }
    }

    /**
     * A log handler off the event loop: nothing comes back, a failure goes to
     * the error log (stderr). The request is gone by the time it runs.
     */
    private static int log(Object handler, int length, int mode) {
        mode = tasks.effective(mode);
        if (!(handler instanceof Handler)) {
            return notLoaded(handler, Handler.class);
        }
        Request request = request(length);
        String refused = tasks.detach(() -> {
            try {
                Handlers.callPhase(handler, request, Wire.PHASE_LOG);
            } catch (Failure f) {
                System.err.println(Failure.describe("jvm: " + f.getMessage(), f.getCause()));
            } catch (Throwable t) {
                System.err.println(Failure.describe("jvm: the jvm_log handler failed", t));
            } finally {
                // its files, opened on the loop, are the request's own until now
                request.end();
            }
        }, mode);
        if (refused != null) {
            request.end();
        }
        return refused == null ? Wire.ACCEPTED : encoder.error(503, "jvm_log: " + refused, null);
    }

    /**
     * A piece of task {@code id}'s request body, {@code length} bytes at the
     * start of the request buffer (copied before this returns), with its
     * status: {@link Wire#UPLOAD_GOING}, {@link Wire#UPLOAD_END} or the HTTP
     * status the body failed with. Answers {@link Wire#UPLOAD_MORE},
     * {@link Wire#UPLOAD_FULL} (read no more until {@link #wake} names the
     * task with {@link Wire#POLL_BODY}) or {@link Wire#UPLOAD_DROP}.
     */
    static int upload(long id, int length, int status) {
        Task task = tasks.get(id);
        UploadBody body = task == null ? null : task.request.upload;
        if (body == null) {
            return Wire.UPLOAD_DROP;
        }
        byte[] piece = new byte[length];
        Wire.get(requestBuffer, 0, piece, 0, length);
        return body.offer(piece, status);
    }

    /**
     * Event loop, woken through the eventfd: runs the loop's timers that are
     * due (when {@code due}: once a wake-up), then writes the ids of up to
     * {@link Wire#READY_MAX} tasks with something for the loop into the ready
     * buffer, as {@link Tasks#poll} names them. Returns their count, plus
     * {@link Wire#WAKE_SOCKETS} when WebSockets have something too. One JNI
     * call a wake-up rather than a poll for each task and one more for none.
     */
    static int wake(boolean due) {
        return wake(due ? Worker::timers : null, tasks, sockets, readyBuffer);
    }

    /**
     * {@link #wake} over these (tests give their own): {@code timers}, if
     * any, then the ids of {@code tasks} into {@code ready}.
     */
    static int wake(Runnable timers, Tasks tasks, WebSockets sockets, ByteBuffer ready) {
        if (timers != null) {
            try {
                timers.run();
            } catch (Throwable t) {
                // The ready tasks are named all the same: the wake-up that
                // brought the loop here was theirs too, and no other comes
                // until Tasks.poll clears their signal.
                Log.error("nginx.jvm", "the event loop's timers failed", t);
            }
        }
        // Neither throws: queue polls and flags, and at most READY_MAX ids
        // into a buffer of as many (a VM error aside, which the C module logs).
        int n = tasks.poll(ready, Wire.READY_MAX);
        return sockets.pending() ? n | Wire.WAKE_SOCKETS : n;
    }

    /** Encodes task {@code id}'s response, as {@link #handle} does. */
    static int take(long id) {
        Task task = tasks.get(id);
        if (task == null) {
            return encoder.error(500, "no such task", null);
        }
        long alloc = task.meter != null ? Meter.allocNow() : 0, cpu = task.meter != null ? Meter.cpuNow() : 0;
        int n = task.encode(encoder);
        int status = encoder.buffer().getInt(0);
        if (status >= 100) {
            // not a rewrite or access handler that let the request go on
            Metrics.response(task.mode, status, System.nanoTime() - task.started);
        }
        report(task, alloc, cpu, status >= 100);
        if (tasks.done(task, status)) {
            Metrics.inFlight.decrementAndGet();
            return n | Wire.TAKE_DONE;
        }
        return n;
    }

    /**
     * Loop: adds what the loop spent since it read {@code alloc} and
     * {@code cpu} to task's cost, counts it in jvm_status's histograms when
     * it {@code answered}, and hands it to the C module ($jvm_alloc_bytes).
     */
    private static void report(Task task, long alloc, long cpu, boolean answered) {
        Meter m = task.meter;
        if (m != null) {
            m.addLoop(alloc, cpu);
            if (answered) {
                Metrics.cost(m.alloc(), m.cpu());
            }
            m.report();
        }
    }

    /** Task {@code id}'s request is over: forget it, stop its body. */
    static void cancel(long id) {
        if (tasks.cancel(id)) {
            Metrics.inFlight.decrementAndGet();
        }
    }

    /**
     * Task {@code id}'s client left before its response was complete: its
     * request's abort callbacks run on a JVM thread, its handler's thread is
     * interrupted if {@code interrupt} (jvm_abort_interrupt on), and the task
     * is forgotten as by {@link #cancel}.
     */
    static void abort(long id, boolean interrupt) {
        try {
            if (tasks.get(id) != null) {
                Metrics.aborted();
            }
            tasks.abort(id, interrupt);
        } finally {
            cancel(id);
        }
    }

    /** Keeps a body sent in pieces; returns the id the response gives the C module. */
    private static int stream(BodySource body) {
        do {
            nextStream = nextStream == Integer.MAX_VALUE ? 0 : nextStream + 1;
        } while (streams.containsKey(nextStream));
        streams.put(nextStream, body);
        if (encoding != null) {
            held.put(nextStream, encoding);
            encoding = null;
        }
        return nextStream;
    }

    /**
     * Writes the next piece of body {@code id} into the response buffer.
     * Returns its length, or {@link Wire#NEXT_END}, {@link Wire#NEXT_WAIT}
     * (the task is named by {@link #wake} when the piece is there) or
     * {@link Wire#NEXT_FAILED}, with the message in the response buffer.
     */
    static int next(int id) {
        ByteBuffer out = encoder.buffer();
        try {
            return streams.get(id).fill(out);
        } catch (Throwable t) {
            byte[] msg = Failure.describe("the response body failed", t).getBytes(StandardCharsets.UTF_8);
            int n = Math.min(msg.length, out.capacity() - 4);
            out.putInt(0, n);
            out.put(4, msg, 0, n);
            return Wire.NEXT_FAILED;
        }
    }

    /** Closes body {@code id}: at its end, or when the client went away. */
    static void close(int id) {
        BodySource body = streams.remove(id);
        if (!held.isEmpty()) {
            Request request = held.remove(id);
            if (request != null) {
                request.end();
            }
        }
        try {
            if (body != null) {
                body.close();
            }
        } catch (Throwable ignored) {
            // The response is over; nothing is left to tell.
        }
    }

    /**
     * WebSocket {@code id} is open (its 101 has left). Returns
     * {@link Wire#WS_JAVA_PINGS} when its listener answers pings itself.
     */
    static int wsOpen(int id) {
        return sockets.open(id);
    }

    /** The upgrade of socket {@code id} did not happen: forget it, no callback. */
    static void wsAbandon(int id) {
        sockets.abandon(id);
    }

    /**
     * A whole message (opcode 1 text, 2 binary; 9 ping, 10 pong) of {@code length}
     * bytes at the start of the request buffer. Returns {@link Wire#WS_PAUSE} when the
     * socket's inbound queue is full: the C module reads no more until {@link #wsPoll}
     * names it.
     */
    static int wsMessage(int id, int opcode, int length) {
        return sockets.message(id, opcode, requestBuffer, length);
    }

    /** Socket {@code id} is closed, with this code and a reason in the request buffer. */
    static void wsClosed(int id, int code, int reasonLength) {
        sockets.closed(id, code, requestBuffer, reasonLength);
    }

    /**
     * The next socket with frames to send, or that may read again ({@code -2 - id}:
     * it may, {@code id}: it is to read no more yet), or -1.
     */
    static int wsPoll() {
        return sockets.poll();
    }

    /**
     * The next frame of socket {@code id} into the response buffer: int opcode, then
     * the payload; returns its length, {@link Wire#WS_NONE}, or {@link Wire#WS_MOVED}
     * when the frame needs a larger buffer, which is then made.
     */
    static int wsTake(int id) {
        int n = sockets.take(id, encoder.buffer());
        if (n < 0) {
            encoder.grow(-n);
            return Wire.WS_MOVED;
        }
        return n;
    }

    /** How many bodies are being sent in pieces (tests). */
    static int streams() {
        return streams.size();
    }

    /**
     * {@code n} messages of the topic {@code handle}, {@code length} bytes at
     * the start of the request buffer, for this worker's subscribers.
     */
    static void topicMessages(long handle, int n, int length) {
        try {
            Topic.deliver(handle, requestBuffer, n, length);
        } catch (Throwable t) {
            Log.error("nginx.jvm.Topic", "topic delivery failed", t);
        }
    }

    /** On the event loop, when woken ({@link #wake}): runs the loop's timers that are due. */
    static void timers() {
        // each part whatever the one before it threw
        try {
            LoopCalls.run();
        } catch (Throwable t) {
            Log.error("nginx.jvm", "the calls on the event loop failed", t);
        }
        try {
            Timers.runDue();
        } catch (Throwable t) {
            Log.error("nginx.jvm.Timers", "timers failed", t);
        }
        // jvm_mode coloop: the virtual threads that are to run, within a budget
        tasks.drain();
    }

    /** A graceful quit (or a reload) began: timers stop, so that nothing new starts. */
    static void quitting() {
        Timers.stop();
    }

    /**
     * Called at worker exit (quit, reload, stop): {@code jvm_exit}'s handler
     * ({@code exit}, or null), then the application's shutdown hooks, bounded
     * together by {@code timeoutMs}.
     */
    static void stop(String exit, long timeoutMs) {
        Timers.stop();
        UpstreamCall.abandonWaiting();
        leave(exit, timeoutMs);
        clear();
    }

    /** The handlers, sockets and timers go; what a stop leaves (tests too). */
    static void clear() {
        Timers.stop();
        handlers.clear();
        names.clear();
        filtering.clear();
        sockets.stop();
        removeAttachSocket();
    }

    /**
     * Runs {@code jvm_exit} and the shutdown hooks on a thread of their own,
     * so that one that hangs cannot keep the worker: nginx's master waits
     * for a worker that quits, and a reload keeps the old one's memory.
     */
    private static void leave(String exit, long timeoutMs) {
        ExitWatch.leaving = true;
        Thread t = new Thread(() -> {
            if (exit != null) {
                try {
                    Handlers.runInit(exit);
                } catch (Throwable e) {
                    Log.error("nginx.jvm", "jvm_exit \"" + exit + "\" failed", e);
                }
            }
            try {
                Natives.runShutdownHooks();
            } catch (Throwable e) {
                Log.error("nginx.jvm", "the shutdown hooks failed", e);
            }
        }, "nginx-jvm-exit");
        t.setDaemon(true);
        t.start();
        try {
            t.join(Math.max(timeoutMs, 1));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (t.isAlive()) {
            Log.warn("nginx.jvm", (exit != null ? "jvm_exit \"" + exit + "\" and the" : "The")
                    + " shutdown hooks did not end within jvm_exit_timeout (" + timeoutMs
                    + " ms): the worker exits without waiting for them");
        }
    }

    /**
     * With the attach mechanism turned on (docs/security.md), the JVM's
     * listener socket would outlive the worker: the JVM is left to the
     * process's exit, which does not remove it. HotSpot keeps it in /tmp
     * whatever java.io.tmpdir says.
     */
    private static void removeAttachSocket() {
        try {
            java.nio.file.Files.deleteIfExists(java.nio.file.Path.of(
                    "/tmp/.java_pid" + ProcessHandle.current().pid()));
        } catch (Exception e) {
            // not ours to remove, or gone: nothing is lost
        }
    }
}
