package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4"
	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/bluenviron/gortsplib/v4/pkg/description"
	"github.com/bluenviron/gortsplib/v4/pkg/format"
	"github.com/pion/rtp"
)

// TestSessionRecordPausedSeconds: a viewer (gortsplib's client over UDP,
// through the front door) that plays, PAUSEs for about 2 s and plays on
// before its TEARDOWN leaves a session record whose paused_s is that
// pause, as the node measured it: at least the time from the PAUSE's
// answer to the next PLAY's request, at most the time from the PAUSE's
// request to the PLAY's answer, and less than played_s. A viewer that
// never paused has paused_s 0.
func TestSessionRecordPausedSeconds(t *testing.T) {
	records := filepath.Join(t.TempDir(), "sessions.jsonl")
	c := startTestCluster(t, 1, 100_000_000, func(o *clusterOptions) { o.SessionRecordsFile = records })

	var inner, outer time.Duration // the client's bounds of the pause
	play(t, c, "sample-002", func(cl *gortsplib.Client, rtpAfter func()) {
		before := time.Now()
		if _, err := cl.Pause(); err != nil {
			t.Fatal(err)
		}
		paused := time.Now()
		time.Sleep(2 * time.Second) // the pause measured, not a wait for an event
		resume := time.Now()
		if _, err := cl.Play(nil); err != nil {
			t.Fatal(err)
		}
		inner, outer = resume.Sub(paused), time.Since(before)
		rtpAfter()
	})
	play(t, c, "sample-003", nil)

	type record struct {
		Title   string
		PlayedS float64 `json:"played_s"`
		PausedS float64 `json:"paused_s"`
	}
	got := map[string]record{}
	eventually(t, 15*time.Second, "both plays' session records", func() bool {
		b, err := os.ReadFile(records)
		if err != nil {
			return false
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r record
			if json.Unmarshal([]byte(line), &r) == nil {
				got[r.Title] = r
			}
		}
		return len(got) == 2
	})
	p := got["sample-002"]
	// Written to the millisecond, truncated.
	if p.PausedS < inner.Seconds()-0.001 || p.PausedS > outer.Seconds() || p.PausedS >= p.PlayedS {
		t.Errorf("paused play's record %+v: want paused_s from %.3f to %.3f s (the client's PAUSE to PLAY), less than played_s", p, inner.Seconds(), outer.Seconds())
	}
	if q := got["sample-003"]; q.PausedS != 0 || q.PlayedS <= 0 {
		t.Errorf("unpaused play's record %+v: want paused_s 0, played_s above 0", q)
	}
}

// play plays title through c's front door with gortsplib's client over
// UDP until it has RTP, runs between (nil: nothing) with a function that
// waits for RTP after the call, and tears the session down.
func play(t *testing.T, c *cluster, title string, between func(cl *gortsplib.Client, rtpAfter func())) {
	t.Helper()
	u, err := base.ParseURL(redirect(t, c, title))
	if err != nil {
		t.Fatal(err)
	}
	tr := gortsplib.TransportUDP
	cl := gortsplib.Client{Scheme: u.Scheme, Host: u.Host, Transport: &tr}
	if err := cl.Start2(); err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	desc, _, err := cl.Describe(u)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.SetupAll(desc.BaseURL, desc.Medias); err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{}, 1)
	cl.OnPacketRTPAny(func(*description.Media, format.Format, *rtp.Packet) {
		select {
		case got <- struct{}{}:
		default:
		}
	})
	awaitRTP := func() {
		t.Helper()
		select {
		case <-got:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no RTP in 10 s", title)
		}
	}
	if _, err := cl.Play(nil); err != nil {
		t.Fatal(err)
	}
	awaitRTP()
	if between != nil {
		between(&cl, func() {
			for len(got) > 0 { // RTP sent before the call
				<-got
			}
			awaitRTP()
		})
	}
}
