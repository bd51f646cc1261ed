package orch8_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// exampleServer is a tiny stand-in for the Orch8 server, just enough for the examples:
// it hands out one task, takes its completion and answers the worker's bookkeeping.
type exampleServer struct {
	*httptest.Server
	mu         sync.Mutex
	handedOut  bool
	lastOutput string
	onComplete func()
}

const exampleTask = `{"id":"task_1","handler_name":"sha256","queue_name":"default","params":{"text":"hello"},
"context":{},"headers":{},"priority":0,"attempt":1,"max_attempts":3,
"lease":{"id":"lease_1","worker_id":"example-worker","attempt":1,"expires_at":"2030-01-01T00:00:00.000Z"},
"checkpoint":null,"good_until":null,"created_at":"2026-11-21T10:30:00.000Z",
"metadata":{"attempt":1,"max_attempts":3,"created_at":"2026-11-21T10:30:00.000Z"}}`

const exampleRecord = `{"id":"task_1","handler_name":"sha256","queue_name":"default","status":"pending","priority":0,
"params":{"text":"hello"},"context":{},"headers":{},"attempt":0,"max_attempts":3,
"retry":{"max_attempts":3,"initial_backoff_ms":1000,"backoff_multiplier":2.0,"max_backoff_ms":300000,"jitter":0.2},
"run_at":"2026-11-21T10:30:00.000Z","good_until":null,"idempotency_key":"greeting-1","created_at":"2026-11-21T10:30:00.000Z",
"updated_at":"2026-11-21T10:30:00.000Z","started_at":null,"finished_at":null,"next_attempt_at":null,"worker_id":null,
"lease":null,"output":null,"error":null,"checkpoint":null,"progress":null,"cancel_reason":null}`

const exampleWorker = `{"worker_id":"example-worker","state":"running","directive":"running","hostname":null,"pid":null,
"handlers":[],"queues":[],"concurrency":null,"labels":{},"sdk":null,"active_tasks":0,
"registered_at":"2026-11-21T10:00:00.000Z","last_heartbeat_at":"2026-11-21T10:00:00.000Z",
"heartbeat_interval_ms":5000,"dead_after_ms":30000}`

func newExampleServer() *exampleServer {
	s := &exampleServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

func (s *exampleServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/tasks":
		w.WriteHeader(201)
		_, _ = io.WriteString(w, exampleRecord)
	case r.URL.Path == "/workers/tasks/poll/batch":
		s.mu.Lock()
		first := !s.handedOut
		s.handedOut = true
		s.mu.Unlock()
		if first {
			_, _ = io.WriteString(w, `{"tasks":[`+exampleTask+`],"next_poll_after_ms":0}`)
			return
		}
		<-r.Context().Done() // a long-poll with nothing to claim
	case r.URL.Path == "/workers/tasks/complete/batch":
		var req struct {
			Items []struct {
				Output json.RawMessage `json:"output"`
			} `json:"items"`
		}
		_ = json.Unmarshal(body, &req)
		s.mu.Lock()
		s.lastOutput = string(req.Items[0].Output)
		done := s.onComplete
		s.mu.Unlock()
		_, _ = io.WriteString(w, `{"items":[{"task_id":"task_1","status":"completed","attempt":1,"attempts_left":2,"next_attempt_at":null,"problem":null}]}`)
		if done != nil {
			go done()
		}
	case strings.HasSuffix(r.URL.Path, "/heartbeat"):
		_, _ = io.WriteString(w, `{"directive":"running","heartbeat_interval_ms":5000,"tasks":[]}`)
	default: // register and deregister
		_, _ = io.WriteString(w, exampleWorker)
	}
}
