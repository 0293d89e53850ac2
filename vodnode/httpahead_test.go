package vodnode

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"vodcluster/proto/grpctls/grpctlstest"
	"vodcluster/proto/logtest"
)

// aheadTail is the range libavformat's players ask for first after the
// start of a progressive .ts (its last 250 kB, for its duration).
const aheadTail = 250_000

// heldOrigin is a fake origin whose fills stop at holdAt bytes until
// the test ends (released then).
func heldOrigin(t *testing.T, holdAt int64) *fakeOrigin {
	o := newFakeOrigin(t)
	o.holdAt, o.release = holdAt, make(chan struct{})
	t.Cleanup(o.unhold) // after the node's close
	return o
}

// aheadBounds bounds each read far ahead of a fill to bytes (not
// originAheadMax's seconds of the title) for the test: reads kept close
// to the viewer's pace, on titles of a few seconds.
func aheadBounds(t *testing.T, bytes int64) {
	wasMax, wasMin := originAheadMax, originAheadMaxMin
	originAheadMax, originAheadMaxMin = 0, bytes
	t.Cleanup(func() { originAheadMax, originAheadMaxMin = wasMax, wasMin })
}

// getWith is get with client c (any status: the caller checks it).
func getWith(t *testing.T, c *http.Client, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: body: %v", hdr, err)
	}
	return res, b
}

