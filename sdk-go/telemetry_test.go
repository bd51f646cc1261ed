package orch8

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeTelemetry records every call the SDK makes, in order, without OpenTelemetry.
type fakeTelemetry struct {
	mu     sync.Mutex
	calls  []string
	ends   map[string]ProcessResult // task id -> result
	infos  map[string]ProcessInfo
	inject string // the traceparent Inject writes
}

type ctxKey struct{}

func newFakeTelemetry() *fakeTelemetry {
	return &fakeTelemetry{ends: map[string]ProcessResult{}, infos: map[string]ProcessInfo{}, inject: "00-fake-fake-01"}
}

func (f *fakeTelemetry) log(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeTelemetry) has(call string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(f.calls, call)
}

func (f *fakeTelemetry) StartSend(ctx context.Context, info SendInfo) (context.Context, SendSpan) {
	f.log("send %q batch=%v count=%d", info.Queue, info.Batch, info.Count)
	return ctx, fakeSend{f}
}

type fakeSend struct{ f *fakeTelemetry }

func (s fakeSend) Inject(h map[string]string) { h["traceparent"] = s.f.inject }
func (s fakeSend) End(ids []string, err error) {
	s.f.log("send end %v %v", ids, err != nil)
}

func (f *fakeTelemetry) Receive(ctx context.Context, info ReceiveInfo) context.Context {
	f.log("receive %q %d %s", info.Queue, info.Count, info.WorkerID)
	return context.WithValue(ctx, ctxKey{}, "receive")
}

func (f *fakeTelemetry) StartProcess(ctx, receive context.Context, info ProcessInfo) (context.Context, ProcessSpan) {
	f.mu.Lock()
	f.infos[info.TaskID] = info
	f.mu.Unlock()
	f.log("process %s linked=%v", info.TaskID, receive.Value(ctxKey{}) == "receive")
	return context.WithValue(ctx, ctxKey{}, "process "+info.TaskID), fakeProcess{f, info.TaskID}
}

type fakeProcess struct {
	f  *fakeTelemetry
	id string
}

func (p fakeProcess) End(r ProcessResult) {
	p.f.mu.Lock()
	p.f.ends[p.id] = r
	p.f.mu.Unlock()
	p.f.log("end %s %s %s", p.id, r.Outcome, r.ErrorType)
}

func (f *fakeTelemetry) Polled(_ context.Context, outcome string)    { f.log("poll %s", outcome) }
func (f *fakeTelemetry) Heartbeat(_ context.Context, outcome string) { f.log("heartbeat %s", outcome) }
func (f *fakeTelemetry) Slots(_ context.Context, delta, free int) {
	f.log("slots %+d free=%d", delta, free)
}

// TestWorkerTelemetryCallSites_P_TEL_3_P_TEL_4: the worker calls Telemetry at every point
// of the shared design: poll outcome, receive, process (current for the handler), end
// with outcome and failure code, slots and heartbeats.
func TestWorkerTelemetryCallSites_P_TEL_3_P_TEL_4(t *testing.T) {
	s, c := newScripted(t)
	tel := newFakeTelemetry()
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", Concurrency: 3, PollWait: 50 * time.Millisecond,
		HeartbeatInterval: 20 * time.Millisecond, Telemetry: tel})
	seen := make(chan any, 1)
	w.Handle("ok", func(ctx context.Context, t *Task) (any, error) { seen <- ctx.Value(ctxKey{}); return "done", nil })
	w.Handle("bad", func(ctx context.Context, t *Task) (any, error) {
		return nil, &PermanentError{Err: errors.New("no"), Code: "bad_input"}
	})
	s.add("task_ok", "ok")
	s.add("task_bad", "bad")
	stop := runWorker(t, w)
	waitUntil(t, "both ends and a heartbeat", func() bool {
		return tel.has("end task_ok completed ") && tel.has("end task_bad failed bad_input") && tel.has("heartbeat ok")
	})
	waitUntil(t, "an empty poll", func() bool { return tel.has("poll empty") })
	stop()
	if v := <-seen; v != "process task_ok" {
		t.Errorf("the handler's context carries %v, want the process span's context", v)
	}
	for _, want := range []string{`poll claimed`, `receive "default" 2 w1`, `process task_ok linked=true`, `process task_bad linked=true`} {
		if !tel.has(want) {
			t.Errorf("no call %q in %q", want, tel.calls)
		}
	}
	info := tel.infos["task_ok"]
	if info.Queue != "default" || info.Handler != "ok" || info.WorkerID != "w1" || info.Attempt != 1 || info.ClaimedAt.IsZero() {
		t.Errorf("process info %+v", info)
	}
	var held int
	for _, call := range tel.calls {
		switch {
		case strings.HasPrefix(call, "slots +1"):
			held++
		case strings.HasPrefix(call, "slots -1"):
			held--
		}
	}
	if held != 0 || !tel.has("slots -1 free=3") {
		t.Errorf("slots calls leave %d held; calls %q", held, tel.calls)
	}
}

