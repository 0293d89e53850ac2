package acm

import (
	"slices"
	"testing"
)

// Node ids sort by the numbers in them: node-2 before node-10.
func TestNodeIDLess(t *testing.T) {
	ids := []string{"node-10", "node-2", "node-1", "vod-b-3", "node-02", "node", "node-1a", "vod-a-12", "vod-a-3", "node-100", "node-9"}
	slices.SortFunc(ids, func(a, b string) int {
		if nodeIDLess(a, b) {
			return -1
		}
		if nodeIDLess(b, a) {
			return 1
		}
		return 0
	})
	want := []string{"node", "node-1", "node-1a", "node-02", "node-2", "node-9", "node-10", "node-100", "vod-a-3", "vod-a-12", "vod-b-3"}
	if !slices.Equal(ids, want) {
		t.Fatalf("got %v, want %v", ids, want)
	}
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "a", -1}, {"a", "", 1}, {"a1", "a01", 0}, {"a9", "a10", -1},
		{"a99999999999999999999999", "a100000000000000000000000", -1}, {"1", "a", -1},
	} {
		if got := naturalCompare(c.a, c.b); got != c.want {
			t.Errorf("naturalCompare(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
