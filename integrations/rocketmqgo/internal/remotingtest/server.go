package remotingtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
)

// writeTimeout bounds the write of one response, so a client that stopped
// reading cannot hold a server goroutine forever.
const writeTimeout = 5 * time.Second

// reply is a service's answer to one request.
type reply struct {
	code   int16
	remark string
	ext    map[string]string
	body   []byte
	// queueOffset is the first queue offset of the stored messages, -1 when
	// nothing was stored; msgID the offset message id answered.
	queueOffset int64
	msgID       string
}

// service is what a NameServer or Broker does with requests; the server
// around it owns sockets, goroutines, faults and the log.
type service interface {
	// read describes a request just read for the log and returns the
	// function that answers it, called once the fault's delay is over.
	read(req *command) (Request, func() reply)
	// unsupported answers a request code the service does not speak.
	unsupported(code int16) reply
}

// server is the loopback TCP server shared by NameServer and Broker. Its
// exported wrappers are safe for concurrent use.
type server struct {
	kind string // "name server" or "broker NAME", for remarks and logs
	svc  service
	opts options
	addr string // fixed at start; Resume listens here again
	log  *requestLog
	done chan struct{} // closed by close

	mu     sync.Mutex // guards the fields below
	ln     net.Listener
	conns  map[*conn]struct{}
	fault  Fault
	held   []heldRequest // read while hung with LateStore, handled when the hang ends
	closed bool

	wg sync.WaitGroup // every goroutine the server started
}

// heldRequest is a request a hung broker read and will handle late.
type heldRequest struct {
	c      *conn
	req    *command
	seq    int
	answer func() reply
}

// conn is one client connection.
type conn struct {
	nc      net.Conn
	writeMu sync.Mutex  // serialises responses
	closing atomic.Bool // the server closed it: read errors are expected
}

func (c *conn) close() {
	c.closing.Store(true)
	_ = c.nc.Close()
}

func startServer(kind string, svc service, opts options) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("remotingtest: %s: listen on 127.0.0.1: %w", kind, err)
	}
	s := &server{
		kind:  kind,
		svc:   svc,
		opts:  opts,
		addr:  ln.Addr().String(),
		log:   newRequestLog(),
		done:  make(chan struct{}),
		ln:    ln,
		conns: make(map[*conn]struct{}),
	}
	s.wg.Add(1)
	go s.acceptLoop(ln)
	return s, nil
}

