package bound

import (
	"bytes"
	"cmp"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestCSVRoundTrip(t *testing.T) {
	in := []Record{
		{Time: 0.5, Title: "film-1", Bytes: 1 << 30, Node: "n1", Fill: true, End: 60.125},
		{Time: 0.5, Title: "film,2", Bytes: 7, Node: "", Fill: false},
		{Time: 12.25, Title: "film-1", Bytes: 1 << 30, Node: "n2", Fill: false, End: 12.25},
	}
	var buf bytes.Buffer
	w, err := NewCSVWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range in {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "time_s,title,bytes,node,fill,end_s\n0.500,film-1,1073741824,n1,true,60.125\n") {
		t.Fatalf("csv:\n%s", buf.String())
	}
	out, err := ReadCSV(&buf)
	if err != nil || !slices.Equal(out, in) {
		t.Fatalf("read %v %v", out, err)
	}
	if reqs := Requests(out); reqs[1] != (Request{Time: 0.5, Title: "film,2", Bytes: 7}) || reqs[0].End != 60.125 {
		t.Fatalf("requests %v", reqs)
	}
}

// TestQuantizeTimes: times round inwards to a millisecond and read back
// from the CSV exactly as quantized.
func TestQuantizeTimes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	var buf bytes.Buffer
	w, _ := NewCSVWriter(&buf)
	var in []Record
	for range 2000 {
		a := rng.Float64() * 86400 * 7
		r := QuantizeTimes(Record{Time: a, Title: "x", Bytes: 1, Node: "0", End: a + rng.Float64()*3})
		if r.Time < a || r.Time > a+0.001 || r.End < r.Time || r.End > a+3 {
			t.Fatalf("%v -> %+v", a, r)
		}
		in = append(in, r)
		w.Write(r)
	}
	w.Flush()
	out, err := ReadCSV(&buf)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortStableFunc(in, func(a, b Record) int { return cmp.Compare(a.Time, b.Time) })
	if !slices.Equal(out, in) {
		t.Fatal("quantized records do not read back unchanged")
	}
}

// TestReadCSVSimulatorForm: the simulator writes node indexes, -1 for a
// refusal, and rows in decision order; they come back sorted by time.
func TestReadCSVSimulatorForm(t *testing.T) {
	in := "time_s,title,bytes,node,fill\n5.000,b,20,3,true\n1.000,a,10,-1,false\n5.000,a,10,0,true\n"
	recs, err := ReadCSV(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[0].Title != "a" || recs[0].Served() || recs[1].Title != "b" || !recs[1].Served() || recs[2].Node != "0" || !recs[2].Served() {
		t.Fatalf("records %+v", recs)
	}
}

func TestReadCSVErrors(t *testing.T) {
	const h = "time_s,title,bytes,node,fill\n"
	for _, tc := range []struct{ in, want string }{
		{"", "empty trace"},
		{"t,title,bytes,node,fill\n", "header"},
		{h + "1,a,10,n\n", "wrong number of fields"},
		{h + "x,a,10,n,true\n", "line 2: time"},
		{h + "1,,10,n,true\n", "empty title"},
		{h + "1,a,-3,n,true\n", "bytes"},
		{h + "1,a,10,n,maybe\n", "fill"},
		{h + "Inf,a,10,n,true\n", "time"},
		{h + "1,a,10,n,true,0.5\n", "wrong number of fields"},
		{h[:len(h)-1] + ",end_s\n" + "5,a,10,n,true,4\n", "end_s"},
		{h[:len(h)-1] + ",end_s\n" + "5,a,10,n,true,NaN\n", "end_s"},
		{"time_s,title,bytes,node,fill,end_s,extra\n", "header"},
	} {
		_, err := ReadCSV(strings.NewReader(tc.in))
		if !errors.Is(err, ErrBadTrace) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%q: err %v, want %q", tc.in, err, tc.want)
		}
	}
}

// FuzzReadCSV: the parser never panics, and what it accepts is a trace
// Compute accepts too.
func FuzzReadCSV(f *testing.F) {
	f.Add("time_s,title,bytes,node,fill\n0.000,a,10,n1,true\n1.5,b,20,,false\n")
	f.Add("time_s,title,bytes,node,fill\n\"1\",\"a\nb\",1,n,1\n")
	f.Add("time_s,title,bytes,node,fill\n1e308,a,9223372036854775807,n,T\n")
	f.Add("time_s,title,bytes,node,fill,end_s\n0.000,a,10,n1,true,5\n1.5,b,20,,false,0\n")
	f.Fuzz(func(t *testing.T, s string) {
		recs, err := ReadCSV(strings.NewReader(s))
		if err != nil {
			return
		}
		if _, err := Compute(Requests(recs), 100, Options{}); err != nil {
			t.Fatalf("accepted trace rejected by Compute: %v", err)
		}
		if _, err := Residency(Requests(recs), 100, Options{}); err != nil && !errors.Is(err, ErrInfeasible) {
			t.Fatalf("accepted trace rejected by Residency: %v", err)
		}
	})
}
