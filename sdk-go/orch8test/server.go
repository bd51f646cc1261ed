package orch8test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
	"github.com/orch8/orch8-workers/sdk-go/api"
	"github.com/orch8/orch8-workers/sdk-go/internal/refserver"
)

// DefaultIdleTimeout bounds WaitIdle, Advance and SkipToNextTimer; DefaultRunTimeout
// bounds RunUntilFinal and RunTaskUntilFinal.
const (
	DefaultIdleTimeout = 30 * time.Second
	DefaultRunTimeout  = 30 * time.Second
)

// Server is a throwaway orch8-server with the test clock (docs/protocol.md 17,
// P-CLOCK-1..5) for workflow tests: the test's handlers run in-process on the SDK's own
// Worker, and time moves only when the test says so, while nothing runs (P-CLOCK-3). Its
// methods fail the test (t.Fatal) on an error, so call them from the test's goroutine.
type Server struct {
	// URL of the server, e.g. http://127.0.0.1:41234.
	URL string
	// Client of the server, which has no keys: it may move the clock (P-CLOCK-4).
	Client *orch8.Client

	t       testing.TB
	mu      sync.Mutex
	claims  map[*orch8.Worker]claims // what each worker of Worker() claims
	running map[*orch8.Worker]bool   // started by StartWorker, not stopped yet
}

type claims struct{ handlers, queues map[string]bool }

// StartServer starts `orch8-server --test-clock` on a SQLite file in t.TempDir() and port 0
// and returns once it listens; args are more server flags. The command is ORCH8_SERVER
// (split on spaces, e.g. "python -m orch8_server"), else orch8-server on PATH. The server
// and the workers started on it stop when the test ends (t.Cleanup).
func StartServer(t testing.TB, args ...string) *Server {
	t.Helper()
	command, err := serverCommand()
	if err != nil {
		t.Fatal(err)
	}
	// ORCH8_* of the test's environment (a URL, a database, keys) must not reach the server.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ORCH8_") {
			env = append(env, kv)
		}
	}
	flags := append([]string{"--test-clock", "--db", filepath.Join(t.TempDir(), "orch8.db"),
		"--host", "127.0.0.1"}, args...)
	rs := refserver.Launch(t, refserver.Options{Command: command, Args: flags, Env: append(env, "PYTHONUNBUFFERED=1")})
	client, err := orch8.NewClient(orch8.Config{BaseURL: rs.URL})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{URL: rs.URL, Client: client, t: t, claims: map[*orch8.Worker]claims{}, running: map[*orch8.Worker]bool{}}
	// The server's first task listing takes up to a second (its first use of that path):
	// paid here, at start-up, rather than by the test's first idle check.
	s.WaitIdle(0)
	return s
}

