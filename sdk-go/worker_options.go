package orch8

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
	// WorkerID names this process to the server; "<hostname>-<pid>-<8 hex>" when empty (P-SDK-21).
	WorkerID string
	// Concurrency is the most handlers running at once; a completion handed to the
	// completer frees its slot, at most Concurrency of them awaiting an answer (P-SDK-3);
	// 10 when zero.
	Concurrency int
	// GracePeriod is how long a shutdown lets running handlers finish (P-SDK-7); 25 s when
	// zero, none when negative.
	GracePeriod time.Duration
	// QueueName to claim from; the default queue when empty (P-QUEUE-1). Not together
	// with QueueNames.
	QueueName string
	// QueueNames are several queues to claim from, in this strict order (P-QUEUE-2): 1 to
	// 10 distinct names, sent unchanged in every poll and registered as the worker's
	// queues (P-SDK-23).
	QueueNames []string
	// QueueWeights turns QueueNames' strict order into a weighted draw (P-QUEUE-3): a
	// weight 1-1000 for every name of QueueNames and no other.
	QueueWeights map[string]int
	// PollThreshold is how many free slots a poll waits for while results are being
	// reported (P-SDK-26); half of min(Concurrency, 100), rounded up, when zero; 1 turns
	// the wait off; capped to min(Concurrency, 100).
	PollThreshold int
	// PollWait is the long-poll wait_ms (P-SDK-3); 30 s when zero.
	PollWait time.Duration
	// LeaseDuration asks for this lease_ms on each claim and per-task heartbeat; the server
	// default when zero.
	LeaseDuration time.Duration
	// HeartbeatInterval overrides the cadence the server asks for at registration
	// (P-SDK-4) and is kept as given; leave zero to follow the server, shortened to a
	// third of the shortest lease held (P-SDK-30).
	HeartbeatInterval time.Duration
	// Labels are sent with the registration ({} when nil).
	Labels map[string]string
	// Logger receives structured logs; slog.Default() when nil.
	Logger *slog.Logger
	// Hooks observe polls, tasks and failed calls (P-SDK-11).
	Hooks Hooks
	// Telemetry traces and measures polls, handler runs and heartbeats (P-TEL-3, P-TEL-4),
	// e.g. orch8otel.New(); the client's Config.Telemetry when nil; none when both are nil.
	Telemetry Telemetry
	// HealthAddr serves GET /health on this address while Run runs (P-TEL-5), e.g.
	// "127.0.0.1:0" for a free port (read it back with Worker.HealthAddr); an empty host
	// means 127.0.0.1. Off when empty.
	HealthAddr string
}

// Hooks observe the worker (P-SDK-11). Each may be nil; they run on the worker's
// goroutines and should return quickly. A hook that panics is logged and ignored.
type Hooks struct {
	// OnPoll fires after each answered poll.
	OnPoll func(PollEvent)
	// OnTaskStart fires before the handler runs.
	OnTaskStart func(TaskStartEvent)
	// OnTaskComplete fires once the server acknowledged the task's completion.
	OnTaskComplete func(TaskCompleteEvent)
	// OnTaskFail fires once the server acknowledged a failure report of any kind.
	OnTaskFail func(TaskFailEvent)
	// OnTaskAbandoned fires when a task is given up with no result sent.
	OnTaskAbandoned func(TaskAbandonedEvent)
	// OnError fires for every call of the worker that failed.
	OnError func(ErrorEvent)
}

// PollEvent is the payload of Hooks.OnPoll.
type PollEvent struct {
	Claimed  int           // tasks the poll handed over
	Duration time.Duration // how long the poll took
}

// TaskStartEvent is the payload of Hooks.OnTaskStart.
type TaskStartEvent struct {
	Task *Task
}

// TaskCompleteEvent is the payload of Hooks.OnTaskComplete.
type TaskCompleteEvent struct {
	Task     *Task
	Duration time.Duration // the handler's run time
}

// TaskFailEvent is the payload of Hooks.OnTaskFail.
type TaskFailEvent struct {
	Task      *Task
	Code      string // the failure code sent, e.g. "retryable_error", "shutdown", "no_handler"
	Retryable bool
	Duration  time.Duration // the handler's run time (zero when it never ran)
}

// Reasons a task is abandoned (TaskAbandonedEvent.Reason).
const (
	ReasonLeaseLost = "lease_lost"
	ReasonCancelled = "cancelled"
)

// TaskAbandonedEvent is the payload of Hooks.OnTaskAbandoned.
type TaskAbandonedEvent struct {
	Task   *Task
	Reason string // ReasonLeaseLost or ReasonCancelled
}

// Worker operations named by ErrorEvent.Operation.
const (
	OpPoll       = "poll"
	OpHeartbeat  = "heartbeat"
	OpComplete   = "complete"
	OpFail       = "fail"
	OpRelease    = "release"
	OpRegister   = "register"
	OpDeregister = "deregister"
)

// ErrorEvent is the payload of Hooks.OnError.
type ErrorEvent struct {
	Operation string // OpPoll, OpHeartbeat, OpComplete, OpFail, OpRelease, OpRegister or OpDeregister
	Err       error
}

// Stats are the worker's counters (P-SDK-11). At any moment TasksClaimed = TasksCompleted
// + TasksFailed + TasksLeaseLost + TasksCancelled + TasksReleased + InFlight.
type Stats struct {
	TasksClaimed   int64 `json:"tasks_claimed"`    // tasks received from polls
	TasksCompleted int64 `json:"tasks_completed"`  // completions the server acknowledged
	TasksFailed    int64 `json:"tasks_failed"`     // fails of any kind the server acknowledged
	TasksLeaseLost int64 `json:"tasks_lease_lost"` // given up: lease lost or result undeliverable
	TasksCancelled int64 `json:"tasks_cancelled"`  // given up: the task was cancelled
	TasksReleased  int64 `json:"tasks_released"`   // released: yields (P-SDK-32), expired before the start (P-SDK-33)
	InFlight       int64 `json:"in_flight"`        // tasks held now
	Polls          int64 `json:"polls"`            // poll requests sent, failed ones included
	PollErrors     int64 `json:"poll_errors"`      // poll requests that failed
}

var workerIDUnsafe = regexp.MustCompile(`[^A-Za-z0-9_.:@-]`)

// defaultWorkerID is "<hostname>-<pid>-<8 lowercase hex>" (P-SDK-21).
func defaultWorkerID() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "worker"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", workerIDUnsafe.ReplaceAllString(host, "-"), os.Getpid(), hex.EncodeToString(b[:]))
}

func (o WorkerOptions) withDefaults() WorkerOptions {
	if o.WorkerID == "" {
		o.WorkerID = defaultWorkerID()
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
		o.PollWait = DefaultPollWait
	}
	if most := min(o.Concurrency, MaxPollBatchSize); o.PollThreshold <= 0 {
		o.PollThreshold = (most + 1) / 2 // P-SDK-26
	} else if o.PollThreshold > most {
		o.PollThreshold = most
	}
	if o.Labels == nil {
		o.Labels = map[string]string{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}
