package main

import (
	"fmt"
	"log/slog"
	"net"
	"strings"

	"github.com/spf13/cobra"

	"vodcluster/vodnode"
)

func nodeCmd() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Run a VOD node: RTSP/RTP and HTTP delivery of MPEG-TS titles, filled from the origin",
		RunE: func(*cobra.Command, []string) error {
			h := catchHangups() // from now: a SIGHUP while the node starts does not kill it
			defer h.stop()
			cfg, err := loadConfig(path)
			if err != nil {
				return err
			}
			if err := cfg.needSection("node"); err != nil {
				return err
			}
			if err := cfg.Node.validate(); err != nil {
				return inConfig(path, err)
			}
			if err := cfg.Node.checkAdvertised(); err != nil {
				return inConfig(path, err)
			}
			n, err := newNode(cfg.Node)
			if err != nil {
				return inConfig(path, err)
			}
			logStartWarnings(cfg.Node.startWarnings())
			return namingListenKey(path, runUntilSignal(n, func() { nodeHangups(h, path) }), cfg.Node.listenKeys())
		},
	}
	cmd.Flags().StringVarP(&path, "config", "c", "", "configuration file (YAML, section node:)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// nodeHangups makes every SIGHUP h catches, one caught before included,
// log that the node has nothing to reload, and the node goes on serving: its
// TLS certificates are already read again when their files change, and
// every other setting takes a restart. Without it a SIGHUP (pkill -HUP
// vodcluster on a host that runs a manager or an origin too, which reload
// on it) ended the node without a word and cut its viewers.
func nodeHangups(h *hangups, configPath string) {
	h.handle("nothing to reload, serving on (TLS certificates are read again when their files change; other node settings take a restart)",
		"config", configPath, func() error { return nil })
}

// checkAdvertised refuses an advertise_host that means every address
// (0.0.0.0, ::) or is no bare host (a port, brackets, a scheme), and a node whose RTSP, HTTP or RTSPS listener takes every
// address (":8555", "0.0.0.0:8555", "[::]:8555", the default) without an
// advertise_host: what it would announce names no host a viewer can be
// redirected to, and the manager refuses its registration for as long as
// it runs ("rtsp_addr \"[::]:8555\": want host:port with a host clients
// can reach", logged as a manager link down).
func (c NodeConfig) checkAdvertised() error {
	if ip := net.ParseIP(c.AdvertiseHost); ip != nil && ip.IsUnspecified() {
		return fmt.Errorf("advertise_host %q means every address, not one viewers can be redirected to: give the node's name or address as the set-top boxes reach it", c.AdvertiseHost)
	}
	if h := c.AdvertiseHost; strings.ContainsAny(h, "[]/@ \t") || (strings.Contains(h, ":") && net.ParseIP(h) == nil) {
		// The node adds each listener's port (rtsp_addr "[vod-01:8555]:8555"
		// for "vod-01:8555"), which no viewer reaches.
		return fmt.Errorf("advertise_host %q: want a host name or an IP address alone (vod-01.example.net, 192.0.2.7, 2001:db8::7), without port, brackets or scheme: the node adds each listener's port", h)
	}
	if c.AdvertiseHost != "" {
		return nil
	}
	listens := []struct{ key, addr string }{
		{"rtsp_listen", orString(c.RTSPListen, defaultNodeRTSPListen)},
		{"http_listen", orString(c.HTTPListen, defaultNodeHTTPListen)},
	}
	if c.RTSPTLSCert != "" && c.RTSPTLSKey != "" { // an RTSPS listener, announced too (rtsps_addr)
		listens = append(listens, struct{ key, addr string }{"rtsps_listen", orString(c.RTSPSListen, defaultNodeRTSPSListen)})
	}
	for _, l := range listens {
		host, _, err := net.SplitHostPort(l.addr)
		if err == nil && (host == "" || net.ParseIP(host).IsUnspecified()) {
			return fmt.Errorf("advertise_host is required: %s %q listens on every address of the host, which names none the manager can send viewers to; give advertise_host, the node's name or address as the set-top boxes reach it", l.key, l.addr)
		}
	}
	return nil
}

// Node defaults for a production node.
const (
	defaultNodeRTSPListen = ":8555"
	defaultNodeHTTPListen = ":8081"
	// defaultNodeRTSPSListen is the node's RTSPS port when it has an RTSPS
	// certificate (rtsp_tls_cert_file) and no rtsps_listen.
	defaultNodeRTSPSListen = ":8323"
	defaultNodeEgressBps   = 1_000_000_000   // 1 Gbit/s
	defaultNodeDiskBytes   = 100_000_000_000 // 100 GB
)

func newNode(c NodeConfig) (*vodnode.Node, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	secret, err := readSecret(c.SecretFile)
	if err != nil {
		return nil, err
	}
	managerCreds, err := clientTLS("manager", c.ManagerTLS, c.ManagerTLSCA)
	if err != nil {
		return nil, err
	}
	originCreds, err := clientTLS("origin", c.OriginTLS, c.OriginTLSCA)
	if err != nil {
		return nil, err
	}
	httpTLS, err := httpsTLS("http_tls_cert_file", c.HTTPTLSCert, "http_tls_key_file", c.HTTPTLSKey)
	if err != nil {
		return nil, err
	}
	rtspTLS, err := serverTLSConfig("rtsp_tls_cert_file", c.RTSPTLSCert, "rtsp_tls_key_file", c.RTSPTLSKey)
	if err != nil {
		return nil, err
	}
	rtspsListen := "" // rtsps_listen without a certificate: validate
	if rtspTLS != nil {
		rtspsListen = orString(c.RTSPSListen, defaultNodeRTSPSListen)
	}
	egress := c.EgressBps
	if egress == 0 {
		egress = defaultNodeEgressBps
	}
	disk := c.DiskBytes
	if disk == 0 {
		disk = defaultNodeDiskBytes
	}
	return &vodnode.Node{
		ID:              c.ID,
		DataDir:         c.DataDir,
		RTSPListen:      orString(c.RTSPListen, defaultNodeRTSPListen),
		HTTPListen:      orString(c.HTTPListen, defaultNodeHTTPListen),
		MetricsListen:   c.MetricsListen,
		RTPPort:         c.RTPPort,
		TCPOnly:         c.TCPOnly,
		AdvertiseHost:   c.AdvertiseHost,
		Capacity:        vodnode.Capacity{EgressBps: egress, MaxSessions: c.MaxSessions, DiskBytes: disk},
		Weight:          c.Weight,
		ManagerAddr:     c.Manager,
		OriginAddr:      c.Origin,
		ManagerCreds:    managerCreds,
		OriginCreds:     originCreds,
		Secret:          secret,
		SessionTimeout:  c.SessionTimeout,
		PauseTimeout:    c.PauseTimeout,
		HTTPTLS:         httpTLS,
		RTSPTLS:         rtspTLS,
		RTSPSListen:     rtspsListen,
		Site:            c.Site,
		Evictor:         c.Eviction,
		FillRetryFor:    c.FillRetryFor,
		OriginRanges:    c.OriginRanges,
		MaxConnsPerAddr: c.MaxConnsPerAddr,
		Logger:          slog.Default().With("component", "node"),
	}, nil
}
