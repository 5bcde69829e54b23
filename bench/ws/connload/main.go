// connload: the client of bench/conns.py.  One process holds up to about
// 19,900 idle connections (the descriptor limit here is 20,000): keep-alive
// HTTP connections that GET a path, and WebSockets that send a short text
// message the server echoes, each again every -min to -max seconds (the
// seed's 600k test asked every 5 to 45 s).  Every WebSocket also takes the
// broadcast "B<ns since the epoch>" and records how long it took to come.
//
//	connload -source 127.1.0.1 -servers 127.0.0.1:8080,127.0.0.2:8080 \
//	         -http 10000 -ws 9000 [-min 5 -max 45 -inflight 64 -rate 0]
//
// The standard library only, and no goroutine per connection: one epoll
// loop over nonblocking sockets, so that the client's own memory stays a
// few hundred bytes a connection.  Each connection is bound to -source
// (IP_BIND_ADDRESS_NO_PORT: the port is chosen at connect, per
// destination).  stdout gets one JSON object a line:
//
//	{"event":"open",...}       when every connection is open or failed
//	{"event":"delivered",...}  when every open WebSocket got a broadcast
//	                           (one per broadcast, "ns" its publish time)
//	{"event":"report",...}     on the command "report" (stdin): counts,
//	                           errors and the broadcast's delivery times
//
// stdin closing (or "quit") resets every connection and exits.
package main

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// The loop's system calls (read and write on nonblocking sockets, and
// epoll_wait) are made raw: the Go runtime is not told (no
// entersyscall/exitsyscall), which otherwise cost a client here about a
// sixth of its CPU (its P handed off, its monitor thread woken, futexes,
// context switches).  bench/conns.py runs it with
// GODEBUG=asyncpreemptoff=1: no signal interrupts a wait to preempt the
// one goroutine.

func rawRead(fd int, b []byte) (int, error) {
	r, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd),
		uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

func rawWrite(fd int, b []byte) (int, error) {
	r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd),
		uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// epollWait: the events ready, waiting at most ms for one.  Raw as well:
