package main

import (
	"context"
	"flag"
	"fmt"
	"runtime/debug"
	"strings"
)

func versionCommand() *command {
	return &command{
		name:    "version",
		summary: "print mqfault's module version and VCS revision (also --version)",
		details: `The version and revision come from the build information Go records in the
binary: a module version for 'go install github.com/mqfault/mqfault/cmd/mqfault@v1.2.3',
"(devel)" for a build from a checkout, and then the commit, its time, and
"modified" when the work tree had changes.`,
		setup: func(fs *flag.FlagSet) func(context.Context, streams, []string) error {
			return func(_ context.Context, io streams, args []string) error {
				if len(args) > 0 {
					return usageErrorf("unexpected argument %q", args[0])
				}
				bi, ok := debug.ReadBuildInfo()
				if !ok {
					bi = nil
				}
				_, err := fmt.Fprintln(io.stdout, versionLine(bi))
				return err
			}
		},
	}
}

// versionLine describes the build bi (nil: no build information), e.g.
//
//	mqfault v1.2.0 (revision 0123456789ab, 2026-12-01T09:00:00Z, modified; go1.26.0)
func versionLine(bi *debug.BuildInfo) string {
	if bi == nil {
		return "mqfault version unknown (the binary has no build information)"
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	var parts []string
	if rev := settings["vcs.revision"]; rev != "" {
		parts = append(parts, "revision "+rev[:min(len(rev), 12)])
	} else {
		parts = append(parts, "no VCS revision")
	}
	if t := settings["vcs.time"]; t != "" {
		parts = append(parts, t)
	}
	if settings["vcs.modified"] == "true" {
		parts = append(parts, "modified")
	}
	line := "mqfault " + version + " (" + strings.Join(parts, ", ")
	if bi.GoVersion != "" {
		line += "; " + bi.GoVersion
	}
	return line + ")"
}
