// Package store keeps the manager's state that must survive a restart:
// the session table (every admission a client was promised), the
// catalog, and named pieces of the storage manager's state (the
// operator's pins, the popularity snapshot). Store is the interface the
// manager uses, with two backends: Badger, embedded (one manager, data on
// local disk, the default), and Redis, shared by several managers (one
// active, the others standing by), which is also a Locker: the lease that
// elects the one manager whose storage planner runs. conformance_test.go
// holds the one test suite both backends pass; package redistest starts a
// real redis-server for tests.
package store
