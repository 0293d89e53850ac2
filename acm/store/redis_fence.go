package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// fencedPutScript sets field ARGV[1] of hash KEYS[1] to ARGV[2] when
// Redis's clock (TIME, in ms) is not past ARGV[3]: 1 when set, 0 when
// past (nothing written).
var fencedPutScript = redis.NewScript(`
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now > tonumber(ARGV[3]) then
	return 0
end
redis.call("HSET", KEYS[1], ARGV[1], ARGV[2])
return 1
`)

// fenceReplyMargin is the part of a write's remaining time kept for its
// answer to come back: a fenced write runs no later than its caller's
// deadline less this (less half the remaining time when that is
// shorter).
const fenceReplyMargin = 500 * time.Millisecond

// errFenced is the error of a fenced write that Redis ran after its
// fence: nothing was written.
var errFenced = errors.New("Redis ran the write after its caller's deadline: not written")

// putStateFenced writes field name of the state hash within ctx's
// deadline, fenced by it: a write left in a stalled Redis's socket when
// its caller gave up (a stopped process, a frozen VM: its connection
// accepted, nothing answered) was applied when Redis ran again, though
// the caller had reported it not done, and the operator been told
// "not changed". Redis's own time is read first (TIME), and the write
// runs (a script) only while Redis's clock is before the deadline less
// a margin for its answer: a manager's clock and Redis's need not agree.
// Errors: those of the store; one wrapping context.DeadlineExceeded when
// Redis ran the write too late, or the time left is too short for it.
func (r *Redis) putStateFenced(ctx context.Context, deadline time.Time, name string, value []byte) error {
	at, err := r.c.Time(ctx).Result()
	if err != nil {
		return err
	}
	left := time.Until(deadline)
	margin := min(fenceReplyMargin, left/2)
	if left-margin <= 0 {
		return fmt.Errorf("%w: no time left to write", context.DeadlineExceeded)
	}
	fence := at.Add(left - margin).UnixMilli()
	n, err := fencedPutScript.Run(ctx, r.c, []string{r.key(redisState)}, name, value, strconv.FormatInt(fence, 10)).Int()
	if err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("%w: %w", context.DeadlineExceeded, errFenced)
	}
	return nil
}
