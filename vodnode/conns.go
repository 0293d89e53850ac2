package vodnode

import "sync/atomic"

// DefaultMaxConnsPerAddr is Node.MaxConnsPerAddr's default: the open
// connections of one client address (an IPv6 client's /64) over the
// node's RTSP, RTSPS and HTTP listeners, as the front door's
// (acm.DefaultMaxConnsPerAddr): room for the boxes of many households
// behind one carrier-grade NAT address, each with an RTSP connection or
// a few HTTP ones, while one address cannot hold thousands open.
const DefaultMaxConnsPerAddr = 256

// refusedCounts counts the connections refused at accept for their
// client address's max_conns_per_addr, by listener (rtsp, rtsps, http),
// for vodnode_connections_refused_total.
type refusedCounts struct{ rtsp, rtsps, http atomic.Uint64 }

// add counts one refusal on listener; connlimit.Config.Refused.
func (r *refusedCounts) add(listener string) {
	switch listener {
	case "rtsp":
		r.rtsp.Add(1)
	case "rtsps":
		r.rtsps.Add(1)
	case "http":
		r.http.Add(1)
	}
}
