package main

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	v1 "vodcluster/proto/vodcluster/v1"
)

// downAdmin lists n1 registered and n2 known from the store, not
// registered since the manager started; n2 has no stored setting.
type downAdmin struct{ v1.UnimplementedAdminServer }

func (downAdmin) ListNodes(context.Context, *v1.ListNodesRequest) (*v1.ListNodesResponse, error) {
	return &v1.ListNodesResponse{Nodes: []*v1.NodeInfo{{NodeId: "n1", RtspAddr: "127.0.0.1:1", Alive: true}}, NotRegistered: []string{"n2"}}, nil
}

func (downAdmin) SetNode(context.Context, *v1.SetNodeRequest) (*v1.NodeInfo, error) {
	return nil, status.Error(codes.NotFound, "no stored setting")
}

// vodctl nodes names the nodes not registered since the manager started,
// and vodctl node of one says so rather than "not registered and no
// stored setting".
func TestNodesShowTheNodesNotRegistered(t *testing.T) {
	out := runVodctl(t, downAdmin{}, "nodes")
	if !strings.Contains(out, "Not registered since the manager started (down as far as it knows): n2") {
		t.Errorf("vodctl nodes:\n%s", out)
	}
	err := runVodctlFails(t, downAdmin{}, "node", "n2")
	if !strings.Contains(err, `node "n2" has not registered since the manager started`) || !strings.Contains(err, "vodctl node forget n2") {
		t.Errorf("vodctl node n2: %s", err)
	}
}
