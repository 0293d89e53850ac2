// Package acm is the manager's top: the Admission Control Module and the
// manager's control plane, hosting the scheduler (lsm) and the storage
// manager's decisions (smm) in one process.
//
// It owns the front doors (RTSP, rtsp://front/vod/<title>, and HTTP,
// /vod/<title>.ts and /vod/<title>/index.m3u8): authentication against the
// BOSS (Basic and Digest), entitlement, admission (the title's bitrate is
// reserved on a node chosen by lsm, or the request waits first come first
// served until the queue deadline, then 453 / 503), and the redirect (302)
// to the chosen node with a signed admission token. It owns the session
// table and the catalog, kept in a Store that survives restarts, and the
// manager's gRPC services: NodeControl (registration, heartbeats with
// commands back, session events, node death, no-show release) and Admin.
//
// Manager is the one server of the package: exported config fields,
// Start (all or nothing) and Close.
package acm
