package acm

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	dto "github.com/prometheus/client_model/go"

	"vodcluster/acm/store"
)

// rateLimited reads the front door's rate_limited count for protocol.
func rateLimited(protocol string) float64 {
	var m dto.Metric
	if err := requestsTotal.WithLabelValues(protocol, outcomeRateLimited).Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// retryAfterIn fails t unless the Retry-After values are one whole number
// of seconds in [lo, hi].
func retryAfterIn(t *testing.T, what string, v []string, lo, hi int) {
	t.Helper()
	if len(v) != 1 {
		t.Fatalf("%s: Retry-After %q, want one", what, v)
	}
	if s, err := strconv.Atoi(v[0]); err != nil || s < lo || s > hi {
		t.Fatalf("%s: Retry-After %q, want %d..%d seconds", what, v[0], lo, hi)
	}
}

// A subscriber's title requests, over RTSP and HTTP together, pass up to
// the burst; the next is refused before admission (RTSP 503, HTTP 429,
// Retry-After until the bucket holds a request again) and counted as
// rate_limited. Keepalives, other methods, HEAD probes and failed logins
// spend nothing, and another subscriber is not affected.
func TestRequestRateLimit(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.RequestsPerUser = 3; m.RequestRefill = time.Hour })
	e.startNode("n1", nodeOpts{egress: 10 * titleBps})
	rtspBefore, httpBefore := rateLimited(store.ProtoRTSP), rateLimited(store.ProtoHTTP)

	// Not charged: keepalives and other methods on a connection, HEAD
	// probes of a title, requests that fail authentication.
	c := e.dialRTSP()
	for range 10 {
		for _, method := range []base.Method{base.Options, base.GetParameter, base.SetParameter} {
			if res := c.mustDo(method, "/vod/t1", basicHeader("demo", "demo")); res.StatusCode != base.StatusOK {
				t.Fatalf("%s: %d", method, res.StatusCode)
			}
		}
		if res := e.get(http.MethodHead, "/vod/t1.ts", "demo", "demo"); res.StatusCode != http.StatusOK {
			t.Fatalf("HEAD: %s", res.Status)
		}
	}
	for range 2 {
		if res := c.mustDo(base.Describe, "/vod/t1", basicHeader("demo", "wrong")); res.StatusCode != base.StatusUnauthorized {
			t.Fatalf("wrong password: %d", res.StatusCode)
		}
	}

	// The burst passes, over both protocols.
	if res := c.mustDo(base.Describe, "/vod/t1", basicHeader("demo", "demo")); res.StatusCode != base.StatusFound {
		t.Fatalf("request 1 (RTSP): %d", res.StatusCode)
	}
	if res := e.get(http.MethodGet, "/vod/t2.ts", "demo", "demo"); res.StatusCode != http.StatusFound {
		t.Fatalf("request 2 (HTTP): %s", res.Status)
	}
	if res := e.describe("demo", "demo", "t3"); res.StatusCode != base.StatusFound {
		t.Fatalf("request 3 (RTSP): %d", res.StatusCode)
	}
	// The next is refused, on the same connection as on a new one.
	for _, res := range []*base.Response{c.mustDo(base.Describe, "/vod/t1", basicHeader("demo", "demo")), e.describe("demo", "demo", "t2")} {
		if res.StatusCode != base.StatusServiceUnavailable || !strings.Contains(res.StatusMessage, "too many requests") {
			t.Fatalf("over the limit (RTSP): %d %q, want 503 (too many requests)", res.StatusCode, res.StatusMessage)
		}
		retryAfterIn(t, "RTSP", res.Header["Retry-After"], 3500, 3600)
	}
	hres := e.get(http.MethodGet, "/vod/t1/index.m3u8", "demo", "demo")
	if hres.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("over the limit (HTTP): %s, want 429", hres.Status)
	}
	retryAfterIn(t, "HTTP", hres.Header.Values("Retry-After"), 3500, 3600)
	if got := e.reserved("n1"); got != 3*titleBps {
		t.Fatalf("reserved %d bit/s after the refusals, want the burst's 3 sessions", got)
	}
	if r, h := rateLimited(store.ProtoRTSP)-rtspBefore, rateLimited(store.ProtoHTTP)-httpBefore; r != 2 || h != 1 {
		t.Fatalf("rate_limited counted %v RTSP, %v HTTP; want 2, 1", r, h)
	}

	// Another subscriber has its own bucket.
	for i := range 3 {
		if res := e.describe("kid", "kid", "t1"); res.StatusCode != base.StatusFound {
			t.Fatalf("another subscriber, request %d: %d", i+1, res.StatusCode)
		}
	}
}

