package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
)

// lineTransport is a producer.Transport speaking the brokers' line protocol,
// with a small pool of idle connections per broker. It is safe for concurrent
// use: each attempt has a connection of its own.
type lineTransport struct {
	addrs map[string]string // broker name -> address

	mu     sync.Mutex // guards idle and closed
	idle   map[string][]*lineConn
	closed bool
}

type lineConn struct {
	net.Conn
	r *bufio.Reader
}

const maxIdlePerBroker = 8

func newLineTransport(addrs map[string]string) *lineTransport {
	return &lineTransport{addrs: addrs, idle: make(map[string][]*lineConn)}
}

// Send makes one attempt: a connection (pooled or new), one request line, one
// answer line, all within the attempt's deadline.
func (t *lineTransport) Send(ctx context.Context, a producer.Attempt) (producer.Result, error) {
	broker := a.Queue.BrokerName
	addr, ok := t.addrs[broker]
	if !ok {
		return producer.Result{}, &producer.ClientError{Broker: broker, Err: errors.New("no address")}
	}
	c, err := t.get(ctx, broker, addr)
	if err != nil {
		return producer.Result{}, &producer.TransportError{Broker: broker, Addr: addr, Class: latency.ClassTransportNotSent, Err: err}
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) }) // unblock on cancel
	defer stop()

	body := strings.ReplaceAll(string(a.Message.Body), "\n", " ")
	if _, err := fmt.Fprintf(c, "SEND %s %d %s\n", a.Queue.Topic, a.Queue.QueueID, body); err != nil {
		c.Close()
		return producer.Result{}, t.failed(ctx, broker, addr, err)
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		c.Close()
		return producer.Result{}, t.failed(ctx, broker, addr, err)
	}
	f := strings.Fields(line)
	if len(f) != 2 || f[0] != "OK" {
		c.Close()
		return producer.Result{}, &producer.BrokerError{Broker: broker, Code: 1, Remark: strings.TrimSpace(line)}
	}
	offset, _ := strconv.ParseInt(f[1], 10, 64)
	t.put(broker, c)
	return producer.Result{Status: producer.SendOK, QueueOffset: offset, MsgID: fmt.Sprintf("%s-%d", broker, offset)}, nil
}

// failed classifies an I/O error: the attempt's ctx ending is a timeout or a
// cancellation; anything else broke a connection the request may have left on.
func (t *lineTransport) failed(ctx context.Context, broker, addr string, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return context.Canceled
	case ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded):
		return &producer.TransportError{Broker: broker, Addr: addr, Class: latency.ClassTransportTimeout, Err: err}
	}
	return &producer.TransportError{Broker: broker, Addr: addr, Class: latency.ClassTransportFailed, Err: err}
}

func (t *lineTransport) get(ctx context.Context, broker, addr string) (*lineConn, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, errors.New("transport closed")
	}
	if list := t.idle[broker]; len(list) > 0 {
		c := list[len(list)-1]
		t.idle[broker] = list[:len(list)-1]
		t.mu.Unlock()
		return c, nil
	}
	t.mu.Unlock()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &lineConn{Conn: nc, r: bufio.NewReader(nc)}, nil
}

func (t *lineTransport) put(broker string, c *lineConn) {
	_ = c.SetDeadline(time.Time{})
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || len(t.idle[broker]) >= maxIdlePerBroker {
		c.Close()
		return
	}
	t.idle[broker] = append(t.idle[broker], c)
}

// Close closes every idle connection; connections in use close when their
// attempt ends.
func (t *lineTransport) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for b, list := range t.idle {
		for _, c := range list {
			c.Close()
		}
		delete(t.idle, b)
	}
}
