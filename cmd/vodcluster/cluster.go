package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"vodcluster/acm"
	"vodcluster/acm/boss"
	"vodcluster/cdp"
	"vodcluster/cdp/samples"
	"vodcluster/lsm"
	"vodcluster/proto/token"
	v1 "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
	"vodcluster/vodnode"
)

// clusterOptions describes a whole cluster in one process on loopback.
type clusterOptions struct {
	DataDir  string // state of every part lives below it
	Host     string // listen host, "127.0.0.1"
	RTSPPort int    // front door RTSP port (0 = any)
	HTTPPort int    // front door HTTP port (0 = any)
	GRPCPort int    // manager gRPC port (0 = any)
	// MetricsPort is the manager's Prometheus /metrics port (0 = any, -1
	// = no metrics); the origin's and the nodes' take any free port.
	MetricsPort int
	Nodes       int   // VOD nodes
	NodeEgress  int64 // bit/s per node
	NodeDisk    int64 // bytes per node
	Users       []boss.User
	Policy      string
	// MaxSessionsPerUser caps each subscriber's live sessions
	// (acm.Manager.MaxSessionsPerUser: 0 = acm's default, -1 = no cap).
	MaxSessionsPerUser int
	// RequestsPerUser is the manager's (acm.Manager: 0 = acm's default,
	// -1 = no limit); MaxConnsPerAddr the manager's and each node's
	// (acm.Manager, vodnode.Node: 0 = their default, -1 = no limit).
	RequestsPerUser int
	MaxConnsPerAddr int

	OriginSetupDelay   time.Duration // per origin transfer
	OriginRateBps      int64         // per origin transfer, bit/s
	OriginMaxTransfers int           // concurrent origin transfers
	// MaxFillsPerNode is the fills in progress on a node beyond which the
	// planner's and the operator's prefetches wait (0: the storage
	// default, smm.DefaultReplicatorConfig).
	MaxFillsPerNode int
	// StoragePlanner is the manager's storage planner (smm.PlannerNone:
	// fills on demand only); "" = the storage policy's default.
	StoragePlanner string

	QueueDeadline time.Duration
	Heartbeat     time.Duration
	// RestoreGrace is the manager's restore_grace (0: acm's default):
	// how long after its start it waits for nodes to register before it
	// refuses at once a request none of them could take.
	RestoreGrace time.Duration
	// CatalogRefresh is how often the manager reads the origin's catalog
	// (0: acm.DefaultCatalogRefresh).
	CatalogRefresh time.Duration
	// OffPeak is the planner's off-peak window, when it prefetches with
	// every free origin channel (zero: the storage default, 02:00-08:00
	// UTC; Start == End, not zero: never).
	OffPeak smm.Window
	// PortalSecretFile, when set, is the HMAC secret of the subscriber
	// tokens the front door accepts (manager.subscriber_tokens.secret_file;
	// created with a random secret when missing). Empty: no tokens.
	PortalSecretFile string
	// SessionRecordsFile, when set, gets a JSON line per ended session
	// (manager.session_records_file).
	SessionRecordsFile string
	// HTTPTLS, when set, makes the front door's and the nodes' HTTP
	// HTTPS (http_tls_cert_file).
	HTTPTLS *tls.Config
	// RTSPTLS, when set, adds RTSPS listeners on any free port to the
	// front door and the nodes (rtsp_tls_cert_file).
	RTSPTLS *tls.Config
	Logger  *slog.Logger
}

// cluster is a running in-process cluster: origin, manager, nodes.
type cluster struct {
	opts    clusterOptions
	secret  []byte
	origin  *cdp.Server
	manager *acm.Manager
	nodes   []*vodnode.Node
}

