package cdp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"

	"go.yaml.in/yaml/v3"
	"golang.org/x/sync/errgroup"

	"vodcluster/cdp/tsindex"
)

// catalogDoc is the schema of catalog.yaml:
//
//	titles:
//	  - id: sample-001          # required, [A-Za-z0-9._-]{1,128}, unique
//	    name: "Test Card"       # optional, defaults to the id
//	    file: clip-a.ts         # required, relative to the directory or absolute; not a copy's name (copyName)
//	    package: basic          # optional, defaults to "default"
//	    popularity: 1200        # optional: expected requests per day, a hint for the storage manager
type catalogDoc struct {
	Titles []catalogEntry `yaml:"titles"`
}

type catalogEntry struct {
	ID      string `yaml:"id"`
	Name    string `yaml:"name"`
	File    string `yaml:"file"`
	Package string `yaml:"package"`
	// Popularity is the operator's hint: expected requests per day, >= 0
	// and finite (0 = no hint).
	Popularity float64 `yaml:"popularity"`
}

// entry is one title to load: its metadata, its file and where it was
// declared (for error messages).
type entry struct {
	Title
	where string // "catalog.yaml:7" or the file name in directory mode
}

// LoadCatalog loads the catalog of the title directory dir.
//
// When dir holds catalog.yaml (CatalogFile), that document lists the titles
// (strict YAML: unknown keys, a second document, a missing id or file, a
// malformed or duplicate id, a file with a copy's temporary name: hidden,
// *.part, *.tmp, *.partial or *~, are errors naming the line). Otherwise every regular file dir/*.ts is a
// title whose id is its base name without ".ts", in package
// DefaultPackage, but for hidden files (a leading dot: a copy in progress,
// to be renamed into place once whole).
//
// Every distinct title file is scanned once, in parallel, with cdp/tsindex:
// it must be non-empty, made of whole 188-byte packets that each begin with
// 0x47, and carry at least two PCRs (so that its duration is known). Any bad
// file fails the whole load with an error naming the file and the title.
func LoadCatalog(dir string) (*Catalog, error) {
	cat, _, err := loadCatalog(dir, nil, nil)
	return cat, err
}

// loadCatalog loads the catalog of dir like LoadCatalog, scanning only the
// files that are not prev's as prev's load scanned them (same file, size
// and modification time: their size, duration and version are taken from
// prev; prev may be nil). It returns the number of files scanned. When
// named is not nil, it is given the files the titles name as soon as they
// are known (before they are scanned, so also when a scan fails): the
// files a watcher of dir must look at (Server's catalog watch).
func loadCatalog(dir string, prev *Catalog, named func([]string)) (*Catalog, int, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("cdp: catalog directory: %w", err)
	}
	if !st.IsDir() {
		return nil, 0, fmt.Errorf("cdp: catalog directory %s is not a directory", dir)
	}
	var entries []entry
	doc := filepath.Join(dir, CatalogFile)
	data, err := os.ReadFile(doc)
	switch {
	case err == nil:
		entries, err = parseCatalog(data, dir)
		if err != nil {
			return nil, 0, fmt.Errorf("cdp: %s: %w", doc, err)
		}
	case errors.Is(err, os.ErrNotExist):
		entries, err = scanDir(dir)
		if err != nil {
			return nil, 0, err
		}
	default:
		return nil, 0, fmt.Errorf("cdp: %w", err)
	}
	if named != nil {
		paths := make([]string, len(entries))
		for i, e := range entries {
			paths[i] = e.Path
		}
		named(paths)
	}
	scanned, err := measure(entries, prev)
	if err != nil {
		return nil, 0, err
	}
	titles := make([]Title, len(entries))
	for i, e := range entries {
		titles[i] = e.Title
	}
	return newCatalog(titles), scanned, nil
}

