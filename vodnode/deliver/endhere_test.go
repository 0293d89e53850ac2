package deliver

import (
	"bytes"
	"testing"
	"time"

	"github.com/pion/rtcp"

	"vodcluster/cdp/tsindex"
)

// TestEndHereSendsNothingAfterBye: an MP2T stream over TCP held where its
// title's fill stands (sending its sender report every interval, as a
// stream held sends them) and then ended at once past the end of the
// title (EndHere: libavformat seeking past the end of a title still
// filling) sends its BYE and nothing after it: no more sender reports
// (RFC 3550 §6.6: the BYE is the source's last packet). Its held reports
// went on every interval after the BYE until the session ended, the idle
// report's timer still running.
func TestEndHereSendsNothingAfterBye(t *testing.T) {
	const interval = 200 * time.Millisecond
	e := startEngineSR(t, interval)
	data := loadClip(t)
	full, err := tsindex.BuildFrom(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	src := newFillingSource(data)
	src.reveal(len(data) / 5)
	srv, cli := tcpPair(t)
	st, err := e.NewStream(StreamConfig{Source: src, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0), SSRC: 7, Bitrate: full.Bitrate()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Play(0); err != nil {
		t.Fatal(err)
	}
	// Played up to where the fill stands, then held: its reports.
	for end := time.Now().Add(20 * time.Second); ; {
		if time.Now().After(end) {
			t.Fatal("no sender report while held")
		}
		srs, pkts := readReports(t, cli, 3*interval)
		if len(pkts[0]) == 0 && len(srs[0]) > 0 && st.WaitingForFill() {
			break
		}
	}
	if _, err := st.Seek(full.Duration() + 100); err != nil {
		t.Fatal(err)
	}
	st.EndHere()
	buf := make([]byte, 65536)
	bye := false
	for end := time.Now().Add(8 * interval); ; {
		ch, b, ok := readFrame(t, cli, buf, end)
		if !ok {
			break
		}
		if ch%2 == 0 {
			t.Fatalf("an RTP packet after EndHere (bye sent: %v)", bye)
		}
		ps, err := rtcp.Unmarshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if bye {
			t.Fatalf("RTCP %T after the BYE", ps[0])
		}
		for _, p := range ps {
			if _, isBye := p.(*rtcp.Goodbye); isBye {
				bye = true
			}
		}
	}
	if !bye {
		t.Fatal("no BYE after EndHere")
	}
	st.mu.Lock()
	timer := st.idleTimer
	st.mu.Unlock()
	if timer != nil {
		t.Error("the idle report's timer still runs after EndHere")
	}
}
