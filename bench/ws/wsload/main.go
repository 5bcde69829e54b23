// wsload: the WebSocket load client of bench/websocket.py.  The standard
// library only: a minimal RFC 6455 client (handshake, masked frames out,
// unmasked frames in), enough to drive an echo server hard from one process.
//
//	wsload echo   -url ws://127.0.0.1:8080/ws -conns 100 -duration 10 -warmup 2 -size 32 -inflight 1
//	wsload idle   -url ... -conns 10000      (opens, one echo each, holds until stdin closes)
//	wsload cycles -url ... -n 10000 -parallel 20
//
// Each mode prints one JSON object on stdout (idle: one when open, one when closed).
package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

type conn struct {
	c   net.Conn
	r   *bufio.Reader
	out []byte // the masked text frame this connection sends, prebuilt
	msg []byte // the payload the echo must bring back
}

func dial(u *url.URL, timeout time.Duration) (*conn, error) {
	c, err := net.DialTimeout("tcp", u.Host, timeout)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(timeout))
	var k [16]byte
	rand.Read(k[:])
	key := base64.StdEncoding.EncodeToString(k[:])
	path := u.RequestURI()
	req := "GET " + path + " HTTP/1.1\r\nHost: " + u.Host +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key +
		"\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := c.Write([]byte(req)); err != nil {
		c.Close()
		return nil, err
	}
	r := bufio.NewReaderSize(c, 4096)
	status, err := r.ReadString('\n')
	if err != nil {
		c.Close()
		return nil, err
	}
	if len(status) < 12 || status[9:12] != "101" {
		c.Close()
		return nil, fmt.Errorf("handshake: %q", status)
	}
	h := sha1.Sum([]byte(key + guid))
	want := base64.StdEncoding.EncodeToString(h[:])
	ok := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			c.Close()
			return nil, err
		}
		if line == "\r\n" {
			break
		}
		if i := bytes.IndexByte([]byte(line), ':'); i > 0 &&
			bytes.EqualFold([]byte(line[:i]), []byte("Sec-WebSocket-Accept")) &&
			string(bytes.TrimSpace([]byte(line[i+1:]))) == want {
			ok = true
		}
	}
	if !ok {
		c.Close()
		return nil, errors.New("handshake: bad or missing Sec-WebSocket-Accept")
	}
	c.SetDeadline(time.Time{})
	return &conn{c: c, r: r}, nil
}