// parseCatalog decodes a catalog.yaml document and checks its entries;
// relative file names are resolved against dir. The entries' metadata from
// the files (size, duration, bitrate) is left zero.
func parseCatalog(data []byte, dir string) ([]entry, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var doc catalogDoc
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty document (want a titles: list)")
		}
		return nil, yamlError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one YAML document")
	}
	lines := entryLines(data)
	seen := make(map[string]string, len(doc.Titles))
	out := make([]entry, 0, len(doc.Titles))
	for i, ce := range doc.Titles {
		where := fmt.Sprintf("title #%d", i+1)
		if i < len(lines) {
			where = fmt.Sprintf("line %d", lines[i])
		}
		if err := ValidID(ce.ID); err != nil {
			return nil, fmt.Errorf("%s: bad title id: %w", where, err)
		}
		if first, dup := seen[ce.ID]; dup {
			return nil, fmt.Errorf("%s: duplicate title id %q (first at %s)", where, ce.ID, first)
		}
		seen[ce.ID] = where
		if strings.TrimSpace(ce.File) == "" {
			return nil, fmt.Errorf("%s: title %q has no file", where, ce.ID)
		}
		pkg := ce.Package
		if pkg == "" {
			pkg = DefaultPackage
		}
		if err := ValidID(pkg); err != nil {
			return nil, fmt.Errorf("%s: title %q: bad package: %w", where, ce.ID, err)
		}
		if !(ce.Popularity >= 0) || math.IsInf(ce.Popularity, 0) {
			return nil, fmt.Errorf("%s: title %q: popularity %v: want expected requests per day, >= 0", where, ce.ID, ce.Popularity)
		}
		name := ce.Name
		if name == "" {
			name = ce.ID
		}
		if copyName(ce.File) {
			return nil, fmt.Errorf("%s: title %q: file %s: %s", where, ce.ID, ce.File, copyNameRule)
		}
		path := ce.File
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		out = append(out, entry{
			Title: Title{ID: ce.ID, Name: name, Package: pkg, Path: path, PopularityPerDay: ce.Popularity},
			where: filepath.Join(dir, CatalogFile) + ": " + where, // as a parse error names it
		})
	}
	return out, nil
}

// yamlError rewords the decoder's type errors in the catalog's terms.
func yamlError(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	r := strings.NewReplacer(
		"in type cdp.catalogEntry", "in a title (known: id, name, file, package, popularity)",
		"in type cdp.catalogDoc", "at the top level (known: titles)")
	msgs := make([]string, len(te.Errors))
	for i, m := range te.Errors {
		msgs[i] = r.Replace(m)
	}
	return errors.New(strings.Join(msgs, "; "))
}

// entryLines returns the line of each item of the titles sequence, in
// order. It is only used for messages and returns nil on any surprise.
func entryLines(data []byte) []int {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return nil
	}
	m := root.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != "titles" || m.Content[i+1].Kind != yaml.SequenceNode {
			continue
		}
		var lines []int
		for _, item := range m.Content[i+1].Content {
			lines = append(lines, item.Line)
		}
		return lines
	}
	return nil
}

// copyNameRule says, in a refusal of a catalog.yaml entry naming such a
// file, why a copy name (copyName) is not a title's file.
const copyNameRule = "a hidden name or one ending .part, .tmp, .partial or ~ is what copy tools name a file while they copy it: " +
	"name the file the copy is renamed to once whole"

// copyName reports whether the base name of path is one that copy tools
// give a file while they write it, to rename it into place once whole
// (rsync's .NAME.XXXXXX, cp to a hidden name then mv, a browser's or an
// editor's *.part, *.tmp, *.partial, *~): a hidden name (leading dot) or
// one ending .part, .tmp, .partial or ~. Such a file is never a title's:
// a directory without catalog.yaml does not list it, and a catalog.yaml
// entry naming it is refused, so that a copy that stalls for longer than
// the origin's settle time is not published cut short.
func copyName(path string) bool {
	base := filepath.Base(path)
	lower := strings.ToLower(base)
	return strings.HasPrefix(base, ".") || strings.HasSuffix(base, "~") ||
		strings.HasSuffix(lower, ".part") || strings.HasSuffix(lower, ".tmp") || strings.HasSuffix(lower, ".partial")
}

// dirTitleFile reports whether de, an entry of a title directory without
// catalog.yaml, is a title's file: a *.ts file, not a directory, whose
// name is not a copy's temporary one (copyName).
func dirTitleFile(de os.DirEntry) bool {
	name := de.Name()
	return strings.HasSuffix(name, ".ts") && !de.IsDir() && !copyName(name)
}

