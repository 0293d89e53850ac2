package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"vodcluster/cdp/tsindex"
	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// Errors returned by the Store (wrapped; test with errors.Is).
var (
	ErrUnknownTitle = errors.New("store: unknown title")         // neither stored nor in the origin's catalog
	ErrNoSpace      = errors.New("store: not enough disk space") // eviction cannot free enough bytes
	ErrInUse        = errors.New("store: title in use")          // playing or filling: not evicted
	ErrOrigin       = errors.New("store: origin unavailable")    // the origin could not be asked
	ErrFillFailed   = errors.New("store: fill failed")           // a title's fill stopped before its end (View.Err): the origin away longer than RetryFor, the title replaced there
	ErrBadID        = errors.New("store: invalid title id")      // not [A-Za-z0-9._-]{1,128}
	ErrLocked       = errors.New("store: directory in use")      // another process (or Store) holds the directory's lock
	// ErrDisk is a fill's failure to create or write its file on the
	// node's own disk (read only, a permissions problem, full, failing):
	// no retry from the origin mends it (DiskFault says so until a test
	// write succeeds).
	ErrDisk        = errors.New("writing the title to the node's disk")
	errClosedStore = errors.New("store: closed")
)

var idRe = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$`)

// ValidID reports whether id is a well-formed title id:
// [A-Za-z0-9._-]{1,128} not starting with a dot.
func ValidID(id string) bool { return idRe.MatchString(id) }

// Config configures a Store.
type Config struct {
	Dir       string           // directory of the title files, created if missing
	DiskBytes int64            // bytes the titles may take; 0 = unlimited
	Evictor   smm.Evictor      // chooses what to evict before a fill; nil = LRU
	Origin    pb.OriginClient  // where missing titles are filled from; nil = none
	Logger    *slog.Logger     // nil = slog.Default()
	Now       func() time.Time // clock for last-access times; nil = time.Now

	// A fill the origin interrupts (the origin restarting, say) is retried
	// from the offset reached, with pauses doubling from Retry up to
	// RetryMax (each jittered into [1/2, 1] of its step), until it has
	// received no byte for RetryFor, not counting the time its retries
	// waited queued at the origin for a channel (before the origin's
	// started message, pb.FetchChunk.started); then it fails.
	Retry    time.Duration // first pause before a retry; 0 = DefaultRetry (200 ms)
	RetryMax time.Duration // longest pause between two attempts; 0 = DefaultRetryMax (2 s)
	RetryFor time.Duration // time without a byte (queued time aside) after which a fill fails; 0 = DefaultRetryFor (30 s)
	// StallAfter is how long a transfer that has started (the origin said
	// so, pb.FetchChunk.started, when it gave the transfer one of its
	// channels; an origin that predates that message: it sent the first
	// chunk) may go without a message before it is given up as stalled
	// and retried as an interrupted one, from the offset reached;
	// 0 = DefaultStallAfter (10 s). It catches an origin whose process is
	// stuck (an open or a read blocked on a failing disk or a hung network
	// file system), before its first byte as after it, while its gRPC
	// transport still answers keepalive pings. The wait before the start
	// is not bounded by it: an origin queues a transfer until one of its
	// channels is free (cdp.Fetch), and a busy origin is not a stuck one.
	StallAfter time.Duration
	// AbandonAfter is how long a fill on demand left without readers
	// before the origin's first byte waits before it is abandoned (its
	// origin channel goes to fills someone watches); 0 = DefaultAbandonAfter.
	AbandonAfter time.Duration
	// PartialMaxAge is how long the beginning of a title whose fill
	// stopped short (a partial, partial.go) is kept for its next fill to
	// resume from before it is removed; 0 = DefaultPartialMaxAge (24 h).
	PartialMaxAge time.Duration
	// FillEnded, when set, is called on a fill's goroutine once the fill
	// of title has ended, complete or failed, the store's state (Statuses,
	// ActiveFills, TakeFailures) already saying so; the node uses it to
	// tell the manager at once, whose count of the origin's channels in use
	// would otherwise hold the channel until the next load report. It
	// must not block.
	FillEnded func(title string)
}

// DefaultAbandonAfter is Config.AbandonAfter's default: a client's
// refused SETUP retried, or a player reconnecting, takes the fill up
// again within it.
const DefaultAbandonAfter = 5 * time.Second

// LockFile is the file in Config.Dir whose flock(2) an open Store holds,
// so that two processes never share the directory.
const LockFile = ".lock"

// Store is the set of titles on one node's disk. Safe for concurrent use.
type Store struct {
	cfg Config
	log *slog.Logger
	cat *catalog

	ctx    context.Context
	cancel context.CancelFunc
	fills  sync.WaitGroup
	bg     sync.WaitGroup // the sweep of partials

	lock *os.File // holds the flock on Dir's LockFile; nil where there is none

	mu          sync.Mutex
	titles      map[string]*Title
	partials    map[string]*partial // titles whose fill stopped short, kept to resume (not in titles)
	used        int64               // bytes of stored titles, the full size of filling ones and the partials' bytes
	closed      bool
	fillsByID   map[string]int // fills started per title since Open
	doneByID    map[string]int // fills completed per title since Open
	failedBy    map[string]int // fills failed since Open, by FailCause
	originBytes atomic.Int64
	diskFault   atomic.Int64 // monotime.Of the last failed write to the title cache (DiskFault); 0: none
	// originRangeBytes: bytes received by OriginRange reads (not cached).
	originRangeBytes atomic.Int64
	// protected are the titles the manager says the node's own eviction
	// must keep (the operator's pins): SetProtected.
	protected map[string]bool
	// expect are the viewers the manager sent to the node who have not
	// arrived yet, whose titles the node's own eviction keeps too: Expect.
	expect expectSet
	// failures are the fills that failed since TakeFailures last ran.
	failures []Failure
	// fsAvail returns the bytes free on Dir's file system (fsAvail(Dir));
	// false when unknown.
	fsAvail func() (int64, bool)
}

// FSAvail returns the bytes free for the node on the file system holding
// the titles (statfs(2) of Config.Dir, the measure room for a fill is
// checked against); false when it cannot be measured.
func (s *Store) FSAvail() (int64, bool) {
	if s.fsAvail == nil {
		return 0, false
	}
	return s.fsAvail()
}

// SetProtected replaces the titles that eviction to make room for a fill
// must never remove (the manager's ProtectCommand: the operator's pins).
// Evict, the manager's own order, is not affected. A prefetch newly
// protected that is asked of the origin as a prefetch is asked again as a
// fill (watchedLocked): the manager counts a pinned fill in its budget of
// origin channels, and the origin no longer ends it for a viewer's fill.
func (s *Store) SetProtected(ids []string) {
	p := make(map[string]bool, len(ids))
	for _, id := range ids {
		p[id] = true
	}
	s.mu.Lock()
	s.protected = p
	for id := range p {
		s.watchedLocked(s.titles[id])
	}
	s.mu.Unlock()
}

// Open locks cfg.Dir (an exclusive flock(2) on its LockFile, held until
// Close), scans it (keeping the partials of fills that stopped short when
// their record says what they begin, removing other .part files and, over
// the quota or PartialMaxAge, the partials), indexes every <id>.ts (reusing
// a persisted <id>.idx when it matches the file) and returns the Store.
// Errors: the directory cannot be created or
// read, it is locked by another process or Store (wraps ErrLocked), or a
// stored file is not MPEG-TS.
func Open(cfg Config) (*Store, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Evictor == nil {
		cfg.Evictor = smm.LRU{}
	}
	if cfg.Retry <= 0 {
		cfg.Retry = DefaultRetry
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = DefaultRetryMax
	}
	cfg.RetryMax = max(cfg.RetryMax, cfg.Retry)
	if cfg.RetryFor <= 0 {
		cfg.RetryFor = DefaultRetryFor
	}
	if cfg.StallAfter <= 0 {
		cfg.StallAfter = DefaultStallAfter
	}
	if cfg.AbandonAfter <= 0 {
		cfg.AbandonAfter = DefaultAbandonAfter
	}
	if cfg.PartialMaxAge <= 0 {
		cfg.PartialMaxAge = DefaultPartialMaxAge
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	lock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	s := &Store{
		cfg:       cfg,
		log:       cfg.Logger,
		cat:       &catalog{origin: cfg.Origin, log: cfg.Logger, titles: map[string]Meta{}},
		titles:    map[string]*Title{},
		partials:  map[string]*partial{},
		fillsByID: map[string]int{},
		doneByID:  map[string]int{},
		failedBy:  map[string]int{},
		lock:      lock,
		fsAvail:   func() (int64, bool) { return fsAvail(cfg.Dir) },
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.scan(); err != nil {
		s.closeFiles()
		s.unlock()
		return nil, err
	}
	s.expirePartialsLocked()
	if cfg.DiskBytes > 0 && s.used > cfg.DiskBytes {
		s.dropPartialsLocked(s.used-cfg.DiskBytes, "over the disk quota")
	}
	if cfg.DiskBytes > 0 && s.used > cfg.DiskBytes {
		s.log.Warn("stored titles exceed the disk quota", "used_bytes", s.used, "disk_bytes", cfg.DiskBytes)
	}
	s.bg.Add(1)
	go s.sweepPartials()
	return s, nil
}

func (s *Store) path(id, ext string) string { return filepath.Join(s.cfg.Dir, id+ext) }

func (s *Store) scan() error {
	ents, err := os.ReadDir(s.cfg.Dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	seen := map[string]bool{}
	var parts []string
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".ts.part") && !e.IsDir():
			parts = append(parts, strings.TrimSuffix(name, ".ts.part"))
		case strings.HasSuffix(name, ".ts") && !e.IsDir():
			id := strings.TrimSuffix(name, ".ts")
			if !ValidID(id) {
				s.log.Warn("ignoring title file with an invalid id", "file", name)
				continue
			}
			if err := s.load(id); err != nil {
				if !errors.Is(err, errDamaged) {
					return err
				}
				// The title directory is a cache: a damaged copy is
				// removed, and the next viewer fills the title again.
				s.log.Error("damaged copy removed", "title", id, "err", err)
				os.Remove(s.path(id, ".ts"))
				os.Remove(s.path(id, ".idx"))
				continue
			}
			seen[id] = true
		}
	}
	for _, id := range parts {
		s.loadPartial(id)
	}
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), ".idx"); ok && !seen[id] {
			os.Remove(filepath.Join(s.cfg.Dir, e.Name()))
		}
		if id, ok := strings.CutSuffix(e.Name(), partialMetaExt); ok && s.partials[id] == nil {
			os.Remove(filepath.Join(s.cfg.Dir, e.Name())) // a record without its .part
		}
		if strings.HasSuffix(e.Name(), partialMetaExt+".tmp") {
			os.Remove(filepath.Join(s.cfg.Dir, e.Name())) // a record's write cut short
		}
	}
	return nil
}

// errDamaged is a stored copy that cannot be served: not MPEG-TS
// throughout, or of another size than when its fill completed (truncated).
var errDamaged = errors.New("damaged copy")

// load opens and indexes one complete title. Errors: errDamaged (wrapped)
// for a copy to remove, else the file cannot be opened.
func (s *Store) load(id string) error {
	f, err := os.Open(s.path(id, ".ts"))
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("store: %w", err)
	}
	// An index built before discontinuities were absorbed (its clock
	// froze or rushed its viewers at a splice, a seek there landed a
	// part away) is built again, its version kept (the bytes are those
	// the fill checked).
	idx, version, ok := loadIndex(s.path(id, ".idx"), st)
	if !ok {
		if x, ok := readIndex(s.path(id, ".idx")); ok && x.Size != st.Size() {
			f.Close()
			return fmt.Errorf("%w: %d bytes, %d when its fill completed", errDamaged, st.Size(), x.Size)
		}
		idx, err = tsindex.BuildFrom(f)
		if err != nil {
			f.Close()
			return fmt.Errorf("%w: %v", errDamaged, err)
		}
		if len(idx.PCRs) < 2 {
			f.Close()
			return fmt.Errorf("%w: %d bytes with no clock to play it by (empty or cut short)", errDamaged, idx.Size)
		}
		if err := saveIndex(s.path(id, ".idx"), st, idx, version); err != nil {
			s.log.Warn("cannot persist index", "title", id, "err", err)
		}
		s.warnClockJumps(id, idx)
	}
	t := &Title{
		meta:       Meta{ID: id, Size: idx.Size, Bitrate: idx.Bitrate(), Duration: idx.Duration(), Version: version},
		file:       f,
		lastAccess: st.ModTime(),
	}
	t.view.Store(&View{Index: *idx, Complete: true})
	s.titles[id] = t
	s.used += t.meta.Size
	return nil
}

// Lookup returns the metadata of title id: from the stored (or filling)
// copy, else from the origin's catalog (refreshed on a miss). Errors wrap
// ErrBadID, ErrUnknownTitle or ErrOrigin.
func (s *Store) Lookup(ctx context.Context, id string) (Meta, error) {
	if !ValidID(id) {
		return Meta{}, fmt.Errorf("%w: %q", ErrBadID, id)
	}
	s.mu.Lock()
	t, ok := s.titles[id]
	s.mu.Unlock()
	if ok {
		m := t.meta
		if cm, ok := s.cat.cached(id); ok && m.Duration == 0 {
			m.Duration = cm.Duration
		}
		return m, nil
	}
	return s.cat.lookup(ctx, id, s.cfg.Now(), -1)
}

// Release gives back a title obtained from Acquire. A fill on demand left
// without readers before the origin's first byte (waiting for an origin
// channel) is abandoned AbandonAfter later unless a reader comes back:
// the channel goes to fills someone watches.
func (s *Store) Release(t *Title) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t.refs--
	if t.refs == 0 && t.removed && t.file != nil {
		t.file.Close()
	}
	if t.refs == 0 && t.filling && !t.prefetch && !t.started && t.cancel != nil {
		t.idleGen++
		gen := t.idleGen
		time.AfterFunc(s.cfg.AbandonAfter, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			// Still without readers since this release (no reader came and
			// went meanwhile), still waiting, and not prefetched since.
			if t.refs == 0 && t.idleGen == gen && t.filling && !t.started && !t.prefetch {
				t.stopped = true
				t.cancel()
			}
		})
	}
}

// Status is one title on the node as the manager's load report shows it.
type Status struct {
	ID       string
	Size     int64 // bytes of the whole title
	Stored   int64 // bytes on disk now
	Filling  bool
	Prefetch bool // the fill was ordered ahead of demand
	// Preemptible: a prefetch no viewer needs, which a fill on demand
	// stops to take its room (makeRoom): the manager counts its bytes as
	// room.
	Preemptible bool
	Readers     int // Acquire holds (sessions)
	LastAccess  time.Time
	// Version is the origin's version of the bytes (Meta.Version); ""
	// when not known (a copy indexed again at start without its record).
	Version string
	// OriginWait: the fill's transfer has not started at the origin yet
	// (asked, no message from the origin): queued for a channel, or
	// paying the origin's setup delay.
	OriginWait bool
	// OriginRetries counts the fill's transfers that failed since the
	// origin last answered (0 when it answers, and when not filling): the
	// origin away, restarting or refusing for now, the fill retried with
	// backoff until fill_retry_for passes without a byte. OriginRetryAt is
	// the next attempt (zero while one is under way), OriginError the last
	// failure's cause.
	OriginRetries int
	OriginRetryAt time.Time
	OriginError   string
}

// Titles returns the stored and filling titles, sorted by id (not the
// partials: Partials; nor a prefetch the operator's eviction cancelled
// whose fill is ending: EvictOrCancel).
func (s *Store) Titles() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expect.prune(s.cfg.Now())
	out := make([]Status, 0, len(s.titles))
	for _, t := range s.titles {
		if t.filling && t.evicted {
			continue // gone for the manager: its fill ends, its bytes dropped
		}
		out = append(out, Status{
			ID: t.meta.ID, Size: t.meta.Size, Stored: t.View().Index.Size, Filling: t.filling,
			Prefetch: t.prefetch, Preemptible: s.preemptibleLocked(t), Readers: t.refs, LastAccess: t.lastAccess, Version: t.meta.Version,
			OriginWait: t.filling && t.originWait,
		})
		if r := t.retry; t.filling && r.failures > 0 {
			st := &out[len(out)-1]
			st.OriginRetries, st.OriginRetryAt, st.OriginError = r.failures, r.next, r.err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Usage returns the bytes taken by stored titles (filling ones at their
// full size) and partials, the bytes of the partials among them (read at
// the same moment; those of titles a viewer is on its way for included:
// Room leaves them out), and the quota (0 = unlimited).
func (s *Store) Usage() (used, partial, quota int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used, s.partialBytesLocked(""), s.cfg.DiskBytes
}

// Room returns what Usage does, but with freeable, the bytes of the
// partials the room made for a fill may remove, in place of all the
// partials' bytes: those of titles a viewer is on its way for (Expect)
// or pinned (SetProtected) are left out, since a fill keeps them until
// that viewer's deadline, or the pin's prefetch resumes them.
// The node reports freeable as free disk to the manager, and the kept
// partials as used: counted free, they let the manager place a fill the
// node would then refuse (ErrNoSpace).
func (s *Store) Room() (used, freeable, quota int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expect.prune(s.cfg.Now())
	return s.used, s.freeablePartialBytesLocked(""), s.cfg.DiskBytes
}

// Fills returns how many fills were started per title since Open.
func (s *Store) Fills() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.fillsByID))
	for k, v := range s.fillsByID {
		out[k] = v
	}
	return out
}

// FillsCompleted returns how many fills completed (the title stored
// whole) per title since Open, counted before the readers are told. A
// title evicted at once after its fill counts too: Titles, a look at
// one moment, can miss it.
func (s *Store) FillsCompleted() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.doneByID)
}

// FillsFailed returns how many fills failed since Open, by cause
// (FailCause); a fill stopped by Close is not counted.
func (s *Store) FillsFailed() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.failedBy)
}

// ActiveFills returns the number of fills in progress.
func (s *Store) ActiveFills() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.titles {
		if t.filling {
			n++
		}
	}
	return n
}

// OriginBytes returns the bytes received from the origin since Open.
func (s *Store) OriginBytes() int64 { return s.originBytes.Load() }

// Close stops the fills in progress (their bytes are kept as partials
// when the origin gave the title's version, else removed), waits for them,
// closes the title files and releases the directory's lock.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.fills.Wait()
	s.bg.Wait()
	s.closeFiles()
	s.unlock()
	return nil
}

// unlock releases the lock on the directory.
func (s *Store) unlock() {
	if s.lock != nil {
		s.lock.Close()
		s.lock = nil
	}
}

func (s *Store) closeFiles() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.titles {
		if t.file != nil {
			t.file.Close()
		}
	}
}
