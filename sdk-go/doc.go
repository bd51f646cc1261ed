// Package orch8 is the Go SDK of the Orch8 external-worker protocol: a typed Client with
// one method per operation of openapi.yaml, and a Worker runtime that claims tasks, runs
// handlers, heartbeats and reports results with the semantics of docs/protocol.md
// section 14. The low-level client in package api is generated; this package wraps it.
package orch8
