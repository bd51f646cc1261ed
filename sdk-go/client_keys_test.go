package orch8

import (
	"context"
	"fmt"
	"net/http"
	"testing"
)

// P-KEY-1: Enqueue and EnqueueBatch carry concurrency_key and max_concurrency, a Task reads
// them back, and a held task's Waiting says concurrency_key with its slots and cap.
func TestEnqueueSendsConcurrencyKey_P_KEY_1(t *testing.T) {
	s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/tasks/batch":
			w.WriteHeader(201)
			_, _ = w.Write([]byte(`{"tasks":[]}`))
		case r.Method == http.MethodGet:
			w.WriteHeader(200)
			_, _ = w.Write([]byte(`{"id":"task_2","handler_name":"sync_invoices","status":"pending",
"concurrency_key":"customer-42","max_concurrency":2,
"waiting":{"reason":"concurrency_key","detail":"concurrency key customer-42 has 2 tasks in slots, its cap","running":2,"cap":2}}`))
		default:
			w.WriteHeader(201)
			_, _ = w.Write([]byte(`{"id":"task_1","handler_name":"sync_invoices","status":"pending",
"concurrency_key":"customer-42","max_concurrency":2}`))
		}
	})
	ctx := context.Background()
	rec, err := c.Enqueue(ctx, NewTask{HandlerName: "sync_invoices", ConcurrencyKey: Ptr("customer-42"), MaxConcurrency: Ptr(2)})
	if err != nil || rec.ConcurrencyKey == nil || *rec.ConcurrencyKey != "customer-42" || rec.MaxConcurrency == nil || *rec.MaxConcurrency != 2 {
		t.Fatalf("Enqueue: %+v, %v", rec, err)
	}
	batch := NewTaskBatch{Tasks: []NewTask{{HandlerName: "sync_invoices", ConcurrencyKey: Ptr("customer-7")}}}
	if _, err := c.EnqueueBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	held, err := c.GetTask(ctx, "task_2")
	if err != nil || held.Waiting == nil || held.Waiting.Reason != "concurrency_key" ||
		held.Waiting.Running == nil || *held.Waiting.Running != 2 || held.Waiting.Cap == nil || *held.Waiting.Cap != 2 {
		t.Fatalf("GetTask: %+v, %v", held, err)
	}
	reqs := s.requests()
	if got := fmt.Sprint(reqs[0].Body); got != "map[concurrency_key:customer-42 handler_name:sync_invoices max_concurrency:2]" {
		t.Errorf("enqueue body %s", got)
	}
	// Without MaxConcurrency it is not sent: the server applies its default of 1.
	if got := fmt.Sprint(reqs[1].Body["tasks"]); got != "[map[concurrency_key:customer-7 handler_name:sync_invoices]]" {
		t.Errorf("batch body %s", got)
	}
}
