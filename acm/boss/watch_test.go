package boss

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"vodcluster/proto/logtest"
)

// writeUsers writes a users file of realm "vodcluster" holding a user per
// name, whose password is the name followed by "-pw", through a file
// renamed over path (as `vodcluster user --file` does).
func writeUsers(t *testing.T, path string, names ...string) {
	t.Helper()
	var users []User
	for _, n := range names {
		u, err := NewUserCost(n, n+"-pw", "vodcluster", []string{"basic"}, bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, u)
	}
	var b bytes.Buffer
	if err := WriteFile(&b, "vodcluster", users); err != nil {
		t.Fatal(err)
	}
	replace(t, path, b.Bytes())
}

func replace(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

func basic(user string) Credentials { return Credentials{User: user, Password: user + "-pw"} }

// await polls cond every 5 ms for at most 5 s.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < 1000 && time.Now().Before(deadline); i++ {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("not within 5s: %s", what)
}

// A user added to the file while the manager runs authenticates within a
// poll; a malformed or other-realm file is refused with its file and line
// logged, and the users before stay; a removed user is refused at once,
// even with a Basic credential cached.
func TestWatchedFileReloads(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "users.yaml")
	writeUsers(t, path, "alice")
	var logs logtest.Buffer
	w, err := WatchFile(path, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	w.Interval = 10 * time.Millisecond
	wctx, cancel := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); w.Watch(wctx) }()
	defer func() {
		cancel()
		<-watched
	}()

	if err := w.Authenticate(ctx, basic("alice")); err != nil {
		t.Fatal(err)
	}
	if err := w.Authenticate(ctx, basic("bob")); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("bob before he is added: %v", err)
	}

	writeUsers(t, path, "alice", "bob")
	await(t, "bob added", func() bool { return w.Authenticate(ctx, basic("bob")) == nil })
	if ok, err := w.Entitled(ctx, "bob", "basic"); err != nil || !ok {
		t.Fatalf("bob entitled: %v %v", ok, err)
	}

	// A malformed entry (line 9: bob's ha1 is not hex) and then a syntax
	// error: both logged with the file and the line, the users kept.
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := []byte("realm: vodcluster\nusers:\n  - name: carol\n    ha1: nothex\n    packages: [basic]\n")
	replace(t, path, bad)
	await(t, "malformed file logged", func() bool { return strings.Contains(logs.String(), "line 3: ") })
	line := lastLine(logs.String(), "users file not reloaded")
	if !strings.Contains(line, "file="+path) || !strings.Contains(line, `carol`) || !strings.Contains(line, "level=ERROR") {
		t.Fatalf("log line of the malformed file: %s", line)
	}
	for _, u := range []string{"alice", "bob"} {
		if err := w.Authenticate(ctx, basic(u)); err != nil {
			t.Fatalf("%s after a malformed file: %v", u, err)
		}
	}
	if err := w.Authenticate(ctx, Credentials{User: "carol", Password: "x"}); err == nil {
		t.Fatal("carol of the malformed file authenticated")
	}
	replace(t, path, []byte("realm: vodcluster\nusers:\n  - name: dave\n   bcrypt: x\n"))
	await(t, "syntax error logged", func() bool { return strings.Count(logs.String(), "users file not reloaded") == 2 })
	if line := lastLine(logs.String(), "users file not reloaded"); !strings.Contains(line, "file="+path) || !strings.Contains(line, path+": line ") || strings.Contains(line, ": yaml: ") {
		t.Fatalf("log line of the syntax error: %s", line)
	}
	if err := w.Authenticate(ctx, basic("bob")); err != nil {
		t.Fatalf("bob after a syntax error: %v", err)
	}

	// Another realm would break every Digest: refused too.
	other, _ := NewUserCost("erin", "erin-pw", "elsewhere", nil, bcrypt.MinCost)
	var ob bytes.Buffer
	if err := WriteFile(&ob, "elsewhere", []User{other}); err != nil {
		t.Fatal(err)
	}
	replace(t, path, ob.Bytes())
	await(t, "other realm logged", func() bool { return strings.Contains(logs.String(), `realm \"elsewhere\"`) })
	if err := w.Authenticate(ctx, basic("erin")); err == nil || w.Realm() != "vodcluster" {
		t.Fatalf("file of another realm taken: %v, realm %q", err, w.Realm())
	}

	// Back to a good file without bob: his cached Basic credential goes.
	replace(t, path, good)
	await(t, "good file back", func() bool { return w.Users() == 2 })
	writeUsers(t, path, "alice")
	await(t, "bob removed", func() bool { return w.Users() == 1 })
	if err := w.Authenticate(ctx, basic("bob")); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("bob after his removal: %v", err)
	}
	if _, err := w.Entitled(ctx, "bob", "basic"); !errors.Is(err, ErrUnknownUser) {
		t.Fatalf("bob entitled after his removal: %v", err)
	}
}

// Reload (SIGHUP) reads the file at once and reports a malformed one.
func TestWatchedFileReload(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "users.yaml")
	writeUsers(t, path, "alice")
	w, err := WatchFile(path, slog.New(slog.NewTextHandler(&logtest.Buffer{}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	writeUsers(t, path, "alice", "bob")
	if err := w.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := w.Authenticate(ctx, basic("bob")); err != nil {
		t.Fatal(err)
	}
	replace(t, path, []byte("realm: vodcluster\nusers:\n  - name: bob\n    bcrypt: nope\n"))
	if err := w.Reload(); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "line 3: ") {
		t.Fatalf("malformed file: %v", err)
	}
	if err := w.Authenticate(ctx, basic("bob")); err != nil {
		t.Fatalf("bob after a refused reload: %v", err)
	}
	if _, err := WatchFile(path, nil); err == nil {
		t.Fatal("malformed file watched")
	}
	os.Remove(path)
	if err := w.Reload(); err == nil || w.Users() != 2 {
		t.Fatalf("missing file: %v, %d users", err, w.Users())
	}
}

// lastLine returns the last line of s that contains sub.
func lastLine(s, sub string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], sub) {
			return lines[i]
		}
	}
	return ""
}
