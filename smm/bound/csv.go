package bound

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// CSVHeader is the header line of a trace CSV, in column order: time in
// seconds since the start when the request reached its node, title id,
// title size in bytes, the node that served the request (an id or an
// index; "" or "-1" when the request was refused), whether the request
// made that node fill the title from the origin, and when the session
// stopped playing (seconds since the start; the title was on the node's
// disk from time_s to end_s). Traces without the last column (written
// before it existed) are read too, as instants.
var CSVHeader = []string{"time_s", "title", "bytes", "node", "fill", "end_s"}

// Record is one row of a trace CSV.
type Record struct {
	Time  float64 // seconds since the start
	Title string
	Bytes int64  // title size, bytes
	Node  string // node chosen; "" or "-1" when the request was refused
	Fill  bool   // the request made Node fill the title from the origin
	// End is when the session stopped playing, seconds since the start,
	// >= Time; 0 for a refused request or a trace without end_s.
	End float64
}

// Served reports whether the request was served by a node (not refused).
func (r Record) Served() bool { return r.Node != "" && r.Node != "-1" }

// Request returns the record as a Request for Compute.
func (r Record) Request() Request {
	return Request{Time: r.Time, Title: r.Title, Bytes: r.Bytes, End: r.End}
}

// Requests returns the requests of records, in order.
func Requests(recs []Record) []Request {
	out := make([]Request, len(recs))
	for i, r := range recs {
		out[i] = r.Request()
	}
	return out
}

// ServedRequests returns the requests of the records a node served
// (Record.Served), in time order (records of equal time keep their
// order), as Compute and Residency take them: what `vodcluster bound`
// computes on, so a program holding the records gets the same figures.
func ServedRequests(recs []Record) []Request {
	out := make([]Request, 0, len(recs))
	for _, r := range recs {
		if r.Served() {
			out = append(out, r.Request())
		}
	}
	slices.SortStableFunc(out, func(a, b Request) int { return cmp.Compare(a.Time, b.Time) })
	return out
}

// HasEnds reports whether any record carries a session end (End > 0): a
// trace the residency bound applies to.
func HasEnds(recs []Record) bool {
	for _, r := range recs {
		if r.End > 0 {
			return true
		}
	}
	return false
}

// CSVWriter writes a trace CSV.
type CSVWriter struct {
	w *csv.Writer
}

// NewCSVWriter writes the header to w and returns a writer for the rows;
// it returns w's error.
func NewCSVWriter(w io.Writer) (*CSVWriter, error) {
	cw := &CSVWriter{w: csv.NewWriter(w)}
	if err := cw.w.Write(CSVHeader); err != nil {
		return nil, err
	}
	return cw, nil
}

// Write writes one row (times with millisecond precision: see
// QuantizeTimes for a record that reads back exactly as written).
func (c *CSVWriter) Write(r Record) error {
	return c.w.Write([]string{
		strconv.FormatFloat(r.Time, 'f', 3, 64),
		r.Title,
		strconv.FormatInt(r.Bytes, 10),
		r.Node,
		strconv.FormatBool(r.Fill),
		strconv.FormatFloat(r.End, 'f', 3, 64),
	})
}

// QuantizeTimes returns r with Time rounded up and End rounded down to a
// millisecond (End no lower than Time), as values that the CSV writes and
// reads back unchanged. Rounding inwards only shortens the residency
// interval, so a bound on the quantized trace stays a bound for the
// original one and no instant gains sessions it did not have.
func QuantizeTimes(r Record) Record {
	up := math.Ceil(r.Time*1000) / 1000
	r.Time = up
	if r.End != 0 {
		r.End = max(up, math.Floor(r.End*1000)/1000)
	}
	return r
}

// Flush writes buffered rows and returns any write error so far.
func (c *CSVWriter) Flush() error {
	c.w.Flush()
	return c.w.Error()
}

// ReadCSV reads a trace CSV: the header CSVHeader (required; without its
// last column, end_s, the rows are read as instants), then one row per
// request, and returns the rows sorted by time (rows written in the
// order requests were decided keep that order among equal times). Errors
// name the line: a wrong header or column count, a time that is not a
// finite number of seconds, an empty title, a size that is not a positive
// integer, a fill flag that is not a boolean.
func ReadCSV(r io.Reader) ([]Record, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 0 // as many as the header's
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: empty trace (want header %s)", ErrBadTrace, strings.Join(CSVHeader, ","))
		}
		return nil, fmt.Errorf("%w: %v", ErrBadTrace, err)
	}
	ok := len(head) == len(CSVHeader) || len(head) == len(CSVHeader)-1
	for i := 0; ok && i < len(head); i++ {
		ok = strings.TrimSpace(head[i]) == CSVHeader[i]
	}
	if !ok {
		return nil, fmt.Errorf("%w: header %q, want %s", ErrBadTrace, strings.Join(head, ","), strings.Join(CSVHeader, ","))
	}
	var out []Record
	for {
		row, err := cr.Read()
		if errors.Is(err, io.EOF) {
			slices.SortStableFunc(out, func(a, b Record) int { return cmp.Compare(a.Time, b.Time) })
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadTrace, err)
		}
		line, _ := cr.FieldPos(0)
		rec, err := parseRow(row)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrBadTrace, line, err)
		}
		out = append(out, rec)
	}
}

func parseRow(row []string) (Record, error) {
	var rec Record
	t, err := strconv.ParseFloat(strings.TrimSpace(row[0]), 64)
	if err != nil || math.IsNaN(t) || math.IsInf(t, 0) {
		return rec, fmt.Errorf("time %q is not a number of seconds", row[0])
	}
	rec.Time = t
	rec.Title = strings.TrimSpace(row[1])
	if rec.Title == "" {
		return rec, errors.New("empty title")
	}
	b, err := strconv.ParseInt(strings.TrimSpace(row[2]), 10, 64)
	if err != nil || b <= 0 {
		return rec, fmt.Errorf("bytes %q is not a positive integer", row[2])
	}
	rec.Bytes = b
	rec.Node = strings.TrimSpace(row[3])
	f, err := strconv.ParseBool(strings.TrimSpace(row[4]))
	if err != nil {
		return rec, fmt.Errorf("fill %q is not true or false", row[4])
	}
	rec.Fill = f
	if len(row) > 5 {
		e, err := strconv.ParseFloat(strings.TrimSpace(row[5]), 64)
		if err != nil || math.IsNaN(e) || math.IsInf(e, 0) || (e != 0 && e < t) {
			return rec, fmt.Errorf("end_s %q is not a number of seconds at or after time_s", row[5])
		}
		rec.End = e
	}
	return rec, nil
}