// the process has one goroutine, which the runtime believes running
// meanwhile (GOMAXPROCS 1; its monitor may ask it to yield, which it does
// at its next call, and a signal to preempt it only interrupts the wait:
// EINTR).
func epollWait(epfd int, events []syscall.EpollEvent, ms int) (int, error) {
	r, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_WAIT, uintptr(epfd),
		uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(ms), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

const guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// IP_BIND_ADDRESS_NO_PORT (linux/in.h): bind the address, pick the port
// at connect time, so that one source address serves many destinations.
const ipBindAddressNoPort = 24

const (
	kHTTP = iota
	kWS
)

const (
	sConnecting = iota // connect in progress
	sFirst             // connected: first request / handshake sent
	sIdle              // open, nothing asked
	sWaiting           // an ask sent, its answer awaited
	sClosed
)

type conn struct {
	fd    int32
	kind  uint8
	state uint8
	seq   uint32 // bumped on every change of state: stale timer entries skip
	at    uint32 // ms since t0: when the connect, first request or ask began
	pend  []byte // input not yet a whole response or frame
	got   uint16 // broadcasts received
}

// hist: how long things took, in buckets of about 1/8 of a doubling (ms).
type hist map[uint32]int

// bucketMs: the bucket of a duration of ms milliseconds, as its upper
// bound: exact up to 16 ms, then within an eighth.
func bucketMs(ms uint32) uint32 {
	if ms <= 16 {
		return ms
	}
	b := uint32(16)
	for b < ms {
		b += (b + 7) / 8
	}
	return b
}

func (h hist) add(ms uint32) { h[bucketMs(ms)]++ }

func (h hist) json() map[string]int {
	out := make(map[string]int, len(h))
	for k, v := range h {
		out[strconv.Itoa(int(k))] = v
	}
	return out
}

// round: one broadcast, by its publish time: when each WebSocket got it.
type round struct {
	Ns    int64    `json:"ns"`
	LatUs []uint32 `json:"lat_us"`
	Last  int64    `json:"last_ns"`
	sent  bool
}

type entry struct {
	idx  int32
	seq  uint32
	what uint8
}

const (
	tAsk = iota
	tDeadline
)

// A timer wheel of 100 ms slots, 2048 of them (204 s ahead at most).
const slotNs = int64(100 * time.Millisecond)
const slots = 2048

type client struct {
	epfd     int
	conns    []conn
	dests    []syscall.SockaddrInet4
	source   [4]byte
	host     string
	httpReq  []byte
	wsPath   string
	nHTTP    int
	nWS      int
	next     int // next connection to open
	inflight int
	maxIn    int
	rate     float64 // connects a second at most (0: as fast as -inflight lets)
	tokens   float64 // connects that may start now
	tokensAt int64   // when tokens was last topped up (ns)
	minAsk   int64
	maxAsk   int64
	timeout  int64
	wheel    [slots][]entry
	wheelAt  int64 // the slot processed last (absolute slot number)
	pid      uint32
	openSent bool
	// how long: connects (to established), first answers (from the first
	// request written), asks' answers (from the ask written)
	latConnect, latFirst, latAsk hist
	delivSent                    bool
	t0                           time.Time

	// counts
	httpOpen, wsOpen                  int
	connectErr, handshakeErr          int
	requestErr, timeouts, closedEarly int
	asksHTTP, asksWS                  int
	bcastGot, bcastExtra              int
	rounds                            []*round
	firstError                        string
	errorKinds                        map[string]int
}

func (cl *client) fail(c *conn, counter *int, kind string, err string) {
	*counter++
	cl.errorKinds[kind]++
	if cl.firstError == "" {
		cl.firstError = kind + ": " + err
	}
	if c.state == sConnecting || c.state == sFirst {
		cl.inflight--
	}
	if c.state != sClosed {
		syscall.Close(int(c.fd))
		c.state = sClosed
		c.seq++
		c.pend = nil
	}
}

// ms: milliseconds since the client started.
func (cl *client) ms() uint32 { return uint32(time.Since(cl.t0) / time.Millisecond) }

func (cl *client) schedule(idx int, afterNs int64, what uint8) {
	c := &cl.conns[idx]
	at := (time.Now().UnixNano() + afterNs) / slotNs
	if at <= cl.wheelAt {
		at = cl.wheelAt + 1
	}
	if at-cl.wheelAt >= slots {
		at = cl.wheelAt + slots - 1
	}
	s := at % slots
	cl.wheel[s] = append(cl.wheel[s], entry{int32(idx), c.seq, what})
}

func (cl *client) askLater(idx int) {
	d := cl.minAsk + rand.Int63n(cl.maxAsk-cl.minAsk+1)
	cl.schedule(idx, d, tAsk)
}

// wsKey is connection idx's Sec-WebSocket-Key: made from the pid and idx,
// so that it need not be kept.
func (cl *client) wsKey(idx int) string {
	var k [16]byte
	binary.BigEndian.PutUint32(k[0:], cl.pid)
	binary.BigEndian.PutUint32(k[4:], uint32(idx))
	copy(k[8:], "connload")
	return base64.StdEncoding.EncodeToString(k[:])
}

func (cl *client) openNext() {
	if cl.rate > 0 && cl.next < len(cl.conns) {
		now := time.Now().UnixNano()
		if cl.tokensAt == 0 {
			cl.tokensAt = now
		}
		cl.tokens += float64(now-cl.tokensAt) * cl.rate / 1e9
		cl.tokensAt = now
		if max := math.Max(1, cl.rate/20); cl.tokens > max {
			cl.tokens = max // at most 50 ms' worth at once
		}
	}
	for cl.inflight < cl.maxIn && cl.next < len(cl.conns) {
		if cl.rate > 0 {
			if cl.tokens < 1 {
				return
			}
			cl.tokens--
		}
		idx := cl.next
		cl.next++
		c := &cl.conns[idx]
		fd, err := syscall.Socket(syscall.AF_INET,
			syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			c.state = sClosed
			cl.connectErr++
			cl.errorKinds["socket"]++
			if cl.firstError == "" {
				cl.firstError = "socket: " + err.Error()
			}
			continue
		}
		c.fd = int32(fd)
		c.state = sConnecting
		c.at = cl.ms()
		cl.inflight++
		syscall.SetsockoptInt(fd, syscall.IPPROTO_IP, ipBindAddressNoPort, 1)
		if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: cl.source}); err != nil {
			cl.fail(c, &cl.connectErr, "bind", err.Error())
			continue
		}
		dest := cl.dests[idx%len(cl.dests)]
		err = syscall.Connect(fd, &dest)
		if err != nil && err != syscall.EINPROGRESS {
			cl.fail(c, &cl.connectErr, "connect", err.Error())
			continue
		}
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLOUT |
			syscall.EPOLLRDHUP | (1 << 31), Fd: int32(idx)} // EPOLLET
		if err := syscall.EpollCtl(cl.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
			cl.fail(c, &cl.connectErr, "epoll", err.Error())
			continue
		}
		cl.schedule(idx, cl.timeout, tDeadline)
	}
}

