package acm

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"vodcluster/acm/store"
)

// BenchmarkProgressSnapshot measures the sessions' progress of a manager
// playing 10,000 sessions on 100 nodes, each with bytes reported: the
// snapshot taken under m.mu every ProgressSave (hold-ms), its stored
// form and JSON encoding without it (marshal-ms) and the size written (bytes).
func BenchmarkProgressSnapshot(b *testing.B) {
	e := newManager(b, "", func(m *Manager) {
		m.ProgressSave, m.PlanInterval = time.Hour, time.Hour
		m.Scheduler.HeartbeatInterval = time.Hour
	})
	m := e.m
	nc := &nodeControl{m: m}
	for i := range 100 {
		if _, err := nc.Register(context.Background(), regReq(fmt.Sprintf("n%03d", i), "127.0.0.1:1", "", 1<<40)); err != nil {
			b.Fatal(err)
		}
	}
	now := time.Now()
	m.mu.Lock()
	for i := range 10_000 {
		id := newSessionID()
		m.sessions[id] = &session{Session: store.Session{ID: id, Node: fmt.Sprintf("n%03d", i%100), State: store.StatePlaying,
			StartedAt: now.Add(-time.Hour)}, reserved: true, bytesSent: int64(i) << 20, bytesAsOfReport: true}
	}
	m.mu.Unlock()
	var hold, marshal time.Duration
	size := 0
	for b.Loop() {
		t0 := time.Now()
		m.mu.Lock()
		heard := m.heardListLocked()
		m.mu.Unlock()
		t1 := time.Now()
		p := progressOf(now, heard)
		out, err := json.Marshal(p)
		if err != nil {
			b.Fatal(err)
		}
		hold, marshal, size = hold+t1.Sub(t0), marshal+time.Since(t1), len(out)
		if len(p.Sessions) != 10_000 {
			b.Fatalf("%d sessions in the progress, want 10000", len(p.Sessions))
		}
	}
	b.ReportMetric(float64(hold.Microseconds())/1e3/float64(b.N), "hold-ms")
	b.ReportMetric(float64(marshal.Microseconds())/1e3/float64(b.N), "marshal-ms")
	b.ReportMetric(float64(size), "bytes")
}
