package smm

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

func TestPins(t *testing.T) {
	var p Pins
	if p.Protects("n1", "a") {
		t.Fatal("empty pins protect")
	}
	if added, err := p.Pin("n1", "a"); !added || err != nil {
		t.Fatal(added, err)
	}
	if added, _ := p.Pin("n1", "a"); added {
		t.Fatal("second pin reported new")
	}
	if _, err := p.Pin("", "b"); err != nil {
		t.Fatal(err)
	}
	if !p.Protects("n1", "a") || p.Protects("n2", "a") || !p.Protects("n2", "b") || !p.Pinned("", "b") || p.Pinned("n2", "b") {
		t.Fatal("wrong protection")
	}
	for _, bad := range [][2]string{{"n1", ""}, {"n 1", "a"}, {"", "a/b"}, {"", string(make([]byte, 129))}} {
		if _, err := p.Pin(bad[0], bad[1]); !errors.Is(err, ErrBadPin) {
			t.Fatalf("Pin(%q, %q) err %v", bad[0], bad[1], err)
		}
	}
	b, err := json.Marshal(&p)
	if err != nil {
		t.Fatal(err)
	}
	var q Pins
	if err := json.Unmarshal(b, &q); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(q.List(), []Pin{{Title: "b"}, {Title: "a", Node: "n1"}}) || q.Len() != 2 {
		t.Fatalf("round trip %s -> %v", b, q.List())
	}
	if err := q.UnmarshalJSON([]byte(`[{"title":""}]`)); err == nil || q.Len() != 2 {
		t.Fatal("bad pin list accepted or state lost")
	}
	if err := q.UnmarshalJSON([]byte(`{`)); err == nil {
		t.Fatal("bad JSON accepted")
	}
	if !q.Unpin("n1", "a") || q.Unpin("n1", "a") || q.Protects("n1", "a") {
		t.Fatal("unpin")
	}
	if got := q.NodePins("n1"); got != nil {
		t.Fatalf("node pins after unpin %v", got)
	}
}
