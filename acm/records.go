package acm

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// recordTime is a time of a session record: written in UTC with three
// digits of milliseconds whatever their value ("2026-12-01T04:33:26.120Z",
// not time.Time's "…26.12Z"), so every record's times have one width.
type recordTime struct{ time.Time }

// recordTimeLayout is recordTime's layout (RFC 3339).
const recordTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// MarshalJSON writes t in UTC to the millisecond, truncated.
func (t recordTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.UTC().Truncate(time.Millisecond).Format(recordTimeLayout) + `"`), nil
}

// sessionRecord is one line of the session records file
// (Manager.SessionRecordsFile): a call detail record of a session that
// ended, for the operator's billing, royalty reports (plays per title) and
// analytics. Times are RFC 3339 in UTC, to the millisecond.
type sessionRecord struct {
	Session  string `json:"session"`  // admission session id
	User     string `json:"user"`     // subscriber
	Title    string `json:"title"`    // title id
	Node     string `json:"node"`     // node that served it
	Protocol string `json:"protocol"` // rtsp, rtsps or http
	Client   string `json:"client"`   // client address at admission
	// ClientSite and NodeSite are the client's site (Manager.Sites) and
	// the node's, when sites are set: a session served across sites has
	// two different ones.
	ClientSite string     `json:"client_site,omitempty"`
	NodeSite   string     `json:"node_site,omitempty"`
	BitrateBps int64      `json:"bitrate_bps"` // bit/s reserved
	Fill       bool       `json:"fill"`        // the node filled the title from the origin for it
	AdmittedAt recordTime `json:"admitted_at"`
	StartedAt  recordTime `json:"started_at,omitzero"` // absent: never started at the node
	// EndedAt is when the viewer left: its TEARDOWN or last request, its
	// last sign of life for one that timed out (as its node reported),
	// or when the manager ended it.
	EndedAt recordTime `json:"ended_at"`
	// PlayedS is the session's length from its start to its end, seconds
	// (wall time, pauses included); 0 when it never started, and when its
	// node's fill of the title failed before it sent the viewer any of it
	// (the node reports that end at the start: reason "fill failed: ...").
	PlayedS float64 `json:"played_s"`
	// PausedS is how much of PlayedS the viewer was paused (an RTSP
	// PAUSE until the next PLAY or the end), seconds, as the node
	// measured it in the session's ENDED; 0 without a pause, without an
	// ENDED, and from a node of a release that does not measure it.
	// Never more than PlayedS.
	PausedS float64 `json:"paused_s"`
	// BytesSent is what the node sent, as it counted in the session's
	// ENDED (payload bytes of MPEG-TS or elementary streams), or, without
	// an ENDED, as its last load report said (BytesSentAsOfReport); 0
	// when the viewer never came, and when the node did not say
	// (BytesSentUnknown).
	BytesSent int64 `json:"bytes_sent"`
	// BytesSentAsOfReport: the session started at its node, whose ENDED
	// never came (it died or was cut off, or its ENDED was lost, and the
	// session ended without it), but whose load reports counted the
	// session's bytes: BytesSent is the last figure reported, a lower
	// bound (the node may have sent more in the last report interval).
	// Absent (false) when BytesSent is the ENDED's count.
	BytesSentAsOfReport bool `json:"bytes_sent_as_of_report,omitempty"`
	// BytesSentUnknown: as BytesSentAsOfReport, but no load report
	// counted the session's bytes either (an older node, or the session
	// ended before the node's first report with it): BytesSent is 0 for
	// want of a figure, not a count. Absent (false) when BytesSent is a
	// count; never set with BytesSentAsOfReport.
	BytesSentUnknown bool   `json:"bytes_sent_unknown,omitempty"`
	Reason           string `json:"reason"` // why it ended: teardown, timeout, end of title, no-show, ...
}

// sessionRecordsTotal counts the session records by result.
var sessionRecordsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "vodcluster_session_records_total",
	Help: "Session records (one per ended session) of this manager by result: written to session_records_file, dropped (the writer was behind by sessionRecordQueue records), failed (the write failed).",
}, []string{"result"})

// sessionRecordQueue is how many records may wait for the writer; more
// are dropped (counted) rather than hold the manager up.
const sessionRecordQueue = 8192

// sessionRecords appends records to a file from a goroutine of its own,
// so that a slow disk never holds the manager's lock.
type sessionRecords struct {
	path   string
	log    *slog.Logger
	mu     sync.Mutex // closed, and sends on ch against close
	closed bool
	ch     chan sessionRecord
	reopen chan chan error
	done   chan struct{}
}

// openSessionRecords opens path for appending (created 0640 when
// missing) and starts the writer. Errors: the file cannot be opened.
func openSessionRecords(path string, log *slog.Logger) (*sessionRecords, error) {
	f, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	r := &sessionRecords{path: path, log: log, ch: make(chan sessionRecord, sessionRecordQueue),
		reopen: make(chan chan error), done: make(chan struct{})}
	go r.run(f)
	return r, nil
}

func openAppend(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("session records: %w", err)
	}
	return f, nil
}

