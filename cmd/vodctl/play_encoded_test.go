package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"vodcluster/acm"
	"vodcluster/acm/boss"
	"vodcluster/lsm"
	v1 "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// A password with an '@' in it, percent-encoded as vodctl play's refusal
// says to write it (rtsp://ana:p%40ss@HOST/vod/TITLE), was refused all
// the same: "the password has characters a URL cannot carry as they are
// ... @ as %40", as if the URL had two '@' before its host, for the
// password as decoded had one. Such a subscriber could not play at all.
// It plays, against a real origin, front door and node, its password
// shown in no form.
func TestPlayPercentEncodedAtInPassword(t *testing.T) {
	dir := t.TempDir()
	origin := startOrigin(t, dir)
	ana, err := boss.NewUserCost("ana", "p@ss w/rd", acm.DefaultRealm, []string{boss.AllPackages}, 4)
	if err != nil {
		t.Fatal(err)
	}
	users, err := boss.NewFile(acm.DefaultRealm, []boss.User{ana})
	if err != nil {
		t.Fatal(err)
	}
	sched := lsm.DefaultConfig()
	sched.HeartbeatInterval = 200 * time.Millisecond
	m := &acm.Manager{RTSPListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", GRPCListen: "127.0.0.1:0",
		DataDir: filepath.Join(dir, "manager"), OriginAddr: origin.Addr(), Secret: testSecret, BOSS: users,
		Scheduler: sched, StoragePlanner: smm.PlannerNone, Logger: quietLog}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	startNode(t, dir, "node-1", m, origin)
	raw := "rtsp://ana:p%40ss%20w%2Frd@" + m.RTSPAddr() + "/vod/sample-001"
	cc, err := grpc.NewClient(m.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	admin := v1.NewAdminClient(cc)
	waitUntil(t, "node-1 alive", func() bool {
		r, err := admin.ListNodes(context.Background(), &v1.ListNodesRequest{})
		return err == nil && len(r.Nodes) == 1 && r.Nodes[0].Alive
	})
	var stdout, stderr bytes.Buffer
	code := run([]string{"play", "--duration", "500ms", raw}, &stdout, &stderr)
	all := stdout.String() + stderr.String()
	if code != 0 || !strings.HasPrefix(stdout.String(), "played rtsp://ana:xxxxx@"+m.RTSPAddr()+"/vod/sample-001 from ") {
		t.Fatalf("play %s: exit status %d\n%s\nwant 0, played", raw, code, all)
	}
	for _, pw := range []string{"p@ss", "p%40ss", "w/rd", "w%2Frd"} {
		if strings.Contains(all, pw) {
			t.Errorf("the password shows (%q):\n%s", pw, all)
		}
	}
}
