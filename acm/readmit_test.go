package acm

import (
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/proto/token"
	pb "vodcluster/proto/vodcluster/v1"
)

// TestReadmitTicketAtTheFrontDoor: a DESCRIBE at the front door with a
// re-admission ticket (a node sent back a viewer whose session ended
// there) and no credentials is admitted as the ticket's subscriber and
// redirected to a node, its token marked so; the same ticket again,
// another ticket of that session, one for another title, another client
// or RTSPS, or an admission token in its place, gets 401 with the usual
// challenge.
func TestReadmitTicketAtTheFrontDoor(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7101"})
	ticket := func(sid, title, client string) string {
		t.Helper()
		proto := "rtsp"
		if sid == "ended-tls" {
			proto = "rtsps" // an RTSPS viewer's: not good in clear
		}
		c := &token.Claims{Session: sid, Title: title, Node: "n1", Client: client, User: "demo", Proto: proto}
		tk, err := e.m.signer.Readmit(c, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	good := ticket("ended-1", "t1", "127.0.0.1")
	res := e.dialRTSP().mustDo(base.Describe, "/vod/t1?readmit="+good, nil)
	if res.StatusCode != base.StatusFound {
		t.Fatalf("a re-admission ticket: %d %s; want a redirect to n1", res.StatusCode, res.StatusMessage)
	}
	// Admitted as the ticket's subscriber; its token makes no ticket
	// (tickets do not chain past the credentials first given).
	if c := e.tokenOf(strings.Join(res.Header["Location"], ""), "rtsp", "127.0.0.1:7101", "t1", ""); c.User != "demo" || !c.Readmitted {
		t.Fatalf("the re-admitted session's token: user %q, readmitted %v", c.User, c.Readmitted)
	}
	admission, err := e.m.signer.Sign(token.Claims{Session: "s9", Title: "t1", Node: "n1", User: "demo", Proto: "rtsp"}, time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]string{
		"the same ticket again":             "/vod/t1?readmit=" + good,
		"a ticket for another title":        "/vod/t2?readmit=" + ticket("ended-2", "t1", "127.0.0.1"),
		"a ticket for another client":       "/vod/t1?readmit=" + ticket("ended-3", "t1", "192.0.2.9"),
		"an admission token":                "/vod/t1?readmit=" + admission,
		"an RTSPS viewer's ticket in clear": "/vod/t1?readmit=" + ticket("ended-tls", "t1", "127.0.0.1"),
		// a second ticket of the session re-admitted, made later
		"another ticket of the session": "/vod/t1?readmit=" + ticket("ended-1", "t1", "127.0.0.1"),
	} {
		res := e.dialRTSP().mustDo(base.Describe, q, nil)
		if res.StatusCode != base.StatusUnauthorized || len(res.Header["WWW-Authenticate"]) == 0 {
			t.Errorf("%s: %d %s, want 401 with a challenge", name, res.StatusCode, res.StatusMessage)
		}
	}
}

// TestReadmittedRemembersPastTheTicket: an ended session re-admitted once
// is remembered readmitMemory past its ticket's expiry, so that a later
// ticket of it (a node asked again, or restarted) is refused too; it was
// remembered only until the first ticket expired.
func TestReadmittedRemembersPastTheTicket(t *testing.T) {
	var r readmitted
	t0 := time.Now()
	expiry := t0.Add(token.ReadmitTTL)
	if !r.take("s1", expiry, t0) {
		t.Fatal("the first ticket refused")
	}
	for _, at := range []time.Duration{time.Second, token.ReadmitTTL + time.Minute, readmitMemory} {
		if r.take("s1", t0.Add(at).Add(token.ReadmitTTL), t0.Add(at)) {
			t.Errorf("a ticket of the session re-admitted, %v later: taken", at)
		}
	}
	if !r.take("s1", t0.Add(3*readmitMemory), t0.Add(2*readmitMemory)) {
		t.Error("the session still remembered twice readmitMemory later")
	}
	if !r.take("s2", expiry, t0) {
		t.Error("another session's ticket refused")
	}
}

// TestReadmitRefusedKeepsTheTicket: a ticket whose admission is refused
// (the subscriber suspended: 403) is good again once that is lifted,
// within its 30 s: it was spent by the refusal, and the node makes no
// second, so a player without credentials could not come back.
func TestReadmitRefusedKeepsTheTicket(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7102"})
	tk, err := e.m.signer.Readmit(&token.Claims{Session: "ended-s", Title: "t1", Node: "n1", Client: "127.0.0.1", User: "demo", Proto: "rtsp"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := e.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "demo", DurationS: 60}); err != nil {
		t.Fatal(err)
	}
	if res := e.dialRTSP().mustDo(base.Describe, "/vod/t1?readmit="+tk, nil); res.StatusCode != base.StatusForbidden {
		t.Fatalf("a ticket of a suspended subscriber: %d %s, want 403", res.StatusCode, res.StatusMessage)
	}
	if _, err := e.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "demo", DurationS: 0}); err != nil {
		t.Fatal(err)
	}
	if res := e.dialRTSP().mustDo(base.Describe, "/vod/t1?readmit="+tk, nil); res.StatusCode != base.StatusFound {
		t.Fatalf("the ticket once the suspension is lifted: %d %s, want 302", res.StatusCode, res.StatusMessage)
	}
}
