package host

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// lockName is the file a host keeps locked in each directory it makes (a
// pinned plugin's private copy, go-plugin's socket directory) for as long as
// it uses the directory. The kernel drops the lock when the host process
// ends, however it ends, so a later host can tell a directory left by a host
// that is gone (its lock can be taken) from one in use, and one a host made
// (it has the file) from anything else.
const lockName = ".mqfault-host.lock"

// The directories a host makes, by the prefix of their names.
const (
	copyDirPrefix   = "mqfault-plugin-" // a pinned plugin's private copy, under CopyDir
	socketDirPrefix = "plugin-dir"      // go-plugin's, under os.TempDir()
)

// dirLock is a host's hold on a directory it made; the zero value and nil
// hold nothing.
type dirLock struct{ f *os.File }

// lockDir marks dir, which this process just made, as in use: it locks a
// new file in it and only then gives the file its name, so that no other
// host ever sees the file unlocked while this one lives. Where files cannot
// be locked it returns an error, and the directory is never taken as stale.
func lockDir(dir string) (*dirLock, error) {
	f, err := os.CreateTemp(dir, ".mqfault-lock-*")
	if err != nil {
		return nil, err
	}
	if err := tryLock(f); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, err
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, lockName)); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, err
	}
	return &dirLock{f: f}, nil
}

// unlock lets the directory go; call it once the directory is removed.
func (l *dirLock) unlock() {
	if l != nil && l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}

// sweepStale removes the directories under parent whose names start with
// prefix and that a host left behind: a directory of this user's, private
// (no permission for group or others), holding lockName, whose lock nobody
// holds (its host is gone). Nothing else is touched: another program's
// directories, a host's that still runs, one a host is making right now.
func sweepStale(parent, prefix string, log *slog.Logger) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue // a symbolic link is no directory here
		}
		dir := filepath.Join(parent, e.Name())
		if !privateDir(dir) {
			continue
		}
		f, err := openLock(filepath.Join(dir, lockName))
		if err != nil {
			continue // no host made it, or one is making it
		}
		if tryLock(f) != nil {
			_ = f.Close()
			continue // its host runs
		}
		err = os.RemoveAll(dir)
		_ = f.Close()
		if err != nil {
			log.Warn("plugin host: cannot remove the directory of a plugin host that is gone", "dir", dir, "err", err)
			continue
		}
		log.Info("plugin host: removed the directory of a plugin host that is gone", "dir", dir)
	}
}
