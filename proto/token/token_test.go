package token

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func TestSignVerify(t *testing.T) {
	s, err := NewSigner([]byte("0123456789abcdef0123"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	tok, err := s.Sign(Claims{Session: "s1", Title: "sample-001", Node: "n1", Client: "127.0.0.1"}, now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Verify(tok, now.Add(30*time.Second), "sample-001", "n1", "127.0.0.1")
	if err != nil || c.Session != "s1" {
		t.Fatalf("verify: %v %+v", err, c)
	}
	cases := []struct {
		name                string
		tok                 string
		at                  time.Time
		title, node, client string
		want                error
	}{
		{"expired", tok, now.Add(time.Minute + ClockSkew), "sample-001", "n1", "", ErrExpired},
		{"expired, within the clock skew", tok, now.Add(time.Minute + ClockSkew - time.Millisecond), "sample-001", "n1", "", nil},
		{"other title", tok, now, "sample-002", "n1", "", ErrScope},
		{"other node", tok, now, "sample-001", "n2", "", ErrScope},
		{"other client", tok, now, "sample-001", "n1", "10.0.0.9", ErrScope},
		{"tampered", tok[:len(tok)-3] + "abc", now, "sample-001", "n1", "", ErrInvalid},
		{"garbage", "not-a-token", now, "sample-001", "n1", "", ErrInvalid},
		{"empty", "", now, "sample-001", "n1", "", ErrInvalid},
	}
	for _, tc := range cases {
		if _, err := s.Verify(tc.tok, tc.at, tc.title, tc.node, tc.client); !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
	}
	other, _ := NewSigner([]byte("another-key-of-16-bytes"))
	if _, err := other.Verify(tok, now, "sample-001", "", ""); !errors.Is(err, ErrInvalid) {
		t.Errorf("other key: %v", err)
	}
	// alg=none must be refused
	parts := strings.Split(tok, ".")
	none := "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + parts[1] + "."
	if _, err := s.Verify(none, now, "sample-001", "", ""); !errors.Is(err, ErrInvalid) {
		t.Errorf("alg none: %v", err)
	}
	if _, err := NewSigner([]byte("short")); err == nil {
		t.Error("short key accepted")
	}
}

func TestNodeCredentialAndBearer(t *testing.T) {
	a := NodeCredential([]byte("0123456789abcdef"))
	if a == NodeCredential([]byte("0123456789abcdeX")) || len(a) != 64 {
		t.Fatalf("credential %q not bound to the secret", a)
	}
	md, _ := Bearer(a).GetRequestMetadata(context.Background())
	ctx := metadata.NewIncomingContext(context.Background(), metadata.New(md))
	if err := CheckBearer(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := CheckBearer(ctx, a+"x"); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("wrong credential: %v", err)
	}
	if err := CheckBearer(context.Background(), a); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("no metadata: %v", err)
	}
}

// TestCheckProto: a token is good over the protocol it was issued for, an
// RTSP token over RTSPS too; one that names none over any.
func TestCheckProto(t *testing.T) {
	for _, c := range []struct {
		token, over string
		ok          bool
	}{
		{"", "rtsp", true}, {"", "http", true},
		{"rtsp", "rtsp", true}, {"rtsp", "rtsps", true}, {"rtsp", "http", false},
		{"rtsps", "rtsps", true}, {"rtsps", "rtsp", false}, // its media would travel in clear
		{"http", "http", true}, {"http", "rtsp", false}, {"http", "rtsps", false},
	} {
		err := (&Claims{Proto: c.token}).CheckProto(c.over)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrScope)) {
			t.Errorf("token for %q over %s: %v, want ok %v", c.token, c.over, err, c.ok)
		}
	}
}

// TestValidDoor: the front doors a token may name are RTSP or RTSPS
// scheme and authority only; anything that could split a Location header
// or add a path, user or query is refused.
func TestValidDoor(t *testing.T) {
	for door, want := range map[string]bool{
		"rtsp://127.0.0.1:8554":              true,
		"rtsps://vod.example.net":            true,
		"rtsp://[::1]:554":                   true,
		"rtsp://[fe80::1%25eth0]:554":        true,
		"http://127.0.0.1:8080":              false,
		"rtsp://":                            false,
		"rtsp://h/vod/x":                     false,
		"rtsp://user:pw@h":                   false,
		"rtsp://h?x=1":                       false,
		"rtsp://h\r\nX-Injected: 1":          false,
		"rtsp://h p":                         false,
		"rtsp://" + strings.Repeat("a", 300): false,
		"rtsp://:554":                        false,
		"rtsp://[fe80::1%eth0]:554":          false, // an unescaped zone: no client parses it
		"rtsp://a%2":                         false,
		"rtsp://a%25b":                       false, // a zone outside brackets
		"rtsp://h%20p":                       false,
		"rtsp://[::1]:5%25":                  false, // a zone after the literal
		"rtsp://[::1]%25x":                   false,
	} {
		if got := ValidDoor(door); got != want {
			t.Errorf("ValidDoor(%q) = %v, want %v", door, got, want)
		}
	}
}

// TestReadmit: a re-admission ticket verifies for its title and client
// as the subscriber of the token it was made from, within ReadmitTTL; it
// is never taken as an admission token, nor an admission token as a
// ticket; none is made from a token naming no subscriber or of a session
// admitted with a ticket (tickets do not chain).
func TestReadmit(t *testing.T) {
	s, err := NewSigner([]byte("0123456789abcdef0123"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	adm := Claims{Session: "s1", Title: "t1", Node: "n1", Client: "192.0.2.7", User: "alice", Proto: "rtsp", Door: "rtsp://vod:554"}
	tok, err := s.Sign(adm, now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ticket, err := s.Readmit(&adm, now)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := s.VerifyReadmit(ticket, now, "t1", "192.0.2.7"); err != nil || c.User != "alice" || c.Session != "s1" {
		t.Fatalf("the ticket: %+v, %v", c, err)
	}
	for name, tc := range map[string]struct {
		tok, title, client string
		at                 time.Time
		want               error
	}{
		"another title":      {ticket, "t2", "192.0.2.7", now, ErrScope},
		"another client":     {ticket, "t1", "192.0.2.8", now, ErrScope},
		"expired":            {ticket, "t1", "192.0.2.7", now.Add(ReadmitTTL + ClockSkew + time.Second), ErrExpired},
		"an admission token": {tok, "t1", "192.0.2.7", now, ErrInvalid},
		"not a token":        {"x.y.z", "t1", "192.0.2.7", now, ErrInvalid},
	} {
		if _, err := s.VerifyReadmit(tc.tok, tc.at, tc.title, tc.client); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if _, err := s.Verify(ticket, now, "t1", "n1", "192.0.2.7"); !errors.Is(err, ErrInvalid) {
		t.Errorf("the ticket as an admission token: %v, want ErrInvalid", err)
	}
	if _, err := s.Parse(ticket); !errors.Is(err, ErrInvalid) {
		t.Errorf("the ticket parsed as an admission token: %v, want ErrInvalid", err)
	}
	noUser, again := adm, adm
	noUser.User, again.Readmitted = "", true
	for name, c := range map[string]*Claims{"no subscriber": &noUser, "a session admitted with a ticket": &again} {
		if _, err := s.Readmit(c, now); !errors.Is(err, ErrNoTicket) {
			t.Errorf("a ticket from %s: %v, want ErrNoTicket", name, err)
		}
	}
}
