package deliver

import (
	"sync"
	"time"
)

// byeDue is the BYE a stream (MP2T or elementary streams) still has to
// send, of the end of its title or of a play that failed (their
// byeLocked): over UDP ByeDelay later (later), after the last RTP
// packets; over TCP, when the connection's writer could not take it at
// once (busy with a response or another session's packets, or its queue
// full), handed to the writer as an Offer, which its next write, whoever
// makes it, sends first (offered). It is guarded by its stream's lock.
type byeDue struct {
	timer *time.Timer // the next look at the BYE; nil: none due
	offer *Offer      // over TCP: the BYE handed to the writer; nil: none
	done  func()      // runs once the BYE went, was given up or cancelled; nil: nothing
}

// pending reports whether a BYE is still to send.
func (d *byeDue) pending() bool { return d.timer != nil }

// cancel drops the BYE still to send, if any: stops its timer, withdraws
// its offer (told reports one the writer had taken already: it goes
// before anything written next) and runs its done on a goroutine of its
// own. The stream's lock held.
func (d *byeDue) cancel() (told bool) {
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	if o := d.offer; o != nil {
		d.offer = nil
		told = o.Withdraw()
	}
	if done := d.done; done != nil {
		d.done = nil
		go done()
	}
	return told
}

// later runs send after wait, holding mu (the stream's lock, held by the
// caller as well), unless cancelled meanwhile; then done, when not nil,
// on a goroutine of its own. No BYE is due (the caller cancelled it).
func (d *byeDue) later(mu sync.Locker, wait time.Duration, send, done func()) {
	var t *time.Timer
	t = time.AfterFunc(wait, func() {
		mu.Lock()
		defer mu.Unlock()
		if d.timer != t {
			return // cancelled (done ran then), or another BYE due instead
		}
		d.timer, d.done = nil, nil
		send()
		if done != nil {
			go done()
		}
	})
	d.timer, d.done = t, done
}

// offered hands the frames b (the interleaved BYE) to w (Offer), which
// its next write, whoever makes it, takes before its own bytes (another
// session's writes, however many, let the BYE have its turn), and counts
// them (count) as taken. When w does not take them at once it looks every
// idleReportRetry, holding mu (the stream's lock, held by the caller as
// well), pushing them when w is free, until they are taken, the
// connection failed, or, past until (the writer's blocking-write
// timeout), the client is taken to be not reading (its RTSP connection
// then ends the session); they are withdrawn then. done, when not nil,
// runs on a goroutine of its own once they were taken, given up or
// cancelled. No BYE is due (the caller cancelled it).
func (d *byeDue) offered(mu sync.Locker, w *ConnWriter, b []byte, until time.Time, count func(n int64), done func()) {
	o := w.Offer(b, func() { count(int64(len(b))) })
	if taken, err := o.Push(); taken || err != nil {
		o.Withdraw()
		if done != nil {
			go done()
		}
		return
	}
	d.offer = o
	var look func()
	look = func() {
		var t *time.Timer
		t = time.AfterFunc(idleReportRetry, func() {
			mu.Lock()
			defer mu.Unlock()
			if d.timer != t {
				return // cancelled (done ran then), or another BYE due instead
			}
			if taken, err := o.Push(); !taken && err == nil && time.Now().Before(until) {
				look()
				return
			}
			d.timer, d.offer, d.done = nil, nil, nil
			o.Withdraw()
			if done != nil {
				go done()
			}
		})
		d.timer = t
	}
	look()
	d.done = done
}

// closedChan is a closed channel: nothing to wait for.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()