func (s *server) acceptLoop(ln net.Listener) {
	defer s.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A passing failure such as running out of file descriptors:
			// back off rather than spin, as net/http does.
			s.opts.logger.Warn("remotingtest: accept failed", "server", s.kind, "addr", s.addr, "err", err, "retry_in", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-s.done:
				t.Stop()
				return
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		c := &conn{nc: nc}
		s.mu.Lock()
		if s.closed || s.ln != ln { // closed or refused while accepting
			s.mu.Unlock()
			c.close()
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(c)
	}
}

func (s *server) serveConn(c *conn) {
	defer s.wg.Done()
	defer func() {
		c.close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	r := bufio.NewReader(c.nc)
	remote := c.nc.RemoteAddr().String()
	for {
		req, err := readCommand(r, s.opts.maxFrame)
		switch {
		case err == nil:
		case errors.Is(err, errMalformed):
			now := s.opts.clock.Now()
			s.opts.logger.Warn("remotingtest: malformed frame, closing the connection",
				"server", s.kind, "addr", s.addr, "remote", remote, "err", err)
			s.log.add(Request{
				Time: now, Remote: remote, Code: -1, QueueID: -1, Outcome: OutcomeMalformed,
				AnsweredAt: now, Remark: err.Error(), QueueOffset: -1,
			})
			return
		case errors.Is(err, io.EOF) || c.closing.Load():
			return
		default:
			s.opts.logger.Debug("remotingtest: connection read failed", "server", s.kind, "remote", remote, "err", err)
			return
		}
		if req.isResponse() {
			// We never send requests, so no response is awaited.
			s.opts.logger.Warn("remotingtest: unexpected response frame ignored",
				"server", s.kind, "remote", remote, "code", req.code, "opaque", req.opaque)
			continue
		}
		s.dispatch(c, remote, req)
	}
}

// dispatch logs req and answers it, in its own goroutine, per the fault in
// force when it was read.
func (s *server) dispatch(c *conn, remote string, req *command) {
	rec, answer := s.svc.read(req)
	if answer == nil {
		rec.QueueID = -1
		code := req.code
		answer = func() reply { return s.svc.unsupported(code) }
	}
	rec.Time = s.opts.clock.Now()
	rec.Remote = remote
	rec.Code = req.code
	rec.Opaque = req.opaque
	rec.BodySize = len(req.body)
	rec.QueueOffset = -1
	f := s.faultFor(req.code)
	rec.Hung = f.Hung
	if f.Hung && f.LateStore {
		s.mu.Lock()
		if s.fault.Hung && s.fault.LateStore && !s.closed {
			// Logged pending under mu, so a SetFault ending the hang
			// finds it held.
			seq := s.log.add(rec)
			s.held = append(s.held, heldRequest{c: c, req: req, seq: seq, answer: answer})
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		f = s.faultFor(req.code) // the hang ended meanwhile
		rec.Hung = f.Hung
	}
	if f.Drop || f.Hung {
		// Logged settled in one step: no reader sees it pending.
		rec.Outcome, rec.AnsweredAt = OutcomeDropped, rec.Time
		s.log.add(rec)
		return
	}
	// The delay's timer is set before the entry is logged, so a test on a
	// manual clock may advance it as soon as it sees the entry.
	var (
		fired chan struct{}
		timer clock.Timer
	)
	if f.Delay > 0 {
		fired = make(chan struct{})
		timer = s.opts.clock.AfterFunc(f.Delay, func() { close(fired) })
	}
	seq := s.log.add(rec)
	// serveConn holds a count on wg, so this Add cannot race with close's Wait.
	s.wg.Add(1)
	go s.answer(c, req, seq, f, answer, fired, timer)
}

// answer waits for fired (when not nil), then writes the answer.
func (s *server) answer(c *conn, req *command, seq int, f Fault, answer func() reply, fired chan struct{}, timer clock.Timer) {
	defer s.wg.Done()
	if fired != nil {
		select {
		case <-fired:
		case <-s.done:
			timer.Stop()
			s.settle(seq, OutcomeAbandoned, reply{queueOffset: -1, remark: "server closed during the fault delay"})
			return
		}
	}
	rep := s.apply(f, answer)
	if req.isOneway() {
		s.settle(seq, OutcomeOneway, rep)
		return
	}
	frame, err := encodeFrame(response(req, rep.code, rep.remark, rep.ext, rep.body))
	if err == nil {
		// Settled before the write, so a client holding the answer finds it in the log.
		s.settle(seq, OutcomeAnswered, rep)
		c.writeMu.Lock()
		if err = c.nc.SetWriteDeadline(time.Now().Add(writeTimeout)); err == nil {
			_, err = c.nc.Write(frame)
		}
		c.writeMu.Unlock()
	}
	if err != nil {
		if !c.closing.Load() {
			s.opts.logger.Debug("remotingtest: response not delivered", "server", s.kind, "err", err)
		}
		c.close()
		s.settle(seq, OutcomeAbandoned, rep)
	}
}

// apply computes the answer under fault f. A fault code replaces the answer
// and nothing is stored, except the "stored, but" codes (FLUSH_DISK_TIMEOUT,
// SLAVE_NOT_AVAILABLE, FLUSH_SLAVE_TIMEOUT), which replace only the code of
// a successful send, as a broker answers them with the send's offsets.
func (s *server) apply(f Fault, answer func() reply) reply {
	if f.Code == 0 {
		return answer()
	}
	remark := f.Remark
	if remark == "" {
		remark = fmt.Sprintf("remotingtest: %s answers %s by fault injection", s.kind, ResponseName(f.Code))
	}
	if storedCode(f.Code) {
		if rep := answer(); rep.code == CodeSuccess && rep.queueOffset >= 0 {
			rep.code, rep.remark = f.Code, remark
			return rep
		}
	}
	return reply{code: f.Code, remark: remark, queueOffset: -1}
}

func (s *server) settle(seq int, o Outcome, rep reply) {
	now := s.opts.clock.Now()
	s.log.settle(seq, func(r *Request) {
		r.Outcome = o
		r.AnsweredAt = now
		r.ResponseCode = rep.code
		r.Remark = rep.remark
		r.QueueOffset = rep.queueOffset
		r.MsgID = rep.msgID
	})
}

// faultFor returns the fault that applies to a request with this code.
func (s *server) faultFor(code int16) Fault {
	s.mu.Lock()
	f := s.fault
	s.mu.Unlock()
	if f.appliesTo(code) {
		return f
	}
	return Fault{}
}

func (s *server) setFault(f Fault) {
	f.Codes = append([]int16(nil), f.Codes...)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
	if f.Hung && f.LateStore || len(s.held) == 0 || s.closed {
		return
	}
	// The hang is over: handle what was read meanwhile, in the order read,
	// as a resumed broker works through its backlog.
	held := s.held
	s.held = nil
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for _, h := range held {
			s.wg.Add(1) // answer calls Done; this goroutine's count keeps Add safe
			s.answer(h.c, h.req, h.seq, Fault{}, h.answer, nil, nil)
		}
	}()
}

func (s *server) currentFault() Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.fault
	f.Codes = append([]int16(nil), f.Codes...)
	return f
}

// refuse closes the listener and every connection; dials are refused
// until resume.
func (s *server) refuse() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	disconnect := s.detachLocked()
	s.mu.Unlock()
	disconnect()
	return nil
}

// resume listens on the server's address again.
func (s *server) resume() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("remotingtest: %s: listen on %s again: %w", s.kind, s.addr, err)
	}
	s.ln = ln
	s.wg.Add(1)
	go s.acceptLoop(ln)
	return nil
}

// connCount returns how many connections are open.
func (s *server) connCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *server) refusing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.closed && s.ln == nil
}

// detachLocked takes the listener away (so the accept loop drops what it
// accepts late) and returns the function that closes it and every open
// connection, to be called without mu. Caller must hold mu.
func (s *server) detachLocked() func() {
	ln := s.ln
	s.ln = nil
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return func() {
		if ln != nil {
			_ = ln.Close()
		}
		for _, c := range conns {
			c.close()
		}
	}
}

func (s *server) close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	close(s.done)
	disconnect := s.detachLocked()
	held := s.held
	s.held = nil
	s.mu.Unlock()
	disconnect()
	for _, h := range held {
		s.settle(h.seq, OutcomeAbandoned, reply{queueOffset: -1, remark: "server closed while hung"})
	}
	s.wg.Wait()
	return nil
}

func (s *server) requests() []Request {
	entries, _ := s.log.snapshot()
	return entries
}

func (s *server) await(ctx context.Context, cond func([]Request) bool) ([]Request, error) {
	if cond == nil {
		return nil, errors.New("remotingtest: Await with a nil condition")
	}
	return s.log.await(ctx, s.done, cond)
}
