package vodnode

import (
	"strings"
	"testing"
	"time"
)

// TestESReplacedTitleProbedAgain: a title the operator replaced at the
// origin by a version with another audio track, once the node's copy is
// evicted and filled again, is offered at /es with the new copy's tracks:
// DESCRIBE lists its two audio tracks (a=lang:fra for the second), the
// second sets up, and its audio is sent. (The tracks probed of the first
// copy were cached by title id until the node restarted: DESCRIBE went on
// offering the one audio track of the old file, and SETUP of trackID=3
// was refused with 404.)
func TestESReplacedTitleProbedAgain(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	o := newFakeOrigin(t)
	const title = "swap-001"
	o.titles[title] = o.titles["sample-001"]
	two := twoAudioTitle(t, o.titles["sample-001"])
	n := startNode(t, startOrigin(t, o))
	waitPrefetch(t, n, title)

	describe := func(sid string) string {
		t.Helper()
		c := dialRTSP(t, n)
		res := c.do("DESCRIBE", esURL(n, mint(t, sid, title, "node-1", "", time.Minute), title))
		if res.StatusCode != 200 {
			t.Fatalf("DESCRIBE: %s", statusLine(res))
		}
		return string(res.Body)
	}
	if sdp := describe("es-swap-old"); strings.Count(sdp, "m=audio") != 1 || strings.Contains(sdp, "trackID=3") {
		t.Fatalf("the first copy: want one audio track:\n%s", sdp)
	}

	o.replace(title, two)
	if err := n.store.Evict(title); err != nil {
		t.Fatal(err)
	}
	// The node's first fill after the eviction may ask for the version
	// its catalog still gives, which the origin refuses (the next fill
	// reads the catalog again): fill until the new version is on the node.
	waitFor(t, 20*time.Second, "the new version filled", func() bool {
		for _, st := range n.store.Titles() {
			if st.ID == title {
				return !st.Filling && st.Stored == st.Size && st.Version == titleVersion(two)
			}
		}
		n.store.Prefetch(n.ctx, title)
		return false
	})

	sdp := describe("es-swap-new")
	for _, want := range []string{"a=control:trackID=2", "a=lang:eng", "a=control:trackID=3", "a=lang:fra", "a=rtpmap:98 mpeg4-generic/44100"} {
		if !strings.Contains(sdp, want) {
			t.Errorf("the new copy: SDP lacks %q:\n%s", want, sdp)
		}
	}
	if t.Failed() {
		return
	}
	url := esURL(n, mint(t, "es-swap-play", title, "node-1", "", time.Minute), title)
	c := dialRTSP(t, n)
	if res := c.do("DESCRIBE", url); res.StatusCode != 200 {
		t.Fatalf("DESCRIBE: %s", statusLine(res))
	}
	res := c.do("SETUP", url+"/trackID=3", "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP trackID=3 of the new copy: %s", statusLine(res))
	}
	id := sessionID(res)
	if res := c.do("PLAY", url+"/", "Session", id); res.StatusCode != 200 {
		t.Fatalf("PLAY: %s", statusLine(res))
	}
	var got int
	for end := time.Now().Add(10 * time.Second); got < 10 && time.Now().Before(end); {
		for _, p := range c.readMediaRTP(250 * time.Millisecond) {
			if p.PayloadType == 98 {
				got++
			}
		}
	}
	if got < 10 {
		t.Errorf("%d packets of the second audio track (payload type 98) in 10 s, want 10", got)
	}
}
