package orch8

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// P-SDK-23: a queue configuration the server would refuse (P-QUEUE-4) is refused by
// NewWorker, before any request, with an error wrapping ErrInvalidOptions that names the
// option.
func TestNewWorkerRefusesBadQueueOptions_P_SDK_23(t *testing.T) {
	eleven := make([]string, 11)
	for i := range eleven {
		eleven[i] = fmt.Sprintf("q%d", i)
	}
	cases := []struct {
		name   string
		opts   WorkerOptions
		option string // named in the message
		detail string // also in the message
	}{
		{"a queue and a list", WorkerOptions{QueueName: "a", QueueNames: []string{"b"}}, "QueueName", "exclusive"},
		{"an empty list", WorkerOptions{QueueNames: []string{}}, "QueueNames", "empty"},
		{"an empty name", WorkerOptions{QueueNames: []string{"a", ""}}, "QueueNames[1]", "empty"},
		{"a repeated name", WorkerOptions{QueueNames: []string{"a", "b", "a"}}, "QueueNames", `"a" twice`},
		{"more than 10 names", WorkerOptions{QueueNames: eleven}, "QueueNames", "11 names"},
		{"weights without a list", WorkerOptions{QueueWeights: map[string]int{"a": 1}}, "QueueWeights", "needs QueueNames"},
		{"weights without a list, single queue", WorkerOptions{QueueName: "a", QueueWeights: map[string]int{"a": 1}}, "QueueWeights", "needs QueueNames"},
		{"a weight missing", WorkerOptions{QueueNames: []string{"a", "b"}, QueueWeights: map[string]int{"a": 1}}, "QueueWeights", `no weight for "b"`},
		{"an extra weight", WorkerOptions{QueueNames: []string{"a"}, QueueWeights: map[string]int{"a": 1, "c": 2}}, "QueueWeights", `"c", which is not in QueueNames`},
		{"empty weights", WorkerOptions{QueueNames: []string{"a"}, QueueWeights: map[string]int{}}, "QueueWeights", `no weight for "a"`},
		{"a weight of 0", WorkerOptions{QueueNames: []string{"a", "b"}, QueueWeights: map[string]int{"a": 0, "b": 1}}, `QueueWeights["a"]`, "is 0, not in 1..1000"},
		{"a weight of 1001", WorkerOptions{QueueNames: []string{"a", "b"}, QueueWeights: map[string]int{"a": 1, "b": 1001}}, `QueueWeights["b"]`, "is 1001"},
		{"a negative weight", WorkerOptions{QueueNames: []string{"a"}, QueueWeights: map[string]int{"a": -3}}, `QueueWeights["a"]`, "is -3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
				t.Errorf("request sent: %s %s", r.Method, r.URL.Path)
			})
			w, err := NewWorker(c, tc.opts)
			if w != nil || !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("NewWorker = %v, %v; want nil and ErrInvalidOptions", w, err)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.option) || !strings.Contains(msg, tc.detail) {
				t.Fatalf("error %q should name %s and say %q", msg, tc.option, tc.detail)
			}
			if n := len(s.requests()); n != 0 {
				t.Fatalf("%d requests sent", n)
			}
		})
	}
}

// P-SDK-23: the limits themselves are accepted: 10 names, weights 1 and 1000.
func TestNewWorkerAcceptsQueueBounds_P_SDK_23(t *testing.T) {
	_, c := newScripted(t)
	ten := make([]string, 10)
	weights := map[string]int{}
	for i := range ten {
		ten[i] = fmt.Sprintf("q%d", i)
		weights[ten[i]] = 1
	}
	weights["q9"] = 1000
	for _, o := range []WorkerOptions{{}, {QueueName: "a"}, {QueueNames: ten}, {QueueNames: ten, QueueWeights: weights}} {
		if _, err := NewWorker(c, o); err != nil {
			t.Errorf("NewWorker(%+v): %v", o, err)
		}
	}
}

