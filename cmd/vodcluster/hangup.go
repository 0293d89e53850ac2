package main

import (
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// hangups catches SIGHUP from the moment a server command starts, before
// it reads its configuration and builds its parts (an origin scanning its
// title directory, a node reading its disk, a manager opening its state
// store: seconds with many titles), so that a SIGHUP then (`systemctl
// reload`, logrotate's postrotate, `pkill -HUP vodcluster`) does not kill
// the process: systemd counts a death by SIGHUP as a clean exit, which
// Restart=on-failure does not restart. What a SIGHUP does is set once the
// server has started (handle, from runUntilSignal); one caught before
// waits for it, so that a reload does not run into the start.
type hangups struct {
	ch   chan os.Signal
	done chan struct{}
	once sync.Once
}

// catchHangups starts catching SIGHUP; stop ends it.
func catchHangups() *hangups {
	h := &hangups{ch: make(chan os.Signal, 1), done: make(chan struct{})}
	signal.Notify(h.ch, syscall.SIGHUP)
	return h
}

// handle calls reload (which logs its own failures) at every SIGHUP, one
// caught before handle included, after logging what it does on which
// path, until stop is called.
func (h *hangups) handle(what, key, path string, reload func() error) {
	go func() {
		for {
			select {
			case <-h.done:
				return
			case <-h.ch:
				slog.Info("SIGHUP: "+what, key, path)
				_ = reload() // logged, the state before kept
			}
		}
	}()
}

// stop stops catching SIGHUP (its action before catchHangups is back) and
// ends handle's loop. It may be called more than once.
func (h *hangups) stop() {
	h.once.Do(func() {
		signal.Stop(h.ch)
		close(h.done)
	})
}

// onHangup calls reload (which logs its own failures) at every SIGHUP,
// after logging what it does on which path, until the returned stop is
// called.
func onHangup(what, key, path string, reload func() error) (stop func()) {
	h := catchHangups()
	h.handle(what, key, path, reload)
	return h.stop
}
