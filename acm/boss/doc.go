// Package boss is the manager's view of the operator's subscriber system
// (BOSS: business and operation support system): who a subscriber is
// (authentication by a Basic password or a Digest response) and which
// entitlement packages they hold.
//
// It owns the BOSS interface the front door calls, the credential types
// it is called with, and a file backend (File): a YAML users file that
// never holds a password, only a bcrypt hash for Basic and the Digest HA1
// (RFC 2617/7616, MD5) for Digest, with a short-lived cache of verified
// Basic credentials so bcrypt is not paid on every request, and
// WatchedFile, the same file read again when it changes (the manager's).
package boss
