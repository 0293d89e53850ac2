package vodnode

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4"
	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/bluenviron/gortsplib/v4/pkg/description"
	"github.com/bluenviron/gortsplib/v4/pkg/format"
	"github.com/pion/rtp"
)

// TestSessionsLeaveNoGoroutines: sessions played by gortsplib's client in
// both modes over UDP and TCP, paused once their first packet came (an
// elementary-stream play held, its report loop running; an MP2T stream
// paused, its idle report due), then torn down, leave the node with the
// goroutines it had before them and no session.
func TestSessionsLeaveNoGoroutines(t *testing.T) {
	n := startNode(t, startOrigin(t, newFakeOrigin(t)))
	waitPrefetch(t, n, "sample-001")
	before := runtime.NumGoroutine()
	for k := range 16 {
		mode := []string{"mp2t", "es"}[k%2]
		tr := []gortsplib.Transport{gortsplib.TransportUDP, gortsplib.TransportTCP}[k/2%2]
		tok := mint(t, "leak-"+strconv.Itoa(k), "sample-001", "node-1", "", time.Minute)
		url := nodeURL(n, tok, "sample-001")
		if mode == "es" {
			url = esURL(n, tok, "sample-001")
		}
		u, err := base.ParseURL(url)
		if err != nil {
			t.Fatal(err)
		}
		c := gortsplib.Client{Scheme: u.Scheme, Host: u.Host, Transport: &tr}
		if err := c.Start2(); err != nil {
			t.Fatal(err)
		}
		desc, _, err := c.Describe(u)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.SetupAll(desc.BaseURL, desc.Medias); err != nil {
			t.Fatal(err)
		}
		got := make(chan struct{}, 1)
		c.OnPacketRTPAny(func(*description.Media, format.Format, *rtp.Packet) {
			select {
			case got <- struct{}{}:
			default:
			}
		})
		if _, err := c.Play(nil); err != nil {
			t.Fatal(err)
		}
		select {
		case <-got:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s over %v: no packet in 10 s", mode, tr)
		}
		if _, err := c.Pause(); err != nil {
			t.Fatal(err)
		}
		c.Close() // TEARDOWN
	}
	waitFor(t, 15*time.Second, "the sessions' goroutines to end", func() bool {
		return runtime.NumGoroutine() <= before
	})
	n.mu.Lock()
	left := len(n.sessions)
	n.mu.Unlock()
	if left > 0 {
		t.Errorf("%d sessions left after TEARDOWN", left)
	}
}
