package acm

// reportWrites carries the session writes of the nodes' load reports
// (and of a returning viewer's new token time) to one goroutine
// (reportWriter), in order, so that a report never waits for the store: a report handler waiting (up to defaultPersistWait) for a
// stalled store stopped reading the node's next reports, and the node,
// its heartbeats unread, was declared dead (lsm's missed heartbeats, 3 s
// by default) and its sessions orphaned.
type reportWrites struct {
	kick chan struct{} // cap 1: sessions are waiting
	// guarded by Manager.mu
	queue []*session
	// stopped: reportWriter made its last writes and returned (the
	// manager closes): a report still running (gRPC handlers outlive the
	// manager's goroutines at Close) writes its sessions itself.
	stopped bool
}

// initPersist readies the session writes off the front door (Start).
func (m *Manager) initPersist() {
	m.reportWrites.kick = make(chan struct{}, 1)
	if m.persistWait <= 0 {
		m.persistWait = defaultPersistWait
	}
}

// persistLater queues ss to be persisted by reportWriter (mu not held),
// or persists them at once once reportWriter has stopped.
func (m *Manager) persistLater(ss []*session) {
	if len(ss) == 0 {
		return
	}
	m.mu.Lock()
	if m.reportWrites.stopped {
		m.mu.Unlock()
		m.persistAll(ss)
		return
	}
	m.reportWrites.queue = append(m.reportWrites.queue, ss...)
	m.mu.Unlock()
	select {
	case m.reportWrites.kick <- struct{}{}:
	default:
	}
}

// reportWriter persists the sessions persistLater queued (persistAll)
// until the manager stops, and those queued by then as it stops.
func (m *Manager) reportWriter() {
	for {
		select {
		case <-m.reportWrites.kick:
		case <-m.ctx.Done():
			m.writeQueued(true)
			return
		}
		m.writeQueued(false)
	}
}

// writeQueued persists the sessions queued so far; last: reportWriter
// stops, and the sessions queued from now on are persisted by whoever
// queues them (persistLater).
func (m *Manager) writeQueued(last bool) {
	m.mu.Lock()
	ss := m.reportWrites.queue
	m.reportWrites.queue = nil
	if last {
		m.reportWrites.stopped = true
	}
	m.mu.Unlock()
	if len(ss) > 0 {
		m.persistAll(ss)
	}
}
