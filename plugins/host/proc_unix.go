//go:build unix

package host

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
)

// setProcessGroup makes cmd's process the leader of a new process group,
// so that killProcessGroup reaches everything it starts (a wrapper script's
// children) and a terminal's Ctrl-C reaches the host only (which then
// closes the plugin).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killProcessGroup sends SIGKILL to the process group led by pid; a group
// that is gone is not an error.
func killProcessGroup(pid int) error {
	if pid <= 0 {
		return nil
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// isTextBusy reports whether err is ETXTBSY.
func isTextBusy(err error) bool { return errors.Is(err, syscall.ETXTBSY) }

// writableByOthers returns the first of path, the file it resolves to, and
// the directories above either that a user other than its owner (and root)
// could change so as to replace what path runs: a file writable by others,
// a directory writable by others (unless sticky, like /tmp, and then only
// an entry owned by someone else than this user or root counts). It returns
// "" when there is none, or when path cannot be examined (the start then
// fails with the operating system's error).
func writableByOthers(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	candidates := []string{abs}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		candidates = append(candidates, real)
	}
	uid := uint32(os.Geteuid())
	for _, p := range candidates {
		fi, err := os.Stat(p)
		if err != nil {
			return ""
		}
		if fi.Mode().Perm()&0o002 != 0 {
			return p + " (mode " + fi.Mode().Perm().String() + ")"
		}
		for child, dir := p, filepath.Dir(p); ; child, dir = dir, filepath.Dir(dir) {
			di, err := os.Stat(dir)
			if err != nil {
				return ""
			}
			if di.Mode().Perm()&0o002 != 0 {
				if di.Mode()&os.ModeSticky == 0 {
					return dir + " (mode " + di.Mode().Perm().String() + ")"
				}
				if ci, err := os.Lstat(child); err == nil {
					if st, ok := ci.Sys().(*syscall.Stat_t); ok && st.Uid != uid && st.Uid != 0 {
						return child + " (in the sticky directory " + dir + ", owned by uid " + strconv.Itoa(int(st.Uid)) + ")"
					}
				}
			}
			if dir == filepath.Dir(dir) {
				break
			}
		}
	}
	return ""
}
