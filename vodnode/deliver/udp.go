package deliver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// UDPServer is a node's pair of UDP ports for RTP (even) and RTCP (the next
// odd port), shared by every UDP stream: media leaves from the RTP port in
// sendmmsg batches, sender reports and BYE from the RTCP port.
type UDPServer struct {
	RTP, RTCP *net.UDPConn
	batch     interface {
		WriteBatch(ms []ipv4.Message, flags int) (int, error)
	}
	gso bool           // the kernel takes UDP_SEGMENT trains
	oob map[int][]byte // UDP_SEGMENT control messages by datagram size
}

// sendBufferBytes is the socket send buffer asked for the RTP port.
const sendBufferBytes = 8 << 20

// ListenUDP opens the RTP/RTCP port pair on host: rtpPort and rtpPort+1,
// or, when rtpPort is 0, the first free even/odd pair the system gives.
// Errors: rtpPort is odd, or the ports cannot be bound.
func ListenUDP(host string, rtpPort int) (*UDPServer, error) {
	if rtpPort%2 != 0 {
		return nil, fmt.Errorf("deliver: RTP port %d is odd", rtpPort)
	}
	if rtpPort != 0 {
		return listenPair(host, rtpPort)
	}
	var last error
	for range 64 {
		c, err := net.ListenPacket("udp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("deliver: %w", err)
		}
		p := c.LocalAddr().(*net.UDPAddr).Port
		c.Close()
		if p%2 != 0 {
			p--
		}
		u, err := listenPair(host, p)
		if err == nil {
			return u, nil
		}
		last = err
	}
	return nil, fmt.Errorf("deliver: no free RTP/RTCP port pair: %w", last)
}

func listenPair(host string, port int) (*UDPServer, error) {
	a, err := net.ListenPacket("udp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	b, err := net.ListenPacket("udp", net.JoinHostPort(host, strconv.Itoa(port+1)))
	if err != nil {
		a.Close()
		return nil, err
	}
	u := &UDPServer{RTP: a.(*net.UDPConn), RTCP: b.(*net.UDPConn)}
	u.RTP.SetWriteBuffer(sendBufferBytes)
	if ip := u.RTP.LocalAddr().(*net.UDPAddr).IP; ip.To4() != nil {
		u.batch = ipv4.NewPacketConn(u.RTP)
	} else {
		u.batch = ipv6.NewPacketConn(u.RTP)
	}
	u.oob = map[int][]byte{}
	for k := 1; k <= PacketsPerRTP; k++ {
		u.oob[k*TSPacketSize] = makeOOB(k * TSPacketSize)
		u.oob[k*TSPacketSize+rtpHeaderSize] = makeOOB(k*TSPacketSize + rtpHeaderSize)
	}
	u.gso = u.probeGSO()
	return u, nil
}

// Ports returns the RTP and RTCP port numbers; 0, 0 for a nil UDPServer.
func (u *UDPServer) Ports() (rtp, rtcp int) {
	if u == nil {
		return 0, 0 // no UDP (a node with tcp_only)
	}
	return u.RTP.LocalAddr().(*net.UDPAddr).Port, u.RTCP.LocalAddr().(*net.UDPAddr).Port
}

// Close closes both ports.
func (u *UDPServer) Close() error {
	return errors.Join(u.RTP.Close(), u.RTCP.Close())
}

// writeBatch sends ms, skipping a message the kernel refuses (failed,
// when not nil, is told its index and the error); it returns the first
// error seen.
func (u *UDPServer) writeBatch(ms []ipv4.Message, failed func(i int, err error)) error {
	var first error
	for i := 0; i < len(ms); {
		n, err := u.batch.WriteBatch(ms[i:], 0)
		if err != nil {
			if first == nil {
				first = err
			}
			if n <= 0 {
				if failed != nil {
					failed(i, err)
				}
				if tooBig(err) && ms[i].OOB != nil {
					// A GSO train the route's MTU shrank under (a path
					// MTU learned after SETUP): its datagrams go one by
					// one, which the kernel fragments, rather than lost.
					u.writeSplit(ms[i])
				}
				n = 1 // the message that failed is done
			}
		}
		i += n
	}
	return first
}

// writeSplit sends the datagrams of GSO train m (its buffers, the
// segment size in its UDP_SEGMENT control message) one by one, without
// UDP_SEGMENT: the kernel fragments one larger than the route's MTU now
// allows, which it refuses in a train. What the kernel refuses still is
// dropped (the stream resizes its datagrams before its next send).
func (u *UDPServer) writeSplit(m ipv4.Message) {
	seg := segmentSize(m.OOB)
	if seg <= 0 {
		return
	}
	var ms []ipv4.Message
	var cur [][]byte
	size := 0
	for _, b := range m.Buffers {
		cur = append(cur, b)
		if size += len(b); size >= seg {
			ms = append(ms, ipv4.Message{Buffers: cur, Addr: m.Addr})
			cur, size = nil, 0
		}
	}
	if len(cur) > 0 {
		ms = append(ms, ipv4.Message{Buffers: cur, Addr: m.Addr})
	}
	for i := 0; i < len(ms); {
		n, _ := u.batch.WriteBatch(ms[i:], 0)
		i += max(n, 1)
	}
}

// segmentSize returns the datagram size a UDP_SEGMENT control message
// (makeOOB) gives, bytes; 0 when oob is not one.
func segmentSize(oob []byte) int {
	if len(oob) < unix.CmsgLen(2) {
		return 0
	}
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	if h.Level != unix.SOL_UDP || h.Type != udpSegment {
		return 0
	}
	return int(binary.NativeEndian.Uint16(oob[unix.CmsgLen(0):]))
}

// tooBig reports whether err is the kernel refusing a datagram larger
// than the route's MTU allows: EMSGSIZE, or EINVAL for a GSO train whose
// segments do not fit it.
func tooBig(err error) bool {
	return errors.Is(err, unix.EMSGSIZE) || errors.Is(err, unix.EINVAL)
}

// udpSegment is the UDP_SEGMENT socket option/control message (Linux
// 4.18+, UDP GSO): one send carries several datagrams of one size.
const udpSegment = 103

// segmentOOB returns the UDP_SEGMENT control message for datagrams of
// size bytes (the last of a train may be shorter).
func (u *UDPServer) segmentOOB(size int) []byte {
	if b, ok := u.oob[size]; ok {
		return b
	}
	return nil
}

// makeOOB builds the UDP_SEGMENT control message of one datagram size the
// engine sends (RTP or raw, 1 to PacketsPerRTP TS packets).
func makeOOB(size int) []byte {
	b := make([]byte, unix.CmsgSpace(2))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level = unix.SOL_UDP
	h.Type = udpSegment
	h.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(b[unix.CmsgLen(0):], uint16(size))
	return b
}

// probeGSO reports whether the kernel takes a UDP_SEGMENT train on the RTP
// port: two small datagrams sent to the node's own RTCP port.
func (u *UDPServer) probeGSO() bool {
	dst := *u.RTCP.LocalAddr().(*net.UDPAddr)
	if dst.IP.IsUnspecified() {
		if dst.IP.To4() != nil {
			dst.IP = net.IPv4(127, 0, 0, 1)
		} else {
			dst.IP = net.IPv6loopback
		}
	}
	oob := makeOOB(8)
	_, _, err := u.RTP.WriteMsgUDP(make([]byte, 12), oob, &dst)
	return err == nil
}

// routeMTU returns the MTU, bytes, of the route to dst as this host knows
// it: the outgoing interface's, or a smaller path MTU learned from ICMP
// (Packet Too Big, Fragmentation Needed); 0 when it cannot tell (no
// route).
func routeMTU(dst *net.UDPAddr) int {
	c, err := net.DialUDP("udp", nil, dst)
	if err != nil {
		return 0
	}
	defer c.Close()
	rc, err := c.SyscallConn()
	if err != nil {
		return 0
	}
	mtu := 0
	rc.Control(func(fd uintptr) {
		var err error
		if dst.IP.To4() != nil {
			mtu, err = unix.GetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU)
		} else {
			mtu, err = unix.GetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_MTU)
		}
		if err != nil {
			mtu = 0
		}
	})
	return mtu
}

