package deliver

// Offer is a control frame (an RTCP BYE) handed to a ConnWriter that
// could not take it at once (busy, or its queue full): the next write of
// the connection, whoever makes it (a response, another session's
// packets, or the offer's own Push), writes it first, so that it gets its
// turn between other writes however busy the writer stays. Until then
// it can be withdrawn: it is written before a write that follows its
// Withdraw, or not at all.
type Offer struct {
	w      *ConnWriter
	b      []byte
	onTake func()
	taken  bool // written, or queued for the connection (w.cmu)
	gone   bool // taken or withdrawn (w.cmu)
}

// Offer hands b to the writer, to be written before the bytes of its
// next write (Write, TryWrite, or the offer's Push), whatever its queue
// holds (b is not held to the queue's limit, as a response is not).
// onTake, when not nil, is called as b is taken (written, or queued for
// the connection), by the goroutine writing, with the writer's locks
// held: it must not block nor use the writer (counting b's bytes, as a
// packet's are counted once TryWrite took it).
func (w *ConnWriter) Offer(b []byte, onTake func()) *Offer {
	o := &Offer{w: w, b: b, onTake: onTake}
	w.cmu.Lock()
	w.offers = append(w.offers, o)
	w.cmu.Unlock()
	return o
}

// Push writes the offer (and any other offer waiting) when the writer is
// free now, without blocking, and reports whether it is taken: written,
// or queued for the connection. A connection that failed takes nothing:
// the offer stays, not taken (Withdraw drops it), and err is the
// connection's error.
func (o *Offer) Push() (taken bool, err error) {
	w := o.w
	if w.mu.TryLock() {
		if err = w.err; err == nil {
			w.takeOffersLocked()
			if !w.async && len(w.pending) > 0 {
				err = w.flushLocked()
			}
			w.armDrainLocked()
		}
		w.mu.Unlock()
	}
	return o.Taken(), err
}

// Taken reports whether the offer was taken: written, or queued for the
// connection.
func (o *Offer) Taken() bool {
	o.w.cmu.Lock()
	defer o.w.cmu.Unlock()
	return o.taken
}

// Withdraw drops the offer if it is still waiting, and reports whether it
// had been taken (it is written, or being written, before anything the
// caller writes next).
func (o *Offer) Withdraw() bool {
	w := o.w
	w.cmu.Lock()
	defer w.cmu.Unlock()
	if !o.gone {
		o.gone = true
		for i, p := range w.offers {
			if p == o {
				w.offers = append(w.offers[:i], w.offers[i+1:]...)
				break
			}
		}
	}
	return o.taken
}

// takeOffersLocked queues the offers waiting, in the order offered, after
// what is queued and before what the caller writes next (mu held, the
// writer not failed). An async writer's goroutine is kicked.
func (w *ConnWriter) takeOffersLocked() {
	w.cmu.Lock()
	defer w.cmu.Unlock()
	if len(w.offers) == 0 {
		return
	}
	for _, o := range w.offers {
		if w.async {
			w.enqueueLocked(o.b)
		} else {
			w.pending = append(w.pending, o.b...)
		}
		o.taken, o.gone = true, true
		if o.onTake != nil {
			o.onTake()
		}
	}
	clear(w.offers)
	w.offers = w.offers[:0]
}
