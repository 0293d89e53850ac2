// Package rtspwire reads RTSP/1.0 requests off a connection (RFC 2326 §6,
// §10.12): requests, interleaved frames and stray responses, refusing at
// once what is not a well-formed request; parses a SETUP's Transport
// header (RFC 2326 §12.39) into the entries a node serves; and checks a
// DESCRIBE's Accept (§12.1). The manager's front door and the VOD nodes
// share it, so that the front door refuses what a node would; gortsplib's
// base types carry the parsed requests.
package rtspwire
