package auth

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"
)

var t0 = time.Unix(1_800_000_000, 0)

func TestParseBasic(t *testing.T) {
	c, err := Parse("Basic "+base64.StdEncoding.EncodeToString([]byte("demo:pa:ss")), "DESCRIBE")
	if err != nil || c.User != "demo" || c.Password != "pa:ss" || c.Digest != nil {
		t.Fatalf("%+v %v", c, err)
	}
	for _, h := range []string{"Basic !!!", "Basic " + base64.StdEncoding.EncodeToString([]byte("nocolon")),
		"Basic " + base64.StdEncoding.EncodeToString([]byte(":pw")), "Bearer abc", "", "Basic"} {
		if _, err := Parse(h, "GET"); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v", h, err)
		}
	}
}

func TestParseDigestAsClientsSendIt(t *testing.T) {
	// ffmpeg (qop=auth, algorithm="MD5") and live555/VLC (no qop).
	ff := `Digest username="demo", realm="vodcluster", nonce="abc", uri="rtsp://127.0.0.1:8554/vod/t", ` +
		`response="0123456789ABCDEF0123456789abcdef", algorithm="MD5", cnonce="9e3f", nc=00000001, qop="auth"`
	c, err := Parse(ff, "DESCRIBE")
	if err != nil {
		t.Fatal(err)
	}
	d := c.Digest
	if c.User != "demo" || d.Realm != "vodcluster" || d.Nonce != "abc" || d.URI != "rtsp://127.0.0.1:8554/vod/t" ||
		d.Response != "0123456789abcdef0123456789abcdef" || d.QOP != "auth" || d.NC != "00000001" ||
		d.CNonce != "9e3f" || d.Method != "DESCRIBE" || d.Algorithm != "MD5" {
		t.Fatalf("%+v", d)
	}
	vlc := `Digest username="demo", realm="vodcluster", nonce="abc", uri="rtsp://h/vod/t", response="00"`
	if c, err := Parse(vlc, "DESCRIBE"); err != nil || c.Digest.QOP != "" {
		t.Fatalf("%+v %v", c, err)
	}
	esc := `Digest username="we\"ird, name", realm="r", nonce="n", uri="/", response="00"`
	if c, err := Parse(esc, "GET"); err != nil || c.User != `we"ird, name` {
		t.Fatalf("%+v %v", c, err)
	}
	for _, h := range []string{
		`Digest realm="r", nonce="n", uri="/", response="0"`,                             // no username
		`Digest username="u", realm="r", nonce="n", uri="/", response="0", qop=auth`,     // no nc/cnonce
		`Digest username="u", realm="r", nonce="n", uri="/", response="0", qop=auth-int`, // unsupported
		`Digest username="u", realm="r", nonce="n, uri="/", response="0"`,                // unterminated
		`Digest username="u", username="v", realm="r", nonce="n", uri="/", response="0"`, // repeated
		`Digest username="u"x, realm="r", nonce="n", uri="/", response="0"`,              // garbage
		`Digest username`,                        // no value
		"Digest " + strings.Repeat("a=b,", 2000), // too long
	} {
		if _, err := Parse(h, "GET"); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v", h, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(`Digest username="demo", realm="vodcluster", nonce="abc", uri="rtsp://h/v", response="00", qop=auth, nc=1, cnonce=x`)
	f.Add("Basic ZGVtbzpkZW1v")
	f.Add(`Digest a="\"`)
	f.Fuzz(func(t *testing.T, h string) {
		c, err := Parse(h, "DESCRIBE")
		if err == nil && c.User == "" {
			t.Fatalf("%q parsed without user", h)
		}
	})
}

func TestNonces(t *testing.T) {
	n := NewNonces([]byte("0123456789abcdef-cluster"), time.Minute)
	nonce := n.Issue(t0)
	if err := n.Check(nonce, t0.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := n.Check(nonce, t0.Add(61*time.Second)); !errors.Is(err, ErrNonceStale) {
		t.Fatalf("expired: %v", err)
	}
	if err := n.Check(nonce, t0.Add(-time.Minute)); !errors.Is(err, ErrNonceInvalid) {
		t.Fatalf("from the future: %v", err)
	}
	other := NewNonces([]byte("another-secret-of-16+"), time.Minute)
	if err := other.Check(nonce, t0); !errors.Is(err, ErrNonceInvalid) {
		t.Fatalf("other key: %v", err)
	}
	tampered := []byte(nonce)
	tampered[3] ^= 1
	for _, bad := range []string{string(tampered), "", "zz", nonce[:20]} {
		if err := n.Check(bad, t0); !errors.Is(err, ErrNonceInvalid) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}

func TestChallenge(t *testing.T) {
	c := Challenge(`re"alm`, "N", true, true)
	if len(c) != 2 || !strings.HasPrefix(c[0], `Digest realm="re\"alm", nonce="N"`) ||
		!strings.Contains(c[0], "stale=true") || c[1] != `Basic realm="re\"alm"` {
		t.Fatalf("%q", c)
	}
	if c := Challenge("r", "N", false, false); len(c) != 1 || strings.Contains(c[0], "stale") {
		t.Fatalf("%q", c)
	}
}

// IssueTo: one connection's nonce within a second is the same, another
// connection's differs; both check. A nonce of the earlier form (no
// connection key) still checks; a tampered key does not.
func TestNonceIssueTo(t *testing.T) {
	n := NewNonces([]byte("0123456789abcdef0123456789abcdef"), 0)
	a, a2, b := n.IssueTo(t0, 1), n.IssueTo(t0.Add(999*time.Millisecond), 1), n.IssueTo(t0, 2)
	if a != a2 || a == b {
		t.Fatalf("conn 1: %s, %s; conn 2: %s", a, a2, b)
	}
	for _, nonce := range []string{a, b, n.Issue(t0), n.IssueFresh(t0)} {
		if err := n.Check(nonce, t0.Add(time.Second)); err != nil {
			t.Errorf("%s: %v", nonce, err)
		}
	}
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], uint64(t0.UnixMilli()))
	legacy := hex.EncodeToString(ts[:]) + hex.EncodeToString(n.mac(ts[:]))
	if err := n.Check(legacy, t0.Add(time.Second)); err != nil {
		t.Errorf("nonce of the earlier form: %v", err)
	}
	tampered := a[:16] + "00000000000000ff" + a[32:]
	if err := n.Check(tampered, t0.Add(time.Second)); !errors.Is(err, ErrNonceInvalid) {
		t.Errorf("nonce with another connection key: %v", err)
	}
}