func (cl *client) write(idx int, b []byte) bool {
	c := &cl.conns[idx]
	n, err := rawWrite(int(c.fd), b)
	if err != nil || n != len(b) {
		msg := "short write"
		if err != nil {
			msg = err.Error()
		}
		cl.fail(c, &cl.requestErr, "write", msg)
		return false
	}
	return true
}

func (cl *client) connected(idx int) {
	c := &cl.conns[idx]
	v, err := syscall.GetsockoptInt(int(c.fd), syscall.SOL_SOCKET, syscall.SO_ERROR)
	if err != nil || v != 0 {
		msg := syscall.Errno(v).Error()
		if err != nil {
			msg = err.Error()
		}
		cl.fail(c, &cl.connectErr, "connect", msg)
		return
	}
	// the connect's deadline is done with; the first answer has its own,
	// from now, as every ask's answer has
	now := cl.ms()
	cl.latConnect.add(now - c.at)
	c.state = sFirst
	c.seq++
	c.at = now
	var ok bool
	if c.kind == kHTTP {
		ok = cl.write(idx, cl.httpReq)
	} else {
		req := "GET " + cl.wsPath + " HTTP/1.1\r\nHost: " + cl.host +
			"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " +
			cl.wsKey(idx) + "\r\nSec-WebSocket-Version: 13\r\n\r\n"
		ok = cl.write(idx, []byte(req))
	}
	if ok {
		cl.schedule(idx, cl.timeout, tDeadline)
	}
}

// opened: the first answer came; the connection is one of those held.
func (cl *client) opened(idx int) {
	c := &cl.conns[idx]
	cl.inflight--
	cl.latFirst.add(cl.ms() - c.at)
	if c.kind == kHTTP {
		cl.httpOpen++
	} else {
		cl.wsOpen++
	}
	cl.answered(idx)
}

func (cl *client) answered(idx int) {
	c := &cl.conns[idx]
	c.state = sIdle
	c.seq++
	cl.askLater(idx)
}

// frame builds a masked client frame.
func frame(opcode byte, payload []byte) []byte {
	b := []byte{0x80 | opcode, 0x80 | byte(len(payload))}
	m := [4]byte{byte(rand.Uint32()), byte(rand.Uint32()), byte(rand.Uint32()), byte(rand.Uint32())}
	b = append(b, m[:]...)
	for i, x := range payload {
		b = append(b, x^m[i%4])
	}
	return b
}

var askPayload = []byte("ask-0123456789")

func (cl *client) ask(idx int) {
	c := &cl.conns[idx]
	var ok bool
	if c.kind == kHTTP {
		ok = cl.write(idx, cl.httpReq)
	} else {
		ok = cl.write(idx, frame(1, askPayload))
	}
	if ok {
		c.state = sWaiting
		c.seq++
		c.at = cl.ms()
		cl.schedule(idx, cl.timeout, tDeadline)
	}
}

