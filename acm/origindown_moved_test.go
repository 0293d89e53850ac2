package acm

import (
	"net/http"
	"slices"
	"testing"
)

// A session moved while the origin is down (its viewer never reached its
// node, another node has the title) is ended on its node with the reason
// reasonMovedOriginDown, which its session record carries (docs: the 503
// row of docs/delivery.md).
func TestOriginDownMoveTellsTheNode(t *testing.T) {
	e, nodes := originDownPair(t)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func() int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+e.m.HTTPAddr()+"/vod/t2.ts", nil)
		req.SetBasicAuth("demo", "demo")
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := get(); code != http.StatusFound {
		t.Fatalf("first request: %d", code)
	}
	first := e.sessions()[0]
	other := map[string]string{"n1": "n2", "n2": "n1"}[first.NodeId]
	e.setOriginDown(t)
	e.holdWhole(t, nodes[other], "t2")
	if code := get(); code != http.StatusFound {
		t.Fatalf("same viewer, origin down, t2 on %s: %d", other, code)
	}
	cmd := nodes[first.NodeId].endCommand(t)
	if !slices.Equal(cmd.GetSessionIds(), []string{first.SessionId}) || cmd.GetReason() != reasonMovedOriginDown {
		t.Fatalf("node %s told %+v, want %s ended (%q)", first.NodeId, cmd, first.SessionId, reasonMovedOriginDown)
	}
}
