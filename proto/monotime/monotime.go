// Package monotime keeps instants on the monotonic clock in an int64, for
// the atomics and the fixed-size fields that hold "when a viewer was last
// seen", "when a lease runs out", "when a socket last took bytes". The
// usual t.UnixNano() holds the wall clock: an NTP step, or a virtual
// machine resumed or moved, moves every such instant at once, so a step
// forward ends every paused session as silent and a step back keeps a
// manager counting itself the lock's holder after its lease ran out.
// Instants here count nanoseconds from a fixed instant of the process, read
// on the monotonic clock (Go's time.Since), which no step moves.
package monotime

import "time"

// base is the fixed instant the nanoseconds count from: a year before the
// process started, so that 0, the zero value of a field never set, reads
// as long ago (as 0 Unix ns did). It carries a monotonic clock reading
// (time.Now's, which Add keeps).
var base = time.Now().Add(-365 * 24 * time.Hour)

// Now returns the present instant, in nanoseconds since a fixed instant on
// the monotonic clock, a year before the process started: 0 is long ago.
func Now() int64 { return Of(time.Now()) }

// Of returns t as Now counts it (nanoseconds since the fixed instant, on
// the monotonic clock when t carries a reading, as time.Now's values do;
// on the wall clock for a t without one, such as time.Unix's).
func Of(t time.Time) int64 { return int64(t.Sub(base)) }

// Time returns the instant n (Now's or Of's count) as a time.Time with a
// monotonic reading: its Sub, Before and After with time.Now's values,
// and a deadline set from it (net.Conn.SetDeadline, which waits
// time.Until it), go by the monotonic clock.
func Time(n int64) time.Time { return base.Add(time.Duration(n)) }

// Since returns how long ago the instant n (Now's or Of's count) was, on
// the monotonic clock.
func Since(n int64) time.Duration { return time.Duration(Now() - n) }

// Wall returns the instant n as the wall clock reads now: the present wall
// time less how long ago n was. For records and messages that give an
// operator the time of day something happened; the monotonic reading is
// stripped, so it compares as the wall clock does.
func Wall(n int64) time.Time { return time.Now().Add(-Since(n)).Round(0) }
