//go:build !unix

package host

import (
	"os/exec"
)

// setProcessGroup does nothing here: there are no unix process groups.
func setProcessGroup(*exec.Cmd) {}

// killProcessGroup does nothing here; Kill kills the process itself.
func killProcessGroup(int) error { return nil }

func isTextBusy(error) bool { return false }

// writableByOthers finds nothing here: the check needs unix permissions.
func writableByOthers(string) string { return "" }
