package deliver

import (
	"bytes"
	"net"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
)

// A GSO train whose datagrams the route's MTU no longer takes (a path MTU
// learned after SETUP: the kernel refuses the train with EINVAL) is sent
// again datagram by datagram, which the kernel fragments: every datagram
// arrives whole, in order, where the train was lost. Loaded machines,
// whose shards send a second of catch-up in one batch, lost up to a tenth
// of a title to the refused trains before the stream resized.
func TestRefusedGSOTrainIsSentSplit(t *testing.T) {
	p := newNarrowPath(t)
	u, err := ListenUDP(p.host.String(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	if !u.gso {
		t.Skip("the kernel has no UDP GSO")
	}
	sink := p.listen(t)
	dst := sink.LocalAddr().(*net.UDPAddr)
	const k, seg = 5, PayloadSize + rtpHeaderSize // 1328 bytes: over 1232
	var bufs [][]byte
	var want [][]byte
	for i := range k {
		h := bytes.Repeat([]byte{byte(i)}, rtpHeaderSize)
		pl := bytes.Repeat([]byte{byte(0x40 + i)}, PayloadSize)
		if i == k-1 {
			pl = pl[:TSPacketSize] // the last of a train may be shorter
		}
		bufs = append(bufs, h, pl)
		want = append(want, append(append([]byte{}, h...), pl...))
	}
	var refused error
	u.writeBatch([]ipv4.Message{{Buffers: bufs, OOB: u.segmentOOB(seg), Addr: dst}}, func(_ int, err error) { refused = err })
	if !tooBig(refused) {
		t.Fatalf("the train on an MTU-1280 path: %v, want the kernel's refusal (EINVAL)", refused)
	}
	buf := make([]byte, 65536)
	for i, w := range want {
		sink.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, _, err := sink.ReadFrom(buf)
		if err != nil {
			t.Fatalf("datagram %d of %d: %v", i+1, k, err)
		}
		if !bytes.Equal(buf[:n], w) {
			t.Fatalf("datagram %d: %d bytes starting %x, want %d starting %x", i+1, n, buf[:min(n, 16)], len(w), w[:16])
		}
	}
}
