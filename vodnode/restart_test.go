package vodnode

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// restartableOrigin serves a fakeOrigin on one loopback address that can be
// stopped (connections cut, as when the process is killed) and started
// again.
type restartableOrigin struct {
	t    *testing.T
	o    *fakeOrigin
	addr string
	srv  *grpc.Server
}

func (r *restartableOrigin) start() {
	r.t.Helper()
	addr := r.addr
	if addr == "" {
		addr = reusableAddr(r.t) // below the ephemeral range: no outgoing connection takes it while stopped
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.addr = l.Addr().String()
	r.srv = grpc.NewServer(grpc.KeepaliveEnforcementPolicy(pb.KeepaliveEnforcement))
	pb.RegisterOriginServer(r.srv, r.o)
	go r.srv.Serve(l)
}

func (r *restartableOrigin) stop() { r.srv.Stop() }

// TestFillSurvivesOriginRestart: the origin process goes away for 1.5 s
// while a viewer plays a title being filled; the viewer keeps playing what
// is on disk, the node reconnects and resumes the fill, and the title ends
// up byte for byte the origin's with the viewer's session still there.
func TestFillSurvivesOriginRestart(t *testing.T) {
	o := newFakeOrigin(t)
	o.rate = 200 << 10 // bytes/s: the 1.5 MB title takes about 7 s
	ro := &restartableOrigin{t: t, o: o}
	ro.start()
	t.Cleanup(func() { ro.stop() })
	n := startNode(t, ro.addr)
	done := o.doneCh("sample-004")

	c := dialRTSP(t, n)
	c.play(nodeURL(n, mint(t, "r1", "sample-004", "node-1", "", time.Minute), "sample-004"))
	if _, _, err := c.frame(); err != nil {
		t.Fatalf("first frame: %v", err)
	}
	// some seconds of media on disk, then the origin goes away
	waitFor(t, 10*time.Second, "400 kB filled", func() bool {
		st := n.Titles()
		return len(st) == 1 && st[0].Stored >= 400<<10
	})
	ro.stop()
	outage := time.Now()
	frames := 0
	for time.Since(outage) < 1500*time.Millisecond {
		c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, _, err := c.frame(); err != nil {
			t.Fatalf("viewer during the outage, after %d frames: %v", frames, err)
		}
		frames++
	}
	if st := n.Titles(); len(st) != 1 || !st[0].Filling {
		t.Fatalf("during the outage: titles %+v, want the fill going on", st)
	}
	ro.start()

	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the fill did not complete after the origin came back")
	}
	waitComplete(t, n, "sample-004")
	if got := n.Stats().Sessions; got != 1 {
		t.Errorf("%d sessions after the outage, want the viewer's", got)
	}
	if f := o.fetchCount("sample-004"); f < 2 {
		t.Errorf("%d origin transfers, want a resumed one", f)
	}
	stored, err := os.ReadFile(filepath.Join(n.DataDir, "titles", "sample-004.ts"))
	if err != nil || !bytes.Equal(stored, o.titles["sample-004"]) {
		t.Fatalf("stored title differs from the origin's (%d of %d bytes, %v)", len(stored), len(o.titles["sample-004"]), err)
	}
	t.Logf("%d RTP frames during the 1.5 s outage, %d origin transfers", frames, o.fetchCount("sample-004"))
}

// TestFillResumesAfterNodeRestart: a node stopped while it fills a title
// keeps the bytes it has; started again on the same data_dir, it does not
// list the title, and a viewer's fill asks the origin only for the bytes
// after them and ends with the origin's title byte for byte.
func TestFillResumesAfterNodeRestart(t *testing.T) {
	o := newFakeOrigin(t)
	o.rate = 200 << 10 // bytes/s
	addr := startOrigin(t, o)
	const id = "short-001"
	data := o.titles[id]
	n1 := startNode(t, addr)
	dir := n1.DataDir
	c := dialRTSP(t, n1)
	c.play(nodeURL(n1, mint(t, "r1", id, "node-1", "", time.Minute), id))
	waitFor(t, 10*time.Second, "100 kB filled", func() bool {
		st := n1.Titles()
		return len(st) == 1 && st[0].Stored >= 100<<10
	})
	n1.Close()
	st, err := os.Stat(filepath.Join(dir, "titles", id+".ts.part"))
	if err != nil || st.Size() < 100<<10 || st.Size() >= int64(len(data)) {
		t.Fatalf("partial after the node stopped: %v %v", st, err)
	}
	kept := st.Size()
	fetches := o.fetchCount(id)

	n2 := startNode(t, addr, func(n *Node) { n.DataDir = dir })
	if len(n2.Titles()) != 0 {
		t.Fatalf("titles of the restarted node: %+v, want the partial not listed", n2.Titles())
	}
	c2 := dialRTSP(t, n2)
	c2.play(nodeURL(n2, mint(t, "r2", id, "node-1", "", time.Minute), id))
	if _, _, err := c2.frame(); err != nil {
		t.Fatalf("first frame after the restart: %v", err)
	}
	waitComplete(t, n2, id)
	if offs := o.fetchOffsets(id)[fetches:]; len(offs) != 1 || offs[0] != kept {
		t.Errorf("fetches after the restart from %v, want one from %d", offs, kept)
	}
	stored, err := os.ReadFile(filepath.Join(dir, "titles", id+".ts"))
	if err != nil || !bytes.Equal(stored, data) {
		t.Fatalf("stored title differs from the origin's (%d of %d bytes, %v)", len(stored), len(data), err)
	}
}

// TestDataDirInUse: a second node on the data_dir of a running node does
// not start, and says why; once the first has stopped it starts.
func TestDataDirInUse(t *testing.T) {
	n1 := startNode(t, "")
	second := func() *Node {
		return &Node{ID: "node-2", DataDir: n1.DataDir, Secret: testSecret, Pacers: 1, Logger: testLogger()}
	}
	n2 := second()
	err := n2.Start()
	if err == nil {
		n2.Close()
		t.Fatal("a second node started on the same data_dir")
	}
	if want := "data_dir " + n1.DataDir + " is in use by another node process"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q, want it to say %q", err, want)
	}
	n1.Close()
	n3 := second()
	if err := n3.Start(); err != nil {
		t.Fatalf("after the first node stopped: %v", err)
	}
	n3.Close()
}
