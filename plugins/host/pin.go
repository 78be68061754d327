package host

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// pin is a pinned plugin's private copy: the file at Config.Path copied
// into a directory only this user can enter, hashed as it is copied, and
// run from there. Hashing and running the same bytes closes the window in
// which the file at Path could be replaced between the check and the exec.
type pin struct {
	want []byte   // the pinned SHA-256
	dir  string   // the private directory; "" until the first start
	exe  string   // the copy
	lock *dirLock // marks dir in use (see sweepStale)
}

// executable returns the file to run for a start: the private copy, made
// at the first start and hashed again before every other.
func (p *pin) executable(path, parent string) (string, error) {
	if p.exe != "" {
		return p.exe, p.check(path)
	}
	dir, err := os.MkdirTemp(parent, copyDirPrefix)
	if err != nil {
		return "", &StartError{Path: path, Reason: ErrStart, Err: fmt.Errorf("cannot make the pinned plugin's private copy: %w", err)}
	}
	lock, _ := lockDir(dir) // without a lock the directory is never swept
	exe := filepath.Join(dir, filepath.Base(path))
	got, err := copyHashed(path, exe)
	if err == nil && !bytes.Equal(got, p.want) {
		err = &StartError{Path: path, Reason: ErrChecksum,
			Err: fmt.Errorf("the file's sha256 is %x, want %x; refusing to run it", got, p.want)}
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		lock.unlock()
		return "", err
	}
	p.dir, p.exe, p.lock = dir, exe, lock
	return exe, nil
}

// check hashes the private copy again.
func (p *pin) check(path string) error {
	f, err := os.Open(p.exe)
	if err != nil {
		return &StartError{Path: path, Reason: ErrStart, Err: fmt.Errorf("the pinned plugin's private copy: %w", err)}
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return &StartError{Path: path, Reason: ErrStart, Err: fmt.Errorf("the pinned plugin's private copy: %w", err)}
	}
	if got := h.Sum(nil); !bytes.Equal(got, p.want) {
		return &StartError{Path: path, Reason: ErrChecksum,
			Err: fmt.Errorf("the private copy %s changed: its sha256 is %x, want %x; refusing to run it", p.exe, got, p.want)}
	}
	return nil
}

// copyHashed copies src to a new file dst (mode 0500) and returns the
// SHA-256 of the bytes written.
func copyHashed(src, dst string) ([]byte, error) {
	in, err := os.Open(src)
	if err != nil {
		return nil, &StartError{Path: src, Reason: ErrStart, Err: err}
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil || !fi.Mode().IsRegular() {
		if err == nil {
			err = fmt.Errorf("%s is not a regular file", src)
		}
		return nil, &StartError{Path: src, Reason: ErrStart, Err: err}
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o700)
	if err != nil {
		return nil, &StartError{Path: src, Reason: ErrStart, Err: fmt.Errorf("cannot make the pinned plugin's private copy: %w", err)}
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(out, h), in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(dst, 0o500)
	}
	if err != nil {
		return nil, &StartError{Path: src, Reason: ErrStart, Err: fmt.Errorf("cannot copy the pinned plugin: %w", err)}
	}
	return h.Sum(nil), nil
}

// remove deletes the private copy.
func (p *pin) remove() {
	if p.dir != "" {
		_ = os.RemoveAll(p.dir)
		p.lock.unlock()
		p.dir, p.exe, p.lock = "", "", nil
	}
}
