package orch8

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// handlerChunks splits the handler names into groups of at most MaxPollHandlers, the most
// one poll may name (P-SDK-13).
func handlerChunks(names []string) [][]string {
	var chunks [][]string
	for len(names) > MaxPollHandlers {
		chunks = append(chunks, names[:MaxPollHandlers:MaxPollHandlers])
		names = names[MaxPollHandlers:]
	}
	return append(chunks, names)
}

// pollLoop claims tasks for free slots only (P-SDK-3) until stopCtx ends. Each poll asks
// for min(free slots, 100) tasks and names at most 50 handlers, taking the chunks of
// handler names in turn (P-SDK-13). Each claimed task's handler context derives from base,
// which is never cancelled by shutdown itself.
func (w *Worker) pollLoop(stopCtx, base context.Context) {
	outage := backoff{base: DefaultOutageBase, cap: DefaultOutageCap}
	chunks := handlerChunks(w.names)
	for turn := 0; stopCtx.Err() == nil; {
		w.mu.Lock()
		free := w.freeLocked()
		paused := w.localQuiet || w.serverQuiet // either flag stops claiming (P-SDK-18)
		changed := w.changed
		// P-SDK-26: while results are being reported, their slots are about to free up;
		// wait for them rather than poll for a few, unless enough slots are free already.
		gather := free < w.opts.PollThreshold && w.reporting > 0
		if free <= 0 || paused || gather {
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

		ask := min(free, MaxPollBatchSize)
		names := chunks[turn%len(chunks)]
		turn++
		began := time.Now()
		w.count(func(s *Stats) { s.Polls++ }) // every HTTP poll attempt counts (P-SDK-11)
		res, err := w.client.PollTasks(pollCtx, PollBatchOptions{
			HandlerNames: names,
			QueueName:    optString(w.opts.QueueName),
			QueueNames:   w.opts.QueueNames,   // P-SDK-23: unchanged in every poll (P-QUEUE-2)
			QueueWeights: w.opts.QueueWeights, // P-QUEUE-3
			WorkerID:     Ptr(w.opts.WorkerID),
			WaitMs:       Ptr(int(w.opts.PollWait / time.Millisecond)),
			LeaseMs:      optMillis(w.opts.LeaseDuration),
			BatchSize:    Ptr(ask),
		})
		answered := time.Now() // each claimed lease starts here (P-SDK-30)
		aborted := pollCtx.Err() != nil
		w.mu.Lock()
		w.pollCancel = nil
		w.mu.Unlock()
		cancel()

		if err != nil {
			if aborted && errors.Is(err, context.Canceled) {
				continue // stop or quiet aborted the long-poll on purpose
			}
			w.count(func(s *Stats) { s.PollErrors++ })
			if w.tel != nil {
				w.tel.Polled(base, PollError) // P-TEL-4
			}
			w.fireError(OpPoll, err)
			wait := outageWait(&outage, err) // P-SDK-9, P-SDK-16
			// P-SDK-24: a 401/403 is logged as refused, naming status, code and detail.
			w.callFailed(OpPoll, err, "poll", fmt.Sprintf("backing off %d ms", wait.Milliseconds()), "retry_in_ms", wait.Milliseconds())
			sleepCtx(stopCtx, wait)
			continue
		}
		outage.reset()
		w.health.polled()
		receive := w.received(base, began, res.Tasks)
		callHook(w, "OnPoll", w.opts.Hooks.OnPoll, PollEvent{Claimed: len(res.Tasks), Duration: time.Since(began)})
		for i, ct := range res.Tasks {
			if i >= ask {
				w.giveBack(ct) // more than asked for: never hold more than Concurrency
				continue
			}
			w.start(base, receive, ct, answered)
		}
		if res.NextPollAfterMs > 0 {
			sleepCtx(stopCtx, time.Duration(res.NextPollAfterMs)*time.Millisecond)
		}
	}
}

// freeLocked is the free slots (P-SDK-3): a completion handed to the completer frees its
// slot, so the next poll overlaps with reporting; at most Concurrency of them do, which
// bounds the results awaiting an answer. Callers hold w.mu.
func (w *Worker) freeLocked() int {
	return w.opts.Concurrency - len(w.held) + min(w.handed, w.opts.Concurrency)
}

// giveBack releases a task the server handed over beyond batch_size (a server fault).
func (w *Worker) giveBack(ct ClaimedTask) {
	w.line(slog.LevelError, "internal_error", "releasing a task claimed beyond batch_size",
		"the server returned more tasks than batch_size", "operation", OpPoll, "task_id", ct.ID)
	ctx, cancel := context.WithTimeout(context.Background(), w.client.cfg.Timeout)
	defer cancel()
	if _, err := w.client.ReleaseTask(ctx, ct.ID, TaskRelease{LeaseID: Ptr(ct.Lease.ID)}); err != nil {
		w.callFailed("release", err, "release", "", "task_id", ct.ID)
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
