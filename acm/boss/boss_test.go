package boss

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

func mustCost(t *testing.T, u User) int {
	t.Helper()
	c, err := bcrypt.Cost([]byte(u.Bcrypt))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDigestExpectedRFC2617Example(t *testing.T) {
	// RFC 2617 section 3.5: Mufasa / "Circle Of Life".
	d := &DigestResponse{
		Username: "Mufasa", Realm: "testrealm@host.com", Nonce: "dcd98b7102dd2f0e8b11d0f600bfb0c093",
		URI: "/dir/index.html", QOP: "auth", NC: "00000001", CNonce: "0a4f113b", Method: "GET",
		Response: "6629fae49393a05397450978507c4ef1",
	}
	ha1 := HA1("Mufasa", "testrealm@host.com", "Circle Of Life")
	if !d.Verify(ha1) {
		t.Fatalf("RFC 2617 example: got %s", d.Expected(ha1))
	}
	d.Response = strings.Repeat("0", 32)
	if d.Verify(ha1) {
		t.Fatal("wrong response verified")
	}
}

func newTestFile(t *testing.T) *File {
	t.Helper()
	demo, err := NewUserCost("demo", "demo", "vodcluster", []string{"*"}, bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	kid, err := NewUserCost("kid", "pw:with:colons", "vodcluster", []string{"kids"}, bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteFile(&buf, "vodcluster", []User{demo, kid}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "pw:with:colons") {
		t.Fatal("users file holds a plaintext password")
	}
	f, err := ParseFile(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFileBasic(t *testing.T) {
	f := newTestFile(t)
	ctx := context.Background()
	if err := f.Authenticate(ctx, Credentials{User: "demo", Password: "demo"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Authenticate(ctx, Credentials{User: "kid", Password: "pw:with:colons"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []Credentials{{User: "demo", Password: "wrong"}, {User: "nobody", Password: "demo"}, {User: "demo"}} {
		if err := f.Authenticate(ctx, c); !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("%+v: %v", c, err)
		}
	}
}

func TestFileBasicCache(t *testing.T) {
	f := newTestFile(t)
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	f.now = func() time.Time { return now }
	f.cacheSize = 2
	if err := f.Authenticate(ctx, Credentials{User: "demo", Password: "demo"}); err != nil {
		t.Fatal(err)
	}
	// A cached credential is accepted without bcrypt: make the hash
	// unusable and check the cache answers.
	f.users["demo"].Bcrypt = "$2a$10$invalidinvalidinvalidinvalidinvalidinvalidinvalidinval"
	if err := f.Authenticate(ctx, Credentials{User: "demo", Password: "demo"}); err != nil {
		t.Fatalf("cached credential refused: %v", err)
	}
	if err := f.Authenticate(ctx, Credentials{User: "demo", Password: "demo2"}); err == nil {
		t.Fatal("other password accepted through the cache")
	}
	now = now.Add(DefaultCacheTTL + time.Second)
	if err := f.Authenticate(ctx, Credentials{User: "demo", Password: "demo"}); err == nil {
		t.Fatal("expired cache entry still trusted")
	}
	// Bounded size.
	for _, p := range []string{"a", "b", "c", "d"} {
		f.remember([32]byte{p[0]}, now)
	}
	if len(f.cache) > 2 {
		t.Fatalf("cache holds %d entries, bound 2", len(f.cache))
	}
}

func TestFileDigest(t *testing.T) {
	f := newTestFile(t)
	ctx := context.Background()
	mk := func(user, realm, pass, qop string) Credentials {
		d := &DigestResponse{Username: user, Realm: realm, Nonce: "n1", URI: "rtsp://h/vod/x", Method: "DESCRIBE", QOP: qop}
		if qop != "" {
			d.NC, d.CNonce = "00000001", "abc"
		}
		d.Response = d.Expected(HA1(user, realm, pass))
		return Credentials{User: user, Digest: d}
	}
	for _, qop := range []string{"", "auth"} {
		if err := f.Authenticate(ctx, mk("demo", "vodcluster", "demo", qop)); err != nil {
			t.Fatalf("qop %q: %v", qop, err)
		}
		if err := f.Authenticate(ctx, mk("demo", "vodcluster", "wrong", qop)); !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("wrong password qop %q: %v", qop, err)
		}
		if err := f.Authenticate(ctx, mk("demo", "other", "demo", qop)); !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("other realm qop %q: %v", qop, err)
		}
		if err := f.Authenticate(ctx, mk("ghost", "vodcluster", "demo", qop)); !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("unknown user qop %q: %v", qop, err)
		}
	}
	c := mk("demo", "vodcluster", "demo", "")
	c.Digest.Algorithm = "SHA-256"
	if err := f.Authenticate(ctx, c); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("SHA-256 accepted: %v", err)
	}
}

func TestFileEntitled(t *testing.T) {
	f := newTestFile(t)
	ctx := context.Background()
	for _, tc := range []struct {
		user, pkg string
		want      bool
	}{{"demo", "anything", true}, {"kid", "kids", true}, {"kid", "adult", false}} {
		got, err := f.Entitled(ctx, tc.user, tc.pkg)
		if err != nil || got != tc.want {
			t.Fatalf("%s/%s: %v %v", tc.user, tc.pkg, got, err)
		}
	}
	if _, err := f.Entitled(ctx, "ghost", "kids"); !errors.Is(err, ErrUnknownUser) {
		t.Fatalf("unknown user: %v", err)
	}
}

func TestParseFileStrict(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field":   "realm: r\nusers:\n  - name: a\n    ha1: 0123456789abcdef0123456789abcdef\n    password: x\n",
		"no realm":        "users:\n  - name: a\n    ha1: 0123456789abcdef0123456789abcdef\n",
		"bad ha1":         "realm: r\nusers:\n  - name: a\n    ha1: xyz\n",
		"bad bcrypt":      "realm: r\nusers:\n  - name: a\n    bcrypt: nope\n",
		"no secret":       "realm: r\nusers:\n  - name: a\n",
		"duplicate":       "realm: r\nusers:\n  - {name: a, ha1: 0123456789abcdef0123456789abcdef}\n  - {name: a, ha1: 0123456789abcdef0123456789abcdef}\n",
		"colon in name":   "realm: r\nusers:\n  - {name: 'a:b', ha1: 0123456789abcdef0123456789abcdef}\n",
		"empty package":   "realm: r\nusers:\n  - {name: a, ha1: 0123456789abcdef0123456789abcdef, packages: ['']}\n",
		"empty document":  "",
		"not yaml at all": "{{{",
	} {
		if _, err := ParseFile(strings.NewReader(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if u, err := NewUser("a", "pw", "r", nil); err != nil || mustCost(t, u) != bcrypt.DefaultCost {
		t.Errorf("NewUser: %v", err)
	}
	if _, err := NewUser("a", "", "r", nil); err == nil {
		t.Error("empty password accepted")
	}
}

// At most bcryptSlots.size bcrypt comparisons run at once: with every slot
// taken a check waits, and ends with its context; a cached credential
// needs no slot.
func TestBasicChecksBounded(t *testing.T) {
	f := newTestFile(t)
	if err := f.Authenticate(context.Background(), Credentials{User: "demo", Password: "demo"}); err != nil {
		t.Fatal(err)
	}
	takeAllSlots()
	defer func() {
		releaseAllSlots()
	}()
	if err := f.Authenticate(context.Background(), Credentials{User: "demo", Password: "demo"}); err != nil {
		t.Fatalf("cached credential with every slot taken: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := f.Authenticate(ctx, Credentials{User: "kid", Password: "pw:with:colons"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a check with every slot taken: %v, want it to wait until its context ends", err)
	}
}

// PackageHolders lists each package held, but AllPackages, with its
// holders sorted, each once.
func TestPackageHolders(t *testing.T) {
	var users []User
	for _, u := range []struct {
		name string
		pkgs []string
	}{{"zoe", []string{"basic", "basic"}}, {"amy", []string{"basic", "sport"}}, {"root", []string{AllPackages}}} {
		nu, err := NewUserCost(u.name, "pw", "r", u.pkgs, bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, nu)
	}
	f, err := NewFile("r", users)
	if err != nil {
		t.Fatal(err)
	}
	got := f.PackageHolders()
	if len(got) != 2 || !slices.Equal(got["basic"], []string{"amy", "zoe"}) || !slices.Equal(got["sport"], []string{"amy"}) {
		t.Fatalf("PackageHolders: %v", got)
	}
}

// A users file's typo is told on one line as the manager's configuration
// tells its own, with its line and the key as written, not the decoder's
// two lines naming the manager's Go type ("field pakages not found in
// type boss.User"); LoadFile names the file.
func TestParseFileErrorInWords(t *testing.T) {
	const good = "realm: r\nusers:\n  - name: a\n    ha1: 0123456789abcdef0123456789abcdef\n"
	for name, c := range map[string]struct{ doc, want string }{
		"misspelt key":   {good + "    pakages: [kids]\n", "line 5: unknown key pakages (misspelt, or under the wrong section?)"},
		"two misspelt":   {"realm: r\nuser:\n  - name: a\n" + "reaml: s\n", "line 2: unknown key user (misspelt, or under the wrong section?); line 4: unknown key reaml (misspelt, or under the wrong section?)"},
		"packages alone": {good + "    packages: kids\n", "line 5: cannot unmarshal !!str `kids` into a list (packages: [a, b])"},
		"syntax":         {"realm: r\nusers:\n  - name: a\n   ha1: x\n", "line 2: did not find expected"},
	} {
		_, err := ParseFile(strings.NewReader(c.doc))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") ||
			strings.Contains(err.Error(), "boss.") || strings.HasPrefix(err.Error(), "yaml: ") {
			t.Errorf("%s: %v, want %q on one line", name, err, c.want)
		}
	}
	path := filepath.Join(t.TempDir(), "users.yaml")
	if err := os.WriteFile(path, []byte(good+"    pakages: [kids]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(path); err == nil || err.Error() != path+": line 5: unknown key pakages (misspelt, or under the wrong section?)" {
		t.Errorf("LoadFile: %v", err)
	}
}