// runQueues runs a worker with opts until it has polled twice and completed every added
// task, then stops it; it returns the poll bodies and the registration body.
func runQueues(t *testing.T, s *scripted, w *Worker, tasks int) (polls []map[string]any, reg map[string]any) {
	t.Helper()
	stop := runWorker(t, w)
	waitUntil(t, "two polls and every task completed", func() bool {
		return len(s.sent("POST", "/poll/batch")) >= 2 && w.Stats().TasksCompleted == int64(tasks)
	})
	stop()
	for _, r := range s.sent("POST", "/poll/batch") {
		polls = append(polls, r.Body)
	}
	return polls, s.sent("POST", "/workers")[0].Body
}

// P-SDK-23, P-QUEUE-2, P-QUEUE-3: every poll carries queue_names and queue_weights exactly
// as given and no queue_name; registration's queues is the list; each handler sees the
// queue its task came from.
func TestWorkerPollsQueueList_P_SDK_23(t *testing.T) {
	for _, weighted := range []bool{false, true} {
		t.Run(fmt.Sprintf("weighted=%v", weighted), func(t *testing.T) {
			s, c := newScripted(t)
			names := []string{"high", "low", "bulk"}
			opts := WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond, QueueNames: names}
			wantWeights := map[string]any(nil)
			if weighted {
				opts.QueueWeights = map[string]int{"high": 5, "low": 2, "bulk": 1000}
				wantWeights = map[string]any{"high": float64(5), "low": float64(2), "bulk": float64(1000)}
			}
			w := mustWorker(t, c, opts)
			names[0] = "changed" // the worker keeps its own copy
			if weighted {
				opts.QueueWeights["high"] = 999
			}
			var mu sync.Mutex
			seen := map[string]string{}
			w.Handle("echo", func(ctx context.Context, task *Task) (any, error) {
				mu.Lock()
				seen[task.ID] = task.QueueName
				mu.Unlock()
				return "ok", nil
			})
			s.add("task_h", "echo")
			s.queueOf["task_h"] = "high"
			s.add("task_l", "echo")
			s.queueOf["task_l"] = "low"
			polls, reg := runQueues(t, s, w, 2)
			for i, p := range polls {
				if fmt.Sprint(p["queue_names"]) != "[high low bulk]" {
					t.Errorf("poll %d queue_names %v", i, p["queue_names"])
				}
				if _, ok := p["queue_name"]; ok {
					t.Errorf("poll %d also sent queue_name %v", i, p["queue_name"])
				}
				got, ok := p["queue_weights"].(map[string]any)
				if weighted != ok || (weighted && !reflect.DeepEqual(got, wantWeights)) {
					t.Errorf("poll %d queue_weights %v, want %v", i, p["queue_weights"], wantWeights)
				}
			}
			if fmt.Sprint(reg["queues"]) != "[high low bulk]" {
				t.Errorf("registration queues %v", reg["queues"])
			}
			mu.Lock()
			defer mu.Unlock()
			if seen["task_h"] != "high" || seen["task_l"] != "low" {
				t.Errorf("handlers saw queues %v", seen)
			}
		})
	}
}

// P-SDK-23: with one queue (or none) the worker behaves as before the list existed.
func TestWorkerSingleQueueUnchanged_P_SDK_23(t *testing.T) {
	for _, queue := range []string{"", "emails"} {
		t.Run("queue="+queue, func(t *testing.T) {
			s, c := newScripted(t)
			w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond, QueueName: queue})
			w.Handle("echo", func(ctx context.Context, task *Task) (any, error) { return "ok", nil })
			s.add("task_1", "echo")
			polls, reg := runQueues(t, s, w, 1)
			for i, p := range polls {
				_, hasNames := p["queue_names"]
				_, hasWeights := p["queue_weights"]
				name, hasName := p["queue_name"]
				if hasNames || hasWeights || hasName != (queue != "") || (hasName && name != queue) {
					t.Errorf("poll %d body %v", i, p)
				}
			}
			want := "[" + cmp.Or(queue, "default") + "]"
			if fmt.Sprint(reg["queues"]) != want {
				t.Errorf("registration queues %v, want %s", reg["queues"], want)
			}
		})
	}
}