// frame builds a masked client frame.
func frame(opcode byte, payload []byte) []byte {
	var b []byte
	b = append(b, 0x80|opcode)
	n := len(payload)
	switch {
	case n < 126:
		b = append(b, 0x80|byte(n))
	case n < 65536:
		b = append(b, 0x80|126, byte(n>>8), byte(n))
	default:
		b = append(b, 0x80|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	var m [4]byte
	rand.Read(m[:])
	b = append(b, m[:]...)
	for i, x := range payload {
		b = append(b, x^m[i%4])
	}
	return b
}

// readFrame reads one server frame (unmasked) into buf; returns opcode, payload.
func (c *conn) readFrame(buf []byte) (byte, []byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(c.r, h[:]); err != nil {
		return 0, nil, err
	}
	n := int(h[1] & 0x7f)
	if n == 126 {
		var e [2]byte
		if _, err := io.ReadFull(c.r, e[:]); err != nil {
			return 0, nil, err
		}
		n = int(binary.BigEndian.Uint16(e[:]))
	} else if n == 127 {
		var e [8]byte
		if _, err := io.ReadFull(c.r, e[:]); err != nil {
			return 0, nil, err
		}
		n = int(binary.BigEndian.Uint64(e[:]))
	}
	if h[1]&0x80 != 0 {
		return 0, nil, errors.New("masked frame from server")
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(c.r, buf); err != nil {
		return 0, nil, err
	}
	return h[0] & 0x0f, buf, nil
}

// roundTrip sends the connection's message and waits for its echo.
func (c *conn) roundTrip(buf []byte) ([]byte, error) {
	if _, err := c.c.Write(c.out); err != nil {
		return buf, err
	}
	return c.readEcho(buf, c.msg)
}

// close does the close handshake (1000), waits up to 2 s for the server's
// close frame, then closes the TCP connection.
func (c *conn) close() bool {
	c.c.SetDeadline(time.Now().Add(2 * time.Second))
	c.c.Write(frame(8, []byte{0x03, 0xe8}))
	ok := false
	buf := make([]byte, 128)
	for {
		op, _, err := c.readFrame(buf)
		if err != nil {
			break
		}
		if op == 8 {
			ok = true
			break
		}
	}
	c.c.Close()
	return ok
}

func newConn(u *url.URL, size int, id int) (*conn, error) {
	c, err := dial(u, 30*time.Second)
	if err != nil {
		return nil, err
	}
	msg := []byte(fmt.Sprintf("%08d", id))
	for len(msg) < size {
		msg = append(msg, 'a'+byte(len(msg)%26))
	}
	c.msg = msg[:size]
	c.out = frame(1, c.msg)
	return c, nil
}

// openAll opens n connections, `parallel` at a time.
func openAll(u *url.URL, n, parallel, size int, echo bool) ([]*conn, int, string) {
	conns := make([]*conn, n)
	var next, failed int64 = -1, 0
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256)
			for {
				i := int(atomic.AddInt64(&next, 1))
				if i >= n {
					return
				}
				c, err := newConn(u, size, i)
				if err == nil && echo {
					c.c.SetDeadline(time.Now().Add(30 * time.Second))
					_, err = c.roundTrip(buf)
					c.c.SetDeadline(time.Time{})
					if err != nil {
						c.c.Close()
					}
				}
				if err != nil {
					atomic.AddInt64(&failed, 1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				conns[i] = c
			}
		}()
	}
	wg.Wait()
	var ok []*conn
	for _, c := range conns {
		if c != nil {
			ok = append(ok, c)
		}
	}
	e, _ := firstErr.Load().(string)
	return ok, int(failed), e
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func pct(sorted []uint32, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p / 100 * float64(len(sorted)))
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return float64(sorted[i]) / 1000.0 // µs -> ms
}

func emit(v map[string]any) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

// echoFrames builds a connection's `inflight` messages, each with its
// index after the connection's id ("%08d%04d", then padding): with exactly
// `inflight` outstanding, the ones in flight all differ, so an echo lost,
// reordered or damaged shows as the wrong message where the next is due.
func echoFrames(id, size, inflight int) (msgs, frames [][]byte) {
	for k := 0; k < inflight; k++ {
		m := []byte(fmt.Sprintf("%08d%04d", id, k))
		for len(m) < size {
			m = append(m, 'a'+byte(len(m)%26))
		}
		msgs = append(msgs, m[:size])
		frames = append(frames, frame(1, m[:size]))
	}
	return msgs, frames
}

// readEcho reads frames until a data frame (answering pings) and checks it
// is `want`.
func (c *conn) readEcho(buf, want []byte) ([]byte, error) {
	for {
		op, p, err := c.readFrame(buf)
		if err != nil {
			return buf, err
		}
		buf = p
		switch op {
		case 1, 2:
			if !bytes.Equal(p, want) {
				return buf, fmt.Errorf("echo out of order or damaged: %q, want %q", p, want)
			}
			return buf, nil
		case 8:
			return buf, errors.New("closed by server")
		case 9:
			c.c.Write(frame(10, p))
		}
	}
}

func runEcho(u *url.URL, conns int, duration, warmup float64, size, inflight int) {
	cs, failed, firstErr := openAll(u, conns, 50, size, false)
	var start sync.WaitGroup
	start.Add(1)
	var measuring, stop atomic.Bool
	samples := make([][]uint32, len(cs))
	counts := make([]int64, len(cs))
	errs := make([]string, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func(i int, c *conn) {
			defer wg.Done()
			buf := make([]byte, 256)
			s := make([]uint32, 0, 1024)
			msgs, frames := echoFrames(i, size, inflight)
			sent := make([]time.Time, inflight) // message k's send time
			start.Wait()
			// `inflight` messages out, then one more for each echo: the
			// next echo due is always message k (mod inflight), sent
			// `inflight` messages ago.  One goroutine writes and reads:
			// inflight*size bytes fit in any socket buffer.
			var err error
			for k := 0; k < inflight && err == nil; k++ {
				sent[k] = time.Now()
				_, err = c.c.Write(frames[k])
			}
			for k := 0; err == nil && !stop.Load(); k = (k + 1) % inflight {
				if buf, err = c.readEcho(buf, msgs[k]); err != nil {
					break
				}
				if measuring.Load() {
					s = append(s, uint32(time.Since(sent[k]).Microseconds()))
				}
				sent[k] = time.Now()
				_, err = c.c.Write(frames[k])
			}
			if err != nil {
				errs[i] = err.Error()
			}
			samples[i] = s
			counts[i] = int64(len(s))
		}(i, c)
	}
	start.Done()
	time.Sleep(time.Duration(warmup * float64(time.Second)))
	fmt.Fprintln(os.Stderr, "start") // the caller samples the server's CPU here
	cpu0, t0 := cpuSeconds(), time.Now()
	measuring.Store(true)
	time.Sleep(time.Duration(duration * float64(time.Second)))
	measuring.Store(false)
	cpu1, elapsed := cpuSeconds(), time.Since(t0).Seconds()
	fmt.Fprintln(os.Stderr, "stop")
	stop.Store(true)
	// a connection blocked on a lost echo would hang the Wait: unblock it
	for _, c := range cs {
		c.c.SetDeadline(time.Now().Add(5 * time.Second))
	}
	wg.Wait()
	var all []uint32
	nerr := 0
	for i := range cs {
		all = append(all, samples[i]...)
		if errs[i] != "" {
			nerr++
			if firstErr == "" {
				firstErr = errs[i]
			}
		}
	}
	sort.Slice(all, func(a, b int) bool { return all[a] < all[b] })
	closed := 0
	var cw sync.WaitGroup
	var closedN int64
	sem := make(chan struct{}, 200)
	for _, c := range cs {
		cw.Add(1)
		sem <- struct{}{}
		go func(c *conn) {
			defer cw.Done()
			if c.close() {
				atomic.AddInt64(&closedN, 1)
			}
			<-sem
		}(c)
	}
	cw.Wait()
	closed = int(closedN)
	emit(map[string]any{
		"mode": "echo", "conns": len(cs), "inflight": inflight, "connect_errors": failed, "errors": nerr,
		"first_error": firstErr, "seconds": elapsed, "round_trips": len(all),
		"rps": float64(len(all)) / elapsed, "p50_ms": pct(all, 50), "p90_ms": pct(all, 90),
		"p99_ms": pct(all, 99), "p999_ms": pct(all, 99.9),
		"max_ms": pct(all, 100), "client_cpu_s": cpu1 - cpu0,
		"client_cpu_pct": 100 * (cpu1 - cpu0) / elapsed, "clean_closes": closed,
	})
}

func runIdle(u *url.URL, conns int, size int) {
	t0 := time.Now()
	cs, failed, firstErr := openAll(u, conns, 50, size, true)
	emit(map[string]any{"mode": "idle", "open": len(cs), "connect_errors": failed,
		"first_error": firstErr, "seconds": time.Since(t0).Seconds()})
	io.Copy(io.Discard, os.Stdin) // hold until our parent closes stdin
	// are they all still open? one more echo on each, then close
	alive := 0
	var wg sync.WaitGroup
	var aliveN, closedN int64
	sem := make(chan struct{}, 200)
	for _, c := range cs {
		wg.Add(1)
		sem <- struct{}{}
		go func(c *conn) {
			defer wg.Done()
			defer func() { <-sem }()
			c.c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := c.roundTrip(make([]byte, 256)); err == nil {
				atomic.AddInt64(&aliveN, 1)
			}
			if c.close() {
				atomic.AddInt64(&closedN, 1)
			}
		}(c)
	}
	wg.Wait()
	alive = int(aliveN)
	emit(map[string]any{"mode": "idle-closed", "alive": alive, "clean_closes": closedN})
}

func runCycles(u *url.URL, n, parallel, size int) {
	t0 := time.Now()
	var next, ok, failed int64 = -1, 0, 0
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256)
			for int(atomic.AddInt64(&next, 1)) < n {
				c, err := newConn(u, size, 0)
				if err == nil {
					c.c.SetDeadline(time.Now().Add(10 * time.Second))
					_, err = c.roundTrip(buf)
					if err == nil && !c.close() {
						err = errors.New("no close frame from the server")
					} else if err != nil {
						c.c.Close()
					}
				}
				if err != nil {
					atomic.AddInt64(&failed, 1)
					firstErr.CompareAndSwap(nil, err.Error())
				} else {
					atomic.AddInt64(&ok, 1)
				}
			}
		}()
	}
	wg.Wait()
	e, _ := firstErr.Load().(string)
	emit(map[string]any{"mode": "cycles", "ok": ok, "errors": failed, "first_error": e,
		"seconds": time.Since(t0).Seconds()})
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: wsload echo|idle|cycles -url ws://HOST:PORT/PATH ...")
		os.Exit(2)
	}
	mode := os.Args[1]
	fs := flag.NewFlagSet(mode, flag.ExitOnError)
	rawURL := fs.String("url", "", "ws://host:port/path")
	conns := fs.Int("conns", 100, "connections")
	duration := fs.Float64("duration", 10, "seconds measured (echo)")
	warmup := fs.Float64("warmup", 2, "seconds before measuring (echo)")
	size := fs.Int("size", 32, "message bytes (12..125)")
	n := fs.Int("n", 10000, "open/close cycles (cycles)")
	parallel := fs.Int("parallel", 20, "cycles run at once (cycles)")
	inflight := fs.Int("inflight", 1, "messages outstanding per connection (echo)")
	fs.Parse(os.Args[2:])
	u, err := url.Parse(*rawURL)
	if err != nil || u.Scheme != "ws" || *size < 12 || *size > 125 ||
		*inflight < 1 || *inflight > 9999 {
		fmt.Fprintln(os.Stderr, "wsload: -url ws://..., 12 <= -size <= 125 and 1 <= -inflight <= 9999 needed")
		os.Exit(2)
	}
	switch mode {
	case "echo":
		runEcho(u, *conns, *duration, *warmup, *size, *inflight)
	case "idle":
		runIdle(u, *conns, *size)
	case "cycles":
		runCycles(u, *n, *parallel, *size)
	default:
		fmt.Fprintln(os.Stderr, "wsload: unknown mode", mode)
		os.Exit(2)
	}
}
