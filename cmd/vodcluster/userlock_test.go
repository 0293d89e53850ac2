package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"vodcluster/acm/boss"
)

// Subscribers added to one users file by several `vodcluster user` at
// once are all in it afterwards: each edit reads, edits and replaces the
// file while no other does (lockUsersDir); they overwrote each other's.
func TestUserFileConcurrentEditsKeepEveryEntry(t *testing.T) {
	f := filepath.Join(t.TempDir(), "users.yaml")
	if _, err := runUser(t, "pw-first\n", "first", "--file", f); err != nil {
		t.Fatal(err)
	}
	const editors = 12
	var wg sync.WaitGroup
	errs := make([]error, editors)
	start := make(chan struct{}) // all at once
	for i := range editors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = runUser(t, fmt.Sprintf("pw-%d\n", i), fmt.Sprintf("user%d", i), "--file", f)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("user%d: %v", i, err)
		}
	}
	var doc usersDoc
	if err := readUsers(f, &doc); err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, u := range doc.Users {
		have[u.Name] = true
	}
	for i := range editors {
		if name := fmt.Sprintf("user%d", i); !have[name] {
			t.Errorf("%s lost", name)
		}
	}
	if !have["first"] || len(doc.Users) != editors+1 {
		t.Errorf("%d entries, want first and the %d added", len(doc.Users), editors)
	}
	// the entries are whole: two of them authenticate
	users, err := boss.LoadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	for user, pw := range map[string]string{"first": "pw-first", "user0": "pw-0"} {
		if err := users.Authenticate(context.Background(), boss.Credentials{User: user, Password: pw}); err != nil {
			t.Errorf("%s: %v", user, err)
		}
	}
}
