package acm

import (
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/proto/token"
)

// TestReadmitTicketAtTheFrontDoor: a DESCRIBE at the front door with a
// re-admission ticket (a node sent back a viewer whose session ended
// there) and no credentials is admitted as the ticket's subscriber and
// redirected to a node; the same ticket again, one for another title or
// another client, or an admission token in its place, gets 401 with the
// usual challenge.
func TestReadmitTicketAtTheFrontDoor(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7101"})
	ticket := func(sid, title, client string) string {
		t.Helper()
		c := &token.Claims{Session: sid, Title: title, Node: "n1", Client: client, User: "demo", Proto: "rtsp"}
		tk, err := e.m.signer.Readmit(c, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	good := ticket("ended-1", "t1", "127.0.0.1")
	res := e.dialRTSP().mustDo(base.Describe, "/vod/t1?readmit="+good, nil)
	if loc := strings.Join(res.Header["Location"], ""); res.StatusCode != base.StatusFound || !strings.HasPrefix(loc, "rtsp://127.0.0.1:7101/s/") {
		t.Fatalf("a re-admission ticket: %d %s, Location %q; want a redirect to n1", res.StatusCode, res.StatusMessage, loc)
	}
	admission, err := e.m.signer.Sign(token.Claims{Session: "s9", Title: "t1", Node: "n1", User: "demo", Proto: "rtsp"}, time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]string{
		"the same ticket again":       "/vod/t1?readmit=" + good,
		"a ticket for another title":  "/vod/t2?readmit=" + ticket("ended-2", "t1", "127.0.0.1"),
		"a ticket for another client": "/vod/t1?readmit=" + ticket("ended-3", "t1", "192.0.2.9"),
		"an admission token":          "/vod/t1?readmit=" + admission,
	} {
		res := e.dialRTSP().mustDo(base.Describe, q, nil)
		if res.StatusCode != base.StatusUnauthorized || len(res.Header["WWW-Authenticate"]) == 0 {
			t.Errorf("%s: %d %s, want 401 with a challenge", name, res.StatusCode, res.StatusMessage)
		}
	}
}
