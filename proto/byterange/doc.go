// Package byterange reads HTTP Range headers of byte ranges (RFC 9110
// §14.1.2) as far as the front door and the nodes agree on them: whether
// a Range asks for any byte of a representation, so that both answer 416
// to the same requests.
package byterange
