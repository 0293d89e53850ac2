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

func (doneAdmin) ClearLoginFailures(_ context.Context, r *v1.ClearLoginFailuresRequest) (*v1.ClearLoginFailuresResponse, error) {
	return &v1.ClearLoginFailuresResponse{UserUnknown: r.User == "ghost"}, nil
}

// A change whose end state already holds (unpin of a title not pinned
// there, a lift of a subscriber not suspended, the end of a subscriber's
// sessions when none is live) exits 0 with one line saying nothing was to
// be done, as pin twice and node --drain twice do: a script may repeat
// it. An unknown node or subscriber is still an error (exit status 1).
func TestRepeatedChangeIsNoError(t *testing.T) {
	run := vodctlAgainst(t, doneAdmin{})
	for args, want := range map[string]string{
		"unpin T node-1":           `nothing to do: title "T" is not pinned to node node-1` + "\n",
		"suspend demo --lift":      `nothing to do: subscriber "demo" is not suspended` + "\n",
		"sessions end --user demo": `nothing to do: subscriber "demo" has no live session` + "\n",
		"--json unpin T node-1":    `{"nothing_to_do":true,"message":"title \"T\" is not pinned to node node-1"}` + "\n",
		"unlock demo":              "demo: no failed logins counted\n",
		"unlock ghost":             "ghost: no failed logins counted\nwarning: the users file has no subscriber \"ghost\" (check the name)\n",
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
	for _, want := range []string{"scheduling policy: lall → wlc\n", "scheduling policy: already wlc\n"} {
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
