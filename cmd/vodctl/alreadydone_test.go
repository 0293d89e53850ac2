package main

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	v1 "vodcluster/proto/vodcluster/v1"
)

// doneAdmin answers as a manager does a change already in effect
// (v1.AlreadyDone) for a known name, and plain NOT_FOUND for an unknown
// one ("ghost", "node-9").
type doneAdmin struct{ v1.UnimplementedAdminServer }

func (doneAdmin) Unpin(_ context.Context, r *v1.PlacementRequest) (*v1.PlacementAck, error) {
	if r.NodeId == "node-9" {
		return nil, status.Errorf(codes.NotFound, "node %q is not registered", r.NodeId)
	}
	return nil, v1.AlreadyDone(`title "T" is not pinned to node ` + r.NodeId)
}

func (doneAdmin) SuspendSubscriber(_ context.Context, r *v1.SuspendRequest) (*v1.Suspension, error) {
	if r.User == "ghost" {
		return nil, status.Error(codes.NotFound, `subscriber "ghost" is not suspended (the users file has no such subscriber)`)
	}
	return nil, v1.AlreadyDone(`subscriber "demo" is not suspended`)
}

func (doneAdmin) EndSessions(_ context.Context, r *v1.EndSessionsRequest) (*v1.EndSessionsResponse, error) {
	if r.User == "ghost" {
		return nil, status.Error(codes.NotFound, `subscriber "ghost" has no live session (the users file has no such subscriber)`)
	}
	return nil, v1.AlreadyDone(`subscriber "demo" has no live session`)
}

func (doneAdmin) Evict(_ context.Context, r *v1.PlacementRequest) (*v1.PlacementAck, error) {
	return nil, v1.AlreadyDone(`node "` + r.NodeId + `" does not hold title "` + r.TitleId + `"`)
}

func (doneAdmin) Pin(_ context.Context, r *v1.PlacementRequest) (*v1.PlacementAck, error) {
	return &v1.PlacementAck{TitleId: r.TitleId, NodeId: r.NodeId, Message: "already pinned"}, nil
}

// ListNodes lists node-2 draining with weight 100, node-1 in service.
func (doneAdmin) ListNodes(context.Context, *v1.ListNodesRequest) (*v1.ListNodesResponse, error) {
	return &v1.ListNodesResponse{Nodes: []*v1.NodeInfo{
		{NodeId: "node-1", RtspAddr: "a:554", Alive: true, Weight: 100},
		{NodeId: "node-2", RtspAddr: "b:554", Alive: true, Draining: true, Weight: 100},
	}}, nil
}

// SetNode answers the node as changed (weight 100 unless given).
func (doneAdmin) SetNode(_ context.Context, r *v1.SetNodeRequest) (*v1.NodeInfo, error) {
	n := &v1.NodeInfo{NodeId: r.NodeId, RtspAddr: "b:554", Alive: true, Draining: r.GetDraining(), Weight: 100}
	if r.Weight != nil {
		n.Weight = *r.Weight
	}
	return n, nil
}

func (doneAdmin) ClearLoginFailures(_ context.Context, r *v1.ClearLoginFailuresRequest) (*v1.ClearLoginFailuresResponse, error) {
	return &v1.ClearLoginFailuresResponse{UserUnknown: r.User == "ghost"}, nil
}

