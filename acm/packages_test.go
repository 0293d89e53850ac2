package acm

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"vodcluster/acm/boss"
	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// A subscriber holding a package no title is in (a typo in `vodcluster
// user --package`) was refused every title with no word anywhere. The
// manager now warns at the catalog read, once per set of such packages,
// naming them and their holders; it says so again when the set changes
// (the catalog gains a title of the package), and not at every read.
func TestPackagesNoTitleIsInWarned(t *testing.T) {
	users := append([]boss.User(nil), testUsers()...)
	for _, u := range []struct {
		name string
		pkgs []string
	}{{"dave", []string{"premum"}}, {"erin", []string{"kids", "premum", "sport"}}} {
		nu, err := boss.NewUserCost(u.name, "pw", DefaultRealm, u.pkgs, bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, nu)
	}
	file, err := boss.NewFile(DefaultRealm, users)
	if err != nil {
		t.Fatal(err)
	}
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) {
		m.BOSS = file
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	warned := func() int {
		return strings.Count(log.String(), "subscribers hold packages that no title of the catalog is in")
	}
	if n := warned(); n != 1 {
		t.Fatalf("warnings at the start: %d, want 1\n%s", n, log.String())
	}
	for _, want := range []string{`\"premum\" (dave, erin)`, `\"sport\" (erin)`} {
		if !strings.Contains(log.String(), want) {
			t.Fatalf("the warning does not name %s:\n%s", want, log.String())
		}
	}
	if strings.Contains(log.String(), `\"kids\"`) {
		t.Fatalf("a package of the catalog named:\n%s", log.String())
	}
	refresh := func() {
		t.Helper()
		if err := e.m.refreshCatalog(context.Background(), 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	refresh()
	if n := warned(); n != 1 {
		t.Fatalf("warnings after a read with nothing changed: %d, want still 1", n)
	}
	e.origin.mu.Lock()
	e.origin.titles = append(append([]*pb.Title(nil), e.origin.titles...),
		&pb.Title{Id: "match-1", Name: "Match", DurationS: 20, BitrateBps: 600_000, SizeBytes: 1_500_000, Package: "sport"})
	e.origin.mu.Unlock()
	refresh()
	if n := warned(); n != 2 || strings.Contains(log.String()[strings.LastIndex(log.String(), "subscribers hold packages"):], "sport") {
		t.Fatalf("after the catalog gained a sport title: %d warnings (want 2), the last naming only premum:\n%s", n, log.String())
	}
}
