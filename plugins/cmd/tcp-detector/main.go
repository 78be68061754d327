// Command tcp-detector is an mqfault detector plugin: an endpoint is
// reachable when a TCP connection to it succeeds within the probe's timeout
// (probe.TCPDetector, served through plugins/sdk).
//
// It is started by a host, not by hand:
//
//	mqfault probe --plugin ./tcp-detector broker-a:10911
//
// or host.NewDetector(host.Config{Path: "./tcp-detector"}) in a program.
package main

import (
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/plugins/sdk"
)

func main() {
	sdk.ServeDetector(probe.TCPDetector{}) // any probe.ServiceDetector
}
