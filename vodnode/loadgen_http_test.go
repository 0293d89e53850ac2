package vodnode

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// httpLoadConfig is what TestLoadHTTP hands its load generator (the test
// binary run again as TestLoadHTTPViewers, in a process of its own).
type httpLoadConfig struct {
	URLs    []string      // one per viewer
	Mode    string        // "ts": progressive download; "hls": playlist, then segments
	Ramp    int           // viewers started per second
	Run     time.Duration // from the first viewer's start to the end
	AheadS  float64       // hls: media seconds a viewer fetches ahead of its playback
	MaxLate time.Duration // pass: a viewer's media never later than this behind the wall clock
}

// httpViewerStat is what one load generator viewer saw.
type httpViewerStat struct {
	err       string
	ttfb      time.Duration // request sent → first body byte (hls: of the first segment)
	first     time.Time     // first body byte
	bytes     int64         // body bytes, whole run
	winBytes  int64         // body bytes in the window
	media     float64       // media seconds received (PCR span; hls: whole segments' durations)
	winMedia  float64       // media seconds received in the window
	late      time.Duration // most the media received lagged the wall clock since the first byte
	stalls    int           // hls: segments that arrived after their playback was due
	segs      int           // hls: segments fetched
	started   bool
	winAtByte int64 // bytes when the window opened
	winAtMed  float64
}

// TestLoadHTTPViewers is TestLoadHTTP's load generator: it runs only as
// the child TestLoadHTTP starts (VODNODE_LOADGEN: the config's path; the
// events and the result go to file descriptor 3).
func TestLoadHTTPViewers(t *testing.T) {
	path := os.Getenv("VODNODE_LOADGEN")
	if path == "" {
		t.Skip("the load generator of TestLoadHTTP")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg httpLoadConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	events := os.NewFile(3, "events")
	if events == nil {
		t.Fatal("no events descriptor")
	}
	defer events.Close()
	res := runHTTPLoad(cfg, func(ev string) { fmt.Fprintln(events, ev) })
	line, _ := json.Marshal(res)
	fmt.Fprintf(events, "result %s\n", line)
}

// runHTTPLoad plays cfg.URLs' viewers and returns the summary; it tells
// "start" when every viewer has its first media (or failed): the window
// the rates and the CPU are measured over runs from then to "end".
func runHTTPLoad(cfg httpLoadConfig, event func(string)) map[string]any {
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: len(cfg.URLs) + 1, ResponseHeaderTimeout: 30 * time.Second}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	begin := time.Now()
	end := begin.Add(cfg.Run)
	ctx, cancel := context.WithDeadline(context.Background(), end)
	defer cancel()
	stats := make([]*httpViewerStat, len(cfg.URLs))
	var mu sync.Mutex // guards the window fields of stats
	var wg sync.WaitGroup
	var startedWG sync.WaitGroup
	startedWG.Add(len(cfg.URLs))
	winOpen := false
	var winStart time.Time
	for i, u := range cfg.URLs {
		st := &httpViewerStat{}
		stats[i] = st
		if d := time.Until(begin.Add(time.Duration(i) * time.Second / time.Duration(max(cfg.Ramp, 1)))); d > 0 {
			time.Sleep(d) // the ramp: a schedule, not a synchronisation
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			once := sync.OnceFunc(startedWG.Done)
			defer once()
			p := &viewerProgress{st: st, mu: &mu, winOpen: &winOpen, started: once}
			var err error
			if cfg.Mode == "hls" {
				err = playHLS(ctx, client, u, cfg.AheadS, p)
			} else {
				err = playProgressive(ctx, client, u, p)
			}
			if err != nil && ctx.Err() == nil {
				st.err = err.Error()
			}
		}()
	}
	startedWG.Wait()
	mu.Lock()
	winOpen, winStart = true, time.Now()
	for _, st := range stats {
		st.winAtByte, st.winAtMed = st.bytes, st.media
	}
	mu.Unlock()
	ru0 := selfCPU()
	event("start")
	wg.Wait()
	winEnd := time.Now()
	ru1 := selfCPU()
	event("end")
	return httpLoadSummary(cfg, stats, begin, winStart, winEnd, ru1-ru0)
}

// viewerProgress records a viewer's bytes and media under the window's
// lock.
type viewerProgress struct {
	st      *httpViewerStat
	mu      *sync.Mutex
	winOpen *bool
	started func()
}