// httpResponse parses one whole response at the front of b: its length, 0
// when more is needed, -1 on a bad one.
func httpResponse(b []byte) (int, string) {
	end := -1
	for i := 0; i+3 < len(b); i++ {
		if b[i] == '\r' && b[i+1] == '\n' && b[i+2] == '\r' && b[i+3] == '\n' {
			end = i + 4
			break
		}
	}
	if end < 0 {
		if len(b) > 8192 {
			return -1, "header too long"
		}
		return 0, ""
	}
	head := string(b[:end])
	if !strings.HasPrefix(head, "HTTP/1.1 200") {
		line, _, _ := strings.Cut(head, "\r\n")
		return -1, "status: " + line
	}
	cl := -1
	for _, line := range strings.Split(head, "\r\n")[1:] {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch strings.ToLower(name) {
		case "content-length":
			n, err := strconv.Atoi(value)
			if err != nil {
				return -1, "bad content-length"
			}
			cl = n
		case "connection":
			if strings.EqualFold(value, "close") {
				return -1, "Connection: close"
			}
		}
	}
	if cl < 0 {
		return -1, "no content-length"
	}
	if len(b) < end+cl {
		return 0, ""
	}
	return end + cl, ""
}

// readable reads what came.  Edge-triggered: a read that did not fill buf
// emptied the socket, and what comes after it is a new edge, so the read
// that would only say EAGAIN is left out (a system call of four per ask)
// unless the peer hung up or the socket failed (hup): then it reads on to
// the end or the error.
func (cl *client) readable(idx int, buf []byte, hup bool) {
	c := &cl.conns[idx]
	for c.state != sClosed {
		n, err := rawRead(int(c.fd), buf)
		if err == syscall.EAGAIN {
			return
		}
		if err != nil || n == 0 {
			msg := "EOF"
			if err != nil {
				msg = err.Error()
			}
			if c.state == sFirst || c.state == sConnecting {
				if c.kind == kWS {
					cl.fail(c, &cl.handshakeErr, "handshake", msg)
				} else {
					cl.fail(c, &cl.requestErr, "first request", msg)
				}
			} else {
				cl.fail(c, &cl.closedEarly, "closed early", msg)
			}
			return
		}
		data := buf[:n]
		if len(c.pend) > 0 {
			data = append(c.pend, data...)
		}
		rest := cl.consume(idx, data)
		if c.state == sClosed {
			return
		}
		if len(rest) > 0 {
			c.pend = append([]byte(nil), rest...)
		} else {
			c.pend = nil
		}
		if n < len(buf) && !hup {
			return
		}
	}
}

// consume handles what came, returns what is left of it (a partial answer).
func (cl *client) consume(idx int, data []byte) []byte {
	c := &cl.conns[idx]
	for len(data) > 0 && c.state != sClosed {
		if c.kind == kHTTP {
			n, why := httpResponse(data)
			if n == 0 {
				return data
			}
			if n < 0 || c.state == sIdle {
				if why == "" {
					why = "an answer nothing asked for"
				}
				cl.fail(c, &cl.requestErr, "response", why)
				return nil
			}
			data = data[n:]
			if c.state == sFirst {
				cl.opened(idx)
			} else {
				cl.asksHTTP++
				cl.latAsk.add(cl.ms() - c.at)
				cl.answered(idx)
			}
			continue
		}
		if c.state == sFirst {
			n, why := cl.handshake(idx, data)
			if n == 0 {
				return data
			}
			if n < 0 {
				cl.fail(c, &cl.handshakeErr, "handshake", why)
				return nil
			}
			data = data[n:]
			cl.opened(idx)
			continue
		}
		n := cl.wsFrame(idx, data)
		if n == 0 {
			return data
		}
		data = data[n:]
	}
	return nil
}

