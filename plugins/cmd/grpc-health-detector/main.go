// Command grpc-health-detector is an mqfault detector plugin: an endpoint is
// reachable when its gRPC health service (grpc.health.v1.Health/Check)
// answers SERVING within the probe's timeout.
//
//	grpc-health-detector [--service NAME]
//
// --service names the service to check (default "": the server as a
// whole). The connection is plaintext (no TLS). Any other answer is
// unreachable: NOT_SERVING, an unknown service or a server without the
// health service (code NOT_SERVING on the wire), a refused connection
// (CONNECTION_REFUSED), no answer in time (DEADLINE_EXCEEDED). A cancelled
// probe is inconclusive.
//
// It is started by a host, not by hand:
//
//	mqfault probe --plugin ./grpc-health-detector broker-a:8081
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/mqfault/mqfault/plugins/sdk"
)

func main() {
	fs := flag.NewFlagSet("grpc-health-detector", flag.ContinueOnError)
	service := fs.String("service", "", "the service whose health to check (default: the whole server)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "grpc-health-detector:", err)
		os.Exit(2)
	}
	sdk.ServeDetector(healthDetector{service: *service})
}
