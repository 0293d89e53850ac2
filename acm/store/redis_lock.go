package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"vodcluster/proto/durtext"
)

// renewScript extends the lock KEYS[1] to ARGV[2] ms when ARGV[1] holds
// it (compare-and-pexpire): 1 when extended, 0 otherwise.
var renewScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
`)

// takeScript takes the lock KEYS[1] for ARGV[1] for ARGV[2] ms when it is
// free, or extends it by that when ARGV[1] holds it. KEYS[2] (no expiry)
// records the lock's tenure: a token naming one holder's unbroken hold,
// made anew (ARGV[4]) each time a holder takes the lock after another, or
// without knowing the tenure it continues. ARGV[3] is the token of the
// tenure the caller last knew it held ("" none). It returns {0, ""} when
// another holds the lock; {2, token} when ARGV[1] holds it afterwards and
// the recorded tenure is ARGV[3]'s (it held it all along, or takes it
// back free with no other holder in between), or none is recorded while
// the caller knew one (ARGV[3] not ""): Redis lost its data, the record
// with it, and no holder took the lock since (it would have recorded
// its tenure): the record is written again as ARGV[3]; {1, token} when
// ARGV[1] holds it afterwards in a tenure that ARGV[3] is not: another
// held it since, or a take of ARGV[1]'s whose answer was lost (run by
// Redis after the caller's timeout) began a tenure the caller never
// heard of, as the lock's next holder after another.
var takeScript = redis.NewScript(`
local cur = redis.call("GET", KEYS[1])
if cur ~= false and cur ~= ARGV[1] then
	return {0, ""}
end
if cur == false then
	redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
else
	redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
local last = redis.call("GET", KEYS[2])
if ARGV[3] ~= "" and last == ARGV[3] then
	return {2, last}
end
if ARGV[3] ~= "" and last == false then
	redis.call("SET", KEYS[2], ARGV[3])
	return {2, ARGV[3]}
end
redis.call("SET", KEYS[2], ARGV[4])
return {1, ARGV[4]}
`)

// unlockScript deletes the lock KEYS[1] when ARGV[1] holds it
// (compare-and-delete): 1 when released, 0 otherwise.
var unlockScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0
`)

// heldScript returns a script that runs action on field ARGV[1] of hash
// KEYS[1] (a JSON Session) when the stored value's SHA-1 (hex) is
// ARGV[unchanged] (not "": the entry is as a caller read it, Digest), or
// its "manager" is one of ARGV[unchanged+1..]: what action returns then;
// 0 when the field is missing or held by another manager; -1 when the
// value is not a JSON object whose "id" is ARGV[1] (not the session's, as
// decodeSession: its manager cannot be told; it is left as is).
func heldScript(unchanged int, action string) *redis.Script {
	return redis.NewScript(fmt.Sprintf(`
local v = redis.call("HGET", KEYS[1], ARGV[1])
if not v then
	return 0
end
local held = ARGV[%[1]d] ~= "" and redis.sha1hex(v) == ARGV[%[1]d]
if not held then
	local ok, d = pcall(cjson.decode, v)
	if not ok or type(d) ~= "table" or d["id"] ~= ARGV[1] then
		return -1
	end
	local m = d["manager"]
	if type(m) ~= "string" then
		m = ""
	end
	for i = %[1]d + 1, #ARGV do
		if ARGV[i] == m then
			held = true
			break
		end
	end
end
if not held then
	return 0
end
%[2]s
`, unchanged, action))
}

// deleteHeldScript deletes field ARGV[1] (a Session) when unchanged since
// read (ARGV[2]) or held by one of ARGV[3..]: 1 when deleted.
// putHeldScript sets it to ARGV[2] when unchanged since read (ARGV[3]) or
// held by one of ARGV[4..]: 1 when set.
var (
	deleteHeldScript = heldScript(2, `return redis.call("HDEL", KEYS[1], ARGV[1])`)
	putHeldScript    = heldScript(3, `redis.call("HSET", KEYS[1], ARGV[1], ARGV[2])
return 1`)
)

// DeleteSessionHeldBy implements Locker.
func (r *Redis) DeleteSessionHeldBy(ctx context.Context, id, unchanged string, managers ...string) (bool, error) {
	return r.runHeld(ctx, deleteHeldScript, "delete", id, []any{id}, unchanged, managers)
}

// PutSessionHeldBy implements Locker.
func (r *Redis) PutSessionHeldBy(ctx context.Context, s Session, unchanged string, managers ...string) (bool, error) {
	if s.ID == "" {
		return false, errors.New("store: session without id")
	}
	v, err := json.Marshal(&s)
	if err != nil {
		return false, fmt.Errorf("store: session %s: %w", s.ID, err)
	}
	return r.runHeld(ctx, putHeldScript, "put", s.ID, []any{s.ID, v}, unchanged, managers)
}