// udpRoom returns the UDP payload, bytes, that one datagram to dst carries
// unfragmented: the route's MTU (routeMTU; 1500 when unknown) less the IP
// header (20 bytes for IPv4, 40 for IPv6) and the UDP header (8).
func udpRoom(dst *net.UDPAddr) int {
	mtu := routeMTU(dst)
	if mtu <= 0 {
		mtu = 1500
	}
	hdr := 20
	if dst.IP.To4() == nil {
		hdr = 40
	}
	return mtu - hdr - 8
}

// tsPayload returns the TS bytes one datagram to dst carries: as many
// whole TS packets as fit the route's MTU with the RTP header when rtp is
// set, at most PacketsPerRTP (7, 1316 bytes), at least one.
func tsPayload(dst *net.UDPAddr, rtp bool) int {
	room := udpRoom(dst)
	if rtp {
		room -= rtpHeaderSize
	}
	return max(1, min(PacketsPerRTP, room/TSPacketSize)) * TSPacketSize
}

// esPayloadMax returns the largest RTP payload, bytes, of an
// elementary-stream packet to dst: what fits the route's MTU after the
// RTP header, at most gortsplib's default of 1450, at least
// esPayloadFloor; over TCP (dst nil), 1450.
func esPayloadMax(dst *net.UDPAddr) int {
	const def = 1450
	if dst == nil {
		return def
	}
	return max(esPayloadFloor, min(def, udpRoom(dst)-rtpHeaderSize))
}

// esPayloadFloor is the smallest RTP payload, bytes, esPayloadMax gives:
// what a datagram of 576 bytes (the size every IPv4 host reassembles,
// RFC 791) holds after the IPv4, UDP and RTP headers. A route reported
// narrower than that (never seen: IPv6 links are at least 1280 bytes)
// has its packets fragmented rather than cut into slivers.
const esPayloadFloor = 576 - 20 - 8 - rtpHeaderSize

// streamPayload returns the TS bytes one packet of an MP2T stream set up
// with cfg carries: PayloadSize over TCP, tsPayload over UDP.
func streamPayload(cfg StreamConfig) int {
	if cfg.Mode == RTPTCP {
		return PayloadSize
	}
	return tsPayload(cfg.Dest, cfg.Mode == RTPUDP)
}
