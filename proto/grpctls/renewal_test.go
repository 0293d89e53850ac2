package grpctls

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"vodcluster/proto/grpctls/grpctlstest"
	"vodcluster/proto/logtest"
)

// renewalRig is a gRPC server on a certificate pair with a fake clock
// for its reload checks and the grace timers it starts held for the
// test to fire.
type renewalRig struct {
	t      *testing.T
	addr   string
	clock  atomic.Int64
	mu     sync.Mutex
	timers []func() // the grace re-checks started, not yet fired
	logs   logtest.Buffer
}

func newRenewalRig(t *testing.T, cert, key string) *renewalRig {
	t.Helper()
	r := &renewalRig{t: t}
	prev := slog.Default()
	t.Cleanup(func() { slog.SetDefault(prev) })
	slog.SetDefault(slog.New(slog.NewTextHandler(&r.logs, nil)))
	r.clock.Store(time.Now().UnixNano())
	srv, err := newServer(cert, key, func() time.Time { return time.Unix(0, r.clock.Load()) },
		func(_ time.Duration, f func()) {
			r.mu.Lock()
			r.timers = append(r.timers, f)
			r.mu.Unlock()
		})
	if err != nil {
		t.Fatal(err)
	}
	r.addr = serve(t, srv)
	return r
}

// handshake advances the clock by d and makes one health call trusting ca.
func (r *renewalRig) handshake(d time.Duration, ca string) error {
	r.t.Helper()
	r.clock.Add(int64(d))
	return check(r.t, r.addr, mustClient(r.t, true, ca))
}

// fireTimers advances the clock by d and runs the grace re-checks started.
func (r *renewalRig) fireTimers(d time.Duration) int {
	r.clock.Add(int64(d))
	r.mu.Lock()
	fs := r.timers
	r.timers = nil
	r.mu.Unlock()
	for _, f := range fs {
		f()
	}
	return len(fs)
}

func (r *renewalRig) warnings() int {
	return strings.Count(r.logs.String(), "TLS certificate renewal not loaded")
}

