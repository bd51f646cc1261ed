package orch8

import "github.com/orch8/orch8-workers/sdk-go/api"

// Wire types of openapi.yaml, re-exported from the generated package so callers need
// only import orch8. The server's view of a task is TaskRecord (api.Task); the worker
// runtime hands handlers a *Task.
type (
	NewTask               = api.NewTask
	JSONObject            = api.JSONObject
	NewTaskBatch          = api.NewTaskBatch
	EnqueuedTasks         = api.EnqueuedTasks
	TaskRecord            = api.Task
	TaskPage              = api.TaskPage
	TaskStatus            = api.TaskStatus
	TaskFailure           = api.TaskFailure
	ListTasksParams       = api.ListTasksParams
	TaskCancellation      = api.TaskCancellation
	TaskRetry             = api.TaskRetry
	ManualCompletion      = api.ManualCompletion
	ManualFailure         = api.ManualFailure
	AttemptList           = api.AttemptList
	Attempt               = api.Attempt
	RetryPolicy           = api.RetryPolicy
	PollOptions           = api.PollOptions
	PollBatchOptions      = api.PollBatchOptions
	PollBatchResult       = api.PollBatchResult
	ClaimedTask           = api.ClaimedTask
	Lease                 = api.Lease
	TaskCompletion        = api.TaskCompletion
	TaskFailureReport     = api.TaskFailureReport
	TaskHeartbeat         = api.TaskHeartbeat
	TaskLeaseStatus       = api.TaskLeaseStatus
	TaskRelease           = api.TaskRelease
	TaskOutcome           = api.TaskOutcome
	TaskCompletionItem    = api.TaskCompletionItem
	TaskCompletionBatch   = api.TaskCompletionBatch
	TaskFailureBatch      = api.TaskFailureBatch
	TaskFailureItem       = api.TaskFailureItem
	BatchOutcome          = api.BatchOutcome
	BatchItemOutcome      = api.BatchItemOutcome
	WorkerRegistration    = api.WorkerRegistration
	WorkerRecord          = api.Worker
	WorkerList            = api.WorkerList
	ListWorkersParams     = api.ListWorkersParams
	WorkerHeartbeat       = api.WorkerHeartbeat
	WorkerHeartbeatResult = api.WorkerHeartbeatResult
	ActiveTaskStatus      = api.ActiveTaskStatus
	WorkerDirective       = api.WorkerDirective
	QueueStatsParams      = api.GetQueueStatsParams
	QueueStatsList        = api.QueueStatsList
	QueueStats            = api.QueueStats
	BlockedReason         = api.BlockedReason
	QueueControl          = api.QueueControl
	HandlerControl        = api.HandlerControl
	RunningLimit          = api.RunningLimit
	RateLimit             = api.RateLimit
	RateLimitList         = api.RateLimitList
	RateLimitSettings     = api.RateLimitSettings
	QueueHistoryParams    = api.GetQueueHistoryParams
	QueueHistory          = api.QueueHistory
	QueueHistoryPoint     = api.QueueHistoryPoint
	RequiredLabels        = api.RequiredLabels
	ServerInfo            = api.ServerInfo
	ServerDefaults        = api.ServerDefaults
	WorkerState           = api.WorkerState
	HealthStatus          = api.HealthStatus
)

// Task states and worker directives, as on the wire.
const (
	StatusPending   = api.TaskStatusPending
	StatusScheduled = api.TaskStatusScheduled
	StatusRunning   = api.TaskStatusRunning
	StatusCompleted = api.TaskStatusCompleted
	StatusFailed    = api.TaskStatusFailed
	StatusCancelled = api.TaskStatusCancelled
	StatusExpired   = api.TaskStatusExpired

	DirectiveRunning   = api.WorkerDirectiveRunning
	DirectiveQuiet     = api.WorkerDirectiveQuiet
	DirectiveTerminate = api.WorkerDirectiveTerminate
)

// Why a queue's pending tasks are not handed out: QueueStats.Blocked (P-OBS-4).
const (
	BlockedPaused     = api.Paused
	BlockedQueueCap   = api.QueueCap
	BlockedHandlerCap = api.HandlerCap
	BlockedUnroutable = api.Unroutable
)

// SpecVersion and SpecSHA256 name the openapi.yaml this SDK was generated from.
const (
	SpecVersion = api.SpecVersion
	SpecSHA256  = api.SpecSHA256
)

// Ptr returns a pointer to v, for the optional fields of request bodies.
func Ptr[T any](v T) *T { return &v }
