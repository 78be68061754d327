package suggest

import (
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"seed", "sead", 1}, {"name", "nmae", 2},
		{strings.Repeat("x", 65), "x", maxLen},
	} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestNearest(t *testing.T) {
	known := []string{"name", "senders", "seed", "send_timeout", "rate"}
	for key, want := range map[string]string{
		"sendrs": "senders", "sead": "seed", "Senders": "senders", "nam": "name",
		"e": "", "colour": "", "sendtimeout": "send_timeout", "rates": "rate",
	} {
		if got := Nearest(key, known); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", key, got, want)
		}
	}
}
