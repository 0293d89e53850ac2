package samples

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed clip-a.ts clip-b.ts clip-c.ts catalog.yaml
var files embed.FS

// names are the embedded files, written by WriteTo.
var names = []string{"clip-a.ts", "clip-b.ts", "clip-c.ts", catalogName}

// catalogName is the catalog's file (cdp.CatalogFile), written by WriteTo
// only where there is none.
const catalogName = "catalog.yaml"

// count is the number of sample titles in catalog.yaml.
const count = 20

// IDs returns the ids of the sample titles in catalog order:
// "sample-001" ... "sample-020".
func IDs() []string {
	ids := make([]string, count)
	for i := range ids {
		ids[i] = fmt.Sprintf("sample-%03d", i+1)
	}
	return ids
}

// FS returns the embedded files (clip-a.ts, clip-b.ts, clip-c.ts,
// catalog.yaml) as a read-only file system.
func FS() fs.FS { return files }

// WriteTo writes the three clips and catalog.yaml into dir, creating dir
// when needed, so that dir is a title directory for cdp.LoadCatalog. It is
// idempotent: a clip already there with the right content is left alone,
// any other is replaced atomically (written aside, then renamed); a
// catalog.yaml already there is left as it is, whatever it holds: the
// operator's own (titles added to a kept data directory, vodcluster up
// --data-dir, stay published across restarts). It returns the first file
// system error, naming the file.
func WriteTo(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("samples: %w", err)
	}
	for _, name := range names {
		data, err := files.ReadFile(name)
		if err != nil {
			return fmt.Errorf("samples: %w", err)
		}
		path := filepath.Join(dir, name)
		if name == catalogName {
			if _, err := os.Lstat(path); err == nil {
				continue // the operator's
			}
		}
		if err := writeFile(path, data); err != nil {
			return fmt.Errorf("samples: %w", err)
		}
	}
	return nil
}

// writeFile makes path hold data, unless it already does.
func writeFile(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
