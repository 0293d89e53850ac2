package acm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm/boss"
	pb "vodcluster/proto/vodcluster/v1"
)

// stateSuspensions is the store's state entry of the operator's
// suspensions (map user -> suspension, JSON).
const stateSuspensions = "suspensions"

// maxSuspension is the longest suspension SuspendSubscriber takes.
const maxSuspension = 366 * 24 * time.Hour

// suspension is a subscriber whose new title requests the front door
// refuses (errSuspended) until Until.
type suspension struct {
	Until  time.Time `json:"until"`
	Since  time.Time `json:"since"`
	Reason string    `json:"reason,omitempty"`
}

// errSuspended is the 403 of a request of a subscriber the operator
// suspended (Admin.SuspendSubscriber). It wraps errForbidden.
var errSuspended = fmt.Errorf("%w: the subscriber is suspended by the operator", errForbidden)

// suspendedLocked reports whether user is suspended at now (mu held).
func (m *Manager) suspendedLocked(user string, now time.Time) bool {
	s, ok := m.suspended[user]
	return ok && now.Before(s.Until)
}

// liveSuspensions returns the suspensions of susp in force at now.
func liveSuspensions(susp map[string]suspension, now time.Time) map[string]suspension {
	out := make(map[string]suspension, len(susp))
	for u, s := range susp {
		if now.Before(s.Until) {
			out[u] = s
		}
	}
	return out
}

// readSuspensions returns the stored suspensions still in force at now; a
// malformed entry is logged and dropped.
func (m *Manager) readSuspensions(ctx context.Context, now time.Time) (map[string]suspension, error) {
	return m.readSuspensionsStrict(ctx, now, false)
}

// readSuspensionsStrict is readSuspensions; when strict, a malformed
// entry is an error wrapping errMalformed, not logged.
func (m *Manager) readSuspensionsStrict(ctx context.Context, now time.Time, strict bool) (map[string]suspension, error) {
	susp, err := readStateJSON(m, ctx, stateSuspensions, "suspensions", strict, func() map[string]suspension { return map[string]suspension{} })
	if err != nil {
		return nil, err
	}
	return liveSuspensions(susp, now), nil
}

// reloadSuspensions replaces the suspensions with the stored ones (the
// active manager's, on a shared store): on a standby, at a node's
// registration (its front door admits from then on) and for
// ListSuspensions, which otherwise gave those of the standby's start.
// Its wait for opMu (held by an operator's change or another reload,
// each waiting for the store) ends with ctx too (lockCtx): a standby's
// ListSuspensions waited for it without a bound before its own read of
// the store. Errors: the store fails; errOpBusy wrapping ctx's error
// when it ends first.
func (m *Manager) reloadSuspensions(ctx context.Context) error {
	if err := lockCtx(ctx, &m.opMu); err != nil {
		return fmt.Errorf("%w: %w", errOpBusy, err)
	}
	defer m.opMu.Unlock()
	return m.reloadSuspensionsOpLocked(ctx, false)
}

// reloadSuspensionsOpLocked is reloadSuspensions with opMu held; when
// strict, a malformed entry is an error (errMalformed) that leaves the
// suspensions as they were.
func (m *Manager) reloadSuspensionsOpLocked(ctx context.Context, strict bool) error {
	susp, err := m.readSuspensionsStrict(ctx, m.now(), strict)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.suspended = susp
	m.mu.Unlock()
	return nil
}

// refreshSuspensions, on a standby (or a manager that lost the planner
// lock: each log line says which, lockRole), re-reads the stored suspensions at
// each try at the planner lock (every third of LeaderTTL; leader.standing):
// its front door applied only those of the last node's registration, so a
// subscriber suspended on the active manager since was admitted here
// once the front door's address moved, until this manager took the lock.
// stepErr is the try's error: the store did not answer it, and is not
// asked again. When the store does not answer, the suspensions read last
// stay in force; the first failure of a run is logged, and the first
// read after it. A malformed stored entry is treated alike (kept, logged
// once, not at every try: every third of leader_ttl it flooded the log
// at error and dropped every suspension). While an operator's change or
// another reload holds opMu
// (on a store that stalls, for up to its timeout) it reads nothing this
// time: the lock's tries do not wait behind it.
func (m *Manager) refreshSuspensions(ctx context.Context, stepErr error) {
	err := stepErr
	if err == nil {
		if !m.opMu.TryLock() {
			return
		}
		rctx, cancel := context.WithTimeout(ctx, max(m.LeaderTTL/3, time.Second))
		err = m.reloadSuspensionsOpLocked(rctx, true)
		cancel()
		m.opMu.Unlock()
	}
	if ctx.Err() != nil {
		return // Close
	}
	state := suspFresh
	switch {
	case errors.Is(err, errMalformed):
		state = suspMalformed
	case err != nil:
		state = suspUnanswered
	}
	if m.suspStale.Swap(state) == state {
		return // logged when it became so
	}
	role := m.lockRole()
	switch state {
	case suspMalformed:
		m.log.Error(role+": stored suspensions malformed; those read last stay in force until the active manager writes them again", "err", err)
	case suspUnanswered:
		m.log.Warn(role+": suspensions not re-read from the store; those read last stay in force until it answers", "err", err)
	default:
		m.log.Info(role + ": suspensions re-read from the store")
	}
}

