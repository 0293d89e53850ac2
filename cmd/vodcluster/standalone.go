package main

import "log/slog"

// startWarnings are the warnings a node started with c logs: a node with
// no manager address is never registered, so the front door sends it no
// viewers and it serves none (every play needs an admission token the
// manager issues for this node); one with no origin address plays only
// the titles already on its disk. Both are valid (a lab node, a node
// being set up) but said at start: the node used to say nothing.
func (c NodeConfig) startWarnings() []string {
	var w []string
	if c.Manager == "" {
		w = append(w, "node: no manager address (node.manager): never registered, so the front door sends it no viewers and it serves none "+
			"(every play needs an admission token the manager issues for this node); set manager: to the manager's grpc_listen, HOST:9090")
	}
	if c.Origin == "" {
		w = append(w, "node: no origin address (node.origin): it plays only the titles already in its data_dir; a title it lacks is never filled: "+
			"the manager sends it no viewer of one and no prefetch, and a request that reaches it anyway is answered as unknown (404); "+
			"set origin: to the origin's listen, HOST:9100")
	}
	return w
}

// startWarnings are the warnings a manager started with c logs: with no
// origin address its catalog is only the one in its state store, never
// loaded or refreshed (a new data_dir has none, and every title is
// refused as unknown), and the nodes it places titles on fill them from
// their own origin.
func (c ManagerConfig) startWarnings() []string {
	if c.Origin != "" {
		return nil
	}
	return []string{"manager: no origin address (manager.origin): the catalog is only the one in the state store, never loaded or refreshed " +
		"(a new data_dir has none, and every title is refused as unknown, 404); set origin: to the origin's listen, HOST:9100"}
}

// logStartWarnings logs each of ws as a warning.
func logStartWarnings(ws []string) {
	for _, w := range ws {
		slog.Warn(w)
	}
}
