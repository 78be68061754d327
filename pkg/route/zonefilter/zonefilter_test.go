package zonefilter_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mqfault/mqfault/pkg/route"
	"github.com/mqfault/mqfault/pkg/route/filtertest"
	"github.com/mqfault/mqfault/pkg/route/zonefilter"
)

const zonesText = `# broker   zone
broker-a   az1
broker-b   az1   # trailing comment
broker-c   az2
	broker-d	az2

broker-e   az3
`

func q(broker string, id int) route.MessageQueue {
	return route.MessageQueue{BrokerName: broker, QueueID: id}
}

// Cases are the routes every zone filter (compiled in or plugin) must judge
// like this, preferring az1 with zonesText's map.
var cases = []filtertest.Case{
	{Name: "mixed route", Topic: "T1",
		Queues: []route.MessageQueue{q("broker-a", 0), q("broker-a", 1), q("broker-c", 0), q("broker-c", 1), q("broker-b", 0)},
		Want:   []bool{true, true, false, false, true}},
	{Name: "no broker in the zone", Topic: "T2",
		Queues: []route.MessageQueue{q("broker-c", 0), q("broker-d", 0), q("broker-e", 3)},
		Want:   []bool{true, true, true}},
	{Name: "all in the zone", Topic: "T3",
		Queues: []route.MessageQueue{q("broker-a", 0), q("broker-b", 0)},
		Want:   []bool{true, true}},
	{Name: "unknown brokers only", Topic: "T4",
		Queues: []route.MessageQueue{q("broker-x", 0), q("broker-y", 1)},
		Want:   []bool{true, true}},
	{Name: "unknown broker beside the zone", Topic: "T5",
		Queues: []route.MessageQueue{q("broker-x", 0), q("broker-a", 0)},
		Want:   []bool{false, true}},
}

func zones(t testing.TB) zonefilter.Zones {
	t.Helper()
	z, err := zonefilter.ParseZones(strings.NewReader(zonesText))
	if err != nil {
		t.Fatalf("ParseZones() error = %v", err)
	}
	return z
}

func TestConformance(t *testing.T) {
	filtertest.Run(t, func(tb testing.TB) filtertest.Subject {
		f, err := zonefilter.New("az1", zones(tb))
		if err != nil {
			tb.Fatalf("New() error = %v", err)
		}
		return filtertest.Subject{Filter: f, Update: func(_ testing.TB, info *route.PublishInfo) { f.Update(info) }}
	}, cases)
}

func TestDecideMatchesCases(t *testing.T) {
	z := zones(t)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			if got := zonefilter.Decide("az1", z, c.Queues); !slices.Equal(got, c.Want) {
				t.Errorf("Decide() = %v, want %v", got, c.Want)
			}
			f, _ := zonefilter.New("az1", z)
			got, err := f.Decide(context.Background(), c.Topic, c.Queues)
			if err != nil || !slices.Equal(got, c.Want) {
				t.Errorf("Filter.Decide() = %v, %v, want %v, nil", got, err, c.Want)
			}
		})
	}
}

func TestParseZones(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		want     zonefilter.Zones
		wantLine int
	}{
		{"sample", zonesText, zonefilter.Zones{"broker-a": "az1", "broker-b": "az1", "broker-c": "az2", "broker-d": "az2", "broker-e": "az3"}, 0},
		{"empty", "", zonefilter.Zones{}, 0},
		{"comments only", "# nothing\n   # here\n", zonefilter.Zones{}, 0},
		{"no final newline", "a z", zonefilter.Zones{"a": "z"}, 0},
		{"one field", "a z\nb\n", nil, 2},
		{"three fields", "a z extra", nil, 1},
		{"duplicate broker", "a z1\nb z1\na z2\n", nil, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := zonefilter.ParseZones(strings.NewReader(tt.text))
			if tt.wantLine != 0 {
				var pe *zonefilter.ParseError
				if !errors.As(err, &pe) || pe.Line != tt.wantLine || !errors.Is(err, zonefilter.ErrInvalidZones) {
					t.Errorf("ParseZones() error = %v, want a *ParseError on line %d", err, tt.wantLine)
				}
				return
			}
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("ParseZones() = %v, %v, want %v", got, err, tt.want)
			}
			for b, z := range tt.want {
				if got[b] != z {
					t.Errorf("ParseZones()[%s] = %q, want %q", b, got[b], z)
				}
			}
		})
	}
}

