// Command zone-filter is an mqfault filter plugin: it admits the queues of
// the brokers of a preferred zone, and every queue of a route that has no
// broker in that zone (pkg/route/zonefilter's decision, served through
// plugins/sdk).
//
//	zone-filter --zones FILE --zone NAME
//
// FILE maps brokers to zones, one "BROKER ZONE" pair per line ('#' starts a
// comment). The plugin reads it again when its modification time or size
// changes, so the host's periodic refresh follows edits; a file that no
// longer parses is logged and the previous map is kept.
//
// It is started by a host, not by hand:
//
//	host.NewFilter(host.FilterConfig{Config: host.Config{
//		Path: "./zone-filter", Args: []string{"--zones", "zones.txt", "--zone", "az1"}}})
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/mqfault/mqfault/plugins/sdk"
)

func main() {
	fs := flag.NewFlagSet("zone-filter", flag.ContinueOnError)
	zonesFile := fs.String("zones", "", "the broker-to-zone map (required)")
	zone := fs.String("zone", "", "the preferred zone (required)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if *zonesFile == "" || *zone == "" {
		fmt.Fprintln(os.Stderr, "zone-filter: --zones FILE and --zone NAME are required")
		os.Exit(2)
	}
	f, err := newFileFilter(*zonesFile, *zone, sdk.Logger(slog.LevelInfo))
	if err != nil {
		fmt.Fprintln(os.Stderr, "zone-filter:", err)
		os.Exit(1)
	}
	sdk.ServeFilter(f)
}
