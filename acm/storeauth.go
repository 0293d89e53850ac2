package acm

import (
	"errors"

	"vodcluster/acm/store"
)

// StoreAuthAdvice is what the operator should check when err, of the
// manager's store, is the Redis refusing its credentials (a
// *store.AuthError among err's causes: at its opening, or later when the
// Redis's password changed while the manager ran), naming the settings
// that give them: store.redis_password when the Redis wants a password
// and none was given, and store.redis_username with it when the ones
// given are refused. "" for any other error.
func StoreAuthAdvice(err error) string {
	var ae *store.AuthError
	switch {
	case !errors.As(err, &ae):
		return ""
	case ae.Required:
		return "set store.redis_password (the Redis's requirepass, or with store.redis_username an ACL user's password)"
	}
	return "check store.redis_password, and store.redis_username (an ACL user; leave it out for the default user, whose password is the Redis's requirepass)"
}