// shellWords splits value into words as a POSIX shell would (Python's shlex.split):
// whitespace separates, '...' is literal, "..." and a backslash escape, so ORCH8_SERVER
// may name a path with spaces in every SDK. An unclosed quote is an error naming the value.
func shellWords(value string) ([]string, error) {
	var words []string
	var word strings.Builder
	inWord, quote := false, rune(0)
	runes := []rune(value)
	for i := 0; i < len(runes); i++ {
		c := runes[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				word.WriteRune(c)
			}
		case quote == '"':
			if c == '"' {
				quote = 0
			} else if c == '\\' && i+1 < len(runes) && strings.ContainsRune("\"\\$`", runes[i+1]) {
				i++
				word.WriteRune(runes[i])
			} else {
				word.WriteRune(c)
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				words = append(words, word.String())
				word.Reset()
			}
			inWord = false
		default:
			inWord = true
			if c == '\'' || c == '"' {
				quote = c
			} else if c == '\\' && i+1 < len(runes) {
				i++
				word.WriteRune(runes[i])
			} else {
				word.WriteRune(c)
			}
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("orch8test: ORCH8_SERVER=%q: unclosed %c", value, quote)
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}

// serverCommand is ORCH8_SERVER, else orch8-server on PATH; a clear error otherwise.
func serverCommand() ([]string, error) {
	given, err := shellWords(strings.TrimSpace(os.Getenv("ORCH8_SERVER")))
	if err != nil {
		return nil, err
	}
	if len(given) > 0 {
		if _, err := exec.LookPath(given[0]); err != nil {
			return nil, fmt.Errorf("orch8test: cannot start ORCH8_SERVER=%q: %w (install the server with `pip install orch8-server`)", os.Getenv("ORCH8_SERVER"), err)
		}
		return given, nil
	}
	if bin, err := exec.LookPath("orch8-server"); err == nil {
		return []string{bin}, nil
	}
	return nil, errors.New("orch8test: the reference server was not found: ORCH8_SERVER is not set and no orch8-server is on PATH. " +
		"Install it with `pip install orch8-server` (Python 3.11+, e.g. into a virtualenv whose bin/ is on PATH), " +
		`or set ORCH8_SERVER to its command, e.g. ORCH8_SERVER="/path/to/venv/bin/orch8-server" or "python -m orch8_server"`)
}

// Clock is the server's clock: Now and NextTimerAt (nil when no timer is set).
func (s *Server) Clock() *api.Clock {
	s.t.Helper()
	c, err := s.Client.GetClock(context.Background())
	if err != nil {
		s.t.Fatalf("orch8test: GET /clock: %v", err)
	}
	return c
}

// Advance moves the clock by d once all is idle (WaitIdle) and returns it after every
// timer due has fired (P-CLOCK-2).
func (s *Server) Advance(d time.Duration) *api.Clock {
	s.t.Helper()
	s.WaitIdle(DefaultIdleTimeout)
	ms := int(d / time.Millisecond)
	return s.advance(api.ClockAdvance{ByMs: &ms})
}

// SkipToNextTimer moves the clock to the next timer, if any, once all is idle (P-CLOCK-3).
func (s *Server) SkipToNextTimer() *api.Clock {
	s.t.Helper()
	s.WaitIdle(DefaultIdleTimeout)
	return s.advance(api.ClockAdvance{ToNextTimer: ptr(true)})
}

func (s *Server) advance(body api.ClockAdvance) *api.Clock {
	s.t.Helper()
	c, err := s.Client.AdvanceClock(context.Background(), body)
	if err != nil {
		s.t.Fatalf("orch8test: POST /clock/advance: %v", err)
	}
	return c
}

// WaitIdle returns once no task is running and none is pending that a running worker
// claims (a claim in flight, a step a completion just dispatched): a skip then loses no
// work (P-CLOCK-3). It fails the test after timeout (DefaultIdleTimeout when <= 0).
func (s *Server) WaitIdle(timeout time.Duration) {
	s.t.Helper()
	if timeout <= 0 {
		timeout = DefaultIdleTimeout
	}
	s.waitIdle(time.Now().Add(timeout))
}

func (s *Server) waitIdle(deadline time.Time) {
	s.t.Helper()
	for {
		busy := s.busy()
		if busy == "" {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("orch8test: the test server is still busy at its deadline: %s", busy)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// busy says why skipping time now would lose work, or "".
func (s *Server) busy() string {
	s.t.Helper()
	s.mu.Lock()
	running := map[*orch8.Worker]claims{}
	for w := range s.running {
		running[w] = s.claims[w]
	}
	s.mu.Unlock()
	for w := range running {
		if w.Stats().InFlight > 0 {
			return "worker " + w.ID() + " holds a task"
		}
	}
	page, err := s.Client.ListTasks(context.Background(), &api.ListTasksParams{
		Status: []api.TaskStatus{orch8.StatusRunning, orch8.StatusPending}, Limit: ptr(100)})
	if err != nil {
		s.t.Fatalf("orch8test: GET /tasks: %v", err)
	}
	for _, task := range page.Tasks {
		if task.Status == orch8.StatusRunning {
			return fmt.Sprintf("task %s (%s) is running", task.ID, task.HandlerName)
		}
		for _, c := range running {
			if c.handlers[task.HandlerName] && c.queues[task.QueueName] {
				return fmt.Sprintf("task %s (%s) is pending", task.ID, task.HandlerName)
			}
		}
	}
	return ""
}

// Worker builds the SDK's Worker on this server with handlers, not started; opts are the
// worker's options.
func (s *Server) Worker(handlers map[string]orch8.Handler, opts orch8.WorkerOptions) *orch8.Worker {
	s.t.Helper()
	w, err := orch8.NewWorker(s.Client, opts)
	if err != nil {
		s.t.Fatal(err)
	}
	c := claims{handlers: map[string]bool{}, queues: map[string]bool{}}
	for name, h := range handlers {
		w.Handle(name, h)
		c.handlers[name] = true
	}
	queues := opts.QueueNames
	if len(queues) == 0 {
		queues = []string{cmp.Or(opts.QueueName, "default")}
	}
	for _, q := range queues {
		c.queues[q] = true
	}
	s.mu.Lock()
	s.claims[w] = c
	s.mu.Unlock()
	return w
}

// StartWorker runs w (of Worker) in the background until the test ends or stop is called;
// stop returns once Run has. Run's error fails the test.
func (s *Server) StartWorker(w *orch8.Worker) (stop func()) {
	s.t.Helper()
	s.mu.Lock()
	_, ours := s.claims[w]
	done := make(chan struct{})
	if ours {
		s.running[w] = true
	}
	s.mu.Unlock()
	if !ours {
		s.t.Fatal("orch8test: StartWorker takes a worker made by this server's Worker")
	}
	go func() {
		defer close(done)
		if err := w.Run(context.Background()); err != nil {
			s.t.Errorf("orch8test: worker %s: %v", w.ID(), err)
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			w.Stop()
			<-done
			s.mu.Lock()
			delete(s.running, w)
			s.mu.Unlock()
		})
	}
	s.t.Cleanup(stop)
	return stop
}

// RunUntilFinal runs w (of Worker) until the instance is final, skipping to the next timer
// whenever all is idle, then stops w; it returns the instance, whatever its status.
func (s *Server) RunUntilFinal(w *orch8.Worker, instanceID string) *orch8.Instance {
	s.t.Helper()
	return runUntilFinal(s, w, "instance "+instanceID, func() (*orch8.Instance, bool, error) {
		i, err := s.Client.GetInstance(context.Background(), instanceID, nil)
		return i, err == nil && i.Status != orch8.InstanceRunning, err
	})
}

// RunTaskUntilFinal is RunUntilFinal for a task: completed, failed, cancelled or expired.
func (s *Server) RunTaskUntilFinal(w *orch8.Worker, taskID string) *orch8.TaskRecord {
	s.t.Helper()
	return runUntilFinal(s, w, "task "+taskID, func() (*orch8.TaskRecord, bool, error) {
		t, err := s.Client.GetTask(context.Background(), taskID)
		if err != nil {
			return nil, false, err
		}
		switch t.Status {
		case orch8.StatusCompleted, orch8.StatusFailed, orch8.StatusCancelled, orch8.StatusExpired:
			return t, true, nil
		}
		return t, false, nil
	})
}

func runUntilFinal[T any](s *Server, w *orch8.Worker, what string, get func() (*T, bool, error)) *T {
	s.t.Helper()
	deadline := time.Now().Add(DefaultRunTimeout)
	stop := s.StartWorker(w)
	defer stop()
	for {
		s.waitIdle(deadline)
		state, final, err := get()
		if err != nil {
			s.t.Fatalf("orch8test: reading %s: %v", what, err)
		}
		if final {
			return state
		}
		if s.Clock().NextTimerAt == nil {
			s.t.Fatalf("orch8test: %s is not final, yet nothing runs, nothing is pending for the running workers and no timer is set: "+
				"does it wait for a handler no worker has? Last state: %+v", what, *state)
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("orch8test: %s is not final after %v: %+v", what, DefaultRunTimeout, *state)
		}
		s.advance(api.ClockAdvance{ToNextTimer: ptr(true)})
	}
}

func ptr[T any](v T) *T { return &v }
