package acm

import (
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	pb "vodcluster/proto/vodcluster/v1"
)

// A node that registers again while the manager still holds its earlier
// heartbeat stream (a node restarted at once: its old stream's end not
// yet seen) gets the commands of its registration on its new stream: the
// ExpectCommands of its viewers on their way went down the dead stream
// and were lost (TestExpectSentAgainAtRegistration failed so on a loaded
// machine). The old stream is ended by the registration, and its end is
// not taken for the node's.
func TestRegistrationCommandsGoToTheNewStream(t *testing.T) {
	e := newManager(t, "", nil)
	opts := nodeOpts{rtsp: "127.0.0.1:5541", titles: []*pb.StoredTitle{
		{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000},
	}}
	old := e.startNode("n1", opts)
	for i := range 3 {
		res := e.describe("demo", "demo", "t1")
		if res.StatusCode != base.StatusFound {
			t.Fatalf("DESCRIBE %d: %d, want 302", i, res.StatusCode)
		}
	}
	waitFor(t, 5*time.Second, "the old stream's ExpectCommands", func() bool { return len(old.expected()) == 3 })

	// The node comes back; its old stream, never ended by the node, is
	// still open as the manager sees it.
	back := e.startNode("n1", opts)
	waitFor(t, 5*time.Second, "the ExpectCommands sent again on the new stream", func() bool { return len(back.expected()) == 3 })
	if got := len(old.expected()); got != 3 {
		t.Errorf("the old stream got %d ExpectCommands, want the 3 of before (the registration's went down it)", got)
	}
	// The old stream's end, seen now, leaves the node in service.
	old.stop()
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("after the old stream ended: %d, want 302 (the node taken out of service by its old stream's end)", res.StatusCode)
	}
}
