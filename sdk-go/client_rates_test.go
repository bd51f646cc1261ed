package orch8

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

const rateLimitJSON = `{"key":"crm-api","limit":10,"period_ms":1000,"burst":2,"tokens":2,
"next_token_at":null,"held":0,"updated_at":"2026-11-27T10:00:00.000Z"}`

// P-RATE-1, P-RATE-4: the rate-limit calls send their method, path and body, answer typed
// values, and DeleteRateLimit's 204 is success (no body to read); removing an unknown limit
// is ErrNotFound.
func TestRateLimitCalls_P_RATE_1_P_RATE_4(t *testing.T) {
	s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch {
		case r.Method == http.MethodDelete && strings.HasSuffix(r.URL.Path, "/nope"):
			writeProblem(w, 404, "not_found")
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		case r.Method == http.MethodGet:
			writeRaw(w, `{"rate_limits":[`+rateLimitJSON+`]}`)
		default:
			writeRaw(w, rateLimitJSON)
		}
	})
	ctx := context.Background()
	rl, err := c.SetRateLimit(ctx, "crm-api", RateLimitSettings{Limit: 10, PeriodMs: 1000, Burst: Ptr(2)})
	if err != nil || rl.Key != "crm-api" || rl.Burst != 2 || rl.NextTokenAt != nil {
		t.Fatalf("SetRateLimit: %+v, %v", rl, err)
	}
	if _, err = c.SetRateLimit(ctx, "crm-api", RateLimitSettings{Limit: 10, PeriodMs: 1000}); err != nil {
		t.Fatalf("SetRateLimit without burst: %v", err)
	}
	var list *RateLimitList
	if list, err = c.ListRateLimits(ctx); err != nil || len(list.RateLimits) != 1 || list.RateLimits[0].Limit != 10 {
		t.Fatalf("ListRateLimits: %+v, %v", list, err)
	}
	if _, err = c.DeleteRateLimit(ctx, "crm-api"); err != nil {
		t.Fatalf("DeleteRateLimit: %v", err)
	}
	if _, err = c.DeleteRateLimit(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("DeleteRateLimit of an unknown limit: %v, want ErrNotFound", err)
	}
	var got []string
	for _, r := range s.requests() {
		got = append(got, fmt.Sprintf("%s %s %v", r.Method, r.Path, r.Body))
	}
	want := []string{
		"PUT /rate-limits/crm-api map[burst:2 limit:10 period_ms:1000]",
		"PUT /rate-limits/crm-api map[limit:10 period_ms:1000]", // burst: the server's default
		"GET /rate-limits map[]",
		"DELETE /rate-limits/crm-api map[]",
		"DELETE /rate-limits/nope map[]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// P-RATE-1: Enqueue and EnqueueBatch carry rate_limit_key, a TaskRecord reads it back, and a
// held task's Waiting says rate_limited until the next token.
func TestEnqueueSendsRateLimitKey_P_RATE_1(t *testing.T) {
	s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/tasks/batch":
			w.WriteHeader(201)
			_, _ = w.Write([]byte(`{"tasks":[]}`))
		case r.Method == http.MethodGet:
			w.WriteHeader(200)
			_, _ = w.Write([]byte(`{"id":"task_2","handler_name":"sync_contacts","status":"pending","rate_limit_key":"crm-api",
"waiting":{"reason":"rate_limited","detail":"rate limit crm-api: waiting for a token","until":"2026-11-27T10:00:00.100Z"}}`))
		default:
			w.WriteHeader(201)
			_, _ = w.Write([]byte(`{"id":"task_1","handler_name":"sync_contacts","status":"pending","rate_limit_key":"crm-api"}`))
		}
	})
	ctx := context.Background()
	rec, err := c.Enqueue(ctx, NewTask{HandlerName: "sync_contacts", RateLimitKey: Ptr("crm-api")})
	if err != nil || rec.RateLimitKey == nil || *rec.RateLimitKey != "crm-api" {
		t.Fatalf("Enqueue: %+v, %v", rec, err)
	}
	batch := NewTaskBatch{Tasks: []NewTask{{HandlerName: "sync_contacts", RateLimitKey: Ptr("crm-api")}}}
	if _, err := c.EnqueueBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	held, err := c.GetTask(ctx, "task_2")
	if err != nil || held.Waiting == nil || held.Waiting.Reason != "rate_limited" || held.Waiting.Until == nil ||
		held.Waiting.Until.UnixMilli()%1000 != 100 {
		t.Fatalf("GetTask: %+v, %v", held, err)
	}
	reqs := s.requests()
	if got := fmt.Sprint(reqs[0].Body); got != "map[handler_name:sync_contacts rate_limit_key:crm-api]" {
		t.Errorf("enqueue body %s", got)
	}
	if got := fmt.Sprint(reqs[1].Body["tasks"]); got != "[map[handler_name:sync_contacts rate_limit_key:crm-api]]" {
		t.Errorf("batch body %s", got)
	}
}
