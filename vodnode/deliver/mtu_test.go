package deliver

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pion/rtp"
	"golang.org/x/sys/unix"
)

// narrowPath is an IPv6 link of MTU 1280 (the IPv6 minimum) between this
// network namespace and a test namespace of its own: host is this side's
// address, listen opens a UDP socket on the far side.
type narrowPath struct {
	ns, hostIf, sub string
	host, peer      net.IP
}

// ipCmd runs ip(8) with args.
func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %v: %v: %s", args, err, out)
	}
	return nil
}

// newNarrowPath makes the namespace and its veth pair, removed by
// t.Cleanup; it skips the test when not root or when namespaces cannot be
// made.
func newNarrowPath(t *testing.T) *narrowPath { return newPath(t, 1280) }

// newPath is newNarrowPath with a link of MTU mtu.
func newPath(t *testing.T, mtu int) *narrowPath {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a network namespace with an MTU-1280 IPv6 link")
	}
	sweepStalePaths()
	id := strconv.Itoa(os.Getpid())
	p := &narrowPath{ns: "vcmtu-" + id}
	hostIf, nsIf := "vcm"+id+"h", "vcm"+id+"n"
	p.hostIf = hostIf
	run := ipCmd
	if err := run("netns", "add", p.ns); err != nil {
		t.Skipf("cannot make a network namespace: %v", err)
	}
	t.Cleanup(func() { run("netns", "del", p.ns) })
	if err := run("link", "add", hostIf, "type", "veth", "peer", "name", nsIf); err != nil {
		t.Skipf("cannot make a veth pair: %v", err)
	}
	t.Cleanup(func() { run("link", "del", hostIf) })
	sub := fmt.Sprintf("fd7e:%x:%x::", os.Getpid()>>16, os.Getpid()&0xffff)
	p.sub = sub
	p.host, p.peer = net.ParseIP(sub+"1"), net.ParseIP(sub+"2")
	for _, args := range [][]string{
		{"link", "set", nsIf, "netns", p.ns},
		{"link", "set", hostIf, "mtu", strconv.Itoa(mtu), "up"},
		{"addr", "add", sub + "1/64", "dev", hostIf, "nodad"},
		{"-n", p.ns, "link", "set", nsIf, "mtu", strconv.Itoa(mtu), "up"},
		{"-n", p.ns, "addr", "add", sub + "2/64", "dev", nsIf, "nodad"},
	} {
		if err := run(args...); err != nil {
			// A machine whose new interfaces have IPv6 disabled
			// (net.ipv6.conf.default.disable_ipv6) cannot make the link.
			t.Skipf("cannot set up the IPv6 test link: %v", err)
		}
	}
	return p
}

// sweepStalePaths removes the namespaces (and with them their veth pairs)
// that an earlier test binary killed before its cleanup left: those whose
// process is gone.
func sweepStalePaths() {
	ents, err := os.ReadDir("/run/netns")
	if err != nil {
		return
	}
	for _, e := range ents {
		id, ok := strings.CutPrefix(e.Name(), "vcmtu-")
		if !ok {
			continue
		}
		if pid, err := strconv.Atoi(id); err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat("/proc/" + id); err == nil {
			continue
		}
		ipCmd("netns", "del", e.Name())
		ipCmd("link", "del", "vcm"+id+"h")
	}
}

// inNamespace runs fn on a thread moved into the path's namespace, which
// then goes back, and returns what fn returns, or the error of moving the
// thread (a thread that cannot go back stays locked and ends with its
// goroutine).
func inNamespace[T any](p *narrowPath, fn func() (T, error)) (T, error) {
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() {
		var zero T
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			ch <- res{zero, err}
			return // the thread stays locked and ends with the goroutine
		}
		defer self.Close()
		f, err := os.Open("/run/netns/" + p.ns)
		if err != nil {
			ch <- res{zero, err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- res{zero, err}
			return
		}
		v, err := fn()
		if unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- res{v, err}
	}()
	r := <-ch
	return r.v, r.err
}