func (p *viewerProgress) add(n int64, media float64) {
	p.mu.Lock()
	p.st.bytes += n
	p.st.media += media
	if *p.winOpen {
		p.st.winBytes += n
		p.st.winMedia += media
	}
	p.mu.Unlock()
}

// playProgressive reads a progressive download until ctx ends, following
// its PCR: the media time received against the wall time since the first
// byte.
func playProgressive(ctx context.Context, c *http.Client, u string, p *viewerProgress) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	sent := time.Now()
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", res.StatusCode)
	}
	var pc pcrClock
	buf := make([]byte, 64<<10)
	for {
		n, err := res.Body.Read(buf)
		if n > 0 {
			now := time.Now()
			if !p.st.started {
				p.st.started, p.st.first, p.st.ttfb = true, now, now.Sub(sent)
				p.started()
			}
			before := pc.span()
			pc.feed(buf[:n])
			p.add(int64(n), pc.span()-before)
			if late := now.Sub(p.st.first) - time.Duration(pc.span()*float64(time.Second)); pc.ok && late > p.st.late {
				p.st.late = late
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("ended early")
			}
			return err
		}
	}
}

// playHLS fetches the playlist, then its segments in order, keeping at
// most ahead seconds of media buffered past its playback (which starts
// with the first segment's arrival); a segment that arrives after its
// playback was due is a stall.
func playHLS(ctx context.Context, c *http.Client, u string, ahead float64, p *viewerProgress) error {
	body, _, err := fetch(ctx, c, u, nil)
	if err != nil {
		return fmt.Errorf("playlist: %w", err)
	}
	type seg struct {
		uri string
		dur float64
	}
	var segs []seg
	dur := 0.0
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "#EXTINF:"); ok {
			dur, _ = strconv.ParseFloat(strings.TrimSuffix(v, ","), 64)
		} else if line != "" && !strings.HasPrefix(line, "#") {
			segs = append(segs, seg{line, dur})
		}
	}
	base, err := url.Parse(u)
	if err != nil || len(segs) == 0 {
		return fmt.Errorf("playlist without segments (%v)", err)
	}
	buffered := 0.0 // media seconds of the segments received
	for i, s := range segs {
		if p.st.started {
			// fetch the next segment once the buffer ahead of the
			// playback falls below ahead
			played := time.Since(p.st.first).Seconds()
			if wait := buffered - played - ahead; wait > 0 {
				select {
				case <-time.After(time.Duration(wait * float64(time.Second))):
				case <-ctx.Done():
					return nil
				}
			}
		}
		ref, _ := url.Parse(s.uri)
		sent := time.Now()
		_, n, err := fetch(ctx, c, base.ResolveReference(ref).String(), func(n int) {
			if p.st.ttfb == 0 {
				p.st.ttfb = time.Since(sent)
			}
			p.add(int64(n), 0)
		})
		if err != nil {
			return fmt.Errorf("segment %d (%d bytes): %w", i, n, err)
		}
		now := time.Now()
		if !p.st.started {
			p.st.started = true
			p.st.first = now // playback starts with the first whole segment
			p.started()
		}
		if late := now.Sub(p.st.first) - time.Duration(buffered*float64(time.Second)); late > p.st.late {
			p.st.late = late
		}
		if now.Sub(p.st.first).Seconds() > buffered {
			p.st.stalls++
		}
		buffered += s.dur
		p.st.segs++
		p.add(0, s.dur)
	}
	return errors.New("ran out of segments")
}

// fetch GETs u and reads its body (kept only for a playlist: onData nil),
// calling onData with each read's byte count.
func fetch(ctx context.Context, c *http.Client, u string, onData func(int)) ([]byte, int64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	res, err := c.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("status %d", res.StatusCode)
	}
	if onData == nil {
		b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		return b, int64(len(b)), err
	}
	buf := make([]byte, 64<<10)
	var total int64
	for {
		n, err := res.Body.Read(buf)
		if n > 0 {
			total += int64(n)
			onData(n)
		}
		if errors.Is(err, io.EOF) {
			return nil, total, nil
		}
		if err != nil {
			return nil, total, err
		}
	}
}

// pcrClock follows the PCR of the first PID that carries one in an
// MPEG-TS byte stream read from a packet boundary.
type pcrClock struct {
	carry       []byte
	pid         int
	first, last int64 // 27 MHz
	ok          bool
}

