package acm

import (
	"context"
	"strings"
	"testing"
	"time"

	"vodcluster/acm/auth"
)

// TestNoncesOfOneSecondAreTheSame: a client retrying within a second gets
// the same nonce, so its retried Digest header is the same (a repeat).
func TestNoncesOfOneSecondAreTheSame(t *testing.T) {
	n := auth.NewNonces([]byte("secret-0123456789abcdef"), 0)
	t0 := time.Unix(1_000_000, 0)
	if a, b := n.Issue(t0), n.Issue(t0.Add(999*time.Millisecond)); a != b {
		t.Fatalf("nonces of one second differ: %s %s", a, b)
	}
	if a, b := n.Issue(t0), n.Issue(t0.Add(time.Second)); a == b {
		t.Fatal("nonces of two seconds are the same")
	}
	if err := n.Check(n.Issue(t0.Add(999*time.Millisecond)), t0.Add(999*time.Millisecond)); err != nil {
		t.Fatalf("a nonce of this second: %v", err)
	}
}

// TestLoginGuardRepeatedCredentials: the credentials that last failed for
// a pair, sent again within the refill, are a repeat (refused uncharged
// by authenticate); other credentials, another pair, or the same ones a
// refill later are not.
func TestLoginGuardRepeatedCredentials(t *testing.T) {
	g := newLoginGuard(2, 10*time.Second)
	t0 := time.Unix(1_000_000, 0)
	wrong, other := credKeyOf(`Basic ZGVtbzp3cm9uZw==`), credKeyOf(`Basic ZGVtbzpvdGhlcg==`)
	if g.repeated("10.0.0.1", "alice", wrong, t0) {
		t.Fatal("a first attempt taken for a repeat")
	}
	ok, _, done := g.take(context.Background(), "10.0.0.1", "alice", wrong, true, t0)
	if !ok {
		t.Fatal("first attempt refused")
	}
	done(checkFailed, t0)
	t1 := t0.Add(time.Second)
	if !g.repeated("10.0.0.1", "alice", wrong, t1) {
		t.Fatal("the failed credentials sent again not taken for a repeat")
	}
	if g.repeated("10.0.0.1", "alice", other, t1) || g.repeated("10.0.0.1", "bob", wrong, t1) || g.repeated("10.0.0.2", "alice", wrong, t1) {
		t.Fatal("other credentials, user or address taken for a repeat")
	}
	if g.repeated("10.0.0.1", "alice", wrong, t0.Add(10*time.Second)) {
		t.Fatal("still a repeat a refill later (the password may have been set to it meanwhile)")
	}
	// A correct check does not forget the failed ones; a new failure
	// replaces them.
	ok, _, done = g.take(context.Background(), "10.0.0.1", "alice", other, true, t1)
	if !ok {
		t.Fatal("second attempt refused with one failure left")
	}
	done(checkFailed, t1)
	if g.repeated("10.0.0.1", "alice", wrong, t1) || !g.repeated("10.0.0.1", "alice", other, t1) {
		t.Fatal("the last failed credentials are not the ones remembered")
	}
	var none *loginGuard
	if none.repeated("10.0.0.1", "alice", wrong, t1) {
		t.Fatal("no guard: a repeat")
	}
}

// TestGStreamerWrongPasswordChargedOnce: GStreamer's rtspsrc given a
// wrong password sends it eight times before it gives up. Each attempt
// used to be charged as a failed login, so that one mistyped password
// (two tries) spent the pair's budget of ten and the right password was
// then refused (503 too many failed logins) for minutes. The same
// credentials sent again are refused without a charge: after two wrong
// tries the right password plays.
func TestGStreamerWrongPasswordChargedOnce(t *testing.T) {
	gst := needTool(t, "gst-launch-1.0")
	e := newManager(t, "", nil)
	cs := startCapture(t)
	e.startNode("n1", nodeOpts{rtsp: cs.addr()})
	play := func(pw string) string {
		return runClient(t, gst, "rtspsrc", "location=rtsp://"+e.m.RTSPAddr()+"/vod/t1", "user-id=demo", "user-pw="+pw,
			"protocols=tcp", "!", "fakesink")
	}
	for range 2 {
		if out := play("wrong"); !strings.Contains(out, "Unauthorized") {
			t.Fatalf("GStreamer with a wrong password:\n%s", out)
		}
	}
	if _, ok := cs.redirected(); ok || len(e.sessions()) != 0 {
		t.Fatal("a wrong password was admitted")
	}
	out := play("demo")
	if _, ok := cs.redirected(); !ok {
		t.Fatalf("the right password after two wrong tries was not redirected:\n%s", out)
	}
	e.checkRedirect(cs, "t1")
}
