// Package store keeps the manager's state that must survive a restart:
// the session table (every admission a client was promised), the
// catalog, and named pieces of the storage manager's state (the
// operator's pins, the popularity snapshot). Store is the interface the manager uses; Badger is the
// embedded backend (one manager, data on local disk). A shared backend
// (Redis, several managers) implements the same interface.
package store
