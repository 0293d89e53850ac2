package vodnode

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4"
	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/bluenviron/gortsplib/v4/pkg/headers"
	"github.com/pion/rtcp"
	"github.com/pion/rtp"
)

// TestClientOutlivesAHeldPlay: gortsplib's client (vodctl play's), over
// UDP and TCP, playing an MP2T session, or both tracks of an
// elementary-stream one, with a Range end (npt=2-4) hears a sender report
// on each track every interval (5 s) while the play holds at the end, so
// that it stays for longer than its read timeout (7 s here; 10 s by
// default) without RTP, and a PAUSE and PLAY without Range go on.
// (Nothing was sent while held: the client gave up with "UDP timeout" or
// "TCP timeout" after its read timeout; GStreamer's rtspsrc ends a stream
// whose source it hears nothing from for five report intervals, 25 s.)
func TestClientOutlivesAHeldPlay(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	n := startNode(t, startOrigin(t, newFakeOrigin(t)))
	waitPrefetch(t, n, "sample-001")
	for _, mode := range []string{"mp2t", "es"} {
		for _, tr := range []gortsplib.Transport{gortsplib.TransportUDP, gortsplib.TransportTCP} {
			t.Run(mode+"-"+tr.String(), func(t *testing.T) {
				t.Parallel()
				heldPlay(t, n, mode, tr)
			})
		}
	}
}

// heldPlay is TestClientOutlivesAHeldPlay in mode ("mp2t" or "es") over
// transport tr.
func heldPlay(t *testing.T, n *Node, mode string, tr gortsplib.Transport) {
	tok := mint(t, "held-"+mode+"-"+tr.String(), "sample-001", "node-1", "", time.Minute)
	url := nodeURL(n, tok, "sample-001")
	if mode == "es" {
		url = esURL(n, tok, "sample-001")
	}
	u, err := base.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	const readTimeout = 7 * time.Second
	c := gortsplib.Client{Scheme: u.Scheme, Host: u.Host, Transport: &tr, ReadTimeout: readTimeout}
	if err := c.Start2(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	desc, _, err := c.Describe(u)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetupAll(desc.BaseURL, desc.Medias); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lastRTP time.Time
	var rtps, srs [2]atomic.Int64
	for i, m := range desc.Medias {
		c.OnPacketRTP(m, m.Formats[0], func(*rtp.Packet) {
			rtps[i].Add(1)
			mu.Lock()
			lastRTP = time.Now()
			mu.Unlock()
		})
		c.OnPacketRTCP(m, func(p rtcp.Packet) {
			if _, ok := p.(*rtcp.SenderReport); ok {
				srs[i].Add(1)
			}
		})
	}
	ended := make(chan error, 1)
	go func() { ended <- c.Wait() }()
	end := 4 * time.Second
	if _, err := c.Play(&headers.Range{Value: &headers.RangeNPT{Start: 2 * time.Second, End: &end}}); err != nil {
		t.Fatal(err)
	}
	// The 2 s to play, then no RTP for a second: held.
	quiet := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return !lastRTP.IsZero() && time.Since(lastRTP) > time.Second
	}
	waitFor(t, 15*time.Second, "the play to hold at the Range's end", quiet)
	heldAt := [2]int64{srs[0].Load(), srs[1].Load()}
	// Held for longer than the client's read timeout: it stays.
	select {
	case err := <-ended:
		t.Fatalf("the client ended while the play was held: %v", err)
	case <-time.After(readTimeout + 2*time.Second):
	}
	if !quiet() {
		t.Fatal("RTP while the play was held at the Range's end")
	}
	for i := range desc.Medias {
		if got := srs[i].Load() - heldAt[i]; got < 1 {
			t.Errorf("track %d: no sender report in %v held", i, readTimeout+2*time.Second)
		}
	}
	// The PAUSE goes just after a sender report on each track: gortsplib's
	// client ends with "received unexpected interleaved frame" when one
	// comes over TCP while it waits for the PAUSE's answer (seen once in
	// CI), and the next is 5 s away.
	reported := [2]int64{srs[0].Load(), srs[1].Load()}
	waitFor(t, 15*time.Second, "a sender report on each track", func() bool {
		for i := range desc.Medias {
			if srs[i].Load() <= reported[i] {
				return false
			}
		}
		return true
	})
	before := [2]int64{rtps[0].Load(), rtps[1].Load()}
	if _, err := c.Pause(); err != nil { // the client plays again only from its paused state
		t.Fatal(err)
	}
	if _, err := c.Play(nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "RTP on each track after the PLAY on", func() bool {
		for i := range desc.Medias {
			if rtps[i].Load() <= before[i] {
				return false
			}
		}
		return true
	})
	select {
	case err := <-ended:
		t.Fatalf("the client ended: %v", err)
	default:
	}
}