func TestParseZonesLongLine(t *testing.T) {
	if _, err := zonefilter.ParseZones(strings.NewReader(strings.Repeat("x", 1<<20))); !errors.Is(err, zonefilter.ErrInvalidZones) {
		t.Errorf("ParseZones(1 MiB line) error = %v, want ErrInvalidZones", err)
	}
}

func TestLoadZones(t *testing.T) {
	path := filepath.Join(t.TempDir(), "zones.txt")
	if err := os.WriteFile(path, []byte(zonesText), 0o600); err != nil {
		t.Fatal(err)
	}
	z, err := zonefilter.LoadZones(path)
	if err != nil || z["broker-e"] != "az3" {
		t.Errorf("LoadZones() = %v, %v, want broker-e in az3", z, err)
	}
	if _, err := zonefilter.LoadZones(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadZones(missing) error = %v, want os.ErrNotExist", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.txt")
	_ = os.WriteFile(bad, []byte("just-one-field\n"), 0o600)
	if _, err := zonefilter.LoadZones(bad); !errors.Is(err, zonefilter.ErrInvalidZones) || !strings.Contains(err.Error(), bad) {
		t.Errorf("LoadZones(bad) error = %v, want ErrInvalidZones naming the file", err)
	}
}

func TestNewRefusesEmptyZone(t *testing.T) {
	if _, err := zonefilter.New("", nil); !errors.Is(err, zonefilter.ErrInvalidZones) {
		t.Errorf("New(\"\") error = %v, want ErrInvalidZones", err)
	}
}

func TestRemove(t *testing.T) {
	f, _ := zonefilter.New("az1", zones(t))
	f.Update(filtertest.PublishInfo(t, cases[0], ""))
	c := route.MessageQueue{Topic: cases[0].Topic, BrokerName: "broker-c"}
	if f.Filter(c) {
		t.Fatalf("Filter(%s) = true before Remove, want false", c)
	}
	f.Remove(cases[0].Topic)
	if !f.Filter(c) {
		t.Errorf("Filter(%s) = false after Remove, want true", c)
	}
	f.Update(nil) // ignored
}

func TestMapIsCopied(t *testing.T) {
	z := zones(t)
	f, _ := zonefilter.New("az1", z)
	z["broker-c"] = "az1"
	got, _ := f.Decide(context.Background(), "T", []route.MessageQueue{q("broker-a", 0), q("broker-c", 0)})
	if !slices.Equal(got, []bool{true, false}) {
		t.Errorf("Decide() after changing the caller's map = %v, want [true false]", got)
	}
}

func FuzzParseZones(f *testing.F) {
	f.Add(zonesText)
	f.Add("a b\na c\n")
	f.Add("#\n\t\n a  b  # c\n")
	f.Fuzz(func(t *testing.T, text string) {
		z, err := zonefilter.ParseZones(strings.NewReader(text))
		if err != nil {
			if !errors.Is(err, zonefilter.ErrInvalidZones) {
				t.Fatalf("ParseZones() error = %v, want ErrInvalidZones", err)
			}
			return
		}
		for b, zone := range z {
			if b == "" || zone == "" || strings.ContainsAny(b+zone, " \t\n#") {
				t.Fatalf("ParseZones() gave broker %q zone %q", b, zone)
			}
		}
	})
}

func ExampleFilter() {
	zones, _ := zonefilter.ParseZones(strings.NewReader("broker-a az1\nbroker-b az2\n"))
	f, _ := zonefilter.New("az1", zones)
	info, _ := route.NewPublishInfoFromQueues("orders", []route.MessageQueue{
		{Topic: "orders", BrokerName: "broker-a", QueueID: 0},
		{Topic: "orders", BrokerName: "broker-b", QueueID: 0},
	})
	f.Update(info) // call again with every new route of the topic
	for _, q := range info.Queues() {
		fmt.Println(q, f.Filter(q))
	}
	// Use it in a strategy: latency.Config{..., Filters: []route.QueueFilter{f}}.
	// Output:
	// broker-a:0 true
	// broker-b:0 false
}
