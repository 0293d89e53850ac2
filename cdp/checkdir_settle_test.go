package cdp

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	vodclusterv1 "vodcluster/proto/vodcluster/v1"
)

// A check (ListTitles with check_directory) that finds a title's file
// still being copied does not publish it half-way: the copy goes on
// between its looks, so it answers directory_changing with the titles
// loaded before and loads nothing; once the copy is over (the directory
// holds still) the next check loads the whole file.
func TestCheckDirectoryWaitsForCopy(t *testing.T) {
	var copying atomic.Bool
	var dst string
	clip := readClip(t, "clip-a.ts")
	half := len(clip) / 188 / 2 * 188
	var written atomic.Int64
	s, c := startServer(t, func(s *Server) {
		s.CatalogPoll = time.Hour
		s.checkSettle = time.Millisecond
		s.afterSettle = func() {
			if !copying.Load() {
				return
			}
			// The copy goes on: 10 more packets between two looks.
			n := written.Load()
			f, err := os.OpenFile(dst, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			if _, err := f.Write(clip[n : n+188*10]); err != nil {
				t.Error(err)
			}
			written.Add(188 * 10)
		}
	})
	dst = filepath.Join(s.Dir, "new-release.ts")
	docPath := filepath.Join(s.Dir, CatalogFile)
	before, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	copying.Store(true)
	written.Store(int64(half))
	if err := os.WriteFile(dst, clip[:half], 0o644); err != nil {
		t.Fatal(err)
	}
	doc := string(before) + "  - id: new-release\n    name: New Release\n    file: new-release.ts\n    package: premium\n"
	if err := os.WriteFile(docPath, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	r, err := c.ListTitles(ctx, &vodclusterv1.ListTitlesRequest{CheckDirectory: true})
	if err != nil {
		t.Fatal(err)
	}
	if !r.GetDirectoryChanging() || len(r.GetTitles()) != 20 {
		t.Fatalf("check during a copy: %d titles, changing %v; want the 20 loaded before, changing", len(r.GetTitles()), r.GetDirectoryChanging())
	}
	if ids := listIDs(t, c); ids["new-release"] != nil {
		t.Fatalf("new-release published during its copy, at %d bytes", ids["new-release"].GetSizeBytes())
	}
	if st := s.Stats(); st.CatalogReloads != 0 || st.CatalogRefused != 0 {
		t.Errorf("stats %+v: want nothing loaded", st)
	}

	// The copy is over: the directory holds still and is loaded.
	copying.Store(false)
	if err := os.WriteFile(dst, clip, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err = c.ListTitles(ctx, &vodclusterv1.ListTitlesRequest{CheckDirectory: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.GetDirectoryChanging() || len(r.GetTitles()) != 21 {
		t.Fatalf("check after the copy: %d titles, changing %v; want 21, not changing", len(r.GetTitles()), r.GetDirectoryChanging())
	}
	if got := listIDs(t, c)["new-release"].GetSizeBytes(); got != int64(len(clip)) {
		t.Errorf("new-release listed at %d bytes, want %d", got, len(clip))
	}
}

// Checks that arrive while one runs share its run (one look at the
// directory, one load) and answer its result; a check whose caller is gone
// does no work.
func TestCheckDirectoryShared(t *testing.T) {
	inSettle := make(chan struct{})
	release := make(chan struct{})
	joined := make(chan struct{}, 4)
	var settles atomic.Int64
	s, c := startServer(t, func(s *Server) {
		s.CatalogPoll = time.Hour
		s.checkSettle = time.Millisecond
		s.afterSettle = func() {
			if settles.Add(1) == 1 {
				close(inSettle)
				<-release
			}
		}
		s.checkJoined = func() { joined <- struct{}{} }
	})
	publishNew(t, s)

	ctx := context.Background()
	answers := make(chan *vodclusterv1.ListTitlesResponse, 3)
	check := func() {
		r, err := c.ListTitles(ctx, &vodclusterv1.ListTitlesRequest{CheckDirectory: true})
		if err != nil {
			t.Error(err)
		}
		answers <- r
	}
	go check()
	<-joined
	<-inSettle // the first check waits for the change to hold still
	go check()
	go check()
	<-joined
	<-joined // both joined the run in progress (or started their own)
	close(release)
	for range 3 {
		if r := <-answers; len(r.GetTitles()) != 21 {
			t.Errorf("a check answered %d titles, want 21", len(r.GetTitles()))
		}
	}
	if n := s.checkRuns.Load(); n != 1 {
		t.Errorf("%d runs of the check for 3 concurrent checks, want 1 shared", n)
	}
	if st := s.Stats(); st.CatalogReloads != 1 {
		t.Errorf("stats %+v: want one load", st)
	}

	// A caller gone before the check: no run, its context's error.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.ListTitles(gone, &vodclusterv1.ListTitlesRequest{CheckDirectory: true}); status.Code(err) != codes.Canceled {
		t.Errorf("check of a canceled caller: %v, want CANCELED", err)
	}
	select {
	case <-joined:
		t.Error("a check of a canceled caller started or joined a run")
	default:
	}
}

// A change found by both a check and the watch is loaded once: the second
// to load it finds it loaded (a refusal is counted, and logged, once).
func TestCheckAndPollLoadOnce(t *testing.T) {
	inSettle := make(chan struct{})
	release := make(chan struct{})
	s, c := startServer(t, func(s *Server) {
		s.CatalogPoll = time.Hour
		s.checkSettle = time.Millisecond
		s.afterSettle = func() {
			close(inSettle)
			<-release
		}
	})
	docPath := filepath.Join(s.Dir, CatalogFile)
	good, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(docPath, append(good, "  - id: missing\n    file: missing.ts\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan *vodclusterv1.ListTitlesResponse)
	go func() {
		r, err := c.ListTitles(context.Background(), &vodclusterv1.ListTitlesRequest{CheckDirectory: true})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	<-inSettle
	// The watch's poll finds the same change held still and loads it
	// while the check waits.
	cur, changed := s.dirChanged()
	if !changed {
		t.Fatal("the watch sees no change")
	}
	if _, held, err := s.reloadIfHeld(cur); !held || err == nil {
		t.Fatalf("the watch's load: held %v, err %v; want the refusal", held, err)
	}
	close(release)
	if r := <-done; r.GetCatalogRefused() == "" {
		t.Error("the check's answer does not say the refusal")
	}
	if st := s.Stats(); st.CatalogRefused != 1 {
		t.Errorf("stats %+v: want the change refused once", st)
	}
}
