// Command rocketmq-detector is an mqfault detector plugin for RocketMQ
// brokers: an endpoint (a broker's remoting address, host:port) is reachable
// when it answers a GET_MAX_OFFSET request (code 30) with SUCCESS within the
// probe's timeout; it is rocketmqgo.RemotingDetector served through
// plugins/sdk. A TCP connect alone is not enough: the kernel of a stopped
// (SIGSTOP) broker still accepts connections.
//
// It is started by a host, not by hand:
//
//	mqfault probe --plugin ./rocketmq-detector --timeout 500ms 127.0.0.1:10911
//
// or host.NewDetector(host.Config{Path: "./rocketmq-detector"}) in a program.
//
// The question names a queue. A broker answers GET_MAX_OFFSET for any topic
// name and queue id without checking that it exists, so the default, queue 0
// of TBW102 (the topic every reference producer holds), works on any broker;
// set another with flags (host.Config.Args) or, where the host passes no
// arguments, the environment (inherited from the host):
//
//	-topic NAME   or ROCKETMQ_DETECTOR_TOPIC   (default TBW102)
//	-queue N      or ROCKETMQ_DETECTOR_QUEUE   (default 0)
//	-bname NAME   or ROCKETMQ_DETECTOR_BNAME   (the "bname" field a 5.x proxy wants; default none)
//
// Flags win over the environment. A bad value is reported on standard error
// and the plugin exits with status 2 before its handshake, so the host's
// start fails with that message.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/mqfault/mqfault/integrations/rocketmqgo/internal/brokerprobe"
	"github.com/mqfault/mqfault/plugins/sdk"
)

func main() {
	d, err := parse(os.Args[1:], os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rocketmq-detector:", err)
		os.Exit(2)
	}
	sdk.ServeDetector(d)
}

// parse builds the detector from args and the environment.
func parse(args []string, getenv func(string) string) (*brokerprobe.Detector, error) {
	d := &brokerprobe.Detector{
		Topic:  getenv("ROCKETMQ_DETECTOR_TOPIC"),
		Broker: getenv("ROCKETMQ_DETECTOR_BNAME"),
	}
	if d.Topic == "" {
		d.Topic = brokerprobe.DefaultTopic
	}
	queue := 0
	if s := getenv("ROCKETMQ_DETECTOR_QUEUE"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("ROCKETMQ_DETECTOR_QUEUE=%q: want a queue id (an integer >= 0)", s)
		}
		queue = n
	}
	fs := flag.NewFlagSet("rocketmq-detector", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.StringVar(&d.Topic, "topic", d.Topic, "topic of the queue asked about")
	fs.IntVar(&queue, "queue", queue, "queue id asked about")
	fs.StringVar(&d.Broker, "bname", d.Broker, `broker name sent as "bname" (for a 5.x proxy)`)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	case d.Topic == "":
		return nil, fmt.Errorf("-topic: empty")
	case queue < 0:
		return nil, fmt.Errorf("-queue %d: want a queue id >= 0", queue)
	}
	d.QueueID = queue
	return d, nil
}