// span returns the media seconds between the first and the last PCR.
func (c *pcrClock) span() float64 {
	if !c.ok {
		return 0
	}
	return float64(c.last-c.first) / 27e6
}

func (c *pcrClock) feed(b []byte) {
	if len(c.carry) > 0 {
		k := min(188-len(c.carry), len(b))
		c.carry = append(c.carry, b[:k]...)
		b = b[k:]
		if len(c.carry) < 188 {
			return
		}
		c.packet(c.carry)
		c.carry = c.carry[:0]
	}
	for ; len(b) >= 188; b = b[188:] {
		c.packet(b[:188])
	}
	c.carry = append(c.carry, b...)
}

// packet takes the PCR of a TS packet (ISO/IEC 13818-1 §2.4.3.4-5).
func (c *pcrClock) packet(p []byte) {
	if p[0] != 0x47 || p[3]&0x20 == 0 || p[4] < 7 || p[5]&0x10 == 0 {
		return
	}
	pid := int(p[1]&0x1f)<<8 | int(p[2])
	if c.ok && pid != c.pid {
		return
	}
	base := int64(p[6])<<25 | int64(p[7])<<17 | int64(p[8])<<9 | int64(p[9])<<1 | int64(p[10])>>7
	v := base*300 + (int64(p[10]&1)<<8 | int64(p[11]))
	if !c.ok {
		c.ok, c.pid, c.first = true, pid, v
	}
	c.last = v
}

// selfCPU returns the CPU time (user and system) this process used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// httpLoadSummary sums the viewers up: counts, time to first byte, the
// media each got against the wall clock over the window (a viewer below
// 1 falls behind real time and stalls once its buffer is spent), the
// most one lagged, the aggregate, the load generator's CPU.
func httpLoadSummary(cfg httpLoadConfig, stats []*httpViewerStat, begin, ws, we time.Time, cpu time.Duration) map[string]any {
	win := we.Sub(ws).Seconds()
	var ttfb, late, ratio []float64
	failed, started, stalled, below := 0, 0, 0, 0
	var winBytes int64
	errs := map[string]int{}
	for _, st := range stats {
		if st.err != "" {
			failed++
			msg := st.err
			if len(msg) > 60 {
				msg = msg[:60]
			}
			errs[msg]++
		}
		if !st.started {
			continue
		}
		started++
		ttfb = append(ttfb, st.ttfb.Seconds()*1000)
		late = append(late, st.late.Seconds()*1000)
		if st.stalls > 0 || st.late > cfg.MaxLate {
			stalled++
		}
		winBytes += st.winBytes
		if win > 0 {
			r := st.winMedia / win
			ratio = append(ratio, r)
			if r < 1 && cfg.Mode != "hls" { // hls: whole segments, capped by the buffer; its stalls tell
				below++
			}
		}
	}
	pct := func(v []float64, q float64) float64 {
		if len(v) == 0 {
			return 0
		}
		slices.Sort(v)
		return round(v[min(int(q*float64(len(v))), len(v)-1)], 3)
	}
	out := map[string]any{
		"mode": cfg.Mode, "viewers": len(stats), "started": started, "failed": failed,
		"window_s": round(win, 1), "ramp_s": round(ws.Sub(begin).Seconds(), 1),
		"agg_mbps":    round(float64(winBytes)*8/1e6/max(win, 1e-9), 1),
		"ttfb_ms_p50": pct(ttfb, 0.5), "ttfb_ms_p99": pct(ttfb, 0.99), "ttfb_ms_max": pct(ttfb, 1),
		"late_ms_p50": pct(late, 0.5), "late_ms_p99": pct(late, 0.99), "late_ms_max": pct(late, 1),
		"media_wall_min": pct(ratio, 0), "media_wall_p50": pct(ratio, 0.5),
		"viewers_below_real_time": below, "viewers_stalled": stalled,
		"loadgen_cpu_pct": round(100*cpu.Seconds()/max(win, 1e-9), 1),
	}
	if len(errs) > 0 {
		out["errors"] = errs
	}
	out["pass"] = failed == 0 && started == len(stats) && below == 0 && stalled == 0
	return out
}

func round(v float64, places int) float64 {
	p := 1.0
	for range places {
		p *= 10
	}
	return float64(int64(v*p+0.5*sign(v))) / p
}

func sign(v float64) float64 {
	if v < 0 {
		return -1
	}
	return 1
}
