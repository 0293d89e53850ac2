// Package grpctls builds the TLS transport credentials of the cluster's
// gRPC links (node → manager, manager and node → origin, vodctl →
// manager), and the server configuration of its HTTPS (front door and
// nodes, ServerConfig): a server's certificate and key from PEM files, reloaded when
// they change so that a renewed certificate needs no restart, and a
// client's verification of the server against a PEM CA file or the
// system's roots. Without TLS configured every link stays plaintext, as
// on a private network.
package grpctls
