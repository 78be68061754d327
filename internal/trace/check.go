package trace

import (
	"fmt"

	"github.com/mqfault/mqfault/pkg/route"
)

// checks holds, per operation, the check of its arguments that Run makes on
// the lines after the one that stopped a trace: the same parsers the
// operation uses when it runs (each operation parses all its arguments
// before it changes or prints anything), on nothing but the words, so a
// malformed trace is reported whole instead of one line per run. An
// operation whose arguments are free words (broker names, echo's text) has
// none; what depends on the trace's state (a route set first, the clock's
// range after an advance, the duration table's two columns together) cannot
// be checked there.
var checks = map[string]func(a []string) error{
	"clock": func(a []string) error {
		d, err := parseMillis(a[0])
		if err != nil {
			return err
		}
		_, err = clockTarget(d.Milliseconds())
		return err
	},
	"advance": func(a []string) error { _, err := parseMillis(a[0]); return err },
	"set": func(a []string) error {
		var s sendSettings
		return s.set(a)
	},
	"route": func(a []string) error {
		data, err := parseRouteSpec(a[0])
		if err != nil {
			return err
		}
		_, err = route.NewPublishInfo(Topic, data)
		return err
	},
	"orderroute": func(a []string) error {
		_, err := route.NewPublishInfo(Topic, &route.TopicRouteData{OrderTopicConf: route.Str(a[0])})
		return err
	},
	"index":                int32Args,
	"resetrand":            int32Args,
	"worst":                int32Args,
	"enable":               boolArg(0),
	"detector":             boolArg(0),
	"probe":                boolArg(1),
	"latencyMax":           func(a []string) error { _, err := parseColumn(a); return err },
	"notAvailableDuration": func(a []string) error { _, err := parseColumn(a); return err },
	"select": func(a []string) error {
		if len(a) == 2 && a[1] != "reset" {
			return fmt.Errorf("%q: the second word can only be reset", a[1])
		}
		return nil
	},
	"update": func(a []string) error {
		if _, err := parseSignedMillis(a[1]); err != nil {
			return err
		}
		return boolArgs(a[2:])
	},
	"lftupdate": func(a []string) error {
		for _, w := range a[1:3] {
			if _, err := parseSignedMillis(w); err != nil {
				return err
			}
		}
		return boolArgs(a[3:])
	},
	"send": func(a []string) error {
		if _, ok := sendKinds[a[0]]; !ok {
			return fmt.Errorf("mode %q: want SYNC, ASYNC or ONEWAY", a[0])
		}
		for _, w := range a[1:] {
			if _, err := parseOutcome(w); err != nil {
				return err
			}
		}
		return nil
	},
}

func int32Args(a []string) error {
	for _, w := range a {
		if _, err := parseInt32(w); err != nil {
			return err
		}
	}
	return nil
}

func boolArgs(a []string) error {
	for _, w := range a {
		if _, err := parseBool(w); err != nil {
			return err
		}
	}
	return nil
}

func boolArg(i int) func(a []string) error {
	return func(a []string) error { _, err := parseBool(a[i]); return err }
}
