package orch8

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/orch8/orch8-workers/sdk-go/api"
)

// Workflow wire types of openapi.yaml (section 16), re-exported so callers need only
// import orch8. The client's DefineSequence, ListSequences, GetSequence, StartInstance,
// StartInstances, ListInstances, GetInstance, CancelInstance and RetryInstance take and
// return them (P-SDK-25, P-WF-14).
type (
	NewSequence         = api.NewSequence
	Sequence            = api.Sequence
	SequencePage        = api.SequencePage
	Step                = api.Step
	StepAction          = api.StepAction
	StepParams          = api.StepParams
	BlockType           = api.BlockType
	BlockList           = api.BlockList
	Route               = api.Route
	ListSequencesParams = api.ListSequencesParams
	GetSequenceParams   = api.GetSequenceParams
	NewInstance         = api.NewInstance
	NewInstanceBatch    = api.NewInstanceBatch
	StartedInstances    = api.StartedInstances
	Instance            = api.Instance
	InstancePage        = api.InstancePage
	InstanceStatus      = api.InstanceStatus
	StepRun             = api.StepRun
	StepStatus          = api.StepStatus
	ListInstancesParams = api.ListInstancesParams
	GetInstanceParams   = api.GetInstanceParams
	GetTaskParams       = api.GetTaskParams
)

// Block types of Orch8's sequence format (P-WF-11), for Step.Type.
const (
	BlockStep        = api.BlockTypeStep
	BlockParallel    = api.BlockTypeParallel
	BlockRace        = api.BlockTypeRace
	BlockRouter      = api.BlockTypeRouter
	BlockTryCatch    = api.BlockTypeTryCatch
	BlockLoop        = api.BlockTypeLoop
	BlockForEach     = api.BlockTypeForEach
	BlockSubSequence = api.BlockTypeSubSequence
)

// Instance and step states, as on the wire (P-WF-10).
const (
	InstanceRunning   = api.InstanceStatusRunning
	InstanceCompleted = api.InstanceStatusCompleted
	InstanceFailed    = api.InstanceStatusFailed
	InstanceCancelled = api.InstanceStatusCancelled

	StepPending   = api.StepStatusPending
	StepRunning   = api.StepStatusRunning
	StepCompleted = api.StepStatusCompleted
	StepFailed    = api.StepStatusFailed
	StepCancelled = api.StepStatusCancelled
)

const (
	// DefaultWaitTimeout is how long WaitInstance and WaitTask wait when given no timeout
	// (P-SDK-25).
	DefaultWaitTimeout = api.DefaultWaitTimeoutMs * time.Millisecond
	// maxWaitRound is the longest wait_ms of one long-poll round (P-SDK-25).
	maxWaitRound = api.WaitRoundMs * time.Millisecond
)

// ErrWaitTimeout matches (errors.Is) the *WaitTimeoutError of a wait whose timeout passed
// before the object was final (P-SDK-25).
var ErrWaitTimeout = errors.New("orch8: wait timed out")

// WaitTimeoutError is WaitInstance's or WaitTask's error when the timeout passes first. It
// carries the last state seen: Instance (WaitInstance) or Task (WaitTask), nil when no
// answer came at all, and Err, the outage that was being ridden out, if any.
type WaitTimeoutError struct {
	ID       string
	Timeout  time.Duration
	Instance *Instance
	Task     *TaskRecord
	Err      error
}

func (e *WaitTimeoutError) Error() string {
	status := "no answer"
	switch {
	case e.Instance != nil:
		status = "last status " + string(e.Instance.Status)
	case e.Task != nil:
		status = "last status " + string(e.Task.Status)
	}
	if e.Err != nil {
		return fmt.Sprintf("orch8: %s not final after %s (%s): %v", e.ID, e.Timeout, status, e.Err)
	}
	return fmt.Sprintf("orch8: %s not final after %s (%s)", e.ID, e.Timeout, status)
}

// Is makes errors.Is(err, ErrWaitTimeout) true.
func (e *WaitTimeoutError) Is(target error) bool { return target == ErrWaitTimeout }

// Unwrap is the outage being ridden out when the timeout passed, if any.
func (e *WaitTimeoutError) Unwrap() error { return e.Err }

// WaitInstance waits until instance id is final (completed, failed or cancelled) and
// returns it, whatever its final status; a failed instance is a result, not an error. A
// timeout <= 0 means DefaultWaitTimeout. When the timeout passes first it returns the last
// state seen and a *WaitTimeoutError (errors.Is ErrWaitTimeout) carrying it (P-SDK-25).
func (c *Client) WaitInstance(ctx context.Context, id string, timeout time.Duration) (*Instance, error) {
	inst, err := waitFinal(ctx, c, timeout, func(ctx context.Context, waitMs int) (*Instance, error) {
		return c.GetInstance(ctx, id, &GetInstanceParams{WaitMs: &waitMs})
	}, func(i *Instance) bool { return i.Status != InstanceRunning })
	var te *WaitTimeoutError
	if errors.As(err, &te) {
		te.ID, te.Instance = id, inst
	}
	return inst, err
}

// WaitTask waits until task id is final (completed, failed, cancelled or expired) and
// returns it, whatever its final status. A timeout <= 0 means DefaultWaitTimeout. When
// the timeout passes first it returns the last state seen and a *WaitTimeoutError
// (errors.Is ErrWaitTimeout) carrying it (P-SDK-25).
func (c *Client) WaitTask(ctx context.Context, id string, timeout time.Duration) (*TaskRecord, error) {
	task, err := waitFinal(ctx, c, timeout, func(ctx context.Context, waitMs int) (*TaskRecord, error) {
		return c.GetTaskWithParams(ctx, id, &GetTaskParams{WaitMs: &waitMs})
	}, taskFinal)
	var te *WaitTimeoutError
	if errors.As(err, &te) {
		te.ID, te.Task = id, task
	}
	return task, err
}

func taskFinal(t *TaskRecord) bool {
	switch t.Status {
	case StatusCompleted, StatusFailed, StatusCancelled, StatusExpired:
		return true
	}
	return false
}

// waitFinal long-polls get in rounds of at most 30 s of wait_ms until final holds or the
// timeout passes. Each round is a safe call, retried on outages (P-SDK-2); an outage that
// outlasts those retries is ridden out with the client's backoff until the timeout, since
// waiting is the caller's whole purpose. Other errors (404, 401, ...) return at once.
func waitFinal[T any](ctx context.Context, c *Client, timeout time.Duration, get func(context.Context, int) (*T, error), final func(*T) bool) (*T, error) {
	if timeout <= 0 {
		timeout = DefaultWaitTimeout
	}
	deadline := time.Now().Add(timeout)
	b := backoff{base: DefaultRetryBase, cap: DefaultRetryCap}
	var last *T
	var outage error
	for {
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return last, &WaitTimeoutError{Timeout: timeout, Err: outage}
		}
		round := min(remaining, maxWaitRound)
		v, err := get(ctx, int((round+time.Millisecond-1)/time.Millisecond))
		switch {
		case err == nil:
			last, outage = v, nil
			b.reset()
			if final(v) {
				return v, nil
			}
		case IsOutage(err):
			outage = err
			if !sleepCtx(ctx, min(b.next(), time.Until(deadline))) {
				return last, ctx.Err()
			}
		default:
			return last, err
		}
	}
}