func (cl *client) handshake(idx int, data []byte) (int, string) {
	s := string(data)
	end := strings.Index(s, "\r\n\r\n")
	if end < 0 {
		if len(s) > 8192 {
			return -1, "header too long"
		}
		return 0, ""
	}
	head := s[:end]
	if !strings.HasPrefix(head, "HTTP/1.1 101") {
		line, _, _ := strings.Cut(head, "\r\n")
		return -1, "status: " + line
	}
	h := sha1.Sum([]byte(cl.wsKey(idx) + guid))
	want := base64.StdEncoding.EncodeToString(h[:])
	for _, line := range strings.Split(head, "\r\n")[1:] {
		name, value, ok := strings.Cut(line, ":")
		if ok && strings.EqualFold(name, "Sec-WebSocket-Accept") &&
			strings.TrimSpace(value) == want {
			return end + 4, ""
		}
	}
	return -1, "bad or missing Sec-WebSocket-Accept"
}

// wsFrame handles one server frame at the front of data: its length, 0
// when more is needed (or the connection failed).
func (cl *client) wsFrame(idx int, data []byte) int {
	c := &cl.conns[idx]
	if len(data) < 2 {
		return 0
	}
	if data[1]&0x80 != 0 {
		cl.fail(c, &cl.requestErr, "frame", "masked frame from the server")
		return 0
	}
	n, at := int(data[1]&0x7f), 2
	if n == 126 {
		if len(data) < 4 {
			return 0
		}
		n, at = int(binary.BigEndian.Uint16(data[2:])), 4
	} else if n == 127 {
		cl.fail(c, &cl.requestErr, "frame", "a frame over 64 KB")
		return 0
	}
	if len(data) < at+n {
		return 0
	}
	op, p := data[0]&0x0f, data[at:at+n]
	switch {
	case op == 1 && len(p) > 1 && p[0] == 'B':
		t, err := strconv.ParseInt(string(p[1:]), 10, 64)
		if err != nil {
			cl.fail(c, &cl.requestErr, "frame", "bad broadcast "+strconv.Quote(string(p)))
			return 0
		}
		now := time.Now().UnixNano()
		var r *round
		for _, x := range cl.rounds {
			if x.Ns == t {
				r = x
			}
		}
		if r == nil {
			r = &round{Ns: t, LatUs: make([]uint32, 0, cl.wsOpen)}
			cl.rounds = append(cl.rounds, r)
		}
		if int(c.got) < len(cl.rounds) {
			cl.bcastGot++
			d := (now - t) / 1000
			if d < 0 {
				d = 0
			}
			r.LatUs = append(r.LatUs, uint32(d))
			r.Last = now
		} else {
			cl.bcastExtra++
		}
		c.got++
	case op == 1 && string(p) == string(askPayload):
		if c.state != sWaiting {
			cl.fail(c, &cl.requestErr, "frame", "an echo nothing asked for")
			return 0
		}
		cl.asksWS++
		cl.latAsk.add(cl.ms() - c.at)
		cl.answered(idx)
	case op == 8:
		cl.fail(c, &cl.closedEarly, "closed early", "close frame from the server")
		return 0
	case op == 9:
		cl.write(idx, frame(10, p))
	case op == 10:
	default:
		cl.fail(c, &cl.requestErr, "frame", fmt.Sprintf("opcode %d: %q", op, p))
		return 0
	}
	return at + n
}

func (cl *client) timers(now int64) {
	cur := now / slotNs
	for cl.wheelAt < cur {
		cl.wheelAt++
		s := cl.wheelAt % slots
		due := cl.wheel[s]
		cl.wheel[s] = nil
		for _, e := range due {
			c := &cl.conns[e.idx]
			if c.seq != e.seq || c.state == sClosed {
				continue
			}
			switch e.what {
			case tAsk:
				if c.state == sIdle {
					cl.ask(int(e.idx))
				}
			case tDeadline:
				kind := "http"
				if c.kind == kWS {
					kind = "ws"
				}
				switch c.state {
				case sConnecting:
					kind = "timeout: " + kind + " connect"
				case sFirst:
					kind = "timeout: " + kind + " first answer"
				default:
					kind = "timeout: " + kind + " answer to an ask"
				}
				cl.fail(c, &cl.timeouts, kind, "none in time")
			}
		}
		if cap(due) > 0 && cl.wheel[s] == nil {
			cl.wheel[s] = due[:0]
		}
	}
}

