package orch8

import (
	"context"
	"errors"
	"time"
)

// pollLoop claims tasks for free slots only (P-SDK-3) until stopCtx ends. Each claimed
// task's handler context derives from base, which is never cancelled by shutdown itself.
func (w *Worker) pollLoop(stopCtx, base context.Context, names []string) {
	outage := backoff{base: DefaultOutageBase, cap: DefaultOutageCap}
	for stopCtx.Err() == nil {
		w.mu.Lock()
		free := w.opts.Concurrency - len(w.held)
		paused := w.localQuiet || w.serverQuiet
		changed := w.changed
		if free <= 0 || paused {
			w.mu.Unlock()
			select { // never poll with zero free slots or while quiet (P-SDK-3, P-SDK-8)
			case <-changed:
			case <-stopCtx.Done():
			}
			continue
		}
		pollCtx, cancel := context.WithCancel(stopCtx)
		w.pollCancel = cancel
		w.mu.Unlock()

		res, err := w.client.PollTasks(pollCtx, PollBatchOptions{
			HandlerNames: &names,
			QueueName:    optString(w.opts.QueueName),
			WorkerId:     Ptr(w.opts.WorkerID),
			WaitMs:       Ptr(int(w.opts.PollWait / time.Millisecond)),
			LeaseMs:      optMillis(w.opts.LeaseDuration),
			BatchSize:    Ptr(free),
		})
		aborted := pollCtx.Err() != nil
		w.mu.Lock()
		w.pollCancel = nil
		w.mu.Unlock()
		cancel()

		if err != nil {
			if aborted && errors.Is(err, context.Canceled) {
				continue // stop or quiet aborted the long-poll on purpose
			}
			w.stats.polls.Add(1)
			w.stats.pollErrors.Add(1)
			w.firePoll(0, err)
			wait := outage.next() // P-SDK-9
			w.log.Warn("orch8: poll failed, backing off", "err", err, "in", wait)
			sleepCtx(stopCtx, wait)
			continue
		}
		w.stats.polls.Add(1)
		outage.reset()
		w.firePoll(len(res.Tasks), nil)
		for i, ct := range res.Tasks {
			if i >= free {
				w.giveBack(ct) // more than asked for: never hold more than Concurrency
				continue
			}
			w.start(base, ct)
		}
		if res.NextPollAfterMs > 0 {
			sleepCtx(stopCtx, time.Duration(res.NextPollAfterMs)*time.Millisecond)
		}
	}
}

func (w *Worker) firePoll(n int, err error) {
	if h := w.opts.Hooks.OnPoll; h != nil {
		h(n, err)
	}
}

// giveBack releases a task the server handed over beyond batch_size (a server fault).
func (w *Worker) giveBack(ct ClaimedTask) {
	w.log.Error("orch8: server returned more tasks than batch_size; releasing", "task_id", ct.Id)
	ctx, cancel := context.WithTimeout(context.Background(), w.client.cfg.Timeout)
	defer cancel()
	if _, err := w.client.ReleaseTask(ctx, ct.Id, TaskRelease{LeaseId: Ptr(ct.Lease.Id)}); err != nil {
		w.log.Warn("orch8: release failed", "task_id", ct.Id, "err", err)
	}
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optMillis(d time.Duration) *int {
	if d <= 0 {
		return nil
	}
	return Ptr(int(d / time.Millisecond))
}
