//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package host

import (
	"os"
	"syscall"
)

// tryLock takes an exclusive flock on f without waiting. A lock is held by
// the open file, so another open of the same file (in this process too)
// cannot take it.
func tryLock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) { lerr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB) }); err != nil {
		return err
	}
	return lerr
}

// openLock opens a lock file for tryLock, not following a symbolic link.
func openLock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
}

// privateDir reports whether path is a directory (not a link to one) of
// this user's that no one else may enter or change.
func privateDir(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
