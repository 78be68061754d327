package main

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// broker is a tiny message broker on loopback TCP. Its protocol is one line
// each way:
//
//	client: SEND <topic> <queue> <body>\n
//	broker: OK <offset>\n            (or ERR <reason>\n)
//
// A broker answers after delay (a slow broker), and StopAccepting makes it
// refuse new connections and drop the ones it has (a dead broker).
type broker struct {
	name  string
	delay time.Duration
	ln    net.Listener

	stored atomic.Int64 // messages stored: also each one's offset
	done   chan struct{}
	wg     sync.WaitGroup // the accept loop and every connection

	mu       sync.Mutex // guards conns and stopped
	conns    map[net.Conn]struct{}
	stopped  bool
	stopOnce sync.Once
}

// startBroker listens on an ephemeral loopback port and serves until Close.
func startBroker(name string, delay time.Duration) (*broker, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("broker %s: %w", name, err)
	}
	b := &broker{name: name, delay: delay, ln: ln, done: make(chan struct{}), conns: make(map[net.Conn]struct{})}
	b.wg.Add(1)
	go b.accept()
	return b, nil
}

// Addr returns the broker's address.
func (b *broker) Addr() string { return b.ln.Addr().String() }

func (b *broker) accept() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return // the listener was closed
		}
		b.mu.Lock()
		if b.stopped {
			b.mu.Unlock()
			c.Close()
			continue
		}
		b.conns[c] = struct{}{}
		b.wg.Add(1)
		b.mu.Unlock()
		go b.serve(c)
	}
}

func (b *broker) serve(c net.Conn) {
	defer b.wg.Done()
	defer func() {
		b.mu.Lock()
		delete(b.conns, c)
		b.mu.Unlock()
		c.Close()
	}()
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		if b.delay > 0 {
			t := time.NewTimer(b.delay)
			select {
			case <-t.C:
			case <-b.done:
				t.Stop()
				return
			}
		}
		reply := "ERR bad request\n"
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "SEND" {
			reply = fmt.Sprintf("OK %d\n", b.stored.Add(1)-1)
		}
		if _, err := c.Write([]byte(reply)); err != nil {
			return
		}
	}
}

// StopAccepting makes the broker die: the listener closes (new connections are
// refused) and every open connection is dropped.
func (b *broker) StopAccepting() {
	b.stopOnce.Do(func() {
		b.mu.Lock()
		b.stopped = true
		for c := range b.conns {
			c.Close()
		}
		b.mu.Unlock()
		b.ln.Close()
	})
}

// Close stops the broker and waits for its goroutines.
func (b *broker) Close() {
	b.StopAccepting()
	select {
	case <-b.done:
	default:
		close(b.done)
	}
	b.wg.Wait()
}
