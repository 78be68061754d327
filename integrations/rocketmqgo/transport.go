package rocketmqgo

import (
	"context"
	"fmt"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	mqproducer "github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// transport is the send loop's producer.Transport: one client call per
// attempt. Sync and async attempts call the client's SendSync (the send loop
// runs async attempts on its own goroutines; the client's SendAsync, in
// v2.1.2, panics on the missing response after calling back with a failed
// request's error, and gives interceptors no result); oneway attempts call
// SendOneWay. Before each attempt the message's topic is put back as the
// user set it, since the client prefixes the namespace onto it on every
// call; the message itself, with the unique key the client gave it on the
// first attempt, is sent again on a retry.
type transport struct{ p *Producer }

var _ mqproducer.Transport = transport{}

// Send implements producer.Transport.
func (t transport) Send(ctx context.Context, a mqproducer.Attempt) (mqproducer.Result, error) {
	broker := a.Queue.BrokerName
	msg, ok := a.Message.Native.(*primitive.Message)
	if !ok || msg == nil {
		return mqproducer.Result{}, &mqproducer.ClientError{Broker: broker,
			Err: fmt.Errorf("rocketmqgo: the message carries %T, not a *primitive.Message", a.Message.Native)}
	}
	msg.Topic = a.Message.Topic
	sl := &slot{mode: modePick, topic: a.Message.Topic, want: a.Queue}
	res, err := t.p.call(ctx, msg, sl, a.Kind)
	if sl.missed {
		return mqproducer.Result{}, &mqproducer.ClientError{Broker: broker, Err: fmt.Errorf("%w: %s", ErrQueueNotInRoute, a.Queue)}
	}
	if err != nil {
		return mqproducer.Result{}, mapError(ctx, broker, t.p.addrs.addr(broker), err)
	}
	if a.Kind == mqproducer.KindOneway {
		return mqproducer.Result{}, nil
	}
	return result(res, a.Queue)
}

// result converts the client's answer of an attempt on q.
func result(res *primitive.SendResult, q route.MessageQueue) (mqproducer.Result, error) {
	if res == nil {
		return mqproducer.Result{}, &mqproducer.TransportError{Broker: q.BrokerName, Err: errNoAnswer}
	}
	var status mqproducer.SendStatus
	switch res.Status {
	case primitive.SendOK:
		status = mqproducer.SendOK
	case primitive.SendFlushDiskTimeout:
		status = mqproducer.FlushDiskTimeout
	case primitive.SendFlushSlaveTimeout:
		status = mqproducer.FlushSlaveTimeout
	case primitive.SendSlaveNotAvailable:
		status = mqproducer.SlaveNotAvailable
	default:
		return mqproducer.Result{}, &mqproducer.TransportError{Broker: q.BrokerName,
			Err: fmt.Errorf("rocketmqgo: the client answered send status %d without an error", res.Status)}
	}
	return mqproducer.Result{Status: status, Queue: q, MsgID: res.MsgID, OffsetMsgID: res.OffsetMsgID,
		QueueOffset: res.QueueOffset, Native: res}, nil
}
