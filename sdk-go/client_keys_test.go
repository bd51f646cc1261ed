package orch8

import (
	"context"
	"encoding/json"
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

// P-KEY-7: StartInstance carries concurrency_key and max_concurrency, an Instance reads them
// back, and a waiting instance's Waiting says concurrency_key with its slots and cap.
func TestStartInstanceSendsConcurrencyKey_P_KEY_7(t *testing.T) {
	s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		keyed := instanceJSON("running") // instanceJSON is a 1.10.0 Instance, without the key
		keyed["concurrency_key"], keyed["max_concurrency"] = "customer-42", 2
		code := 201
		if r.Method == http.MethodGet {
			code = 200
			keyed["waiting"] = map[string]any{"reason": "concurrency_key", "running": 2, "cap": 2,
				"detail": "2 instance(s) of concurrency key customer-42 hold its 2 slot(s)"}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(keyed)
	})
	ctx := context.Background()
	started, err := c.StartInstance(ctx, NewInstance{Sequence: "thumbs", ConcurrencyKey: Ptr("customer-42"), MaxConcurrency: Ptr(2)})
	if err != nil || started.ConcurrencyKey == nil || *started.ConcurrencyKey != "customer-42" ||
		started.MaxConcurrency == nil || *started.MaxConcurrency != 2 {
		t.Fatalf("StartInstance: %+v, %v", started, err)
	}
	got, err := c.GetInstance(ctx, started.ID, nil)
	if err != nil || got.Status != "running" || got.Waiting == nil || got.Waiting.Reason != "concurrency_key" ||
		got.Waiting.Running == nil || *got.Waiting.Running != 2 || got.Waiting.Cap == nil || *got.Waiting.Cap != 2 {
		t.Fatalf("GetInstance: %+v, %v", got, err)
	}
	// Without a key neither field is sent: max_concurrency alone is a 422.
	if _, err := c.StartInstance(ctx, NewInstance{Sequence: "thumbs"}); err != nil {
		t.Fatal(err)
	}
	reqs := s.requests()
	if got := fmt.Sprint(reqs[0].Body); got != "map[concurrency_key:customer-42 max_concurrency:2 sequence:thumbs]" {
		t.Errorf("start body %s", got)
	}
	if got := fmt.Sprint(reqs[2].Body); got != "map[sequence:thumbs]" {
		t.Errorf("start body without a key %s", got)
	}
}

// P-KEY-7: an Instance from a 1.10.0 server, without concurrency_key, max_concurrency and
// waiting, still decodes: the three are optional in the schema.
func TestInstanceWithoutKeyFieldsDecodes_P_KEY_7(t *testing.T) {
	_, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(instanceJSON("running"))
	})
	got, err := c.GetInstance(context.Background(), "inst_1", nil)
	if err != nil || got.ID != "inst_1" || got.Status != "running" {
		t.Fatalf("GetInstance: %+v, %v", got, err)
	}
	if got.ConcurrencyKey != nil || got.MaxConcurrency != nil || got.Waiting != nil {
		t.Errorf("key fields of an instance without them: %v %v %+v", got.ConcurrencyKey, got.MaxConcurrency, got.Waiting)
	}
}
