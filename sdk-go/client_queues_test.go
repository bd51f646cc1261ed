package orch8

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

const queueControlJSON = `{"queue_name":"emails","paused":true,"paused_at":"2026-11-21T10:30:00.000Z",
"max_running":4,"running":1,"updated_at":"2026-11-21T10:30:00.000Z"}`

// P-CTRL-1, P-CTRL-2, P-OBS-5: the operator calls are on the public client with typed
// answers, and their retry policy is safe: a 503 is retried (P-SDK-2).
func TestQueueControlCalls_P_CTRL_1_P_CTRL_2_P_OBS_5(t *testing.T) {
	s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n%2 == 1 { // every call first meets an outage
			w.Header().Set("Retry-After", "0")
			writeProblem(w, 503, "unavailable")
			return
		}
		switch {
		case strings.HasPrefix(r.URL.Path, "/handlers/"):
			writeRaw(w, `{"handler_name":"resize","max_running":2,"running":0,"updated_at":null}`)
		case strings.HasSuffix(r.URL.Path, "/history"):
			writeRaw(w, `{"queue_name":"emails","bucket_ms":60000,"generated_at":"2026-11-21T10:31:00.000Z",
"points":[{"at":"2026-11-21T10:30:00.000Z","enqueued":3,"completed":2,"failed":1,"depth":1,"wait_p50_ms":40,"wait_p95_ms":null}]}`)
		default:
			writeRaw(w, queueControlJSON)
		}
	})
	ctx := context.Background()
	var qc *QueueControl
	var err error
	if qc, err = c.PauseQueue(ctx, "emails"); err != nil || !qc.Paused || qc.QueueName != "emails" || *qc.MaxRunning != 4 {
		t.Fatalf("PauseQueue: %+v, %v", qc, err)
	}
	if qc, err = c.ResumeQueue(ctx, "emails"); err != nil || qc.Running != 1 {
		t.Fatalf("ResumeQueue: %+v, %v", qc, err)
	}
	if qc, err = c.SetQueueLimit(ctx, "emails", RunningLimit{MaxRunning: Ptr(4)}); err != nil || *qc.MaxRunning != 4 {
		t.Fatalf("SetQueueLimit: %+v, %v", qc, err)
	}
	if _, err = c.SetQueueLimit(ctx, "emails", RunningLimit{}); err != nil {
		t.Fatalf("SetQueueLimit(null): %v", err)
	}
	var hc *HandlerControl
	if hc, err = c.SetHandlerLimit(ctx, "resize", RunningLimit{MaxRunning: Ptr(2)}); err != nil || hc.HandlerName != "resize" || *hc.MaxRunning != 2 {
		t.Fatalf("SetHandlerLimit: %+v, %v", hc, err)
	}
	var h *QueueHistory
	if h, err = c.QueueHistory(ctx, "emails", &QueueHistoryParams{Minutes: Ptr(15)}); err != nil || len(h.Points) != 1 ||
		h.Points[0].Enqueued != 3 || *h.Points[0].WaitP50Ms != 40 || h.Points[0].WaitP95Ms != nil {
		t.Fatalf("QueueHistory: %+v, %v", h, err)
	}
	var got []string
	for i, r := range s.requests() {
		if i%2 == 1 {
			got = append(got, fmt.Sprintf("%s %s %v", r.Method, r.Path, r.Body))
		}
	}
	want := []string{
		"POST /queues/emails/pause map[]",
		"POST /queues/emails/resume map[]",
		"PUT /queues/emails/limit map[max_running:4]",
		"PUT /queues/emails/limit map[max_running:<nil>]", // null removes the cap (P-CTRL-2)
		"PUT /handlers/resize/limit map[max_running:2]",
		"GET /queues/emails/history?minutes=15 map[]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests after each retry:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// P-LABEL-1: Enqueue and EnqueueBatch carry a task's required_labels.
func TestEnqueueSendsRequiredLabels_P_LABEL_1(t *testing.T) {
	s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		if r.URL.Path == "/tasks/batch" {
			_, _ = w.Write([]byte(`{"tasks":[]}`))
			return
		}
		_, _ = w.Write([]byte(`{"id":"task_1","handler_name":"resize","queue_name":"default","status":"pending","required_labels":{"gpu":"true"}}`))
	})
	ctx := context.Background()
	rec, err := c.Enqueue(ctx, NewTask{HandlerName: "resize", RequiredLabels: &RequiredLabels{"gpu": "true"}})
	if err != nil || fmt.Sprint(rec.RequiredLabels) != "map[gpu:true]" {
		t.Fatalf("Enqueue: %+v, %v", rec, err)
	}
	if _, err := c.EnqueueBatch(ctx, NewTaskBatch{Tasks: []NewTask{{HandlerName: "resize", RequiredLabels: &RequiredLabels{"zone": "eu"}}}}); err != nil {
		t.Fatal(err)
	}
	reqs := s.requests()
	if fmt.Sprint(reqs[0].Body["required_labels"]) != "map[gpu:true]" {
		t.Errorf("enqueue body %v", reqs[0].Body)
	}
	if fmt.Sprint(reqs[1].Body["tasks"]) != "[map[handler_name:resize required_labels:map[zone:eu]]]" {
		t.Errorf("batch body %v", reqs[1].Body)
	}
}

func writeRaw(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(200)
	_, _ = w.Write([]byte(body))
}