// lockRole says, for a log line of refreshSuspensions, why this manager
// does not hold the planner lock: "standby" when another manager holds it
// (its last try found the key another's, or it gave the lock back to the
// manager the nodes report to), "planner lock not held" otherwise: an
// active manager that lost the lock while the store did not answer, or
// had its renewal refused, is no standby (it logged "standby:" alike).
func (m *Manager) lockRole() string {
	if m.lead != nil && m.lead.other.Load() {
		return "standby"
	}
	return "planner lock not held"
}

// The outcomes of a standby's last re-read of the stored suspensions
// (Manager.suspStale), each logged when it becomes so.
const (
	suspFresh      int32 = iota // read
	suspUnanswered              // the store did not answer
	suspMalformed               // the stored entry does not decode
)

// maxUserName is the longest subscriber name a suspension takes, bytes
// (the users file's limit).
const maxUserName = 256

// badUser reports whether user cannot be a subscriber's login name: longer
// than maxUserName bytes, or not printable text (notText: a newline split
// the suspension table, and each change logged the whole name).
func badUser(user string) bool {
	return len(user) > maxUserName || notText(user)
}

// notText reports whether s is not printable text for a table or a log
// line: invalid UTF-8, or a control character of Unicode's Cc category,
// C0 (U+0000-U+001F), DEL (U+007F) or C1 (U+0080-U+009F: U+0085 is a
// line break to some readers, U+009B a terminal's CSI, which starts an
// escape sequence as ESC [ does).
func notText(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) })
}

// SuspendSubscriber implements pb.AdminServer: the subscriber's new title
// requests are refused (403) until now + duration_s, or no longer
// (duration_s 0). The change is written to the store before it applies:
// a manager restarted, or one taking over, keeps it. Errors as the proto
// says.
func (a *admin) SuspendSubscriber(ctx context.Context, req *pb.SuspendRequest) (*pb.Suspension, error) {
	m := a.m
	user, d := req.GetUser(), time.Duration(req.GetDurationS())*time.Second
	reason := strings.TrimSpace(req.GetReason())
	switch {
	case user == "":
		return nil, status.Error(codes.InvalidArgument, "name the subscriber (user)")
	case badUser(user) && req.GetDurationS() != 0:
		// A lift takes any name: one stored before names were checked
		// is lifted, not left in force and in the table.
		return nil, status.Errorf(codes.InvalidArgument, "user: at most %d bytes of UTF-8 text without control characters (C0, DEL, C1): a subscriber's login name", maxUserName)
	case req.GetDurationS() < 0 || d > maxSuspension || req.GetDurationS() > int64(maxSuspension/time.Second):
		return nil, status.Errorf(codes.InvalidArgument, "duration_s %d: from 0 (lift) to %d (a year)", req.GetDurationS(), int64(maxSuspension/time.Second))
	case badReason(reason):
		return nil, status.Errorf(codes.InvalidArgument, "reason: at most %d bytes of printable text", maxEndReason)
	}
	if !m.Leader() {
		if req.GetDurationS() == 0 {
			return nil, m.notLeader("lift the suspension on the active manager")
		}
		return nil, m.notLeader("suspend the subscriber on the active manager")
	}
	sctx, cancel := context.WithTimeout(ctx, adminStoreWait) // the lock's wait and the write
	defer cancel()
	// The users file (up to 2 s) is asked once opMu is released: another
	// operator's change does not wait behind it. What it says changes
	// nothing of the suspension: the answer and the log only.
	out, notSuspended, err := m.changeSuspension(sctx, user, d, reason)
	switch {
	case err != nil:
		return nil, err
	case notSuspended:
		return nil, m.nothingToDoFor(ctx, user, "is not suspended") // its own wait: sctx may be spent on the lock
	case d == 0:
		m.log.Info("subscriber's suspension lifted by the operator", "user", user)
		return out, nil
	}
	m.log.Info("subscriber suspended by the operator: new title requests refused (403)", "user", user, "until", time.UnixMilli(out.UntilUnixMs).UTC().Format(time.RFC3339), "reason", reason)
	if out.UserUnknown = m.userUnknown(ctx, user); out.UserUnknown {
		m.log.Warn("suspended subscriber is not in the users file: the suspension applies if one of that name is added (check the name)", "user", user)
	}
	return out, nil
}

