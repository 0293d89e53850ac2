package vodnode

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// usedTokensFile keeps, in DataDir, the admission sessions whose tokens
// the node has spent, each until its token expires, so that a node
// restarted within a token's life still refuses it: written every
// usedSavePeriod when it changed and at Close, read at Start. The
// sessions live when it is written are in it as spent too: after a
// crash, which ended them without a word, their tokens are refused as
// those of sessions that ended (a clean stop ends them so). A crash
// loses at most the last period's.
const usedTokensFile = "used-tokens.json"

// usedSavePeriod is how often the janitor writes usedTokensFile when a
// token was spent since.
const usedSavePeriod = 2 * time.Second

// usedTokensDoc is usedTokensFile's content.
type usedTokensDoc struct {
	// Until maps an admission session id to when its token may be
	// forgotten, Unix ms.
	Until map[string]int64 `json:"until_unix_ms"`
	// ByManager lists those of them the manager ended
	// (spentToken.byManager), refused 401 rather than sent back to the
	// front door.
	ByManager []string `json:"by_manager,omitempty"`
	// Ticketed lists those of them whose viewer was sent a re-admission
	// ticket (spentToken.ticketed): one each, across a restart too.
	Ticketed []string `json:"ticketed,omitempty"`
}

// loadUsedTokens reads usedTokensFile into n.used, skipping what expired
// by now. A missing file is a first start; one that cannot be read or
// parsed is logged and left (the node starts without it).
func (n *Node) loadUsedTokens(now time.Time) {
	path := filepath.Join(n.DataDir, usedTokensFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var doc usedTokensDoc
	if err == nil {
		err = json.Unmarshal(b, &doc)
	}
	if err != nil {
		n.log.Warn("spent tokens: file not read; tokens spent before the restart may be used again until they expire", "file", path, "err", err)
		return
	}
	kept := 0
	n.mu.Lock()
	for sid, ms := range doc.Until {
		if until := time.UnixMilli(ms); until.After(now) {
			n.spendLocked(sid, until)
			kept++
		}
	}
	for _, sid := range doc.ByManager {
		if e, ok := n.used[sid]; ok {
			e.byManager = true
			n.used[sid] = e
		}
	}
	for _, sid := range doc.Ticketed {
		if e, ok := n.used[sid]; ok {
			e.ticketed = true
			n.used[sid] = e
		}
	}
	n.usedDirty = false
	n.mu.Unlock()
	if kept > 0 {
		n.log.Info("spent tokens restored", "tokens", kept)
	}
}

// saveUsedTokens writes n.used, and the live sessions as spent, to
// usedTokensFile when it changed since the last write (or always with
// force), atomically (a new file renamed over the old). A failure is
// logged and retried at the next call.
func (n *Node) saveUsedTokens(now time.Time, force bool) {
	n.mu.Lock()
	if !n.usedDirty && !force {
		n.mu.Unlock()
		return
	}
	doc := usedTokensDoc{Until: make(map[string]int64, len(n.used)+len(n.live))}
	for sid, owner := range n.live {
		var expires time.Time
		switch o := owner.(type) {
		case *session:
			expires = o.expires
		case *httpSession:
			expires = o.expires
		}
		doc.Until[sid] = usedUntil(expires, n.SessionTimeout).UnixMilli()
	}
	for sid, e := range n.used {
		if e.until.After(now) {
			doc.Until[sid] = e.until.UnixMilli()
			if e.byManager {
				doc.ByManager = append(doc.ByManager, sid)
			}
			if e.ticketed {
				doc.Ticketed = append(doc.Ticketed, sid)
			}
		}
	}
	n.usedDirty = false
	n.mu.Unlock()
	if err := writeFileAtomic(filepath.Join(n.DataDir, usedTokensFile), doc); err != nil {
		n.log.Warn("spent tokens: file not written (retried)", "err", err)
		n.mu.Lock()
		n.usedDirty = true
		n.mu.Unlock()
	}
}

// writeFileAtomic writes v as JSON to a new file beside path, synced, and
// renames it over path.
func writeFileAtomic(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
