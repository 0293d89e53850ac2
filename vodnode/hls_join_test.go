package vodnode

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"vodcluster/vodnode/store"
)

// TestHLSJoinsAFillFromTheStart: ffmpeg playing the HLS playlist of a
// title whose fill is four segments in plays the title from its first
// frame to its last. A playlist without EXT-X-ENDLIST is live to
// players, which start three segments before its end: given every
// segment filled so far, ffmpeg (and VLC) started at the fill's edge and
// the viewer missed the title's beginning.
func TestHLSJoinsAFillFromTheStart(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	o := newFakeOrigin(t)
	o.rate = 100 << 10 // bytes/s: the 1.5 MB title fills in about 15 s
	n := startNode(t, startOrigin(t, o), withHTTP)
	const title = "sample-002"
	want := bytesFrames(t, "0:v", o.titles[title])
	if err := n.store.Prefetch(n.ctx, title); err != nil {
		t.Fatal(err)
	}
	status := func() (st store.Status) {
		for _, s := range n.store.Titles() {
			if s.ID == title {
				st = s
			}
		}
		return st
	}
	// four of the five segments (16 of 20 s), the last still filling
	waitFor(t, 30*time.Second, "the fill four segments in", func() bool {
		st := status()
		return st.Size > 0 && st.Stored*100 >= st.Size*82
	})
	url := httpURL(n, mint(t, "hls-join", title, "node-1", "", time.Minute), title+"/index.m3u8")
	res, b := get(t, url)
	if res.StatusCode != 200 || !strings.Contains(string(b), "#EXT-X-PLAYLIST-TYPE:EVENT") || strings.Contains(string(b), "#EXT-X-ENDLIST") {
		t.Fatalf("the title completed before the viewer came (%d):\n%s", res.StatusCode, b)
	}
	if got := decodedFrames(t, "0:v", "-i", url); got != want {
		t.Errorf("ffmpeg joining the fill over HLS: %d video frames, the title has %d", got, want)
	}
}

// TestHLSEventPlaylistCompletes: a viewer given an EVENT playlist while
// its title filled gets, once the fill is complete, every segment and
// EXT-X-ENDLIST in the same session's playlist (an append, RFC 8216
// §6.2.1; the type stays EVENT), and ffmpeg coming back to that session
// seeks to 15 s of the 20 s title. The playlist kept listing only three
// segments past the highest one asked for: the viewer could not seek
// beyond them for the rest of the session, the title long complete.
func TestHLSEventPlaylistCompletes(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	o := newFakeOrigin(t)
	o.rate = 200 << 10 // bytes/s: the 1.5 MB title fills in about 8 s
	n := startNode(t, startOrigin(t, o), withHTTP)
	const title = "sample-002"
	if err := n.store.Prefetch(n.ctx, title); err != nil {
		t.Fatal(err)
	}
	url := httpURL(n, mint(t, "hls-complete", title, "node-1", "", 5*time.Minute), title+"/index.m3u8")
	res, b := get(t, url)
	first := string(b)
	if res.StatusCode != 200 || !strings.Contains(first, "#EXT-X-PLAYLIST-TYPE:EVENT") || strings.Contains(first, "#EXT-X-ENDLIST") {
		t.Fatalf("the title completed before the viewer came (%d):\n%s", res.StatusCode, first)
	}
	shown := strings.Count(first, "#EXTINF")
	// Complete as the session's playlist sees it: all the bytes stored
	// (Titles' Stored) is not yet complete, the copy is then synced,
	// its index written and the file renamed.
	tt, err := n.store.Acquire(n.ctx, title)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the fill to complete", func() bool { return tt.View().Complete })
	n.store.Release(tt)
	res, b = get(t, url)
	pl := string(b)
	if res.StatusCode != 200 || !strings.HasPrefix(pl, strings.Split(first, "#EXTINF")[0]) ||
		!strings.Contains(pl, "#EXT-X-ENDLIST") || strings.Count(pl, "#EXTINF") != 5 || !strings.Contains(pl, "seg-4.ts") {
		t.Fatalf("the session's playlist once the title is complete (first listed %d segments) (%d):\n%s", shown, res.StatusCode, pl)
	}
	if !strings.HasPrefix(pl, strings.TrimSuffix(first, "\n")) {
		t.Errorf("the completed playlist does not append to the first:\nfirst:\n%s\nnow:\n%s", first, pl)
	}
	whole := bytesFrames(t, "0:v", o.titles[title]) // from the file: a paced HLS read of it takes 20 s
	tail := decodedFrames(t, "0:v", "-ss", "15", "-i", url)
	if tail == 0 || tail*3 > whole {
		t.Errorf("ffmpeg -ss 15 on the session's playlist: %d video frames of the title's %d (want the last quarter or so)", tail, whole)
	}
}