// changeSuspension suspends user for d from now (d 0: lifts the
// suspension) for reason, with opMu held through the change and its
// write to the store, starting from the suspensions in force once opMu is
// held (a change made by another operator before is kept). notSuspended:
// a lift of a user not suspended, which changes nothing. Errors: opMu's
// wait or the write fails within ctx (UNAVAILABLE).
func (m *Manager) changeSuspension(ctx context.Context, user string, d time.Duration, reason string) (out *pb.Suspension, notSuspended bool, err error) {
	if err := m.adminLock(ctx, &m.opMu, "suspension not changed"); err != nil {
		return nil, false, err
	}
	defer m.opMu.Unlock()
	now := m.now()
	m.mu.Lock()
	next := liveSuspensions(m.suspended, now)
	m.mu.Unlock()
	out = &pb.Suspension{User: user, Reason: reason}
	if d == 0 {
		if _, ok := next[user]; !ok {
			return nil, true, nil
		}
		delete(next, user)
	} else {
		s := suspension{Until: now.Add(d), Since: now, Reason: reason}
		next[user] = s
		out.UntilUnixMs, out.SinceUnixMs = s.Until.UnixMilli(), s.Since.UnixMilli()
	}
	blob, err := json.Marshal(next)
	if err == nil {
		if err = m.st.PutState(ctx, stateSuspensions, blob); err != nil {
			err = errors.New(m.adminStoreMsg(ctx, err))
		}
	}
	if err != nil {
		return nil, false, status.Errorf(codes.Unavailable, "suspension not changed: %v", err)
	}
	m.mu.Lock()
	m.suspended = next
	m.mu.Unlock()
	m.noteStored(nil, next)
	return out, false, nil
}

// userUnknown reports whether the BOSS answers that it does not know
// user (boss.ErrUnknownUser), asked for at most 2 s. A BOSS that fails
// otherwise, or does not answer in time, is not taken to say so.
func (m *Manager) userUnknown(ctx context.Context, user string) bool {
	unknown, _ := m.userChecked(ctx, user)
	return unknown
}

// userChecked asks the BOSS about user, for at most 2 s: unknown when it
// answers that it does not know the name (boss.ErrUnknownUser); err, the
// BOSS's error, when it fails otherwise or does not answer in time, which
// says nothing of the name.
func (m *Manager) userChecked(ctx context.Context, user string) (unknown bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = m.BOSS.Entitled(ctx, user, "")
	if errors.Is(err, boss.ErrUnknownUser) {
		return true, nil
	}
	return false, err
}

// nothingToDoFor is an operator's change for user that finds its end state
// holding (what, "is not suspended", "has no live session"): ALREADY_DONE
// (pb.AlreadyDone, vodctl exits 0) only when the BOSS knows the name; NOT_FOUND
// when it does not (a misspelt name), or could not be asked (the name not
// checked: a script must not take a typo for success).
func (m *Manager) nothingToDoFor(ctx context.Context, user, what string) error {
	unknown, err := m.userChecked(ctx, user)
	switch {
	case unknown:
		return status.Errorf(codes.NotFound, "subscriber %q %s (the users file has no such subscriber)", clip(user), what)
	case err != nil:
		return status.Errorf(codes.NotFound, "subscriber %q %s (the users file could not be checked for the name: %v)", clip(user), what, err)
	}
	// Its end state holds: a repeat is not an error (pb.IsAlreadyDone).
	return pb.AlreadyDone(fmt.Sprintf("subscriber %q %s", clip(user), what))
}

// ListSuspensions implements pb.AdminServer: the suspensions in force, by
// user, each with user_unknown when the users file (the BOSS) does not
// know its name: the list showed a misspelt name as any other, the
// warning of the suspension's answer long gone. The BOSS is asked for at
// most 2 s in all; names not asked in time are not marked. A standby on a
// shared store reads them from the store first (UNAVAILABLE when it does
// not answer).
func (a *admin) ListSuspensions(ctx context.Context, _ *pb.ListSuspensionsRequest) (*pb.ListSuspensionsResponse, error) {
	m := a.m
	if m.lead != nil && !m.Leader() {
		rctx, cancel := context.WithTimeout(ctx, adminStoreWait)
		defer cancel()
		if err := m.reloadSuspensions(rctx); err != nil {
			return nil, status.Errorf(codes.Unavailable, "suspensions not read: %s", m.adminStoreMsg(rctx, err))
		}
	}
	now := m.now()
	m.mu.Lock()
	live := liveSuspensions(m.suspended, now)
	m.mu.Unlock()
	out := &pb.ListSuspensionsResponse{}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for _, u := range slices.Sorted(maps.Keys(live)) {
		s := live[u]
		out.Suspensions = append(out.Suspensions, &pb.Suspension{User: u, UntilUnixMs: s.Until.UnixMilli(), SinceUnixMs: s.Since.UnixMilli(), Reason: s.Reason,
			UserUnknown: ctx.Err() == nil && m.userUnknown(ctx, u)})
	}
	return out, nil
}