// A change whose end state already holds (unpin of a title not pinned
// there, a lift of a subscriber not suspended, the end of a subscriber's
// sessions when none is live, a pin already made, a drain of a node
// draining, failed logins forgotten when none are counted) exits 0 with
// one line "nothing to do: " saying what holds: a script may repeat it
// (pin, node --drain and unlock printed a line of their own, read as a
// change made). An unknown node or subscriber is still an error (exit status 1).
func TestRepeatedChangeIsNoError(t *testing.T) {
	run := vodctlAgainst(t, doneAdmin{})
	for args, want := range map[string]string{
		"unpin T node-1":                   `nothing to do: title "T" is not pinned to node node-1` + "\n",
		"suspend demo --lift":              `nothing to do: subscriber "demo" is not suspended` + "\n",
		"sessions end --user demo":         `nothing to do: subscriber "demo" has no live session` + "\n",
		"--json unpin T node-1":            `{"nothing_to_do":true,"message":"title \"T\" is not pinned to node node-1"}` + "\n",
		"unlock demo":                      `nothing to do: subscriber "demo" has no failed logins counted` + "\n",
		"unlock ghost":                     `nothing to do: subscriber "ghost" has no failed logins counted` + "\nwarning: the users file has no subscriber \"ghost\" (check the name)\n",
		"evict T node-3":                   `nothing to do: node "node-3" does not hold title "T"` + "\n",
		"pin T node-3":                     `nothing to do: title "T" is already pinned to node node-3` + "\n",
		"pin T":                            `nothing to do: title "T" is already pinned to the cluster` + "\n",
		"node node-2 --drain":              "nothing to do: node node-2 is already draining\n",
		"node node-1 --undrain":            "nothing to do: node node-1 is already in service (not draining)\n",
		"node node-2 --drain --weight 100": "nothing to do: node node-2 is already draining, already has weight 100\n",
		"node node-1 --drain":              "node node-1: alive true, draining true, weight 100, overload default (the manager's), 0 sessions\n",
		"node node-2 --drain --weight 50":  "node node-2: alive true, draining true, weight 50, overload default (the manager's), 0 sessions\n",
	} {
		out, err := run(strings.Fields(args)...)
		if err != nil || out != want {
			t.Errorf("vodctl %s: err %v, output\n%q, want\n%q", args, err, out, want)
		}
	}
	for args, want := range map[string]string{
		"unpin T node-9":            `node "node-9" is not registered [NOT_FOUND]`,
		"suspend ghost --lift":      `(the users file has no such subscriber) [NOT_FOUND]`,
		"sessions end --user ghost": `(the users file has no such subscriber) [NOT_FOUND]`,
	} {
		out, err := run(strings.Fields(args)...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("vodctl %s: err %v (want %q), output\n%s", args, err, want, out)
		}
	}
}

// policyAdmin switches its scheduling policy as a manager does.
type policyAdmin struct {
	v1.UnimplementedAdminServer
	policy string
}

func (a *policyAdmin) GetPolicy(context.Context, *v1.GetPolicyRequest) (*v1.PolicyInfo, error) {
	return &v1.PolicyInfo{Policy: a.policy, Available: []string{"lall", "wlc"}}, nil
}

func (a *policyAdmin) SetPolicy(_ context.Context, r *v1.SetPolicyRequest) (*v1.PolicyInfo, error) {
	a.policy = r.Policy
	return a.GetPolicy(context.Background(), nil)
}

// vodctl policy NAME says what changed, or that nothing did: it printed
// what vodctl policy prints, the same before and after.
func TestPolicySwitchSaysWhatChanged(t *testing.T) {
	run := vodctlAgainst(t, &policyAdmin{policy: "lall"})
	for _, want := range []string{"scheduling policy: lall → wlc\n", "nothing to do: the scheduling policy is already wlc\n"} {
		out, err := run("policy", "wlc")
		if err != nil || !strings.HasPrefix(out, want) {
			t.Errorf("vodctl policy wlc: %v\n%s\nwant first %q", err, out, want)
		}
	}
	if out, err := run("policy"); err != nil || strings.Contains(out, "scheduling policy:") {
		t.Errorf("vodctl policy: %v\n%s", err, out)
	}
}

// racedPolicyAdmin is a manager whose policy another operator switches
// from lall to rr between vodctl's GetPolicy and its SetPolicy: its
// SetPolicy's answer names rr as the policy it replaced, unless old (a
// manager that predates previous_policy).
type racedPolicyAdmin struct {
	v1.UnimplementedAdminServer
	old bool
}

func (racedPolicyAdmin) GetPolicy(context.Context, *v1.GetPolicyRequest) (*v1.PolicyInfo, error) {
	return &v1.PolicyInfo{Policy: "lall", Available: []string{"lall", "rr", "wlc"}}, nil
}

func (a racedPolicyAdmin) SetPolicy(_ context.Context, r *v1.SetPolicyRequest) (*v1.PolicyInfo, error) {
	p := &v1.PolicyInfo{Policy: r.Policy, Available: []string{"lall", "rr", "wlc"}, PreviousPolicy: "rr"}
	if a.old {
		p.PreviousPolicy = ""
	}
	return p, nil
}

// vodctl policy NAME says the change from the policy the manager's answer
// names as replaced (it said "lall → wlc" from its read before, which
// another operator's change had made stale), and from that read for a
// manager whose answer names none.
func TestPolicySwitchNamesThePolicyReplaced(t *testing.T) {
	for _, c := range []struct {
		old  bool
		want string
	}{
		{false, "scheduling policy: rr → wlc\n"},
		{true, "scheduling policy: lall → wlc\n"},
	} {
		out, err := vodctlAgainst(t, racedPolicyAdmin{old: c.old})("policy", "wlc")
		if err != nil || !strings.HasPrefix(out, c.want) {
			t.Errorf("vodctl policy wlc (a manager that predates previous_policy: %v): %v\n%s\nwant first %q", c.old, err, out, c.want)
		}
	}
}
