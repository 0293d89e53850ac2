package cdp

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"sort"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	vodclusterv1 "vodcluster/proto/vodcluster/v1"
)

// CatalogFile is the name of the catalog document inside a title directory.
const CatalogFile = "catalog.yaml"

// DefaultPackage is the entitlement package of a title whose catalog entry
// names none, and of every title of a directory without CatalogFile.
const DefaultPackage = "default"

// MaxIDLen is the longest title id or package name accepted, in bytes.
const MaxIDLen = 128

var idPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// ValidID reports whether id is a well-formed title id or package name:
// 1 to MaxIDLen characters among A-Z, a-z, 0-9, '.', '_' and '-'. It returns
// nil or an error saying what is wrong with id.
func ValidID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("empty id")
	case len(id) > MaxIDLen:
		return fmt.Errorf("id of %d bytes is longer than %d", len(id), MaxIDLen)
	case !idPattern.MatchString(id):
		return fmt.Errorf("id %q has characters outside [A-Za-z0-9._-]", id)
	}
	return nil
}

// Title is one title of the catalog: its metadata and the MPEG-TS file that
// holds its bytes. Several titles may share one file.
type Title struct {
	ID         string  // catalog id, matches [A-Za-z0-9._-]{1,128}
	Name       string  // human readable name (the id when the catalog gives none)
	Package    string  // entitlement package
	Path       string  // the title's file on the origin's disk
	DurationS  float64 // play time, seconds, from the PCRs (tsindex.Index.Duration)
	BitrateBps int64   // mean bitrate, bit/s: SizeBytes*8/DurationS, rounded
	SizeBytes  int64   // file size, bytes, a multiple of 188
	// Version identifies the file's bytes: the first 128 bits of its
	// SHA-256 (FIPS 180-4), 32 hex digits, computed at load. Titles of
	// one file share it; a file replaced by other bytes gets another.
	// Nodes resume a partly filled title only from the same version.
	Version string
	// PopularityPerDay is the operator's hint of the title's demand in
	// expected requests per day (catalog.yaml popularity:); 0 = none. The
	// storage manager takes it as a prior of the request rate.
	PopularityPerDay float64
	// HLSSegmentMaxS is the duration, seconds, of the longest HLS segment
	// a node cuts the title into (tsindex.Index.LongestSegment with
	// tsindex.HLSSegmentTarget), measured at load: the nodes declare an
	// EXT-X-TARGETDURATION that holds it from a title's first playlist.
	HLSSegmentMaxS float64

	// file is Path as the load scanned it (nil for a title not loaded by
	// LoadCatalog): Version describes its bytes only while Path is still
	// that file (checkFile).
	file os.FileInfo
}

// checkFile returns nil when st (with err, from a Stat of the file now at
// Path) is the file the catalog's load scanned, so that its bytes are
// Version's; UNAVAILABLE when it is another file (renamed
// over it) or one of another size or modification time (rewritten in
// place, or only touched): its bytes may or may not be Version's, which
// only the origin's next read of the file tells (Server.rescanOn has it
// read soon); a caller retries, naming Version, and is then served when
// the bytes are unchanged, or refused FAILED_PRECONDITION (if_version)
// when they are another version's; INTERNAL when err is set.
func (t Title) checkFile(st os.FileInfo, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return errGone(t)
	}
	if err != nil {
		return status.Errorf(codes.Internal, "title %q: %v", t.ID, err)
	}
	if t.file == nil || sameFile(t.file, st) {
		return nil
	}
	return status.Errorf(codes.Unavailable, "title %q: its file changed since the origin loaded its catalog (%d bytes modified %s, was %d bytes modified %s): the origin is reading it again; retry (version %s is served again if its bytes did not change, else the title is refused under it once read)",
		t.ID, st.Size(), st.ModTime().UTC().Format(time.RFC3339Nano), t.file.Size(), t.file.ModTime().UTC().Format(time.RFC3339Nano), t.Version)
}

// errGone is NOT_FOUND for title t whose file is no longer at its path (a
// node does not retry it).
func errGone(t Title) error {
	return status.Errorf(codes.NotFound, "title %q: its file %s is gone from the origin (withdrawn? remove its catalog entry)", t.ID, t.Path)
}

// Proto returns the title in its wire form (the file path stays private).
func (t Title) Proto() *vodclusterv1.Title {
	return &vodclusterv1.Title{
		Id:         t.ID,
		Name:       t.Name,
		DurationS:  t.DurationS,
		BitrateBps: t.BitrateBps,
		SizeBytes:  t.SizeBytes,
		Package:    t.Package,
		Version:    t.Version,

		PopularityPerDay: t.PopularityPerDay,
		HlsSegmentMaxS:   t.HLSSegmentMaxS,
	}
}

// Catalog is the immutable set of titles an origin serves, indexed by id.
// It is safe for concurrent use. Build one with LoadCatalog.
type Catalog struct {
	titles []Title        // sorted by ID
	byID   map[string]int // ID -> index into titles
}

// newCatalog indexes titles, which must have unique ids.
func newCatalog(titles []Title) *Catalog {
	sorted := append([]Title(nil), titles...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	c := &Catalog{titles: sorted, byID: make(map[string]int, len(sorted))}
	for i, t := range sorted {
		c.byID[t.ID] = i
	}
	return c
}

// Title returns the title with the given id and whether it exists.
func (c *Catalog) Title(id string) (Title, bool) {
	i, ok := c.byID[id]
	if !ok {
		return Title{}, false
	}
	return c.titles[i], true
}

// Titles returns every title sorted by id, in a new slice.
func (c *Catalog) Titles() []Title {
	return append([]Title(nil), c.titles...)
}

// Len returns the number of titles.
func (c *Catalog) Len() int { return len(c.titles) }

// Proto returns every title, sorted by id, in wire form: new messages the
// caller may keep or change.
func (c *Catalog) Proto() []*vodclusterv1.Title {
	out := make([]*vodclusterv1.Title, len(c.titles))
	for i, t := range c.titles {
		out[i] = t.Proto()
	}
	return out
}
