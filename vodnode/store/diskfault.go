package store

import (
	"os"
	"path/filepath"
	"time"

	"vodcluster/proto/monotime"
)

// diskFaultRetry is how long after a write to the title cache failed the
// store reports a disk fault before it tries a test write again.
const diskFaultRetry = 30 * time.Second

// noteDiskFault records that writing the title cache failed now.
func (s *Store) noteDiskFault() {
	s.diskFault.Store(monotime.Of(s.cfg.Now()))
}

// DiskFault reports whether the title cache cannot be written: a write
// failed (a full file system, one remounted read only, I/O errors) and no
// test write has succeeded since. At most every diskFaultRetry it tries a
// test write (a small file created, synced and removed in the title
// directory); its success clears the fault. The node reports it to the
// manager, which then sends it no fill.
func (s *Store) DiskFault() bool {
	at := s.diskFault.Load()
	if at == 0 {
		return false
	}
	if s.cfg.Now().Sub(monotime.Time(at)) < diskFaultRetry {
		return true
	}
	if err := s.testWrite(); err != nil {
		s.noteDiskFault()
		s.log.Warn("title cache still cannot be written: no fills", "dir", s.cfg.Dir, "err", err)
		return true
	}
	if s.diskFault.CompareAndSwap(at, 0) {
		s.log.Info("title cache writable again: fills resume", "dir", s.cfg.Dir)
	}
	return false
}

// testWrite writes, syncs and removes a 64 KiB file in the title
// directory.
func (s *Store) testWrite() error {
	p := filepath.Join(s.cfg.Dir, ".write-test")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer os.Remove(p)
	_, err = f.Write(make([]byte, 64<<10))
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