// runHeld runs script (heldScript) on session id with args (those before
// the condition), unchanged and managers; what names the operation in
// its error. It reports whether the script acted (false, nil without a
// condition).
func (r *Redis) runHeld(ctx context.Context, script *redis.Script, what, id string, args []any, unchanged string, managers []string) (bool, error) {
	if err := r.check(); err != nil {
		return false, err
	}
	if len(managers) == 0 && unchanged == "" {
		return false, nil
	}
	args = append(args, unchanged)
	for _, m := range managers {
		args = append(args, m)
	}
	n, err := script.Run(ctx, r.c, []string{r.key(redisSessions)}, args...).Int()
	if err != nil {
		return false, r.wrap(what+" session "+id, err)
	}
	if n < 0 {
		return false, fmt.Errorf("store: %s session %s: %w", what, id, ErrUndecodable)
	}
	return n == 1, nil
}

// checkLockName refuses a lock name not matching StateNamePattern.
func checkLockName(name string) error {
	if !StateNamePattern.MatchString(name) {
		return fmt.Errorf("store: lock name %q: want %s", name, StateNamePattern)
	}
	return nil
}

func checkLock(name, holder string, ttl time.Duration, needTTL bool) error {
	if err := checkLockName(name); err != nil {
		return err
	}
	if holder == "" {
		return errors.New("store: lock holder is empty")
	}
	if needTTL && ttl < time.Millisecond {
		return fmt.Errorf("store: lock ttl %s: want at least 1ms", durtext.Written(ttl))
	}
	return nil
}

// TryLock implements Locker (TakeLock, without its kept).
func (r *Redis) TryLock(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	held, _, err := r.TakeLock(ctx, name, holder, ttl)
	return held, err
}

// TakeLock implements Locker with a take-or-extend script: the lock is
// taken when free (SET PX), and extended by ttl when holder already holds
// it (a retried take whose first attempt took the lock, or a renewal whose
// answer was lost): a true answer always means the lock's lease is ttl from
// now, so that the caller's lease, counted from when it sent the call,
// never outlasts the key. kept compares the tenure recorded in Redis
// (lock-holder:<name>, no expiry) with the one this Redis value last
// answered holder it held (takeScript): a take of holder's that timed out
// here but ran in Redis later does not make a later take kept.
func (r *Redis) TakeLock(ctx context.Context, name, holder string, ttl time.Duration) (held, kept bool, err error) {
	if err := checkLock(name, holder, ttl, true); err != nil {
		return false, false, err
	}
	if err := r.check(); err != nil {
		return false, false, err
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	fresh := holder + "/" + hex.EncodeToString(b[:])
	at := name + "\x00" + holder
	r.lockMu.Lock()
	known := r.tenures[at]
	r.lockMu.Unlock()
	res, err := takeScript.Run(ctx, r.c, []string{r.key(redisLock + name), r.key(redisLockHolder + name)}, holder, ttl.Milliseconds(), known, fresh).Slice()
	if err != nil {
		return false, false, r.wrap("lock "+name, err)
	}
	n, _ := res[0].(int64)
	if n > 0 {
		tenure, _ := res[1].(string)
		r.lockMu.Lock()
		if r.tenures == nil {
			r.tenures = map[string]string{}
		}
		r.tenures[at] = tenure
		r.lockMu.Unlock()
	}
	return n > 0, n == 2, nil
}

// RenewLock implements Locker with a compare-and-pexpire script.
func (r *Redis) RenewLock(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	if err := checkLock(name, holder, ttl, true); err != nil {
		return false, err
	}
	if err := r.check(); err != nil {
		return false, err
	}
	n, err := renewScript.Run(ctx, r.c, []string{r.key(redisLock + name)}, holder, ttl.Milliseconds()).Int()
	if err != nil {
		return false, r.wrap("renew lock "+name, err)
	}
	return n == 1, nil
}

// Unlock implements Locker with a compare-and-delete script.
func (r *Redis) Unlock(ctx context.Context, name, holder string) (bool, error) {
	if err := checkLock(name, holder, 0, false); err != nil {
		return false, err
	}
	if err := r.check(); err != nil {
		return false, err
	}
	n, err := unlockScript.Run(ctx, r.c, []string{r.key(redisLock + name)}, holder).Int()
	if err != nil {
		return false, r.wrap("unlock "+name, err)
	}
	return n == 1, nil
}

// LockHolder implements Locker with a GET of the lock's key.
func (r *Redis) LockHolder(ctx context.Context, name string) (string, error) {
	if err := checkLockName(name); err != nil {
		return "", err
	}
	if err := r.check(); err != nil {
		return "", err
	}
	h, err := r.c.Get(ctx, r.key(redisLock+name)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", r.wrap("lock "+name, err)
	}
	return h, nil
}