// The default limit is on (DefaultRequestsPerUser requests pass, the next
// is refused); -1 switches it off.
func TestRequestRateLimitDefaultAndOff(t *testing.T) {
	for _, c := range []struct {
		name   string
		limit  int
		refuse bool
	}{{"default", 0, true}, {"off", -1, false}} {
		t.Run(c.name, func(t *testing.T) {
			e := newManager(t, "", func(m *Manager) { m.RequestsPerUser = c.limit; m.RequestRefill = time.Hour })
			conn := e.dialRTSP()
			// An unknown title: charged (after authentication), admits nothing.
			for i := range DefaultRequestsPerUser {
				if res := conn.mustDo(base.Describe, "/vod/nope", basicHeader("demo", "demo")); res.StatusCode != base.StatusNotFound {
					t.Fatalf("request %d: %d, want 404", i+1, res.StatusCode)
				}
			}
			want := base.StatusNotFound
			if c.refuse {
				want = base.StatusServiceUnavailable
			}
			for range 5 {
				if res := conn.mustDo(base.Describe, "/vod/nope", basicHeader("demo", "demo")); res.StatusCode != want {
					t.Fatalf("beyond %d requests: %d, want %d", DefaultRequestsPerUser, res.StatusCode, want)
				}
			}
		})
	}
}

// A negative RequestRefill is a configuration error naming the field.
func TestRequestRefillNegative(t *testing.T) {
	m := &Manager{RTSPListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", GRPCListen: "127.0.0.1:0",
		DataDir: t.TempDir(), Secret: testSecret, BOSS: &recordingBOSS{}, RequestRefill: -time.Second, Logger: testLogger(t)}
	err := m.Start()
	if err == nil {
		m.Close()
		t.Fatal("started with RequestRefill -1s")
	}
	if !strings.Contains(err.Error(), "RequestRefill -1s is negative") {
		t.Fatalf("error %q does not name RequestRefill", err)
	}
}

// The limiter refills one request every refill, logs a subscriber's
// refusals above debug once a minute, and keeps its table bounded with
// the limit on through a flood of subscribers.
func TestRequestLimiter(t *testing.T) {
	l := newRequestLimiter(2, time.Second)
	t0 := time.Unix(1_000_000, 0)
	for i := range 2 {
		if ok, _, _ := l.allow("demo", t0); !ok {
			t.Fatalf("request %d of a burst of 2 refused", i+1)
		}
	}
	ok, wait, note := l.allow("demo", t0)
	if ok || wait != time.Second || !note {
		t.Fatalf("3rd request: ok %v, wait %v, note %v; want refused, 1s, noted", ok, wait, note)
	}
	if ok, _, note := l.allow("demo", t0.Add(500*time.Millisecond)); ok || note {
		t.Fatalf("4th request half a refill later: ok %v, note %v; want refused, not noted again", ok, note)
	}
	if ok, _, _ := l.allow("demo", t0.Add(time.Second)); !ok {
		t.Fatal("refused after a refill")
	}
	// A minute after the last noted refusal, the next refusal is noted.
	t1 := t0.Add(time.Second + rateLimitNote) // the bucket is whole again
	for i := range 2 {
		if ok, _, _ := l.allow("demo", t1); !ok {
			t.Fatalf("request %d a minute later refused", i+1)
		}
	}
	if ok, _, note := l.allow("demo", t1); ok || !note {
		t.Fatalf("a refusal a minute after the last noted one: ok %v, note %v; want refused, noted", ok, note)
	}
	if newRequestLimiter(-1, time.Second) != nil {
		t.Fatal("a negative burst does not switch the limit off")
	}
	var none *requestLimiter
	if ok, _, _ := none.allow("demo", t0); !ok {
		t.Fatal("no limiter refuses")
	}

	// A flood of subscribers, each spending its one request, fills the
	// table; it stays bounded and a looping subscriber stays limited.
	l = newRequestLimiter(1, time.Second)
	for i := range bucketTableMax {
		l.allow("user"+strconv.Itoa(i), t0)
	}
	l.allow("loop", t0)
	refused := 0
	for range 200 {
		if ok, _, _ := l.allow("loop", t0); !ok {
			refused++
		}
	}
	if n := len(l.t.keys); n > bucketTableMax {
		t.Fatalf("table grew past its bound: %d subscribers", n)
	}
	if refused != 200 {
		t.Fatalf("%d of 200 requests of a looping subscriber refused in a full table", refused)
	}
	// Once their buckets are whole again they are forgotten.
	l.allow("late", t0.Add(time.Hour))
	if n := len(l.t.keys); n != 1 {
		t.Fatalf("%d subscribers kept, want the new one", n)
	}
}
