// Package rtspwire reads RTSP/1.0 requests off a connection (RFC 2326 §6,
// §10.12): requests, interleaved frames and stray responses, refusing at
// once what is not a well-formed request. The manager's front door and the
// VOD nodes share it; gortsplib's base types carry the parsed requests.
package rtspwire