// listen opens a UDP socket on the namespace's side (made on a thread
// moved into the namespace, which then goes back).
func (p *narrowPath) listen(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := inNamespace(p, func() (*net.UDPConn, error) {
		return net.ListenUDP("udp", &net.UDPAddr{IP: p.peer})
	})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadBuffer(4 << 20)
	t.Cleanup(func() { c.Close() })
	return c
}

// maxUDP1280 is the largest UDP payload an IPv6 datagram carries whole on
// a link of MTU 1280: 1280 - 40 (IPv6) - 8 (UDP).
const maxUDP1280 = 1232

// TestUDPFitsTheRouteMTU plays MP2T over RTP/UDP (with and without UDP
// GSO) and raw UDP to a client behind an IPv6 link of MTU 1280: every
// datagram fits the link (no IPv6 fragments, which many networks drop),
// and every byte of the title arrives. Before, the node sent 7 TS packets
// a datagram whatever the route (1328 bytes of UDP payload with RTP): in
// GSO trains the kernel refused them (EINVAL, nine in ten packets lost, a
// black picture in ffmpeg), alone it fragmented them.
func TestUDPFitsTheRouteMTU(t *testing.T) {
	p := newNarrowPath(t)
	for _, c := range []struct {
		mode Mode
		gso  bool
	}{{RTPUDP, true}, {RTPUDP, false}, {RawUDP, true}} {
		t.Run(fmt.Sprintf("mode=%d,gso=%v", c.mode, c.gso), func(t *testing.T) {
			u, err := ListenUDP(p.host.String(), 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { u.Close() })
			if c.gso && !u.gso {
				t.Skip("the kernel has no UDP GSO")
			}
			u.gso = c.gso
			e := &Engine{Shards: 1, UDP: u}
			if err := e.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			data := prefix(t, loadClip(t), 1)
			sink := p.listen(t)
			st, err := e.NewStream(StreamConfig{Source: newMemSource(data), Mode: c.mode,
				Dest: sink.LocalAddr().(*net.UDPAddr), SSRC: 1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			if _, err := st.Play(0); err != nil {
				t.Fatal(err)
			}
			var got []byte
			short := 0
			buf := make([]byte, 65536)
			for len(got) < len(data) {
				sink.SetReadDeadline(time.Now().Add(3 * time.Second))
				n, _, err := sink.ReadFrom(buf)
				if err != nil {
					t.Fatalf("after %d of %d bytes: %v", len(got), len(data), err)
				}
				if n > maxUDP1280 {
					t.Fatalf("a datagram of %d bytes on a path of MTU 1280 (at most %d fit unfragmented)", n, maxUDP1280)
				}
				payload := buf[:n]
				if c.mode == RTPUDP {
					var pk rtp.Packet
					if err := pk.Unmarshal(buf[:n]); err != nil {
						t.Fatal(err)
					}
					payload = pk.Payload
				}
				if len(payload)%TSPacketSize != 0 {
					t.Fatalf("payload of %d bytes: not whole TS packets", len(payload))
				}
				if len(got)+len(payload) < len(data) && len(payload) != 6*TSPacketSize {
					short++
				}
				got = append(got, payload...)
			}
			if !bytes.Equal(got, data) {
				t.Fatal("payload differs from the title bytes")
			}
			if short > 0 {
				t.Errorf("%d datagrams before the last carry other than 6 TS packets (all that fit): the title cut into more datagrams than needed", short)
			}
		})
	}
}

// TestESFitsTheRouteMTU plays the elementary streams over RTP/UDP to a
// client behind an IPv6 link of MTU 1280: every packet fits it. Before,
// H.264 fragments were cut at gortsplib's 1450 bytes, fragmented over
// IPv6 even on a 1500-byte link.
func TestESFitsTheRouteMTU(t *testing.T) {
	p := newNarrowPath(t)
	u, err := ListenUDP(p.host.String(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	e := &Engine{Shards: 1, UDP: u}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	src := newMemSource(prefix(t, loadClip(t), 1.5))
	tr, err := ProbeES(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	sink := p.listen(t)
	done := make(chan struct{})
	st, err := e.NewESStream(ESConfig{Source: src, Tracks: tr, Mode: RTPUDP,
		Dest:  [2]*net.UDPAddr{sink.LocalAddr().(*net.UDPAddr), nil},
		OnEnd: func(EndReason, error) { close(done) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Seek(0); err != nil {
		t.Fatal(err)
	}
	st.Resume()
	largest, count := 0, 0
	buf := make([]byte, 65536)
	for {
		sink.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, _, err := sink.ReadFrom(buf)
		if err != nil {
			break
		}
		count++
		largest = max(largest, n)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("no end of title")
	}
	if count == 0 {
		t.Fatal("no packet arrived")
	}
	if largest > maxUDP1280 {
		t.Fatalf("largest of %d packets: %d bytes on a path of MTU 1280 (at most %d fit unfragmented)", count, largest, maxUDP1280)
	}
	if largest < 1000 {
		t.Errorf("largest of %d packets %d bytes: the keyframes' fragments should fill the room", count, largest)
	}
}

// TestUDPFollowsAPathMTULearnedLater plays MP2T over RTP/UDP (UDP GSO) to
// a client on a 1500-byte IPv6 link whose route's MTU drops to 1280 a
// second into the play, as a path MTU the node learns from an ICMP Packet
// Too Big after the SETUP does: the stream goes on to the end of the
// title in datagrams that fit the new MTU. Before, its size stayed the
// one asked at SETUP and the kernel refused every GSO train of it
// (EINVAL): a vodctl play over UDP got 37 video frames in 8 s, and this
// test about half the title.
func TestUDPFollowsAPathMTULearnedLater(t *testing.T) {
	p := newPath(t, 1500)
	u, err := ListenUDP(p.host.String(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	if !u.gso {
		t.Skip("the kernel has no UDP GSO")
	}
	e := &Engine{Shards: 1, UDP: u}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	data := prefix(t, loadClip(t), 3)
	sink := p.listen(t)
	st, err := e.NewStream(StreamConfig{Source: newMemSource(data), Mode: RTPUDP,
		Dest: sink.LocalAddr().(*net.UDPAddr), SSRC: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if st.pay != PayloadSize {
		t.Fatalf("%d TS bytes a datagram on a 1500-byte link, want %d", st.pay, PayloadSize)
	}
	if _, err := st.Play(0); err != nil {
		t.Fatal(err)
	}
	got, changed, big := 0, false, 0
	buf := make([]byte, 65536)
	for got < len(data) {
		sink.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, _, err := sink.ReadFrom(buf)
		if err != nil {
			break // the end, or datagrams lost
		}
		if n > maxUDP1280 && changed {
			big++
		}
		got += n - rtpHeaderSize
		if !changed && got >= len(data)/3 {
			if err := ipCmd("-6", "route", "change", p.sub+"/64", "dev", p.hostIf, "metric", "256", "mtu", "1280"); err != nil {
				t.Fatal(err)
			}
			changed = true
		}
	}
	// The trains of the old size the kernel refuses (the ones that tell
	// the stream) go again datagram by datagram, fragmented, and a few
	// sent before the change may still arrive: as many as one tick's
	// burst of each kind.
	if lost := len(data) - got; lost > len(data)/20 {
		t.Fatalf("%d of %d bytes arrived after the route's MTU dropped to 1280", got, len(data))
	}
	if big > 2*e.MaxBurst {
		t.Errorf("%d datagrams over 1232 bytes after the route's MTU dropped to 1280", big)
	}
}