// writeAt writes data to path with the modification time m.
func writeAt(t *testing.T, path string, data []byte, m time.Time) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, m, m); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A renewal written in two steps (the certificate, then the key a moment
// later, as certbot swaps its live/ links one by one; or the key first) is
// taken once the second file is there, with no warning and nothing counted
// as refused: the pair seen in between (one new file, one old) does not
// match, and it was warned as a renewal "a restart would fail" on. A
// second file that never comes is warned once the grace has passed, by
// the re-check the failure started, with no handshake needed.
func TestRenewalInTwoStepsNotWarned(t *testing.T) {
	dir := t.TempDir()
	a, err := grpctlstest.Write(dir, "", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	aCA := filepath.Join(dir, "a-ca.pem")
	if err := os.Rename(a.CA, aCA); err != nil {
		t.Fatal(err)
	}
	r := newRenewalRig(t, a.Cert, a.Key)
	loaded0, refused0 := Reloads()
	m := time.Now().Add(time.Hour)
	serving := aCA
	for _, first := range []string{"cert", "key"} {
		next, err := grpctlstest.Write(t.TempDir(), "", "127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		src := map[string]string{"cert": next.Cert, "key": next.Key}
		dst := map[string]string{"cert": a.Cert, "key": a.Key}
		second := map[string]string{"cert": "key", "key": "cert"}[first]
		m = m.Add(time.Minute)
		writeAt(t, dst[first], readFile(t, src[first]), m)
		if err := r.handshake(2*time.Second, serving); err != nil {
			t.Fatalf("%s written, %s not yet: %v (the last good pair should be served)", first, second, err)
		}
		m = m.Add(time.Second)
		writeAt(t, dst[second], readFile(t, src[second]), m)
		if err := r.handshake(2*time.Second, next.CA); err != nil {
			t.Fatalf("%s then %s written: the renewal is not served: %v\n%s", first, second, err, r.logs.String())
		}
		serving = next.CA
		r.fireTimers(time.Minute) // a re-check a grace after the mismatch finds the pair loaded
		if n := r.warnings(); n != 0 {
			t.Fatalf("%s then %s written a moment apart: %d warnings, want none:\n%s", first, second, n, r.logs.String())
		}
	}
	if loaded, refused := Reloads(); loaded != loaded0+2 || refused != refused0 {
		t.Errorf("reloads loaded %d refused %d, want %d and %d", loaded, refused, loaded0+2, refused0)
	}

	// A certificate whose key never comes: warned once the grace has
	// passed, with no handshake after it, and once only.
	lone, err := grpctlstest.Write(t.TempDir(), "", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	m = m.Add(time.Minute)
	writeAt(t, a.Cert, readFile(t, lone.Cert), m)
	if err := r.handshake(2*time.Second, serving); err != nil {
		t.Fatalf("a certificate without its key: %v (the last good pair should be served)", err)
	}
	if n := r.warnings(); n != 0 {
		t.Fatalf("warned before the grace: %d warnings\n%s", n, r.logs.String())
	}
	if n := r.fireTimers(renewalGrace); n != 1 {
		t.Fatalf("%d re-checks started by the failure, want 1", n)
	}
	if n := r.warnings(); n != 1 {
		t.Fatalf("a pair still not loading after the grace: %d warnings, want 1:\n%s", n, r.logs.String())
	}
	for _, want := range []string{a.Cert, a.Key, "private key does not match public key", "level=WARN"} {
		if !strings.Contains(r.logs.String(), want) {
			t.Errorf("the warning lacks %q:\n%s", want, r.logs.String())
		}
	}
	for i := 0; i < 3; i++ {
		if err := r.handshake(2*renewalGrace, serving); err != nil {
			t.Fatal(err)
		}
	}
	r.fireTimers(renewalGrace)
	if n := r.warnings(); n != 1 {
		t.Errorf("the same failure warned %d times, want 1:\n%s", n, r.logs.String())
	}
	if _, refused := Reloads(); refused != refused0+1 {
		t.Errorf("refused reloads %d, want %d", refused, refused0+1)
	}
}

// A renewal put in place by a symbolic link swap (a Kubernetes secret
// volume: tls.crt -> ..data/tls.crt, ..data -> a directory replaced by
// renaming a new link over it) is taken, with no warning: whether the new
// files have new modification times or kept the old ones (copied with
// their times, cp -p or rsync -a): the files the names lead to are others.
func TestRenewalBySymlinkSwap(t *testing.T) {
	for _, keepTimes := range []bool{false, true} {
		dir := t.TempDir()
		pairs := make([]grpctlstest.Files, 3)
		for i := range pairs {
			d := filepath.Join(dir, "..2026_12_01_0"+string(rune('0'+i)))
			if err := os.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
			f, err := grpctlstest.Write(d, "", "127.0.0.1")
			if err != nil {
				t.Fatal(err)
			}
			pairs[i] = f
		}
		m := time.Now().Add(-time.Hour)
		for i, f := range pairs {
			if !keepTimes {
				m = m.Add(time.Minute * time.Duration(i+1))
			}
			for _, p := range []string{f.Cert, f.Key} {
				if err := os.Chtimes(p, m, m); err != nil {
					t.Fatal(err)
				}
			}
		}
		swap := func(i int) {
			t.Helper()
			tmp := filepath.Join(dir, "..data_tmp")
			if err := os.Symlink(filepath.Base(filepath.Dir(pairs[i].Cert)), tmp); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
				t.Fatal(err)
			}
		}
		swap(0)
		cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
		if err := os.Symlink("..data/cert.pem", cert); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("..data/key.pem", key); err != nil {
			t.Fatal(err)
		}
		r := newRenewalRig(t, cert, key)
		if err := r.handshake(2*time.Second, pairs[0].CA); err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(pairs); i++ {
			swap(i)
			if err := os.RemoveAll(filepath.Dir(pairs[i-1].Cert)); err != nil {
				t.Fatal(err)
			}
			if err := r.handshake(2*time.Second, pairs[i].CA); err != nil {
				t.Fatalf("times kept %v: swap %d not served: %v\n%s", keepTimes, i, err, r.logs.String())
			}
		}
		r.fireTimers(time.Minute)
		if n := r.warnings(); n != 0 {
			t.Errorf("times kept %v: %d warnings, want none:\n%s", keepTimes, n, r.logs.String())
		}
	}
}
