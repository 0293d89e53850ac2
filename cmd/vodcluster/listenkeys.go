package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"

	"vodcluster/acm"
	"vodcluster/cdp"
)

// listenKey is a configuration key of an address a process listens on,
// with the address it takes (the default when the key is left out).
type listenKey struct {
	key  string // rtsp_listen, rtp_port, ...
	addr string // host:port, or ":port" for every address
	udp  bool   // an RTP/RTCP pair: the port and the next one, over UDP
}

// namingListenKey names the configuration file and key of the listener
// err failed to open (a port in use, an address not on this host), as
// the other configuration errors do: "--config FILE: KEY VALUE: listen tcp
// ...: bind: address already in use". Before, the process said only
// "vodnode: listen udp 127.0.0.1:6970: bind: ..." and left the operator
// to find which of its keys held the port. err is returned as it is when
// it is not a listen error or no key matches its address.
func namingListenKey(path string, err error, keys ...listenKey) error {
	var oe *net.OpError
	if path == "" || !errors.As(err, &oe) || oe.Op != "listen" || oe.Addr == nil {
		return err
	}
	host, port, splitErr := net.SplitHostPort(oe.Addr.String())
	if splitErr != nil {
		return err
	}
	ip := net.ParseIP(host)
	udp := oe.Net == "udp" || oe.Net == "udp4" || oe.Net == "udp6"
	for _, k := range keys {
		if k.udp != udp {
			continue
		}
		kh, kp, e := net.SplitHostPort(k.addr)
		if e != nil {
			continue
		}
		if kip := net.ParseIP(kh); kip != nil && ip != nil && !kip.Equal(ip) {
			continue // another address of the host ("" or a name: by its port)
		}
		value := k.addr
		match := kp == port
		if k.udp {
			p, _ := strconv.Atoi(kp)
			value = kp
			match = match || strconv.Itoa(p+1) == port // the RTCP port
		}
		if match {
			return fmt.Errorf("--config %s: %s %s: %w", path, k.key, value, err)
		}
	}
	return err
}

// listenKeys are the manager's listening keys, for namingListenKey.
func (c ManagerConfig) listenKeys() []listenKey {
	k := []listenKey{
		{key: "rtsp_listen", addr: orString(c.RTSPListen, acm.DefaultRTSPListen)},
		{key: "http_listen", addr: orString(c.HTTPListen, acm.DefaultHTTPListen)},
		{key: "grpc_listen", addr: orString(c.GRPCListen, acm.DefaultGRPCListen)},
	}
	if c.MetricsListen != "" {
		k = append(k, listenKey{key: "metrics_listen", addr: c.MetricsListen})
	}
	if c.RTSPTLSCert != "" {
		k = append(k, listenKey{key: "rtsps_listen", addr: orString(c.RTSPSListen, acm.DefaultRTSPSListen)})
	}
	return k
}

// listenKeys are the node's listening keys, for namingListenKey.
func (c NodeConfig) listenKeys() []listenKey {
	k := []listenKey{
		{key: "rtsp_listen", addr: orString(c.RTSPListen, defaultNodeRTSPListen)},
		{key: "http_listen", addr: orString(c.HTTPListen, defaultNodeHTTPListen)},
	}
	if c.MetricsListen != "" {
		k = append(k, listenKey{key: "metrics_listen", addr: c.MetricsListen})
	}
	if c.RTSPTLSCert != "" {
		k = append(k, listenKey{key: "rtsps_listen", addr: orString(c.RTSPSListen, defaultNodeRTSPSListen)})
	}
	if c.RTPPort > 0 {
		k = append(k, listenKey{key: "rtp_port", addr: net.JoinHostPort("", strconv.Itoa(c.RTPPort)), udp: true})
	}
	return k
}

// listenKeys are the origin's listening keys, for namingListenKey.
func (c CDPConfig) listenKeys() []listenKey {
	k := []listenKey{{key: "listen", addr: orString(c.Listen, cdp.DefaultListen)}}
	if c.MetricsListen != "" {
		k = append(k, listenKey{key: "metrics_listen", addr: c.MetricsListen})
	}
	return k
}