// scanDir lists the *.ts files of dir as titles of DefaultPackage, but
// for those with a copy's temporary name (copyName: hidden ones).
func scanDir(dir string) ([]entry, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cdp: %w", err)
	}
	var out []entry
	for _, de := range des {
		name := de.Name()
		if !dirTitleFile(de) {
			continue
		}
		id := strings.TrimSuffix(name, ".ts")
		if err := ValidID(id); err != nil {
			return nil, fmt.Errorf("cdp: title file %s: bad title id: %w", filepath.Join(dir, name), err)
		}
		out = append(out, entry{
			Title: Title{ID: id, Name: id, Package: DefaultPackage, Path: filepath.Join(dir, name)},
			where: name,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// fileMeta is what a scan of one title file learnt.
type fileMeta struct {
	size     int64   // bytes
	duration float64 // seconds
	version  string  // Title.Version
	segment  float64 // Title.HLSSegmentMaxS, seconds
	file     os.FileInfo
}

// measure scans every distinct file of entries once, unless prev's load
// scanned it as it is now, and fills in the titles' size, duration,
// bitrate, version and longest HLS segment. It returns the number of files
// scanned.
func measure(entries []entry, prev *Catalog) (int, error) {
	firstUse := make(map[string]int) // path -> index of the first entry using it
	var paths []string
	for i, e := range entries {
		if _, ok := firstUse[e.Path]; !ok {
			firstUse[e.Path] = i
			paths = append(paths, e.Path)
		}
	}
	known := prev.files()
	metas := make([]fileMeta, len(paths))
	var scanned atomic.Int64
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, p := range paths {
		g.Go(func() error {
			if m, ok := known[p]; ok {
				if st, err := os.Stat(p); err == nil && sameFile(m.file, st) {
					metas[i] = m
					return nil
				}
			}
			scanned.Add(1)
			m, err := scanFile(p)
			if err != nil {
				e := entries[firstUse[p]]
				return fmt.Errorf("cdp: %s: title %q: file %s: %w", e.where, e.ID, p, err)
			}
			metas[i] = m
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	byPath := make(map[string]fileMeta, len(paths))
	for i, p := range paths {
		byPath[p] = metas[i]
	}
	for i := range entries {
		m := byPath[entries[i].Path]
		entries[i].SizeBytes = m.size
		entries[i].DurationS = m.duration
		entries[i].Version = m.version
		entries[i].HLSSegmentMaxS = m.segment
		entries[i].file = m.file
		entries[i].BitrateBps = int64(math.Round(float64(m.size) * 8 / m.duration))
	}
	return int(scanned.Load()), nil
}

// files returns what the load of c learnt of each title file, by path
// (nil for a nil c).
func (c *Catalog) files() map[string]fileMeta {
	if c == nil {
		return nil
	}
	out := make(map[string]fileMeta, len(c.titles))
	for _, t := range c.titles {
		if t.file != nil {
			out[t.Path] = fileMeta{size: t.SizeBytes, duration: t.DurationS, version: t.Version, segment: t.HLSSegmentMaxS, file: t.file}
		}
	}
	return out
}

// sameFile reports whether st is the file was described when it was
// scanned: the same file (not another renamed over it), of the same size
// and modification time.
func sameFile(was, st os.FileInfo) bool {
	return os.SameFile(was, st) && st.Size() == was.Size() && st.ModTime().Equal(was.ModTime())
}

// scanFile checks that path is a whole MPEG-TS file with a clock and
// returns its size, duration, version (the SHA-256 of the bytes read for
// the index, in the same pass) and longest HLS segment.
func scanFile(path string) (fileMeta, error) {
	f, err := os.Open(path)
	if err != nil {
		return fileMeta{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fileMeta{}, err
	}
	switch size := st.Size(); {
	case !st.Mode().IsRegular():
		return fileMeta{}, errors.New("not a regular file")
	case size == 0:
		return fileMeta{}, errors.New("empty file")
	case size%tsindex.PacketSize != 0:
		return fileMeta{}, fmt.Errorf("size %d bytes is not a whole number of %d-byte MPEG-TS packets", size, tsindex.PacketSize)
	}
	h := sha256.New()
	idx, err := tsindex.BuildFrom(io.TeeReader(f, h))
	if err != nil {
		return fileMeta{}, err
	}
	if idx.Size != st.Size() {
		return fileMeta{}, fmt.Errorf("file changed while scanned (%d bytes indexed of %d)", idx.Size, st.Size())
	}
	d := idx.Duration()
	if !(d > 0) || math.IsInf(d, 0) {
		return fileMeta{}, fmt.Errorf("no play time: fewer than two PCRs in %d packets", idx.Size/tsindex.PacketSize)
	}
	return fileMeta{size: idx.Size, duration: d, version: hex.EncodeToString(h.Sum(nil)[:16]),
		segment: idx.LongestSegment(tsindex.HLSSegmentTarget), file: st}, nil
}
