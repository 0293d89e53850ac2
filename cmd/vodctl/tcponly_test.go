package main

import (
	"testing"

	v1 "vodcluster/proto/vodcluster/v1"
)

// vodctl nodes shows a UDP column when a node sends over TCP only ("no"
// for it, "yes" for the others), none otherwise.
func TestNodesTableShowsTCPOnly(t *testing.T) {
	lastColumns(t, []*v1.NodeInfo{
		{NodeId: "n1", RtspAddr: "127.0.0.1:1"},
		{NodeId: "n2", RtspAddr: "127.0.0.1:2", TcpOnly: true},
	}, []string{"UDP"}, map[string]string{"n1": "yes", "n2": "no"})
}