// TestEnqueueTelemetry_P_TEL_1: Enqueue and EnqueueBatch run in a send span whose
// context is injected into headers without traceparent; the caller's traceparent wins
// and the caller's maps stay untouched.
func TestEnqueueTelemetry_P_TEL_1(t *testing.T) {
	tel := newFakeTelemetry()
	stub, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if strings.HasSuffix(r.URL.Path, "/batch") {
			writeJSON(w, 201, map[string]any{"tasks": []any{map[string]any{"id": "task_1"}, map[string]any{"id": "task_2"}}})
			return
		}
		writeJSON(w, 201, map[string]any{"id": "task_1"})
	})
	c.cfg.Telemetry = tel
	headers := map[string]string{"tenant": "acme"}
	if _, err := c.Enqueue(context.Background(), NewTask{HandlerName: "h", Headers: headers, QueueName: Ptr("mail")}); err != nil {
		t.Fatal(err)
	}
	batch := NewTaskBatch{Tasks: []NewTask{
		{HandlerName: "h", Headers: map[string]string{"traceparent": "00-mine-mine-01"}},
		{HandlerName: "h", QueueName: Ptr("other")}}}
	if _, err := c.EnqueueBatch(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`send "mail" batch=false count=1`, `send end [task_1] false`, `send "" batch=true count=2`, `send end [task_1 task_2] false`} {
		if !tel.has(want) {
			t.Errorf("no call %q in %q", want, tel.calls)
		}
	}
	if len(headers) != 1 || batch.Tasks[1].Headers != nil {
		t.Errorf("the caller's headers changed: %v %v", headers, batch.Tasks[1].Headers)
	}
	reqs := stub.requests()
	single := reqs[0].Body["headers"].(map[string]any)
	if single["traceparent"] != tel.inject || single["tenant"] != "acme" {
		t.Errorf("single enqueue headers %v", single)
	}
	tasks := reqs[1].Body["tasks"].([]any)
	if h := tasks[0].(map[string]any)["headers"].(map[string]any); h["traceparent"] != "00-mine-mine-01" {
		t.Errorf("the caller's traceparent was replaced: %v", h)
	}
	if h := tasks[1].(map[string]any)["headers"].(map[string]any); h["traceparent"] != tel.inject {
		t.Errorf("batch task without traceparent got %v", h)
	}
}

// TestCoreModuleHasNoOpenTelemetry: the core module's graph holds no OpenTelemetry
// module; only the separate orch8otel module depends on it.
func TestCoreModuleHasNoOpenTelemetry(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	for _, args := range [][]string{{"list", "-m", "all"}, {"list", "-deps", "-test", "."}} {
		out, err := exec.Command(goBin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("go %v: %v\n%s", args, err, out)
		}
		if strings.Contains(string(out), "opentelemetry") {
			t.Errorf("go %s lists OpenTelemetry:\n%s", strings.Join(args, " "), out)
		}
	}
}

// TestReceiveOfSeveralQueuesNamesNone_P_TEL_3: a poll whose tasks came from several queues
// gives Receive no queue (the span is "receive" alone), with the count and the worker id.
func TestReceiveOfSeveralQueuesNamesNone_P_TEL_3(t *testing.T) {
	s, c := newScripted(t)
	tel := newFakeTelemetry()
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", Concurrency: 4, PollWait: 50 * time.Millisecond,
		QueueNames: []string{"a", "b"}, Telemetry: tel})
	w.Handle("ok", func(ctx context.Context, t *Task) (any, error) { return "done", nil })
	s.mu.Lock()
	s.queueOf["task_a"], s.queueOf["task_b"] = "a", "b"
	s.mu.Unlock()
	s.add("task_a", "ok")
	s.add("task_b", "ok")
	stop := runWorker(t, w)
	waitUntil(t, "both ends", func() bool { return tel.has("end task_a completed ") && tel.has("end task_b completed ") })
	stop()
	if !tel.has(`receive "" 2 w1`) {
		t.Errorf("no receive without a queue for a poll of two queues in %q", tel.calls)
	}
	if claimedQueue([]ClaimedTask{{QueueName: "a"}, {QueueName: "a"}}) != "a" {
		t.Error("one queue must be named")
	}
}
