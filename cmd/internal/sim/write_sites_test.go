package sim

import (
	"bytes"
	"strings"
	"testing"
)

// TestSitesMainTableNamesTheRun: with --site-aware all,scheduler,none the
// runs share their policy and storage policy, so the main table (text and
// Markdown) says which run each row is; without sites it has no such column.
func TestSitesMainTableNamesTheRun(t *testing.T) {
	var rs []Result
	for _, aware := range []string{"all", "scheduler", "none"} {
		rs = append(rs, Result{Policy: "lall", StoragePolicy: "gdsf", SiteFigures: &SiteFigures{Sites: 3, SiteAware: aware}})
	}
	for name, write := range map[string]func(*bytes.Buffer, []Result) error{
		"table":    func(b *bytes.Buffer, rs []Result) error { return WriteTable(b, rs) },
		"markdown": func(b *bytes.Buffer, rs []Result) error { return WriteMarkdown(b, rs) },
	} {
		var b bytes.Buffer
		if err := write(&b, rs); err != nil {
			t.Fatal(err)
		}
		// The main table comes first, the table of sites after a blank line.
		main := strings.SplitN(b.String(), "\n\n", 2)[0]
		lines := strings.Split(strings.TrimSpace(main), "\n")
		var header string
		var rows []string
		for _, l := range lines {
			switch {
			case strings.Contains(l, "no copy"):
				header = l
			case strings.Contains(l, "lall"):
				rows = append(rows, l)
			}
		}
		if !strings.Contains(header, "site-aware") || len(rows) != 3 {
			t.Fatalf("%s: main table without a site-aware column or not 3 rows:\n%s", name, b.String())
		}
		for i, aware := range []string{"all", "scheduler", "none"} {
			if !strings.Contains(strings.Join(strings.Fields(strings.ReplaceAll(rows[i], "|", " ")), " "), "lall gdsf "+aware+" ") {
				t.Errorf("%s: row %d does not name run %q: %s", name, i, aware, rows[i])
			}
		}
		var plain bytes.Buffer
		if err := write(&plain, []Result{{Policy: "lall", StoragePolicy: "gdsf"}}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(plain.String(), "site") {
			t.Errorf("%s: a site column without sites:\n%s", name, plain.String())
		}
	}
}
