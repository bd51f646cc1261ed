package orch8

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"
)

// shutdownSlack bounds what a shutdown does after its grace period: failing leftovers with
// "shutdown", waiting for results in delivery and deregistering (P-SDK-17).
const shutdownSlack = 5 * time.Second

// Worker claims tasks for its registered handlers and runs them with the semantics of
// docs/protocol.md section 14. Create it with NewWorker, add handlers with Handle, then
// call Run (or RunWithSignals).
type Worker struct {
	client   *Orch8Client
	opts     WorkerOptions
	log      *slog.Logger
	handlers map[string]Handler
	names    []string // sorted handler names, fixed by Run

	completions *completer // batched completion reports (P-SDK-12)
	tel         Telemetry  // nil: no telemetry call at all (P-TEL-3, P-TEL-4)
	health      health     // GET /health (P-TEL-5)

	mu        sync.Mutex
	held      map[runKey]*run // every claimed attempt until its outcome is known (P-WORKER-2)
	changed   chan struct{}   // closed and replaced whenever held or quiet changes
	reporting int             // held runs whose handler returned: result not yet settled (P-SDK-26)
	// Runs whose result is being delivered, counted until their outcome is counted and
	// its hook returned (finish): Run waits for none to be left (P-SDK-29, P-SDK-11).
	sending     int
	handed      int  // held runs whose completion is with the completer (P-SDK-3)
	localQuiet  bool // Quiet() / SIGTSTP (P-SDK-8, P-SDK-18)
	serverQuiet bool // quiet directive (P-WORKER-3, P-SDK-18)
	stopping    bool
	stopReason  string // why the shutdown began, for the "stopping" line (P-SDK-31)
	running     bool
	pollCancel  context.CancelFunc // aborts the in-flight long-poll
	interval    time.Duration      // worker heartbeat cadence (P-SDK-4)

	stopOnce    sync.Once
	stopCh      chan struct{}
	graceOnce   sync.Once
	graceCh     chan struct{} // closed to end the grace period at once (P-SDK-17)
	graceSignal string        // what closed graceCh: "SIGTERM", "SIGINT" or stopNowCause (P-SDK-29)

	// life ends as Run finishes, after its drain: result deliveries still retrying then give
	// up, so nothing the worker started outlives Run (P-SDK-29). Deliveries use it, never
	// Run's context.
	life    context.Context
	endLife context.CancelFunc
	slack   time.Duration // shutdownSlack; shorter in tests

	statsMu sync.Mutex // one lock, so a snapshot always satisfies the invariant of Stats
	stats   Stats
}

// NewWorker builds a Worker that talks to the server through client. It refuses a queue
// configuration the server would refuse with an error wrapping ErrInvalidOptions, before
// any request (P-SDK-23).
func NewWorker(client *Orch8Client, opts WorkerOptions) (*Worker, error) {
	if err := opts.checkQueues(); err != nil {
		return nil, err
	}
	if err := opts.checkHealthAddr(); err != nil {
		return nil, err
	}
	opts = opts.ownQueues().withDefaults()
	w := &Worker{
		client:   client,
		opts:     opts,
		log:      opts.Logger.With("worker_id", opts.WorkerID),
		handlers: map[string]Handler{},
		held:     map[runKey]*run{},
		changed:  make(chan struct{}),
		stopCh:   make(chan struct{}),
		graceCh:  make(chan struct{}),
		interval: DefaultHeartbeat,
		slack:    shutdownSlack,
	}
	w.life, w.endLife = context.WithCancel(context.Background())
	w.completions = &completer{w: w}
	w.tel = opts.Telemetry
	if w.tel == nil && client != nil {
		w.tel = client.cfg.Telemetry
	}
	return w, nil
}

