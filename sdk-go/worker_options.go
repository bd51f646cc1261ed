package orch8

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"time"
)

// Handler runs one task. Its return value is the task's output; an error fails the
// attempt (see Retryable and Permanent). ctx is cancelled when the worker must stop the
// task (P-SDK-5); the result of a cancelled task is never sent.
type Handler func(ctx context.Context, t *Task) (any, error)

// WorkerOptions configures a Worker. Zero values take the defaults of section 14.
type WorkerOptions struct {
	// WorkerID names this process to the server; "<hostname>-<pid>" when empty.
	WorkerID string
	// Concurrency is the most tasks held at once (P-SDK-3); 10 when zero.
	Concurrency int
	// GracePeriod is how long a shutdown lets running handlers finish (P-SDK-7); 25 s when
	// zero, none when negative.
	GracePeriod time.Duration
	// QueueName to claim from; the default queue when empty (P-QUEUE-1).
	QueueName string
	// PollWait is the long-poll wait_ms (P-SDK-3); 30 s when zero.
	PollWait time.Duration
	// LeaseDuration asks for this lease_ms on each claim; the server default when zero.
	LeaseDuration time.Duration
	// HeartbeatInterval overrides the cadence the server asks for at registration
	// (P-SDK-4); leave zero to follow the server.
	HeartbeatInterval time.Duration
	// Labels are sent with the registration.
	Labels map[string]string
	// Logger receives structured logs; slog.Default() when nil.
	Logger *slog.Logger
	// Hooks are called on poll, task start, complete and fail (P-SDK-11).
	Hooks Hooks
}

// Hooks observe the worker (P-SDK-11). Each may be nil; they run on the worker's
// goroutines and should return quickly.
type Hooks struct {
	// OnPoll fires after every poll with the number of tasks claimed or the error.
	OnPoll func(claimed int, err error)
	// OnTaskStart fires before the handler runs.
	OnTaskStart func(t *Task)
	// OnTaskComplete fires once the server accepted the task's output.
	OnTaskComplete func(t *Task, output any)
	// OnTaskFail fires once the server accepted a failure report (handler error, panic,
	// or shutdown).
	OnTaskFail func(t *Task, err error)
}

// Stats are the worker's counters (P-SDK-11).
type Stats struct {
	TasksClaimed   int64 `json:"tasks_claimed"`
	TasksCompleted int64 `json:"tasks_completed"`
	TasksFailed    int64 `json:"tasks_failed"`
	TasksLeaseLost int64 `json:"tasks_lease_lost"`
	TasksCancelled int64 `json:"tasks_cancelled"`
	InFlight       int64 `json:"in_flight"`
	Polls          int64 `json:"polls"`
	PollErrors     int64 `json:"poll_errors"`
}

var workerIDUnsafe = regexp.MustCompile(`[^A-Za-z0-9_.:@-]`)

func (o WorkerOptions) withDefaults() WorkerOptions {
	if o.WorkerID == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "worker"
		}
		o.WorkerID = fmt.Sprintf("%s-%d", workerIDUnsafe.ReplaceAllString(host, "-"), os.Getpid())
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	switch {
	case o.GracePeriod == 0:
		o.GracePeriod = DefaultGracePeriod
	case o.GracePeriod < 0:
		o.GracePeriod = 0
	}
	if o.PollWait <= 0 {
		o.PollWait = DefaultWaitMs * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}
