package main

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/mqfault/mqfault/pkg/route"
	"github.com/mqfault/mqfault/pkg/route/zonefilter"
	"github.com/mqfault/mqfault/plugins/sdk"
)

// fileFilter is the zone filter over a zone map file it reloads when the
// file changes. It is safe for concurrent use.
type fileFilter struct {
	path string
	zone string
	log  *slog.Logger

	mu      sync.Mutex // guards zones, modTime and size
	zones   zonefilter.Zones
	modTime time.Time
	size    int64
}

var _ sdk.BatchFilter = (*fileFilter)(nil)

// newFileFilter loads the zone map at path; it fails if the file cannot be
// read or parsed.
func newFileFilter(path, zone string, log *slog.Logger) (*fileFilter, error) {
	f := &fileFilter{path: path, zone: zone, log: log}
	if err := f.reload(); err != nil {
		return nil, err
	}
	log.Info("zone-filter: zone map loaded", "file", path, "brokers", len(f.zones), "zone", zone)
	return f, nil
}

// reload reads the file if it changed since the last load.
func (f *fileFilter) reload() error {
	st, err := os.Stat(f.path)
	if err != nil {
		return err
	}
	f.mu.Lock()
	same := f.zones != nil && st.ModTime().Equal(f.modTime) && st.Size() == f.size
	f.mu.Unlock()
	if same {
		return nil
	}
	zones, err := zonefilter.LoadZones(f.path)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.zones, f.modTime, f.size = zones, st.ModTime(), st.Size()
	f.mu.Unlock()
	return nil
}

// Decide is zonefilter.Decide over the current zone map.
func (f *fileFilter) Decide(_ context.Context, _ string, queues []route.MessageQueue) ([]bool, error) {
	if err := f.reload(); err != nil {
		f.log.Warn("zone-filter: cannot reload the zone map; keeping the previous one", "file", f.path, "err", err)
	}
	f.mu.Lock()
	zones := f.zones
	f.mu.Unlock()
	return zonefilter.Decide(f.zone, zones, queues), nil
}
