package vodnode

import (
	"testing"
	"time"
)

func TestFFmpegPlaysTCPAndUDP(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	for i, tr := range []string{"tcp", "udp"} {
		tok := mint(t, "sess-"+tr, "sample-001", "node-1", "127.0.0.1", time.Minute)
		r := runFFmpeg(t, nodeURL(n, tok, "sample-001"), tr, 4)
		t.Logf("%s: %d frames in %v", tr, r.frames, r.elapsed)
		if r.frames < 90 || r.frames > 110 {
			t.Errorf("%s: %d frames decoded, want about 100\n%s", tr, r.frames, r.stderr)
		}
		if r.elapsed < 3*time.Second || r.elapsed > 8*time.Second {
			t.Errorf("%s: 4 s of media took %v", tr, r.elapsed)
		}
		if i == 0 && o.fetchCount("sample-001") != 1 {
			t.Errorf("fetches %d", o.fetchCount("sample-001"))
		}
	}
}
