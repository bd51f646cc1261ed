package orch8_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
)

// A worker with one handler. The example runs against an in-process stand-in for the
// server that hands out one task; a real worker reads ORCH8_URL instead of a BaseURL.
func ExampleWorker() {
	server := newExampleServer() // stands in for the Orch8 server
	defer server.Close()

	client, err := orch8.NewClient(orch8.Config{BaseURL: server.URL})
	if err != nil {
		log.Fatal(err)
	}
	w, err := orch8.NewWorker(client, orch8.WorkerOptions{WorkerID: "example-worker", Concurrency: 4,
		Hooks: orch8.Hooks{OnTaskComplete: func(e orch8.TaskCompleteEvent) {
			fmt.Println("completed", e.Task.ID)
		}}})
	if err != nil {
		log.Fatal(err)
	}
	w.Handle("sha256", func(ctx context.Context, t *orch8.Task) (any, error) {
		text, ok := t.Params["text"].(string)
		if !ok {
			return nil, orch8.Permanent(errors.New("params.text must be a string"))
		}
		sum := sha256.Sum256([]byte(text))
		return map[string]any{"sha256": hex.EncodeToString(sum[:])}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	server.onComplete = cancel // stop after the first result, for the example's sake
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("output", server.lastOutput)
	fmt.Printf("%+v\n", w.Stats().TasksCompleted)
	// Output:
	// completed task_1
	// output {"sha256":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"}
	// 1
}

// Enqueue a task and read it back.
func ExampleClient_Enqueue() {
	server := newExampleServer()
	defer server.Close()
	client, err := orch8.NewClient(orch8.Config{BaseURL: server.URL})
	if err != nil {
		log.Fatal(err)
	}
	rec, err := client.Enqueue(context.Background(), orch8.NewTask{
		HandlerName:    "sha256",
		Params:         orch8.JSONObject{"text": "hello"},
		IdempotencyKey: orch8.Ptr("greeting-1"), // makes the call safe to retry (P-SDK-2)
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rec.ID, rec.HandlerName, rec.Status)
	// Output: task_1 sha256 pending
}

// A handler error decides what happens to the task next.
func ExampleRetryableError() {
	err := &orch8.RetryableError{
		Err:        errors.New("upstream is busy"),
		After:      30 * time.Second,               // sent as retry_after_ms
		Code:       "upstream_busy",                // instead of retryable_error
		Checkpoint: map[string]any{"next_page": 7}, // handed to the next attempt
	}
	var re *orch8.RetryableError
	fmt.Println(errors.As(fmt.Errorf("page 7: %w", err), &re), re.Code, re.After)
	// Output: true upstream_busy 30s
}

// IsOutage is the one test for "the server is unavailable, try again later".
func ExampleIsOutage() {
	var unavailable error = &orch8.ProblemError{Status: 503, Code: "unavailable"}
	var invalid error = &orch8.ProblemError{Status: 422, Code: "validation_error"}
	fmt.Println(orch8.IsOutage(unavailable), orch8.IsOutage(invalid))
	// Output: true false
}

// NewWorker refuses a queue configuration the server would refuse, before any request
// (P-SDK-23).
func ExampleNewWorker_invalidOptions() {
	client, err := orch8.NewClient(orch8.Config{BaseURL: "http://localhost:3001"})
	if err != nil {
		log.Fatal(err)
	}
	_, err = orch8.NewWorker(client, orch8.WorkerOptions{
		QueueNames:   []string{"reports", "exports"},
		QueueWeights: map[string]int{"reports": 3}, // "exports" has no weight
	})
	fmt.Println(errors.Is(err, orch8.ErrInvalidOptions))
	fmt.Println(err)
	// Output:
	// true
	// orch8: invalid worker options: QueueWeights has no weight for "exports": give one for every name of QueueNames
}
