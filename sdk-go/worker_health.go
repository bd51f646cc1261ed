package orch8

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// healthStaleAfter is how many heartbeat intervals the last successful poll or heartbeat
// may be old before GET /health answers 503 unhealthy (P-TEL-5).
const healthStaleAfter = 3

// health holds what GET /health reports (P-TEL-5); times are Unix nanoseconds, 0 = never.
type health struct {
	began         atomic.Int64 // Run started: the baseline until the first success
	lastPoll      atomic.Int64
	lastHeartbeat atomic.Int64

	mu   sync.Mutex
	addr string
}

func (h *health) polled()      { h.lastPoll.Store(time.Now().UnixNano()) }
func (h *health) heartbeated() { h.lastHeartbeat.Store(time.Now().UnixNano()) }

// HealthReport is the body of GET /health (P-TEL-5).
type HealthReport struct {
	Status          string     `json:"status"` // "ok", "stopping" or "unhealthy"
	WorkerID        string     `json:"worker_id"`
	InFlight        int        `json:"in_flight"`
	FreeSlots       int        `json:"free_slots"`
	LastPollAt      *time.Time `json:"last_poll_at"`      // null before the first answered poll
	LastHeartbeatAt *time.Time `json:"last_heartbeat_at"` // null before the first heartbeat
}

// HealthAddr is the address GET /health is served on while Run runs (P-TEL-5), e.g.
// "127.0.0.1:43117"; "" when WorkerOptions.HealthAddr is empty or Run has not bound it yet.
func (w *Worker) HealthAddr() string {
	w.health.mu.Lock()
	defer w.health.mu.Unlock()
	return w.health.addr
}

// checkHealthAddr refuses a HealthAddr that is not host:port before any request (P-SDK-23).
func (o WorkerOptions) checkHealthAddr() error {
	if o.HealthAddr == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(o.HealthAddr); err != nil {
		return invalidOption("HealthAddr %q is not host:port: %v", o.HealthAddr, err)
	}
	return nil
}

// serveHealth binds HealthAddr (an empty host is 127.0.0.1) and serves GET /health until
// the returned stop is called (P-TEL-5). stopCtx ends when the shutdown begins.
func (w *Worker) serveHealth(stopCtx context.Context) (stop func(), err error) {
	host, port, _ := net.SplitHostPort(w.opts.HealthAddr) // checked by NewWorker
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, errors.Join(errors.New("orch8: cannot serve the health endpoint"), err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(rw http.ResponseWriter, _ *http.Request) {
		rep := w.healthReport(stopCtx)
		code := http.StatusOK
		if rep.Status != "ok" {
			code = http.StatusServiceUnavailable
		}
		rw.Header().Set("Content-Type", "application/json")
		rw.Header().Set("Cache-Control", "no-store")
		rw.WriteHeader(code)
		_ = json.NewEncoder(rw).Encode(rep)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	w.health.mu.Lock()
	w.health.addr = ln.Addr().String()
	w.health.mu.Unlock()
	addr := "http://" + ln.Addr().String() + "/health"
	w.line(slog.LevelInfo, "health", "health endpoint on "+addr, "", "addr", addr)
	return func() {
		w.health.mu.Lock()
		w.health.addr = ""
		w.health.mu.Unlock()
		_ = srv.Close()
	}, nil
}

// healthReport is ok while the worker runs and its last successful poll or heartbeat (or,
// before either, the start of Run) is at most 3 heartbeat intervals old (P-TEL-5).
func (w *Worker) healthReport(stopCtx context.Context) HealthReport {
	w.mu.Lock()
	held, free, interval, stopping := len(w.held), w.freeLocked(), w.interval, w.stopping
	w.mu.Unlock()
	rep := HealthReport{Status: "ok", WorkerID: w.opts.WorkerID, InFlight: held, FreeSlots: max(free, 0),
		LastPollAt: unixTime(w.health.lastPoll.Load()), LastHeartbeatAt: unixTime(w.health.lastHeartbeat.Load())}
	last := max(w.health.began.Load(), w.health.lastPoll.Load(), w.health.lastHeartbeat.Load())
	switch {
	case stopping || stopCtx.Err() != nil:
		rep.Status = "stopping"
	case time.Since(time.Unix(0, last)) > healthStaleAfter*interval:
		rep.Status = "unhealthy"
	}
	return rep
}

func unixTime(ns int64) *time.Time {
	if ns == 0 {
		return nil
	}
	t := time.Unix(0, ns).UTC()
	return &t
}