// add queues rec (its times are written to the millisecond:
// recordTime); a nil r, or a closed one, drops it silently.
func (r *sessionRecords) add(rec sessionRecord) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	select {
	case r.ch <- rec:
	default:
		sessionRecordsTotal.WithLabelValues(recordDropped).Inc()
	}
}

// run writes each record as one line, reopening the file when asked.
func (r *sessionRecords) run(f *os.File) {
	defer close(r.done)
	failing := false
	for {
		select {
		case rec, ok := <-r.ch:
			if !ok {
				if err := f.Close(); err != nil {
					r.log.Error("session records: close", "file", r.path, "err", err)
				}
				return
			}
			line, err := json.Marshal(rec)
			if err == nil {
				_, err = f.Write(append(line, '\n')) // one write: whole lines with O_APPEND
			}
			switch {
			case err != nil:
				sessionRecordsTotal.WithLabelValues(recordFailed).Inc()
				if !failing {
					r.log.Error("session records: write failed (records are lost until it works again)", "file", r.path, "err", err)
				}
				failing = true
			default:
				sessionRecordsTotal.WithLabelValues(recordWritten).Inc()
				if failing {
					r.log.Info("session records: writing again", "file", r.path)
				}
				failing = false
			}
		case reply := <-r.reopen:
			nf, err := openAppend(r.path)
			if err == nil {
				f.Close()
				f = nf
			}
			reply <- err
		}
	}
}

// Reopen closes the file and opens path again (after logrotate moved it
// away). Errors: the file cannot be opened (the old one stays in use).
func (r *sessionRecords) Reopen() error {
	reply := make(chan error, 1)
	select {
	case r.reopen <- reply:
		return <-reply
	case <-r.done:
		return fmt.Errorf("session records: closed")
	}
}

// close writes the records queued and closes the file.
func (r *sessionRecords) close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.ch)
	}
	r.mu.Unlock()
	<-r.done
}

// ReopenSessionRecords opens Manager.SessionRecordsFile again, for log
// rotation (logrotate's postrotate, or SIGHUP to the process). It returns
// nil without a records file; errors: the file cannot be opened (writing
// goes on to the old one).
func (m *Manager) ReopenSessionRecords() error {
	if m.records == nil {
		return nil
	}
	err := m.records.Reopen()
	if err != nil {
		m.log.Error("session records: reopen failed, writing on to the file open before", "file", m.SessionRecordsFile, "err", err)
	}
	return err
}

// playedSeconds is d in seconds to the millisecond (2.788, not
// 2.7880000000000003 in the JSON), 0 when negative.
func playedSeconds(d time.Duration) float64 {
	return float64(max(0, d.Milliseconds())) / 1000
}

// pausedSeconds is ms, a node's paused_ms, in seconds (0 when negative).
func pausedSeconds(ms int64) float64 {
	return float64(max(0, ms)) / 1000
}

// sessionRecordLocked queues the record of s, which ended at now for reason.
func (m *Manager) sessionRecordLocked(s *session, reason string, now time.Time) {
	if m.records == nil {
		return
	}
	if !s.endedAt.IsZero() {
		now = s.endedAt // the node's ENDED
	}
	if !s.StartedAt.IsZero() && now.Before(s.StartedAt) {
		// Never an end before the start (ended_at - started_at is what
		// billing counts): a node's end at its viewer's last sign of
		// life, the PLAY that came a moment before the start it
		// reported, or the manager's own clock behind the node's.
		now = s.StartedAt
	}
	var clientSite, nodeSite string
	if m.sites != nil && len(m.sites.prefixes) > 0 {
		host, _, err := net.SplitHostPort(s.ClientAddr)
		if err != nil {
			host = s.ClientAddr
		}
		clientSite = m.sites.siteOf(host)
		if n := m.sched.Node(s.Node); n != nil {
			nodeSite = n.Site
		}
	}
	rec := sessionRecord{
		Session: s.ID, User: s.User, Title: s.Title, Node: s.Node, Protocol: s.Protocol, Client: s.ClientAddr,
		ClientSite: clientSite, NodeSite: nodeSite,
		BitrateBps: s.BitrateBps, Fill: s.Fill, AdmittedAt: recordTime{s.AdmittedAt.UTC()}, EndedAt: recordTime{now.UTC()},
		BytesSent: s.bytesSent, Reason: reason,
	}
	if !s.StartedAt.IsZero() {
		// A held record's ENDED clears both (recordEndedLocked).
		rec.BytesSentAsOfReport = !s.bytesReported && s.bytesAsOfReport
		rec.BytesSentUnknown = !s.bytesReported && !s.bytesAsOfReport
		rec.StartedAt = recordTime{s.StartedAt.UTC()}
		rec.PlayedS = playedSeconds(now.Sub(s.StartedAt))
		rec.PausedS = min(rec.PlayedS, pausedSeconds(s.pausedMs))
	}
	// Held from now, not from the end it says (a guess that may lie
	// minutes back, past the wait: the record went out at once).
	switch {
	case s.awaitEnded:
		m.holdRecordLocked(rec, m.now(), endedRetryWait, true)
		return
	case s.holdRecord:
		m.holdRecordLocked(rec, m.now(), heldRecordWait, false)
		return
	}
	m.records.add(rec)
}
