package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"vodcluster/acm"
	"vodcluster/cdp"
	"vodcluster/cmd/internal/yamlcfg"
)

// listenKey is a configuration key of an address a process listens on,
// with the address it takes (the default when the key is left out).
type listenKey struct {
	key  string // rtsp_listen, rtp_port, ...
	addr string // host:port, or ":port" for every address
	udp  bool   // an RTP/RTCP pair: the port and the next one, over UDP
}

// listenKeys are a section's listening keys with the file it was read
// from, for namingListenKey.
type listenKeys struct {
	file    *yamlcfg.File // nil: none (the key is named without a line)
	section string        // manager, node, cdp
	keys    []listenKey
}

// namingListenKey names the configuration file, the line and the key of
// the listener err failed to open (a port in use, an address not on this
// host), as the other configuration errors do: "--config FILE: line 4:
// rtsp_listen 127.0.0.1:8555: listen tcp 127.0.0.1:8555: bind: address
// already in use" (without a line for a key the file leaves out: its
// default). Before, the process said only "vodnode: listen udp
// 127.0.0.1:6970: bind: ..." and left the operator to find which of its
// keys held the port; then, the key named, it still gave no line and
// kept the component's own prefixes ("vodnode: rtsp listen: ...") inside.
// The error wraps the listen error (errors.Is finds
// syscall.EADDRINUSE). err is returned as it is when it is not a listen
// error or no key matches its address.
func namingListenKey(path string, err error, ks listenKeys) error {
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
	for _, k := range ks.keys {
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
			return fmt.Errorf("--config %s: %s: %w", path, ks.file.Show(ks.section+"."+k.key, k.key, value), oe)
		}
	}
	return err
}

// listenKeys are the manager's listening keys, for namingListenKey.
func (c ManagerConfig) listenKeys() listenKeys {
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
	return listenKeys{file: c.file, section: "manager", keys: k}
}

// listenKeys are the node's listening keys, for namingListenKey.
func (c NodeConfig) listenKeys() listenKeys {
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
	return listenKeys{file: c.file, section: "node", keys: k}
}

// listenKeys are the origin's listening keys, for namingListenKey.
func (c CDPConfig) listenKeys() listenKeys {
	k := []listenKey{{key: "listen", addr: orString(c.Listen, cdp.DefaultListen)}}
	if c.MetricsListen != "" {
		k = append(k, listenKey{key: "metrics_listen", addr: c.MetricsListen})
	}
	return listenKeys{file: c.file, section: "cdp", keys: k}
}

// namingListenFlag names the flag of up whose port err failed to listen
// on (another process holds it), as up's other flag errors do: "up:
// --grpc-port 9090: listen tcp 127.0.0.1:9090: bind: address already in
// use". Before, up said "manager: acm: grpc: listen tcp ...", with the
// components' own prefixes and no flag. The error wraps the listen error
// (errors.Is finds syscall.EADDRINUSE). err is returned as it is when it
// is not a listen error or no flag gave its port (0: any free one, which
// up's origin and nodes take).
func namingListenFlag(err error, o clusterOptions) error {
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "listen" || oe.Addr == nil || strings.HasPrefix(oe.Net, "udp") {
		return err
	}
	_, port, splitErr := net.SplitHostPort(oe.Addr.String())
	if splitErr != nil {
		return err
	}
	for _, f := range []struct {
		name string
		port int
	}{{"rtsp-port", o.RTSPPort}, {"http-port", o.HTTPPort}, {"grpc-port", o.GRPCPort}, {"metrics-port", o.MetricsPort}} {
		if f.port > 0 && strconv.Itoa(f.port) == port {
			return fmt.Errorf("up: --%s %d: %w", f.name, f.port, oe)
		}
	}
	return err
}