// reset closes every connection with a RST (SO_LINGER 0): no TIME_WAIT
// socket, and the firewall's connection tracking (which follows loopback
// connections on some machines) forgets each within seconds, not minutes.
func (cl *client) reset() {
	for i := range cl.conns {
		c := &cl.conns[i]
		if c.state != sClosed && c.fd > 0 {
			syscall.SetsockoptLinger(int(c.fd), syscall.SOL_SOCKET, syscall.SO_LINGER,
				&syscall.Linger{Onoff: 1, Linger: 0})
			syscall.Close(int(c.fd))
			c.state = sClosed
		}
	}
}

func (cl *client) counts() map[string]any {
	return map[string]any{
		"http_open": cl.httpOpen, "ws_open": cl.wsOpen,
		"connect_errors": cl.connectErr, "handshake_errors": cl.handshakeErr,
		"request_errors": cl.requestErr, "timeouts": cl.timeouts,
		"closed_early": cl.closedEarly, "asks_http": cl.asksHTTP,
		"asks_ws": cl.asksWS, "bcast_got": cl.bcastGot,
		"bcast_extra": cl.bcastExtra, "first_error": cl.firstError,
		"error_kinds": cl.errorKinds,
		"seconds":     time.Since(cl.t0).Seconds(),
		"lat_connect": cl.latConnect.json(), "lat_first": cl.latFirst.json(),
		"lat_ask": cl.latAsk.json(),
	}
}

func emit(event string, v map[string]any) {
	v["event"] = event
	b, _ := json.Marshal(v)
	os.Stdout.Write(append(b, '\n'))
}

