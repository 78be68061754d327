//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package host

import (
	"errors"
	"os"
)

var errNoLocks = errors.New("plugin host: no file locks here")

// tryLock fails here: without file locks no directory is marked in use,
// and none is ever taken as stale.
func tryLock(*os.File) error { return errNoLocks }

func openLock(string) (*os.File, error) { return nil, errNoLocks }

func privateDir(string) bool { return false }
