package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/cdp/tsindex"
	pb "vodcluster/proto/vodcluster/v1"
)

// startFillLocked reserves room for meta, creates <id>.ts.part and starts
// the fill's goroutine. Called with s.mu held.
func (s *Store) startFillLocked(meta Meta, prefetch bool) (*Title, error) {
	if s.cfg.Origin == nil {
		return nil, fmt.Errorf("%w: %q (no origin configured)", ErrUnknownTitle, meta.ID)
	}
	if err := s.makeRoomLocked(meta.Size); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(s.path(meta.ID, ".ts.part"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	t := &Title{meta: meta, file: f, filling: true, prefetch: prefetch, lastAccess: s.cfg.Now()}
	t.view.Store(&View{Index: tsindex.Index{FirstPTS: -1}})
	s.titles[meta.ID] = t
	s.used += meta.Size
	s.fillsByID[meta.ID]++
	s.fills.Add(1)
	go s.fill(t)
	s.log.Info("fill started", "title", meta.ID, "size_bytes", meta.Size, "prefetch", prefetch)
	return t, nil
}

// fill copies the title from the origin into its .part file, publishing a
// new View after every chunk, retrying from the offset reached on
// transient errors, then renames the file to <id>.ts.
func (s *Store) fill(t *Title) {
	defer s.fills.Done()
	id := t.meta.ID
	b := tsindex.NewBuilder()
	var off int64
	var err error
	start := time.Now()
	backoff := s.cfg.Retry
	for attempt := 1; ; attempt++ {
		var n int64
		n, err = s.fetch(t, b, off)
		off += n
		if err == nil || attempt >= s.cfg.Attempts || !retryable(err) || s.ctx.Err() != nil {
			break
		}
		s.log.Warn("fill interrupted, retrying", "title", id, "offset", off, "attempt", attempt, "err", err)
		select {
		case <-time.After(backoff):
		case <-s.ctx.Done():
		}
		backoff *= 2
	}
	if err == nil && t.meta.Size > 0 && off != t.meta.Size {
		err = fmt.Errorf("origin sent %d bytes of %d", off, t.meta.Size)
	}
	if err == nil {
		err = s.finishFill(t, b)
	}
	if err != nil {
		s.failFill(t, err)
		return
	}
	s.log.Info("fill complete", "title", id, "bytes", off, "seconds", time.Since(start).Seconds())
}

// fetch runs one Fetch from offset off and returns the bytes written.
func (s *Store) fetch(t *Title, b *tsindex.Builder, off int64) (int64, error) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	stream, err := s.cfg.Origin.Fetch(ctx, &pb.FetchRequest{TitleId: t.meta.ID, Offset: off})
	if err != nil {
		return 0, err
	}
	var n int64
	for {
		c, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if c.GetOffset() != off+n {
			return n, fmt.Errorf("origin chunk at offset %d, expected %d", c.GetOffset(), off+n)
		}
		data := c.GetData()
		if _, err := t.file.WriteAt(data, off+n); err != nil {
			return n, err
		}
		n += int64(len(data))
		s.originBytes.Add(int64(len(data)))
		if _, err := b.Write(data); err != nil {
			return n, err
		}
		t.publish(&View{Index: *b.Index()})
	}
}

func retryable(err error) bool {
	if errors.Is(err, tsindex.ErrNotTS) {
		return false
	}
	switch status.Code(err) {
	case codes.NotFound, codes.OutOfRange, codes.InvalidArgument, codes.PermissionDenied, codes.Canceled:
		return false
	}
	return true
}

// finishFill makes the .part file the title's file and persists the index.
func (s *Store) finishFill(t *Title, b *tsindex.Builder) error {
	id := t.meta.ID
	if err := t.file.Sync(); err != nil {
		return err
	}
	if err := os.Rename(s.path(id, ".ts.part"), s.path(id, ".ts")); err != nil {
		return err
	}
	idx := b.Index()
	if st, err := t.file.Stat(); err == nil {
		if err := saveIndex(s.path(id, ".idx"), st, idx); err != nil {
			s.log.Warn("cannot persist index", "title", id, "err", err)
		}
	}
	s.mu.Lock()
	t.filling = false
	s.mu.Unlock()
	t.publish(&View{Index: *idx, Complete: true})
	return nil
}

// failFill forgets the title, removes its .part file and tells the readers.
func (s *Store) failFill(t *Title, err error) {
	id := t.meta.ID
	if s.ctx.Err() != nil {
		s.log.Info("fill stopped: store closing", "title", id)
	} else {
		s.log.Error("fill failed", "title", id, "err", err)
	}
	s.mu.Lock()
	if s.ctx.Err() == nil && len(s.failures) < maxFailures {
		s.failures = append(s.failures, Failure{Title: id, Reason: err.Error(), Prefetch: t.prefetch, At: s.cfg.Now()})
	}
	t.filling = false
	if s.titles[id] == t {
		delete(s.titles, id)
		s.used -= t.meta.Size
	}
	t.removed = true
	if t.refs == 0 {
		t.file.Close()
	}
	s.mu.Unlock()
	os.Remove(s.path(id, ".ts.part"))
	v := *t.View()
	v.Err = fmt.Errorf("fill of %s failed: %w", id, err)
	t.publish(&v)
}