func main() {
	source := flag.String("source", "127.0.0.1", "the address every connection is bound to")
	servers := flag.String("servers", "127.0.0.1:8080", "IP:PORT,...: the connections go round them")
	nHTTP := flag.Int("http", 0, "keep-alive HTTP connections")
	nWS := flag.Int("ws", 0, "WebSockets")
	httpPath := flag.String("http-path", "/ping", "what the HTTP connections GET")
	wsPath := flag.String("ws-path", "/ws", "where the WebSockets connect")
	minAsk := flag.Float64("min", 5, "seconds between asks, at least")
	maxAsk := flag.Float64("max", 45, "seconds between asks, at most")
	timeout := flag.Float64("timeout", 60, "seconds a connect or an answer may take")
	inflight := flag.Int("inflight", 64, "connections being opened at once")
	rate := flag.Float64("rate", 0, "connects a second at most (0: no limit but -inflight)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile (go tool pprof) here, until quit")
	flag.Parse()
	// one goroutine does everything (its system calls raw, see epollWait)
	runtime.GOMAXPROCS(1)
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "connload: -cpuprofile:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}

	src := net.ParseIP(*source).To4()
	if src == nil || *nHTTP < 0 || *nWS < 0 || *minAsk <= 0 || *maxAsk < *minAsk {
		fmt.Fprintln(os.Stderr, "connload: -source IPv4, -http/-ws >= 0, 0 < -min <= -max")
		os.Exit(2)
	}
	cl := &client{
		pid: uint32(os.Getpid()), nHTTP: *nHTTP, nWS: *nWS, maxIn: *inflight,
		rate:   *rate,
		minAsk: int64(*minAsk * 1e9), maxAsk: int64(*maxAsk * 1e9),
		timeout: int64(*timeout * 1e9), wsPath: *wsPath,
		errorKinds: map[string]int{}, t0: time.Now(),
		latConnect: hist{}, latFirst: hist{}, latAsk: hist{},
	}
	copy(cl.source[:], src)
	for _, s := range strings.Split(*servers, ",") {
		ap, err := net.ResolveTCPAddr("tcp4", s)
		if err != nil || ap.IP.To4() == nil {
			fmt.Fprintln(os.Stderr, "connload: bad -servers entry", s)
			os.Exit(2)
		}
		var d syscall.SockaddrInet4
		copy(d.Addr[:], ap.IP.To4())
		d.Port = ap.Port
		cl.dests = append(cl.dests, d)
		if cl.host == "" {
			cl.host = s
		}
	}
	cl.httpReq = []byte("GET " + *httpPath + " HTTP/1.1\r\nHost: " + cl.host + "\r\n\r\n")
	// HTTP and WebSocket connections alternate while both are left
	cl.conns = make([]conn, 0, *nHTTP+*nWS)
	for h, w := 0, 0; h < *nHTTP || w < *nWS; {
		if h < *nHTTP && (h <= w || w >= *nWS) {
			cl.conns = append(cl.conns, conn{kind: kHTTP})
			h++
		} else {
			cl.conns = append(cl.conns, conn{kind: kWS})
			w++
		}
	}
	// the wheel starts now: entries scheduled before the first turn land
	// at their time, not at the wheel's end
	cl.wheelAt = time.Now().UnixNano()/slotNs - 1
	var err error
	cl.epfd, err = syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		fmt.Fprintln(os.Stderr, "connload: epoll:", err)
		os.Exit(1)
	}

	// commands come on stdin, which the loop polls too: no goroutine
	// beside it, so that the Go runtime has no thread to wake
	stdinEv := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: -1}
	if err := syscall.EpollCtl(cl.epfd, syscall.EPOLL_CTL_ADD, 0, &stdinEv); err != nil {
		fmt.Fprintln(os.Stderr, "connload: epoll stdin:", err)
		os.Exit(1)
	}
	var cmdBuf []byte

	events := make([]syscall.EpollEvent, 512)
	buf := make([]byte, 65536)
	total := len(cl.conns)
	for {
		cl.openNext()
		wait := 50
		if cl.next < total && cl.rate > 0 {
			wait = 5 // the connects are paced
		}
		n, err := epollWait(cl.epfd, events, wait)
		if err != nil && err != syscall.EINTR {
			fmt.Fprintln(os.Stderr, "connload: epoll_wait:", err)
			os.Exit(1)
		}
		for i := 0; i < n; i++ {
			idx := int(events[i].Fd)
			if idx < 0 {
				k, _ := rawRead(0, buf)
				if k <= 0 {
					cl.reset()
					return
				}
				cmdBuf = append(cmdBuf, buf[:k]...)
				for {
					nl := bytes.IndexByte(cmdBuf, '\n')
					if nl < 0 {
						break
					}
					cmd := strings.TrimSpace(string(cmdBuf[:nl]))
					cmdBuf = cmdBuf[nl+1:]
					switch cmd {
					case "quit":
						cl.reset()
						return
					case "report":
						v := cl.counts()
						v["rounds"] = cl.rounds
						emit("report", v)
					case "counts": // the same without the broadcasts' times
						emit("counts", cl.counts())
					}
				}
				continue
			}
			c := &cl.conns[idx]
			if c.state == sClosed {
				continue
			}
			if c.state == sConnecting {
				if events[i].Events&(syscall.EPOLLOUT|syscall.EPOLLERR|syscall.EPOLLHUP) == 0 {
					continue
				}
				cl.connected(idx)
			}
			hup := events[i].Events&(syscall.EPOLLRDHUP|syscall.EPOLLERR|syscall.EPOLLHUP) != 0
			if c.state != sClosed && (hup || events[i].Events&syscall.EPOLLIN != 0) {
				cl.readable(idx, buf, hup)
			}
		}
		cl.timers(time.Now().UnixNano())
		failed := cl.connectErr + cl.handshakeErr + cl.requestErr + cl.timeouts + cl.closedEarly
		if !cl.openSent && cl.next == total && cl.inflight == 0 {
			cl.openSent = true
			v := cl.counts()
			v["failed"] = failed
			emit("open", v)
		}
		for _, r := range cl.rounds {
			if !r.sent && cl.openSent && len(r.LatUs) >= cl.wsOpen {
				r.sent = true
				emit("delivered", map[string]any{"ns": r.Ns, "got": len(r.LatUs),
					"last_ns": r.Last})
			}
		}
	}
}
