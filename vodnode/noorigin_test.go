package vodnode

import (
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// A node started without an origin says so in its registration, and again
// when it registers with a manager that restarted; a node with an origin
// does not.
func TestRegistrationCarriesNoOrigin(t *testing.T) {
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	startNode(t, startOrigin(t, newFakeOrigin(t)), func(n *Node) { n.ManagerAddr = maddr })
	waitFor(t, 5*time.Second, "registration", func() bool { return m.registrations() > 0 })
	m.mu.Lock()
	withOrigin := m.registers[0].GetNoOrigin()
	m.mu.Unlock()
	if withOrigin {
		t.Fatal("a node with an origin registered no_origin")
	}

	addr := reusableAddr(t)
	startNode(t, "", func(n *Node) {
		n.ID = "bare"
		n.ManagerAddr = addr
		n.HeartbeatInterval = 50 * time.Millisecond
	})
	up := func(m *fakeManager) *grpc.Server {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		s := grpc.NewServer(grpc.KeepaliveEnforcementPolicy(pb.KeepaliveEnforcement))
		pb.RegisterNodeControlServer(s, m)
		go s.Serve(l)
		return s
	}
	for i := range 2 { // the manager, then the manager restarted
		m := newFakeManager()
		s := up(m)
		waitFor(t, 15*time.Second, "registration", func() bool { return m.registrations() > 0 && m.lastReport() != nil })
		m.mu.Lock()
		r := m.registers[0]
		m.mu.Unlock()
		s.Stop()
		if r.GetNodeId() != "bare" || !r.GetNoOrigin() {
			t.Fatalf("registration %d of the node without an origin: node %q no_origin %v", i+1, r.GetNodeId(), r.GetNoOrigin())
		}
	}
}

// A node's registration says when its process started (between the
// moments before and after Start), so that a manager that restarted
// meanwhile ends the sessions of its previous process by then, not at
// the registration, and its pause_timeout (the default when not set), so
// that the manager warns of a token_ttl longer than it.
func TestRegistrationCarriesProcessStart(t *testing.T) {
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	before := time.Now().UnixMilli()
	startNode(t, "", func(n *Node) { n.ManagerAddr = maddr })
	after := time.Now().UnixMilli()
	waitFor(t, 5*time.Second, "registration", func() bool { return m.registrations() > 0 })
	m.mu.Lock()
	got, pause := m.registers[0].GetStartedAtUnixMs(), m.registers[0].GetPauseTimeoutMs()
	m.mu.Unlock()
	if got < before || got > after {
		t.Fatalf("started_at_unix_ms %d, want the node's start, in [%d, %d]", got, before, after)
	}
	if pause != DefaultPauseTimeout.Milliseconds() {
		t.Fatalf("pause_timeout_ms %d, want the default's %d", pause, DefaultPauseTimeout.Milliseconds())
	}
}