// Handle registers fn for tasks whose handler_name is name. Call it before Run.
func (w *Worker) Handle(name string, fn Handler) {
	if name == "" || fn == nil {
		panic("orch8: Handle needs a name and a handler")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running {
		panic("orch8: Handle called after Run")
	}
	w.handlers[name] = fn
}

// ID is the worker id sent to the server.
func (w *Worker) ID() string { return w.opts.WorkerID }

// Stats returns a snapshot of the worker's counters (P-SDK-11).
func (w *Worker) Stats() Stats {
	w.statsMu.Lock()
	defer w.statsMu.Unlock()
	return w.stats
}

// count updates the counters under their lock.
func (w *Worker) count(update func(s *Stats)) {
	w.statsMu.Lock()
	update(&w.stats)
	w.statsMu.Unlock()
}

// Stop starts a graceful shutdown, like cancelling Run's context (P-SDK-7).
func (w *Worker) Stop() { w.stopFor("Stop called") }

// stopFor is Stop, naming why in the "stopping" line (P-SDK-31).
func (w *Worker) stopFor(reason string) {
	w.stopOnce.Do(func() {
		w.mu.Lock()
		w.stopReason = reason
		w.mu.Unlock()
		close(w.stopCh)
	})
}

// stopNowCause names StopNow in the shutdown message when no signal ended the grace period.
const stopNowCause = "StopNow"

// StopNow ends a shutdown's grace period at once (P-SDK-17): running handlers are
// cancelled and their tasks failed with "shutdown". It also starts the shutdown.
func (w *Worker) StopNow() { w.endGrace(stopNowCause) }

// endGrace is StopNow on behalf of cause, the second signal ("SIGTERM", "SIGINT") that the
// shutdown message names (P-SDK-29).
func (w *Worker) endGrace(cause string) {
	w.Stop()
	w.graceOnce.Do(func() {
		w.mu.Lock()
		w.graceSignal = cause
		w.mu.Unlock()
		close(w.graceCh)
	})
}

// onStopSignal handles the n-th SIGTERM or SIGINT: the first starts a graceful shutdown
// (P-SDK-7), logged at info; a later one ends the grace period (P-SDK-17), logged at
// warning; each names the signal (P-SDK-29).
func (w *Worker) onStopSignal(name string, n int) {
	if n == 1 {
		grace := w.opts.GracePeriod.Milliseconds()
		w.line(slog.LevelInfo, "signal", fmt.Sprintf("received %s: shutting down, running tasks get %d ms", name, grace), "",
			"signal", name, "grace_period_ms", grace)
		w.stopFor("received " + name)
		return
	}
	msg := "received a second signal " + name + ": ending the grace period now"
	if n > 2 {
		msg = "received " + name + " again: already ending the grace period"
	}
	w.line(slog.LevelWarn, "second_signal", msg, "", "signal", name)
	w.endGrace(name)
}

// Quiet stops claiming new tasks while in-flight work finishes (P-SDK-8). It sets the
// local quiet flag only; the operator's quiet directive is independent (P-SDK-18).
func (w *Worker) Quiet() { w.setQuiet(&w.localQuiet, true) }

// Resume clears the local quiet flag; an operator's quiet directive still holds (P-SDK-18).
func (w *Worker) Resume() { w.setQuiet(&w.localQuiet, false) }

func (w *Worker) setQuiet(flag *bool, quiet bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if *flag == quiet {
		return
	}
	*flag = quiet
	if quiet && w.pollCancel != nil {
		w.pollCancel() // claim nothing new: abort the long-poll now
	}
	w.notifyLocked()
	switch {
	case flag != &w.localQuiet:
		directive := DirectiveRunning
		if quiet {
			directive = DirectiveQuiet
		}
		w.line(slog.LevelInfo, "directive", "directive "+string(directive), "", "directive", directive)
	case quiet:
		w.line(slog.LevelInfo, "local_quiet", "claiming paused (local quiet)", "", "quiet", true)
	default:
		w.line(slog.LevelInfo, "local_quiet", "claiming resumed (local)", "", "quiet", false)
	}
}

func (w *Worker) notifyLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// Run registers the worker, claims and runs tasks until ctx is cancelled, Stop is called
// or the server sends terminate; then it shuts down gracefully (P-SDK-7) and returns once
// every result is delivered or given up. It returns nil after a graceful shutdown.
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.running {
		w.mu.Unlock()
		return errors.New("orch8: Worker.Run called twice")
	}
	w.running = true
	defer w.endLife() // P-SDK-29: deliveries still retrying give up once Run returns
	for n := range w.handlers {
		w.names = append(w.names, n)
	}
	w.mu.Unlock()
	if len(w.names) == 0 {
		return errors.New("orch8: no handlers registered")
	}
	sort.Strings(w.names)
	url := w.client.cfg.BaseURL
	w.line(slog.LevelInfo, "start", "worker starting against "+url, "", "url", url, "handlers", w.names,
		"queues", w.opts.registeredQueues(), "concurrency", w.opts.Concurrency)
	defer func() { w.line(slog.LevelInfo, "stopped", "worker stopped", "", "stats", w.Stats()) }()

	stopCtx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	go func() {
		select {
		case <-w.stopCh:
			stopPolling()
		case <-stopCtx.Done():
		}
	}()

	w.health.began.Store(time.Now().UnixNano())
	if w.opts.HealthAddr != "" {
		stopHealth, err := w.serveHealth(stopCtx)
		if err != nil {
			return err
		}
		defer stopHealth()
	}
	if err := w.register(stopCtx); err != nil {
		if stopCtx.Err() != nil {
			return nil // stopped before anything was claimed
		}
		return err // P-SDK-28: a configuration error stops the worker
	}
	if w.tel != nil {
		w.tel.Slots(ctx, 0, w.opts.Concurrency) // every slot is free before the first claim (P-TEL-4)
	}
	// Heartbeats outlive the Run context: they keep leases alive through the grace period.
	hbCtx, stopHeartbeats := context.WithCancel(context.WithoutCancel(ctx))
	hbDone := make(chan struct{})
	go func() { defer close(hbDone); w.heartbeatLoop(hbCtx) }()

	pollDone := make(chan struct{})
	go func() { defer close(pollDone); w.pollLoop(stopCtx, context.WithoutCancel(ctx)) }()

	<-stopCtx.Done()
	w.mu.Lock()
	w.stopping = true
	reason := w.stopReason
	w.mu.Unlock()
	if reason == "" {
		reason = "Run's context ended"
	}
	w.line(slog.LevelInfo, "stopping", "worker stopping: "+reason, "", "reason", reason,
		"grace_period_ms", w.opts.GracePeriod.Milliseconds())
	<-pollDone // the long-poll was aborted with stopCtx (P-SDK-7)

	deadline := w.drain()
	stopHeartbeats()
	<-hbDone
	w.deregister(deadline)
	// P-SDK-29, P-SDK-11: deliveries still retrying give up now, before Run returns, so
	// their outcomes are counted and their hooks have run when it does.
	w.endLife()
	w.awaitDeliveries()
	return nil
}