// A range that starts far ahead of its title's fill is read from the
// origin (not cached) and sent at once, over plain HTTP (sendfile's path)
// and HTTPS (Read's): the last 250 kB that libavformat's players read
// before they play a progressive .ts waited for the whole fill (a film
// at the origin's 8 Mbit/s: minutes of black). Here the fill is held at
// 200 kB for the whole test: the tail can only have come from the
// origin's read of the range.
func TestHTTPRangeFarAheadOfTheFillReadFromTheOrigin(t *testing.T) {
	for _, https := range []bool{false, true} {
		name := "http"
		if https {
			name = "https"
		}
		t.Run(name, func(t *testing.T) {
			o := heldOrigin(t, 200_000)
			data := o.titles["sample-001"]
			// The timeout bounds the test where the range would wait for
			// the held fill (forever); it measures nothing.
			client, scheme := &http.Client{Timeout: 30 * time.Second}, "http"
			opts := []func(*Node){withHTTP}
			if https {
				_, cfg, cliCfg := grpctlstest.TLS(t, "127.0.0.1")
				cliCfg.ServerName = "127.0.0.1"
				client.Transport = &http.Transport{TLSClientConfig: cliCfg.Clone(),
					TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
				scheme = "https"
				opts = append(opts, func(n *Node) { n.HTTPTLS = cfg })
			}
			n := startNode(t, startOrigin(t, o), opts...)
			url := strings.Replace(httpURL(n, mint(t, "ahead-"+name, "sample-001", "node-1", "", time.Minute), "sample-001.ts"), "http", scheme, 1)
			if res, b := getWith(t, client, url, "Range", "bytes=0-999"); res.StatusCode != http.StatusPartialContent || !bytes.Equal(b, data[:1000]) {
				t.Fatalf("the title's first bytes: %d, %d bytes", res.StatusCode, len(b))
			}
			res, b := getWith(t, client, url, "Range", "bytes=-"+itoa(aheadTail))
			if res.StatusCode != http.StatusPartialContent || !bytes.Equal(b, data[len(data)-aheadTail:]) {
				t.Fatalf("the title's last %d bytes, its fill held at 200 kB: %d, %d bytes (equal: %v)", aheadTail, res.StatusCode, len(b), bytes.Equal(b, data[len(data)-aheadTail:]))
			}
			if off := o.fetchOffsets("sample-001"); !slices.Contains(off, int64(len(data)-aheadTail)) {
				t.Errorf("origin transfers at offsets %v: none from the range's start %d", off, len(data)-aheadTail)
			}
			if got := n.Stats().OriginRangeBytes; got != aheadTail {
				t.Errorf("OriginRangeBytes %d, want %d", got, aheadTail)
			}
		})
	}
}

// A range whose bytes the origin cannot send now (no transfer channel
// free) waits for the fill as before, and so does one that starts close
// ahead of the fill (the fill reaches it sooner than a transfer
// starts): no origin read for either.
func TestHTTPRangeAheadWaitsForTheFillOtherwise(t *testing.T) {
	o := heldOrigin(t, 200_000)
	o.busyNoWait.Store(true)
	data := o.titles["sample-002"]
	n := startNode(t, startOrigin(t, o), withHTTP)
	url := httpURL(n, mint(t, "ahead-busy", "sample-002", "node-1", "", time.Minute), "sample-002.ts")
	if res, b := get(t, url, "Range", "bytes=0-999"); res.StatusCode != http.StatusPartialContent || !bytes.Equal(b, data[:1000]) {
		t.Fatalf("the title's first bytes: %d, %d bytes", res.StatusCode, len(b))
	}
	tail, near := make(chan answer, 1), make(chan answer, 1)
	go func() { tail <- getAsync(url, "bytes=-"+itoa(aheadTail)) }()
	go func() { near <- getAsync(url, "bytes=210000-219999") }()
	waitFor(t, 10*time.Second, "the node to ask the origin for the tail", func() bool { return o.busyRefusals.Load() > 0 })
	select {
	case a := <-tail:
		t.Fatalf("the tail answered (%+v) with the fill held and no origin channel", a)
	case a := <-near:
		t.Fatalf("a range 10 kB past the fill answered (%+v) with the fill held", a)
	default:
	}
	o.unhold()
	a := <-tail
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.res.StatusCode != http.StatusPartialContent || !bytes.Equal(a.body, data[len(data)-aheadTail:]) {
		t.Fatalf("the tail once the fill went on: %d, %d bytes", a.res.StatusCode, len(a.body))
	}
	a = <-near
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.res.StatusCode != http.StatusPartialContent || !bytes.Equal(a.body, data[210000:220000]) {
		t.Fatalf("the near range once the fill went on: %d, %d bytes", a.res.StatusCode, len(a.body))
	}
	if got := n.Stats().OriginRangeBytes; got != 0 {
		t.Errorf("OriginRangeBytes %d, want 0", got)
	}
	if off := o.fetchOffsets("sample-002"); slices.Contains(off, 210000) {
		t.Errorf("origin transfers at offsets %v: one for the range 10 kB past the fill", off)
	}
}

// answer is getAsync's: a response and its body, or why there is none.
type answer struct {
	res  *http.Response
	body []byte
	err  error
}

// partial reports whether the answer is a 206 whose body is want.
func (a answer) partial(want []byte) bool {
	return a.err == nil && a.res != nil && a.res.StatusCode == http.StatusPartialContent && bytes.Equal(a.body, want)
}

// withDebugLog has the node log at debug level into log.
func withDebugLog(log *logtest.Buffer) func(*Node) {
	return func(n *Node) {
		n.Logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
}

// String gives the answer's status, length and error (not its bytes).
func (a answer) String() string {
	if a.res == nil {
		return fmt.Sprintf("no answer: %v", a.err)
	}
	return fmt.Sprintf("%s, %d bytes, err %v", a.res.Status, len(a.body), a.err)
}

// getAsync is get for a goroutine other than the test's: GET url with
// Range rng.
func getAsync(url, rng string) answer {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Range", rng)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return answer{res: res, body: b, err: err}
}

// A viewer's newer range far ahead of the fill takes the node's origin
// read from its older one, which then waits for the fill: a player that
// asks for a new range has moved on (mpv's seek opens one while the range
// it read before stays open, and that one held the read for 30 s of the
// title while the seek waited). Both come out whole.
func TestHTTPRangeAheadNewerRangeOfAViewerTakesTheRead(t *testing.T) {
	o := heldOrigin(t, 200_000)
	o.holdRanges = true // each range's read stays open after its first chunk
	data := o.titles["sample-003"]
	var log logtest.Buffer
	n := startNode(t, startOrigin(t, o), withHTTP, withDebugLog(&log))
	url := httpURL(n, mint(t, "ahead-newer", "sample-003", "node-1", "", time.Minute), "sample-003.ts")
	if res, b := get(t, url, "Range", "bytes=0-999"); res.StatusCode != http.StatusPartialContent || !bytes.Equal(b, data[:1000]) {
		t.Fatalf("the title's first bytes: %d, %d bytes", res.StatusCode, len(b))
	}
	first, second := make(chan answer, 1), make(chan answer, 1)
	go func() { first <- getAsync(url, "bytes=-"+itoa(aheadTail)) }()
	waitFor(t, 10*time.Second, "the first range's origin read", func() bool { return len(o.lengths()) == 1 })
	go func() { second <- getAsync(url, "bytes=600000-699999") }()
	waitFor(t, 10*time.Second, "the second range's origin read", func() bool { return len(o.lengths()) == 2 })
	waitFor(t, 10*time.Second, "the first range's read ended", func() bool {
		return strings.Contains(log.String(), "a newer range of the viewer has the node's origin read")
	})
	o.unhold()
	if a := <-first; !a.partial(data[len(data)-aheadTail:]) {
		t.Fatalf("first range: %v", a)
	}
	if a := <-second; !a.partial(data[600000:700000]) {
		t.Fatalf("second range: %v", a)
	}
	if l := o.lengths(); len(l) != 2 || l[0] != aheadTail || l[1] != 100000 {
		t.Errorf("origin range reads asked for lengths %v, want the tail's %d, then the second range's 100000", l, aheadTail)
	}
	waitFor(t, 10*time.Second, "the node's origin reads closed", func() bool { return aheadOpen(n) == 0 })
}

// An origin read of a range ahead of the fill asks for at most
// originAheadMax of the title (here 100 kB): the origin sent the whole
// rest of the title, fast, where the viewer took its bytes at its pace
// (more than half of it unsent once the fill caught up). When the viewer
// reaches its end with the fill still far behind (here held for the whole
// test), the next read opens there: the tail comes whole from three
// reads, not from the fill (a viewer resuming a film far into it played
// 30 s and then waited for the fill to reach it).
func TestHTTPRangeAheadBoundedAndContinued(t *testing.T) {
	aheadBounds(t, 100_000)
	o := heldOrigin(t, 200_000)
	data := o.titles["sample-004"]
	n := startNode(t, startOrigin(t, o), withHTTP)
	url := httpURL(n, mint(t, "ahead-bound", "sample-004", "node-1", "", time.Minute), "sample-004.ts")
	if res, b := get(t, url, "Range", "bytes=0-999"); res.StatusCode != http.StatusPartialContent || !bytes.Equal(b, data[:1000]) {
		t.Fatalf("the title's first bytes: %d, %d bytes", res.StatusCode, len(b))
	}
	tail := make(chan answer, 1)
	go func() { tail <- getAsync(url, "bytes=-"+itoa(aheadTail)) }()
	var a answer
	select {
	case a = <-tail:
	case <-time.After(10 * time.Second):
		t.Fatalf("the tail not answered within 10 s, its fill held (origin range reads of lengths %v)", o.lengths())
	}
	if !a.partial(data[len(data)-aheadTail:]) {
		t.Fatalf("the tail, its fill held: %v", a)
	}
	if l := o.lengths(); !slices.Equal(l, []int64{100_000, 100_000, aheadTail - 200_000}) {
		t.Errorf("origin range reads asked for lengths %v, want 100000, 100000, %d", l, aheadTail-200_000)
	}
	if off := o.fetchOffsets("sample-004"); !slices.Contains(off, int64(len(data)-aheadTail+100_000)) || !slices.Contains(off, int64(len(data)-aheadTail+200_000)) {
		t.Errorf("origin transfers at offsets %v: want reads from where each ended", off)
	}
	if got := n.Stats().OriginRangeBytes; got != aheadTail {
		t.Errorf("OriginRangeBytes %d, want %d", got, aheadTail)
	}
	waitFor(t, 10*time.Second, "the node's origin reads closed", func() bool { return aheadOpen(n) == 0 })
}

// A range far ahead of its fill refused an origin read (no channel free
// at the origin) asks again later (aheadRetry): once the origin has a
// channel, its bytes come from it, while the fill is still held. It
// waited for the fill however long the fill took.
func TestHTTPRangeAheadAsksTheOriginAgain(t *testing.T) {
	wasRetry := aheadRetry
	aheadRetry = 50 * time.Millisecond
	t.Cleanup(func() { aheadRetry = wasRetry })
	o := heldOrigin(t, 200_000)
	o.busyNoWait.Store(true)
	data := o.titles["sample-006"]
	n := startNode(t, startOrigin(t, o), withHTTP)
	url := httpURL(n, mint(t, "ahead-again", "sample-006", "node-1", "", time.Minute), "sample-006.ts")
	if res, b := get(t, url, "Range", "bytes=0-999"); res.StatusCode != http.StatusPartialContent || !bytes.Equal(b, data[:1000]) {
		t.Fatalf("the title's first bytes: %d, %d bytes", res.StatusCode, len(b))
	}
	tail := make(chan answer, 1)
	go func() { tail <- getAsync(url, "bytes=-"+itoa(aheadTail)) }()
	waitFor(t, 10*time.Second, "two refused origin reads", func() bool { return o.busyRefusals.Load() >= 2 })
	o.busyNoWait.Store(false)
	var a answer
	select {
	case a = <-tail:
	case <-time.After(10 * time.Second):
		t.Fatalf("the tail not answered within 10 s of the origin's channel coming free (its fill held; %d refusals)", o.busyRefusals.Load())
	}
	if !a.partial(data[len(data)-aheadTail:]) {
		t.Fatalf("the tail: %v", a)
	}
	if got := n.Stats().OriginRangeBytes; got != aheadTail {
		t.Errorf("OriginRangeBytes %d, want %d", got, aheadTail)
	}
	waitFor(t, 10*time.Second, "the node's origin reads closed", func() bool { return aheadOpen(n) == 0 })
}

// aheadOpen returns how many origin reads of ranges ahead of their fill
// node n has open.
func aheadOpen(n *Node) int {
	n.ahead.mu.Lock()
	defer n.ahead.mu.Unlock()
	return len(n.ahead.held)
}

// Two viewers far ahead of their fills take turns at the node's one
// origin read: a read that reached its bound gives the next turn to the
// range waiting for one. Viewer A asks for 780 kB of its title (thirteen
// reads of 60 kB), then B for the last 250 kB of another (five): B
// finishes first. One viewer's continued reads held the read until its
// range ended (a viewer resuming a film far into it: until its fill
// caught up), and B waited for that, or for its own fill.
func TestHTTPRangesAheadTakeTurnsAtTheOrigin(t *testing.T) {
	aheadBounds(t, 60_000)
	wasRetry := aheadRetry
	aheadRetry = 10 * time.Second // B asks again only when A's read closes
	t.Cleanup(func() { aheadRetry = wasRetry })
	o := heldOrigin(t, 200_000)
	o.holdRanges = false
	a, b := o.titles["sample-007"], o.titles["sample-008"]
	n := startNode(t, startOrigin(t, o), withHTTP)
	urlA := httpURL(n, mint(t, "turns-a", "sample-007", "node-1", "", time.Minute), "sample-007.ts")
	urlB := httpURL(n, mint(t, "turns-b", "sample-008", "node-1", "", time.Minute), "sample-008.ts")
	for _, u := range []string{urlA, urlB} {
		if res, _ := get(t, u, "Range", "bytes=0-999"); res.StatusCode != http.StatusPartialContent {
			t.Fatalf("first bytes: %d", res.StatusCode)
		}
	}
	const fromA, lenA = 700_000, 780_000
	ansA, ansB := make(chan answer, 1), make(chan answer, 1)
	go func() { ansA <- getAsync(urlA, "bytes="+itoa(fromA)+"-"+itoa(fromA+lenA-1)) }()
	waitFor(t, 10*time.Second, "A's first origin read", func() bool { return len(o.lengths()) >= 1 })
	go func() { ansB <- getAsync(urlB, "bytes=-"+itoa(aheadTail)) }()
	var first string
	for range 2 {
		select {
		case ans := <-ansA:
			if !ans.partial(a[fromA : fromA+lenA]) {
				t.Fatalf("A's range: %v", ans)
			}
			if first == "" {
				first = "A"
			}
		case ans := <-ansB:
			if !ans.partial(b[len(b)-aheadTail:]) {
				t.Fatalf("B's tail: %v", ans)
			}
			if first == "" {
				first = "B"
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("the ranges not answered within 20 s, their fills held (origin range reads of lengths %v)", o.lengths())
		}
	}
	if first != "B" {
		t.Errorf("A's 780 kB answered before B's 250 kB: B waited for A's reads (origin range reads of lengths %v)", o.lengths())
	}
	if got, want := n.Stats().OriginRangeBytes, int64(lenA+aheadTail); got != want {
		t.Errorf("OriginRangeBytes %d, want %d: every byte of both from the origin", got, want)
	}
	waitFor(t, 10*time.Second, "the node's origin reads closed", func() bool { return aheadOpen(n) == 0 })
}

// An older range of a viewer never takes the origin read from a newer
// one: refused a read (the origin had no channel free), it asks again
// after the newer range has opened its read, finds it held by the newer
// range and waits for the fill from then on. It took the read whatever
// the ranges' order.
func TestHTTPRangeAheadOlderRangeOfAViewerDoesNotTakeTheRead(t *testing.T) {
	wasRetry := aheadRetry
	aheadRetry = 4 * time.Second // the older range asks again 2-4 s after its refusal
	t.Cleanup(func() { aheadRetry = wasRetry })
	o := heldOrigin(t, 200_000)
	o.holdRanges = true
	o.busyNoWait.Store(true)
	data := o.titles["sample-009"]
	var log logtest.Buffer
	n := startNode(t, startOrigin(t, o), withHTTP, withDebugLog(&log))
	url := httpURL(n, mint(t, "ahead-older", "sample-009", "node-1", "", time.Minute), "sample-009.ts")
	if res, b := get(t, url, "Range", "bytes=0-999"); res.StatusCode != http.StatusPartialContent || !bytes.Equal(b, data[:1000]) {
		t.Fatalf("the title's first bytes: %d, %d bytes", res.StatusCode, len(b))
	}
	older, newer := make(chan answer, 1), make(chan answer, 1)
	go func() { older <- getAsync(url, "bytes=-"+itoa(aheadTail)) }()
	waitFor(t, 10*time.Second, "the older range refused a read", func() bool { return o.busyRefusals.Load() == 1 })
	o.busyNoWait.Store(false)
	go func() { newer <- getAsync(url, "bytes=600000-699999") }()
	waitFor(t, 10*time.Second, "the newer range's read", func() bool { return len(o.lengths()) == 1 })
	waitFor(t, 10*time.Second, "the older range's second ask", func() bool {
		return strings.Contains(log.String(), "a newer range of the viewer has the node's origin read")
	})
	o.unhold()
	if a := <-older; !a.partial(data[len(data)-aheadTail:]) {
		t.Fatalf("older range: %v", a)
	}
	if a := <-newer; !a.partial(data[600000:700000]) {
		t.Fatalf("newer range: %v", a)
	}
	if l := o.lengths(); len(l) != 1 || l[0] != 100000 {
		t.Errorf("origin range reads asked for lengths %v, want only the newer range's 100000", l)
	}
	waitFor(t, 10*time.Second, "the node's origin reads closed", func() bool { return aheadOpen(n) == 0 })
}

// A range far ahead of the fill with an end asks the origin for its own
// bytes only, not for the 30 s of the title an open-ended one gets (a
// small range far ahead had the origin send up to 1 MB into the gRPC
// window for nothing).
func TestHTTPRangeAheadAsksTheOriginToItsEnd(t *testing.T) {
	o := heldOrigin(t, 200_000)
	data := o.titles["sample-003"]
	n := startNode(t, startOrigin(t, o), withHTTP)
	url := httpURL(n, mint(t, "ahead-end", "sample-003", "node-1", "", time.Minute), "sample-003.ts")
	if res, _ := get(t, url, "Range", "bytes=0-999"); res.StatusCode != http.StatusPartialContent {
		t.Fatalf("first bytes: %d", res.StatusCode)
	}
	const from, size = 800_000, 100_000
	if res, b := get(t, url, "Range", fmt.Sprintf("bytes=%d-%d", from, from+size-1)); res.StatusCode != http.StatusPartialContent || !bytes.Equal(b, data[from:from+size]) {
		t.Fatalf("the range: %d, %d bytes", res.StatusCode, len(b))
	}
	if l := o.lengths(); !slices.Equal(l, []int64{size}) {
		t.Errorf("origin range reads of lengths %v, want [%d]", l, size)
	}
	waitFor(t, 10*time.Second, "the node's origin reads closed", func() bool { return aheadOpen(n) == 0 })
}

// Node.OriginRanges sets how many such reads a node has open at a time:
// with 2, two viewers' ranges far ahead of their fills read from the
// origin at once (each read held open after its first chunk, so both are
// open together); with -1, none does, and the range waits for its fill.
func TestHTTPRangeAheadOriginRangesSetting(t *testing.T) {
	t.Run("two", func(t *testing.T) {
		o := heldOrigin(t, 200_000)
		o.holdRanges = true
		n := startNode(t, startOrigin(t, o), withHTTP, func(n *Node) { n.OriginRanges = 2 })
		answers := make(chan answer, 2)
		for i, title := range []string{"sample-004", "sample-005"} {
			url := httpURL(n, mint(t, "ranges-two-"+itoa(i), title, "node-1", "", time.Minute), title+".ts")
			if res, _ := get(t, url, "Range", "bytes=0-999"); res.StatusCode != http.StatusPartialContent {
				t.Fatalf("%s's first bytes: %d", title, res.StatusCode)
			}
			go func() { answers <- getAsync(url, "bytes=-"+itoa(aheadTail)) }()
		}
		waitFor(t, 10*time.Second, "two origin reads open at once", func() bool { return aheadOpen(n) == 2 && len(o.lengths()) == 2 })
		o.unhold()
		for range 2 {
			if a := <-answers; a.err != nil || a.res.StatusCode != http.StatusPartialContent || len(a.body) != aheadTail {
				t.Fatalf("a tail: %v", a)
			}
		}
	})
	t.Run("none", func(t *testing.T) {
		o := heldOrigin(t, 200_000)
		data := o.titles["sample-006"]
		var log logtest.Buffer
		n := startNode(t, startOrigin(t, o), withHTTP, withDebugLog(&log), func(n *Node) { n.OriginRanges = -1 })
		url := httpURL(n, mint(t, "ranges-none", "sample-006", "node-1", "", time.Minute), "sample-006.ts")
		if res, _ := get(t, url, "Range", "bytes=0-999"); res.StatusCode != http.StatusPartialContent {
			t.Fatalf("first bytes: %d", res.StatusCode)
		}
		tail := make(chan answer, 1)
		go func() { tail <- getAsync(url, "bytes=-"+itoa(aheadTail)) }()
		waitFor(t, 10*time.Second, "the tail's request at the node", func() bool {
			return strings.Contains(log.String(), "the node reads none so (origin_ranges -1)")
		})
		o.unhold() // the fill completes; the tail comes from it
		if a := <-tail; !a.partial(data[len(data)-aheadTail:]) {
			t.Fatalf("the tail: %v", a)
		}
		if l := o.lengths(); len(l) != 0 {
			t.Errorf("origin range reads of lengths %v with OriginRanges -1, want none", l)
		}
	})
}
