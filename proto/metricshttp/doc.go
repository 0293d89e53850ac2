// Package metricshttp serves a process's Prometheus metrics (the text
// exposition format at /metrics, over HTTP on its own listener, for the
// operator's Prometheus to scrape): the collectors the process gives, and
// the Go runtime's and the process's own (memory, goroutines, CPU, file
// descriptors). The manager, the nodes and the origin each serve one.
package metricshttp