// beginDelivery counts a run whose result is being delivered (complete, fail or release)
// until the returned func is called, after its outcome is counted; Run waits for the count
// to reach zero once its life ended (P-SDK-29).
func (w *Worker) beginDelivery() (end func()) {
	w.mu.Lock()
	w.sending++
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		w.sending--
		if w.sending == 0 && w.life.Err() != nil {
			w.notifyLocked()
		}
		w.mu.Unlock()
	}
}

// awaitDeliveries waits, after endLife, for every delivery to return: each gives up at
// once without life, so this is short.
func (w *Worker) awaitDeliveries() {
	for {
		w.mu.Lock()
		n, ch := w.sending, w.changed
		w.mu.Unlock()
		if n == 0 {
			return
		}
		<-ch
	}
}

// drain waits up to the grace period (or a second signal) for live tasks, then fails what
// is still running with code "shutdown" and waits for results already being delivered,
// for at most shutdownSlack (P-SDK-7, P-SDK-17). It returns that deadline.
func (w *Worker) drain() time.Time {
	grace := time.NewTimer(w.opts.GracePeriod)
	defer grace.Stop()
	message := shutdownMessage(w.opts.WorkerID, w.opts.GracePeriod, "")
wait:
	for {
		w.mu.Lock()
		live, ch := w.liveLocked(), w.changed
		w.mu.Unlock()
		if live == 0 {
			return time.Now().Add(w.slack)
		}
		select {
		case <-ch:
		case <-grace.C:
			break wait
		case <-w.graceCh:
			w.mu.Lock()
			message = shutdownMessage(w.opts.WorkerID, w.opts.GracePeriod, w.graceSignal)
			w.mu.Unlock()
			break wait
		}
	}
	deadline := time.Now().Add(w.slack)

	var leftovers, delivering []*run
	w.mu.Lock()
	for _, r := range w.held {
		switch r.claimForShutdown() {
		case phaseHandling:
			leftovers = append(leftovers, r)
		case phaseDelivering:
			delivering = append(delivering, r)
		}
	}
	w.mu.Unlock()
	if len(leftovers) > 0 {
		w.line(slog.LevelWarn, "grace_ended", fmt.Sprintf("%d task(s) still running, failed with shutdown", len(leftovers)),
			message, "tasks", len(leftovers))
	}

	// quit ends the waits below when drain returns: a handler deaf to its cancellation
	// leaves no goroutine of ours behind (P-SDK-29).
	quit := make(chan struct{})
	defer close(quit)
	var wg sync.WaitGroup
	for _, r := range leftovers {
		wg.Add(1)
		end := w.beginDelivery() // its release counts the outcome; Run waits for it (P-SDK-29)
		go func() { defer wg.Done(); defer end(); w.failForShutdown(r, message, deadline) }()
	}
	for _, r := range delivering {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-r.done:
			case <-quit:
			}
		}()
	}
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-allDone:
	case <-t.C:
		w.line(slog.LevelWarn, "outage", "results still in delivery when the shutdown deadline passed", "no answer within "+w.slack.String(),
			"operation", OpComplete, "url", w.client.cfg.BaseURL)
	}
	return deadline
}

// liveLocked counts tasks whose outcome is still to come: not dropped, or being delivered.
func (w *Worker) liveLocked() int {
	n := 0
	for _, r := range w.held {
		if r.live() {
			n++
		}
	}
	return n
}

func (w *Worker) deregister(deadline time.Time) {
	if time.Until(deadline) < time.Second {
		deadline = time.Now().Add(time.Second)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if _, err := w.client.DeregisterWorker(ctx, w.opts.WorkerID); err != nil {
		w.callFailed(OpDeregister, err, "deregister", "")
		w.fireError(OpDeregister, err)
	}
}
