package vodnode

import (
	"context"
	"net/http"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// An HTTP viewer who left before its title's fill failed, having been
// sent no byte of it (a download given up while its status line was
// held, an HLS player gone after asking for the playlist), has its
// session ended when the fill fails, as one still asking does: ENDED
// "fill failed: origin" at its start, no session left. It stayed playing
// until pause_timeout (5 min), holding its reservation and a session of
// its subscriber, and its record billed the wait.
func TestHTTPViewerGoneBeforeTheFillFailedEnds(t *testing.T) {
	o := newFakeOrigin(t)
	addr, auth := startAuthOrigin(t, o)
	m, maddr := startFastManager(t)
	n := startNode(t, addr, withHTTP, func(n *Node) { n.ManagerAddr = maddr; n.FillRetryFor = 300 * time.Millisecond })
	for _, tc := range []struct{ sid, title, path string }{
		{"gone-download", "sample-004", "sample-004.ts"},
		{"gone-hls", "sample-005", "sample-005/index.m3u8"},
	} {
		cacheCatalog(t, n, tc.title)
		auth.setSecret([]byte("another-cluster-secret-0123456789"))
		gate := make(chan struct{})
		auth.gate.Store(&gate) // the origin's refusal waits for the viewer to leave
		ctx, leave := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, httpURL(n, mint(t, tc.sid, tc.title, "node-1", "", time.Minute), tc.path), nil)
		done := make(chan error, 1)
		go func() {
			res, err := http.DefaultClient.Do(req)
			if err == nil {
				res.Body.Close()
			}
			done <- err
		}()
		waitFor(t, 5*time.Second, tc.sid+" STARTED", func() bool { return m.event(tc.sid, pb.SessionEvent_KIND_STARTED) != nil })
		leave()
		if err := <-done; err == nil {
			t.Fatalf("%s: answered before the fill brought a byte or failed", tc.sid)
		}
		waitFor(t, 5*time.Second, tc.sid+": its request ended at the node", func() bool {
			n.mu.Lock()
			defer n.mu.Unlock()
			hs := n.httpSessions[tc.sid]
			return hs != nil && hs.active.Load() == 0
		})
		if e := m.event(tc.sid, pb.SessionEvent_KIND_ENDED); e != nil {
			t.Fatalf("%s: ENDED %v before the fill failed", tc.sid, e)
		}
		close(gate)
		auth.gate.Store(nil)
		waitFor(t, 10*time.Second, tc.sid+" ENDED", func() bool { return m.event(tc.sid, pb.SessionEvent_KIND_ENDED) != nil })
		auth.setSecret(testSecret)
		st, e := m.event(tc.sid, pb.SessionEvent_KIND_STARTED), m.event(tc.sid, pb.SessionEvent_KIND_ENDED)
		if e.GetReason() != "fill failed: origin" || e.GetBytesSent() != 0 || e.GetAtUnixMs() != st.GetAtUnixMs() {
			t.Errorf("%s: ENDED %v after STARTED %v, want fill failed: origin, no byte, at the start", tc.sid, e, st)
		}
		if s := n.Stats().Sessions; s != 0 {
			t.Errorf("%s: %d sessions live after the fill failed", tc.sid, s)
		}
	}
}