// startCluster starts the origin with the sample titles, the manager and
// the nodes, all on opts.Host; it is all-or-nothing.
func startCluster(opts clusterOptions) (_ *cluster, err error) {
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c := &cluster{opts: opts}
	if c.secret, err = clusterSecret(filepath.Join(opts.DataDir, "secret")); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	originDir := filepath.Join(opts.DataDir, "cdp")
	if err := samples.WriteTo(originDir); err != nil {
		return nil, err
	}
	metrics := func(port int) string {
		if opts.MetricsPort < 0 {
			return ""
		}
		return hostPort(opts.Host, port)
	}
	c.origin = &cdp.Server{
		Dir:             originDir,
		Listen:          net.JoinHostPort(opts.Host, "0"),
		MetricsListen:   metrics(0),
		SetupDelay:      opts.OriginSetupDelay,
		MaxTransfers:    opts.OriginMaxTransfers,
		TransferRateBps: opts.OriginRateBps,
		Logger:          opts.Logger,
		Credential:      token.OriginCredential(c.secret),
	}
	if err := c.origin.Start(); err != nil {
		return nil, fmt.Errorf("origin: %w", err)
	}
	users, err := boss.NewFile(acm.DefaultRealm, opts.Users)
	if err != nil {
		return nil, err
	}
	sched := lsm.DefaultConfig()
	if opts.Policy != "" {
		sched.Policy = opts.Policy
	}
	if opts.Heartbeat > 0 {
		sched.HeartbeatInterval = opts.Heartbeat
	}
	c.manager = &acm.Manager{
		RTSPListen:    hostPort(opts.Host, opts.RTSPPort),
		HTTPListen:    hostPort(opts.Host, opts.HTTPPort),
		GRPCListen:    hostPort(opts.Host, opts.GRPCPort),
		MetricsListen: metrics(opts.MetricsPort),
		DataDir:       filepath.Join(opts.DataDir, "manager"),
		OriginAddr:    c.origin.Addr(),
		Secret:        c.secret,
		BOSS:          users,
		QueueDeadline: opts.QueueDeadline,
		Scheduler:     sched,
		// 0: acm's default.
		MaxSessionsPerUser: opts.MaxSessionsPerUser,
		RequestsPerUser:    opts.RequestsPerUser,
		MaxConnsPerAddr:    opts.MaxConnsPerAddr,
		// The planner counts on the origin's channels.
		OriginChannels: opts.OriginMaxTransfers,
		Logger:         opts.Logger.With("component", "manager"),
	}
	c.manager.Replicator.MaxFillsPerNode = opts.MaxFillsPerNode
	c.manager.StoragePlanner = opts.StoragePlanner
	c.manager.CatalogRefresh = opts.CatalogRefresh
	c.manager.RestoreGrace = opts.RestoreGrace
	c.manager.Replicator.OffPeak = opts.OffPeak
	c.manager.SessionRecordsFile = opts.SessionRecordsFile
	c.manager.HTTPTLS = opts.HTTPTLS
	if opts.RTSPTLS != nil {
		c.manager.RTSPTLS, c.manager.RTSPSListen = opts.RTSPTLS, hostPort(opts.Host, 0)
	}
	if opts.PortalSecretFile != "" {
		if _, err := clusterSecret(opts.PortalSecretFile); err != nil {
			return nil, fmt.Errorf("portal secret: %w", err)
		}
		tokens, err := SubscriberTokensConfig{SecretFile: opts.PortalSecretFile}.subscriberTokens()
		if err != nil {
			return nil, err
		}
		c.manager.SubscriberTokens = tokens
	}
	if err := c.manager.Start(); err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	for i := 1; i <= opts.Nodes; i++ {
		id := fmt.Sprintf("node-%d", i)
		n := c.newNode(id)
		if err := n.Start(); err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		c.nodes = append(c.nodes, n)
	}
	return c, nil
}

// newNode returns node id of the cluster, not started: its data in
// DataDir/id, any free ports on the cluster's host. A node made again with
// the same id (after Close) finds its disk as it was left.
func (c *cluster) newNode(id string) *vodnode.Node {
	opts := c.opts
	metrics := ""
	if opts.MetricsPort >= 0 {
		metrics = hostPort(opts.Host, 0)
	}
	rtsps := ""
	if opts.RTSPTLS != nil {
		rtsps = hostPort(opts.Host, 0)
	}
	return &vodnode.Node{
		ID:                id,
		DataDir:           filepath.Join(opts.DataDir, id),
		RTSPListen:        net.JoinHostPort(opts.Host, "0"),
		HTTPListen:        net.JoinHostPort(opts.Host, "0"),
		MetricsListen:     metrics,
		Capacity:          vodnode.Capacity{EgressBps: opts.NodeEgress, DiskBytes: opts.NodeDisk},
		ManagerAddr:       c.manager.GRPCAddr(),
		OriginAddr:        c.origin.Addr(),
		Secret:            c.secret,
		HeartbeatInterval: opts.Heartbeat,
		HTTPTLS:           opts.HTTPTLS,
		RTSPTLS:           opts.RTSPTLS,
		RTSPSListen:       rtsps,
		MaxConnsPerAddr:   opts.MaxConnsPerAddr,
		Logger:            opts.Logger.With("component", "node"),
	}
}

func hostPort(host string, port int) string {
	return net.JoinHostPort(host, fmt.Sprint(port))
}

// waitNodes waits until the manager reports want live nodes, or ctx ends.
func (c *cluster) waitNodes(ctx context.Context, want int) error {
	conn, err := grpc.NewClient(c.manager.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	admin := v1.NewAdminClient(conn)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if r, err := admin.ListNodes(ctx, &v1.ListNodesRequest{}); err == nil {
			alive := 0
			for _, n := range r.Nodes {
				if n.Alive {
					alive++
				}
			}
			if alive >= want {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d nodes: %w", want, ctx.Err())
		case <-tick.C:
		}
	}
}

// Close stops the nodes, the manager and the origin, in that order.
func (c *cluster) Close() error {
	var errs []error
	for i := len(c.nodes) - 1; i >= 0; i-- {
		errs = append(errs, c.nodes[i].Close())
	}
	c.nodes = nil
	if c.manager != nil {
		errs = append(errs, c.manager.Close())
		c.manager = nil
	}
	if c.origin != nil {
		errs = append(errs, c.origin.Close())
		c.origin = nil
	}
	return errors.Join(errs...)
}

// clusterSecret returns the token key kept in path, making a random one
// (32 bytes, hex) the first time, so that a cluster restarted on the same
// data directory honours the tokens it issued before.
func clusterSecret(path string) ([]byte, error) {
	if s, err := readSecret(path); err == nil {
		return s, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		return nil, err
	}
	return key, nil
}

// tempDataDir makes a fresh data directory; the returned func removes it.
func tempDataDir() (string, func(), error) {
	d, err := os.MkdirTemp("", "vodcluster-up-")
	if err != nil {
		return "", nil, err
	}
	return d, func() { os.RemoveAll(d) }, nil
}
