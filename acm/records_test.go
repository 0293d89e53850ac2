package acm

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/acm/boss"
	pb "vodcluster/proto/vodcluster/v1"
)

// readRecords reads the session records of path.
func readRecords(t *testing.T, path string) []sessionRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []sessionRecord
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r sessionRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// TestSessionRecords: each session that ends leaves one JSON line in the
// records file: one played and torn down at its node with the bytes the
// node sent and the seconds it played, one whose viewer never came
// (no-show, never started); after the file is moved away (log rotation)
// and reopened, records go to a new file; Close writes what is queued.
func TestSessionRecords(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sessions.jsonl")
	e := newManager(t, "", func(m *Manager) {
		m.SessionRecordsFile = path
		// The played session must start within TokenTTL+NoShowGrace of
		// its admission: 2 s leaves a loaded machine room (the
		// no-show's record is awaited, not slept for).
		m.TokenTTL, m.NoShowGrace = time.Second, time.Second
	})
	n := e.startNode("n1", nodeOpts{})
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("describe: %d", res.StatusCode)
	}
	sid := e.sessions()[0].GetSessionId()
	if err := n.event(sid, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	if _, err := n.nc.ReportSession(context.Background(), &pb.SessionEvent{NodeId: "n1", SessionId: sid, Kind: pb.SessionEvent_KIND_ENDED,
		Reason: "teardown", BytesSent: 123456, AtUnixMs: time.Now().UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the record of the played session", func() bool { return len(readRecords(t, path)) == 1 })
	r := readRecords(t, path)[0]
	if r.Session != sid || r.User != "demo" || r.Title != "t1" || r.Node != "n1" || r.Protocol != "rtsp" || r.Reason != "teardown" ||
		r.BytesSent != 123456 || r.BitrateBps != titleBps || r.StartedAt.IsZero() || r.StartedAt.Before(r.AdmittedAt.Add(-time.Second)) || // the node's clock, to the ms
		r.EndedAt.Before(r.StartedAt.Time) || r.PlayedS != float64(r.EndedAt.Sub(r.StartedAt.Time).Milliseconds())/1000 || r.Client == "" ||
		r.BytesSentUnknown {
		t.Fatalf("record %+v", r)
	}

	// Log rotation: the file moved away, the manager told to reopen.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := e.m.ReopenSessionRecords(); err != nil {
		t.Fatal(err)
	}
	if res := e.describe("demo", "demo", "t2"); res.StatusCode != base.StatusFound {
		t.Fatalf("describe: %d", res.StatusCode)
	}
	waitFor(t, 5*time.Second, "the no-show's record in the new file", func() bool {
		_, err := os.Stat(path)
		return err == nil && len(readRecords(t, path)) == 1
	})
	r = readRecords(t, path)[0]
	if r.Title != "t2" || r.Reason != "no-show" || !r.StartedAt.IsZero() || r.PlayedS != 0 || r.BytesSent != 0 || r.BytesSentUnknown {
		t.Fatalf("no-show record %+v", r)
	}
	// The manager's own times (the no-show's admission and end) to the
	// millisecond, as the node's are (RFC 3339 drops trailing zeros).
	if raw, err := os.ReadFile(path); err != nil || !regexp.MustCompile(`"admitted_at":"[^".]*(\.\d{1,3})?Z","ended_at":"[^".]*(\.\d{1,3})?Z"`).Match(raw) {
		t.Fatalf("no-show record %s (%v): want its times to the millisecond", raw, err)
	}
	if got := readRecords(t, path+".1"); len(got) != 1 {
		t.Fatalf("%d records in the rotated file, want the 1 written before", len(got))
	}
}

// TestSessionRecordsFileUnusable: a records file that cannot be opened
// fails Start, naming it.
func TestSessionRecordsFileUnusable(t *testing.T) {
	file, err := boss.NewFile(DefaultRealm, testUsers())
	if err != nil {
		t.Fatal(err)
	}
	m := &Manager{DataDir: t.TempDir(), BOSS: file, Secret: testSecret, RTSPListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0",
		GRPCListen: "127.0.0.1:0", SessionRecordsFile: filepath.Join(t.TempDir(), "no", "such", "dir", "sessions.jsonl")}
	err = m.Start()
	if err == nil {
		m.Close()
		t.Fatal("Start with an unopenable session records file succeeded")
	}
	if !strings.Contains(err.Error(), "session records") || !strings.Contains(err.Error(), "sessions.jsonl") {
		t.Fatalf("error %q does not name the session records file", err)
	}
}

// TestSessionRecordOfADeadNode: a session whose node died and did not come
// back within RestoreGrace is recorded as ending when the node was last
// heard of (its last heartbeat, or the session's start when that came
// later), not when the grace ran out, and its bytes_sent, which the node
// never reported, is marked unknown (bytes_sent_unknown), not left a 0
// that reads as a count.
func TestSessionRecordOfADeadNode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.jsonl")
	e := newManager(t, "", func(m *Manager) { m.SessionRecordsFile = path; m.RestoreGrace = 2 * time.Second })
	n := e.startNode("n1", nodeOpts{})
	a := e.admitOne("t1")
	if err := n.event(a, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	n.stop()
	cut := time.Now()
	waitFor(t, 10*time.Second, "the session's record", func() bool {
		_, err := os.Stat(path)
		return err == nil && len(readRecords(t, path)) == 1
	})
	r := readRecords(t, path)[0]
	if r.Reason != "node did not come back" || r.EndedAt.After(cut) || r.EndedAt.Before(r.StartedAt.Time) {
		t.Fatalf("record %+v: want it ended by the node's last heartbeat (before %v)", r, cut)
	}
	if r.BytesSent != 0 || !r.BytesSentUnknown {
		t.Fatalf("record %+v: want bytes_sent 0 marked bytes_sent_unknown (the node never said)", r)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"bytes_sent":0,"bytes_sent_unknown":true`) {
		t.Fatalf("record line %s: want \"bytes_sent_unknown\":true after bytes_sent", raw)
	}
}

// TestSessionRecordOfADeadNodeHasItsReportedBytes: a node whose load
// reports count each session's bytes dies with a session playing: the
// session's record has the last figure reported, marked as such
// (bytes_sent_as_of_report), not a 0 marked unknown.
func TestSessionRecordOfADeadNodeHasItsReportedBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.jsonl")
	e := newManager(t, "", func(m *Manager) { m.SessionRecordsFile = path; m.RestoreGrace = 2 * time.Second })
	n := e.startNode("n1", nodeOpts{})
	a := e.admitOne("t1")
	if err := n.event(a, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	n.setSent(a, 1000)
	n.setSent(a, 187_654_321)
	waitFor(t, 10*time.Second, "the session's bytes reported", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		s := e.m.sessions[a]
		return s != nil && s.bytesSent == 187_654_321
	})
	n.stop()
	waitFor(t, 10*time.Second, "the session's record", func() bool {
		_, err := os.Stat(path)
		return err == nil && len(readRecords(t, path)) == 1
	})
	r := readRecords(t, path)[0]
	if r.Reason != "node did not come back" {
		t.Fatalf("record %+v: want it ended as its node did not come back", r)
	}
	if r.BytesSent != 187_654_321 || !r.BytesSentAsOfReport || r.BytesSentUnknown {
		t.Fatalf("record %+v: want bytes_sent 187654321 as of the last report, not unknown", r)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"bytes_sent":187654321,"bytes_sent_as_of_report":true,"reason"`) {
		t.Fatalf("record line %s: want \"bytes_sent_as_of_report\":true after bytes_sent, no bytes_sent_unknown", raw)
	}
}

// TestReportWithWrongBytesCountKeepsTheNode: a node whose load reports
// have a session_bytes_sent count other than their session_ids' (a
// node's bug) keeps its heartbeat stream and its place: its reports are
// applied, their figures ignored (the session keeps the last good one),
// not refused, which ended its stream at every report until it was
// declared dead.
func TestReportWithWrongBytesCountKeepsTheNode(t *testing.T) {
	e := newManager(t, "", nil)
	n := e.startNode("n1", nodeOpts{})
	a := e.admitOne("t1")
	if err := n.event(a, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	n.setSent(a, 1000)
	bytesOf := func() int64 {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		if s := e.m.sessions[a]; s != nil {
			return s.bytesSent
		}
		return -1
	}
	waitFor(t, 10*time.Second, "the session's bytes reported", func() bool { return bytesOf() == 1000 })
	n.mu.Lock()
	n.sent[a], n.extraSent = 5000, true
	n.mu.Unlock()
	from := e.reports("n1")
	waitFor(t, 10*time.Second, "three reports with the wrong count applied", func() bool { return e.reports("n1") >= from+3 })
	e.m.mu.Lock()
	ns := e.m.nodes["n1"]
	live := ns.streamCancel != nil
	sn := e.m.sched.Node("n1")
	alive := sn != nil && sn.Alive && !sn.Unreachable
	e.m.mu.Unlock()
	if !live || !alive {
		t.Fatalf("node with a wrong figure count: stream up %v, alive and reachable %v; want both", live, alive)
	}
	if b := bytesOf(); b != 1000 {
		t.Fatalf("session bytes %d after reports with a wrong figure count: want the last good figure 1000", b)
	}
	// The report itself is not refused either.
	e.m.mu.Lock()
	gen := ns.streamGen
	e.m.mu.Unlock()
	if err := e.m.report(ns, gen, &pb.LoadReport{NodeId: "n1", SessionIds: []string{a}, SessionBytesSent: []uint64{7, 8}}); err != nil {
		t.Fatalf("report with 2 figures for 1 session: %v, want it applied", err)
	}
}

// TestSessionRecordOfANodeBackWithoutIt: a session whose node died and
// registered again without it (a restarted node) is recorded as ending
// when the node was last heard of before it died, not when it registered
// again: played_s, which operators bill by, leaves the outage out.
func TestSessionRecordOfANodeBackWithoutIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.jsonl")
	e := newManager(t, "", func(m *Manager) { m.SessionRecordsFile = path; m.RestoreGrace = time.Minute })
	n := e.startNode("n1", nodeOpts{})
	a := e.admitOne("t1")
	if err := n.event(a, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	n.stop()
	cut := time.Now()
	waitFor(t, 10*time.Second, "the node dead and its session orphaned", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		s := e.m.sessions[a]
		return s != nil && !s.orphaned.IsZero()
	})
	e.startNode("n1", nodeOpts{}) // restarted: it plays nothing
	waitFor(t, 10*time.Second, "the session's record", func() bool {
		_, err := os.Stat(path)
		return err == nil && len(readRecords(t, path)) == 1
	})
	r := readRecords(t, path)[0]
	if r.Reason != "not on its node after the node registered" || r.EndedAt.After(cut) || r.EndedAt.Before(r.StartedAt.Time) {
		t.Fatalf("record %+v: want it ended by the node's last heartbeat before it died (before %v)", r, cut)
	}
	if !r.BytesSentUnknown {
		t.Fatalf("record %+v: want bytes_sent marked unknown (the node never reported it)", r)
	}
}

// TestSessionRecordOfANodeRestartedWhileTheManagerWas: the manager is
// stopped while a session plays, its node is killed and restarted while
// the manager is away, and registers with the restarted manager without
// the session. The manager never heard of the node since the session
// started, so the record ends when the node's new process started (it
// says so when it registers), not at the registration: played_s leaves
// out the outage between the node's restart and its registration.
func TestSessionRecordOfANodeRestartedWhileTheManagerWas(t *testing.T) {
	dir, path := t.TempDir(), filepath.Join(t.TempDir(), "sessions.jsonl")
	withRecords := func(m *Manager) { m.SessionRecordsFile = path }
	e := newManager(t, dir, withRecords)
	n := e.startNode("n1", nodeOpts{})
	a := e.admitOne("t1")
	if err := n.event(a, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	e.m.mu.Lock()
	started := e.m.sessions[a].StartedAt
	e.m.mu.Unlock()
	n.stop()
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	restart := started.Add(time.Millisecond) // the node's new process: it plays nothing
	e2 := newManager(t, dir, withRecords)
	e2.startNode("n1", nodeOpts{started: restart})
	waitFor(t, 10*time.Second, "the session's record", func() bool {
		_, err := os.Stat(path)
		return err == nil && len(readRecords(t, path)) == 1
	})
	r := readRecords(t, path)[0]
	if r.Session != a || r.Reason != "not on its node after the node registered" || !r.EndedAt.Equal(restart) || r.PlayedS != 0.001 {
		t.Fatalf("record %+v: want it ended when the node's process started again (%v), played_s 0.001", r, restart.UTC())
	}
}

// TestRecordTimesHaveOneWidth: a record's times are UTC with three digits
// of milliseconds whatever their value (a parser of fixed width, or a sort
// of the lines as text, sees one format), truncated to the millisecond; a
// session that never started has no started_at.
func TestRecordTimesHaveOneWidth(t *testing.T) {
	east := time.FixedZone("UTC+2", 2*3600)
	rec := sessionRecord{Session: "s", AdmittedAt: recordTime{time.Date(2026, 12, 1, 6, 33, 26, 320_999_999, east)},
		EndedAt: recordTime{time.Date(2026, 12, 1, 4, 33, 27, 0, time.UTC)}}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	line := string(b)
	for _, want := range []string{`"admitted_at":"2026-12-01T04:33:26.320Z"`, `"ended_at":"2026-12-01T04:33:27.000Z"`} {
		if !strings.Contains(line, want) {
			t.Errorf("record %s: want %s", line, want)
		}
	}
	if strings.Contains(line, "started_at") {
		t.Errorf("record %s of a session never started: want no started_at", line)
	}
	var back sessionRecord
	if err := json.Unmarshal(b, &back); err != nil || !back.EndedAt.Equal(rec.EndedAt.Time) {
		t.Fatalf("read back: %+v %v", back, err)
	}
}
