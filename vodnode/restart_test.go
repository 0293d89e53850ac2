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
	r.srv = grpc.NewServer()
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
