package store

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// AuthError is OpenRedis's error when the Redis at Addr refuses the
// connection's credentials, and the cause (errors.As) of a call's error
// when it does so later (its password changed while the store was open:
// a connection the call dials anew is refused): Required when it asks for a password and
// none was given (NOAUTH: its requirepass, or ACL users without nopass),
// otherwise the username and password given are refused (WRONGPASS: a
// wrong password, or an ACL user unknown or disabled). Reply is the
// Redis's own answer. Its text reads "store: redis ADDR refused the
// username and password (REPLY)" or "store: redis ADDR requires a
// password (REPLY)"; the caller names its settings that give them.
type AuthError struct {
	Addr     string
	Reply    string
	Required bool
}

func (e *AuthError) Error() string {
	if e.Required {
		return "store: redis " + e.Addr + " requires a password (" + e.Reply + ")"
	}
	return "store: redis " + e.Addr + " refused the username and password (" + e.Reply + ")"
}

// authError returns err, the Redis's answer to a connection's first
// command at addr, as an *AuthError when it refuses the credentials
// (NOAUTH, WRONGPASS), nil otherwise.
func authError(addr string, err error) error {
	var re redis.Error
	if !errors.As(err, &re) {
		return nil
	}
	reply := re.Error()
	switch {
	case strings.HasPrefix(reply, "NOAUTH"):
		return &AuthError{Addr: addr, Reply: reply, Required: true}
	case strings.HasPrefix(reply, "WRONGPASS"):
		return &AuthError{Addr: addr, Reply: reply}
	}
	return nil
}

// authCallError is a call's error (wrap's text, unwrapping to go-redis's
// answer) whose cause is the Redis refusing the credentials: errors.As
// finds the *AuthError too, its text staying the call's.
type authCallError struct {
	error
	auth *AuthError
}

func (e *authCallError) Unwrap() []error { return []error{e.error, e.auth} }
