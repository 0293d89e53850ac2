package deliver

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/pion/rtp"
)

// TestESStopHoldsAtItsTimeAfterALateSend: a play whose last unit before
// its Range's end goes out late (its write held up on a loaded machine,
// past the stop's time) holds its clock at the stop, where its reports
// and a PLAY on put it, not where that unit went out: it held at the
// late write's time, its reports and the PLAY's npt past the Range's end
// by the lateness (5.825 s for 5.5 with units near the end sent 60 ms
// late; 15.7 ms once under load in a -race run).
func TestESStopHoldsAtItsTimeAfterALateSend(t *testing.T) {
	const tick = lateTick
	run := func(stop int64, late func(u *esUnit) time.Duration) (held int64) {
		p, end := playWithLateSend(stop, func(u *esUnit) { time.Sleep(late(u)) })
		defer end()
		awaitPlay(t, p, func() bool { return p.held }, "the play did not hold", nil)
		m, _ := p.mediaNow(time.Now())
		return m
	}
	// Held at 5 ticks (200 ms): the unit due at 4 ticks goes out 100 ms
	// late, 60 ms past the stop's time.
	if m := run(5*tick, func(u *esUnit) time.Duration {
		if u.due == 4*tick {
			return 100 * time.Millisecond
		}
		return 0
	}); m != 5*tick {
		t.Errorf("held at %d ticks, want the stop's %d (%.0f ms past it)", m, 5*tick, float64(m-5*tick)/90)
	}
}

// TestESClockNotPastTheStopDuringALateSend: while the last unit before
// a play's Range's end goes out late (past the stop's time), the play's
// clock, which its sender reports map (reportNow), stands at the stop
// rather than run on past it: the reports sent during the lateness
// carried RTP times past the stop, and the hold put the clock back there,
// so the reports' RTP times went back by the lateness (60 ms here).
func TestESClockNotPastTheStopDuringALateSend(t *testing.T) {
	const tick = lateTick
	sending := make(chan struct{})
	p, end := playWithLateSend(5*tick, func(u *esUnit) { // stop at 200 ms
		if u.due == 4*tick { // due at 160 ms, out at 260 ms
			close(sending)
			time.Sleep(100 * time.Millisecond)
		}
	})
	defer end()
	<-sending
	most := int64(math.MinInt64) // the latest media time the clock stood at before the hold
	awaitPlay(t, p, func() bool { return p.held }, "the play did not hold", func() {
		m, _ := p.reportNow(time.Now(), false)
		most = max(most, m)
	})
	held, _ := p.reportNow(time.Now(), false)
	if held != 5*tick || most > held {
		t.Errorf("the clock stood at %d ticks before the hold (%.1f ms past the stop), held at %d: want at most the stop, %d", most, float64(most-5*tick)/90, held, 5*tick)
	}
}

// TestESPauseAtTheStopDuringALateSend: a PAUSE while the last unit before
// a play's Range's end goes out late (past the stop's time) holds the
// play where its clock stands, at the stop, not at the PAUSE's time: held
// there, its clock (the sender reports, Position, a PLAY on's rtptime)
// stood past the stop by the lateness so far (30 ms here), and went back
// to the stop when the play, played on, held there.
func TestESPauseAtTheStopDuringALateSend(t *testing.T) {
	const tick = lateTick
	sending, sent := make(chan struct{}), make(chan struct{})
	p, end := playWithLateSend(5*tick, func(u *esUnit) { // stop at 200 ms
		if u.due == 4*tick { // due at 160 ms, out at 260 ms
			close(sending)
			time.Sleep(100 * time.Millisecond)
			close(sent)
		}
	})
	defer end()
	<-sending
	p.mu.Lock()
	stopAt := p.wallOfLocked(5 * tick)
	p.mu.Unlock()
	time.Sleep(time.Until(stopAt.Add(30 * time.Millisecond)))
	p.hold(time.Now()) // a PAUSE 30 ms past the stop's time, the send still under way
	paused, _ := p.reportNow(time.Now(), false)
	<-sent
	p.release(time.Now()) // a PLAY on, the Range's end kept
	awaitPlay(t, p, func() bool { return p.held && !p.stopSet }, "the play did not hold at its stop", nil)
	held, _ := p.reportNow(time.Now(), false)
	if paused > 5*tick || held != 5*tick {
		t.Errorf("paused at %d ticks (%.1f ms past the stop), held at the stop at %d: want both at the stop, %d", paused, float64(paused-5*tick)/90, held, 5*tick)
	}
}

// lateTick is the pictures' spacing in playWithLateSend, 90 kHz ticks
// (40 ms).
const lateTick = 3600

// playWithLateSend starts the send loop of a play of ten pictures, one
// every lateTick from 0, to stop at its Range's end stop (90 kHz ticks);
// send is handed each unit as it goes out and may take long (a write
// held up). end stops the loop and waits for it.
func playWithLateSend(stop int64, send func(u *esUnit)) (p *esPlay, end func()) {
	p = newESPlay()
	var pkts []*rtp.Packet
	var ats []int64
	for i := int64(0); i < 10; i++ {
		pkts, ats = append(pkts, &rtp.Packet{}), append(ats, i*lateTick)
	}
	p.push(0, 0, 0, pkts, ats)
	p.setStop(stop, true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- p.sendLoop(ctx, func(u *esUnit) error {
			send(u)
			return nil
		})
	}()
	return p, func() { cancel(); <-done }
}

// awaitPlay looks at p every millisecond until cond (called with p.mu
// held) is true, calling each (when not nil) between looks, and fails t
// with msg if it is not within 5 s.
func awaitPlay(t *testing.T, p *esPlay, cond func() bool, msg string, each func()) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		p.mu.Lock()
		ok := cond()
		p.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(end) {
			t.Fatal(msg)
		}
		if each != nil {
			each()
		}
	}
}
