// Package auth is the front door's side of RTSP and HTTP authentication:
// it parses Authorization headers (Basic, and Digest as in RFC 2617 and
// RFC 7616 with algorithm MD5, with or without qop=auth), builds the
// WWW-Authenticate challenges, and issues and checks stateless Digest
// nonces (an HMAC of the issue time under the cluster secret, so any
// manager sharing the secret accepts them until they expire), refuses a
// Digest response sent twice (Replays), and verifies the subscriber tokens
// (JWTs) an operator's portal signs (SubscriberTokens). Whether a password
// is right is the BOSS's business (package boss).
package auth
