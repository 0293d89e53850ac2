package acm

import (
	"context"
	"strings"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
)

// refillKey makes key's bucket whole again at now, its last failed
// credentials forgotten; its uses in flight stay counted. It reports
// whether the bucket had failures to forget (false for a key not in the
// table, or whole with no failed credentials remembered).
func (t *bucketTable) refillKey(key string, now time.Time) bool {
	b := t.keys[key]
	if b == nil {
		return false
	}
	spent := b.l.TokensAt(now) < float64(t.burst) || !b.failedAt.IsZero()
	b.l = rate.NewLimiter(rate.Every(t.refill), t.burst)
	b.failed, b.failedAt = credKey{}, time.Time{}
	return spent
}

// clearUser forgets the failed logins of user at now: its buckets at
// every address (pairs) and over all addresses (users) are made whole
// again, and the checks waiting for them woken. Addresses' buckets over
// all user names are left. It returns how many addresses had failures of
// user counted, and whether its count over all addresses had.
func (g *loginGuard) clearUser(user string, now time.Time) (addresses int, overAll bool) {
	if g == nil {
		return 0, false
	}
	uk := userKey(user)
	g.mu.Lock()
	defer g.mu.Unlock()
	for k := range g.pairs.keys {
		if _, u, _ := strings.Cut(k, "\x00"); u == uk && g.pairs.refillKey(k, now) {
			addresses++
		}
	}
	if g.users != nil {
		overAll = g.users.refillKey(uk, now)
	}
	close(g.changed)
	g.changed = make(chan struct{})
	return addresses, overAll
}

// ClearLoginFailures implements pb.AdminServer (loginGuard.clearUser):
// logged at info with what was forgotten; user_unknown when the users
// file (the BOSS, asked for at most 2 s) does not know the name. Errors as the proto says.
func (a *admin) ClearLoginFailures(ctx context.Context, req *pb.ClearLoginFailuresRequest) (*pb.ClearLoginFailuresResponse, error) {
	user := req.GetUser()
	switch {
	case user == "":
		return nil, status.Error(codes.InvalidArgument, "name the subscriber (user)")
	case len(user) > maxUserName:
		return nil, status.Errorf(codes.InvalidArgument, "user: at most %d bytes, a subscriber's login name", maxUserName)
	}
	n, all := a.m.logins.clearUser(user, a.m.now())
	a.m.log.Info("failed logins forgotten by the operator", "user", user, "addresses", n, "over_all_addresses", all)
	return &pb.ClearLoginFailuresResponse{Addresses: int32(n), OverAllAddresses: all, UserUnknown: a.m.userUnknown(ctx, user)}, nil
}
