package monotime

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// No Go file of the module keeps an instant that a timeout, a lease or a
// silence is measured against as Unix nanoseconds (t.UnixNano(), read
// back with time.Unix(0, n)): those go by the wall clock, which an NTP
// step moves (a step forward ended every paused session at once; a step
// back kept a manager counting itself the planner lock's holder after its
// lease ran out). A line that means the wall clock (an NTP timestamp, a
// file's modification time) says so with "wall clock:" on it or on the
// line before.
func TestNoWallClockInstants(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); strings.HasPrefix(name, ".") || name == "testdata" || path == filepath.Join(root, "proto", "vodcluster") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Dir(path) == filepath.Join(root, "proto", "monotime") {
			return nil
		}
		checked++
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		prev := ""
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if (strings.Contains(line, ".UnixNano()") || strings.Contains(line, "time.Unix(0,")) &&
				!strings.Contains(line, "wall clock:") && !strings.Contains(prev, "wall clock:") {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d: an instant kept on the wall clock (use monotime, or say \"wall clock:\" why): %s", rel, n, strings.TrimSpace(line))
			}
			prev = line
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d Go files checked under %s", checked, root)
	}
}
