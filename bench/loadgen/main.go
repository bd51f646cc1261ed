// Command loadgen is the raw HTTP load client of `make bench`: net/http with keep-alive,
// no SDK, so that what it measures is the server. Modes:
//
//	run      enqueue -> claim -> complete of -n tasks (after an uncounted warm-up);
//	         -keys N gives task i the concurrency key k<i % N> with -key-limit (P-KEY-1)
//	fill     enqueue -n tasks in batches of 100 (prefill for drain runs)
//	drain    claim + complete until -n tasks are done (tasks already enqueued)
//	latency  one worker waits in a long-poll; enqueue one task at a time, time to pickup
//	stub     a canned-answer server: `run` against it measures the client's own ceiling
//
// Every mode but stub prints one JSON object on stdout; stub prints one line,
// `loadgen stub listening on http://HOST:PORT` (-listen defaults to port 0). Progress
// goes to stderr.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type opts struct {
	url, pollURL     string
	n, warmup, batch int
	producers        int
	consumers        int
	handler          string
	waitMs           int
	completeEach     bool // batch claims, one complete call per task (what the SDK workers do)
	keys, keyLimit   int  // concurrency keys (P-KEY-1): task i gets key k<i % keys>; 0 = none
}

var client = &http.Client{Transport: &http.Transport{
	MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second,
}}

func post(ctx context.Context, url string, body any, out any) (int, error) {
	var buf []byte
	if body != nil {
		buf, _ = json.Marshal(body)
	}
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(buf))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body) // read to the end: the connection is reused
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, data)
	}
	if out != nil && len(data) > 0 {
		return resp.StatusCode, json.Unmarshal(data, out)
	}
	return resp.StatusCode, nil
}

type task struct {
	ID     string         `json:"id"`
	Params map[string]any `json:"params"`
	Lease  struct {
		ID string `json:"id"`
	} `json:"lease"`
}

// The key fields are omitted when empty: without -keys a body is byte for byte what it
// was before keys existed, so the keys-off rows measure the same requests as ever.
type newTask struct {
	HandlerName    string         `json:"handler_name"`
	Params         map[string]any `json:"params"`
	ConcurrencyKey string         `json:"concurrency_key,omitempty"`
	MaxConcurrency int            `json:"max_concurrency,omitempty"`
}

// newTaskAt is the run's task number `i` (0-based, in enqueue order).
func newTaskAt(o opts, i int, params map[string]any) newTask {
	t := newTask{HandlerName: o.handler, Params: params}
	if o.keys > 0 {
		t.ConcurrencyKey, t.MaxConcurrency = fmt.Sprintf("k%d", i%o.keys), o.keyLimit
	}
	return t
}

// enqueue sends tasks first..first+count-1, in one request (batch endpoint, or POST /tasks
// for 1).
func enqueue(ctx context.Context, o opts, first, count int, params map[string]any) error {
	if o.batch == 1 && count == 1 {
		_, err := post(ctx, o.url+"/tasks", newTaskAt(o, first, params), nil)
		return err
	}
	tasks := make([]newTask, count)
	for i := range tasks {
		tasks[i] = newTaskAt(o, first+i, params)
	}
	_, err := post(ctx, o.url+"/tasks/batch", map[string]any{"tasks": tasks}, nil)
	return err
}

// claim polls for up to o.batch tasks (single poll endpoint for batch 1).
func claim(ctx context.Context, o opts, url string) ([]task, error) {
	body := map[string]any{"handler_names": []string{o.handler}, "worker_id": "loadgen", "wait_ms": o.waitMs}
	if o.batch == 1 {
		var t task
		code, err := post(ctx, url+"/workers/tasks/poll", body, &t)
		if err != nil || code == 204 {
			return nil, err
		}
		return []task{t}, nil
	}
	body["batch_size"] = o.batch
	var res struct {
		Tasks []task `json:"tasks"`
	}
	_, err := post(ctx, url+"/workers/tasks/poll/batch", body, &res)
	return res.Tasks, err
}

func complete(ctx context.Context, url string, tasks []task, single bool) error {
	if single && len(tasks) == 1 {
		t := tasks[0]
		_, err := post(ctx, url+"/workers/tasks/"+t.ID+"/complete", map[string]any{"lease_id": t.Lease.ID}, nil)
		return err
	}
	items := make([]map[string]any, len(tasks))
	for i, t := range tasks {
		items[i] = map[string]any{"task_id": t.ID, "lease_id": t.Lease.ID}
	}
	_, err := post(ctx, url+"/workers/tasks/complete/batch", map[string]any{"items": items}, nil)
	return err
}

// completeEach completes every task with its own concurrent call, as a worker running
// the handlers of one claimed batch concurrently does.
func completeEach(ctx context.Context, url string, tasks []task) error {
	errs := make(chan error, len(tasks))
	for _, t := range tasks {
		go func() { errs <- complete(ctx, url, []task{t}, true) }()
	}
	var first error
	for range tasks {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

type counters struct{ done, errors, polls atomic.Int64 }

// produce enqueues n tasks from o.producers goroutines, batch-sized requests.
func produce(ctx context.Context, o opts, n int, c *counters) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for p := 0; p < o.producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				start := next.Add(int64(o.batch)) - int64(o.batch)
				if start >= int64(n) {
					return
				}
				count := min(o.batch, n-int(start))
				if err := enqueue(ctx, o, int(start), count, map[string]any{}); err != nil && ctx.Err() == nil {
					c.errors.Add(1)
					next.Add(-int64(count)) // retry these
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
}

// consume claims and completes until n completions are counted, then cancels the rest.
func consume(ctx context.Context, o opts, n int, c *counters, progress string) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for w := 0; w < o.consumers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				tasks, err := claim(ctx, o, o.pollURL)
				if err == nil {
					c.polls.Add(1)
				}
				if err == nil && len(tasks) > 0 {
					if o.completeEach {
						err = completeEach(ctx, o.pollURL, tasks)
					} else {
						err = complete(ctx, o.pollURL, tasks, o.batch == 1)
					}
				}
				if err != nil {
					if ctx.Err() == nil {
						c.errors.Add(1)
						time.Sleep(10 * time.Millisecond)
					}
					continue
				}
				if c.done.Add(int64(len(tasks))) >= int64(n) {
					cancel()
				}
			}
		}()
	}
	if progress != "" {
		go report(ctx, progress, n, c)
	}
	wg.Wait()
}

func report(ctx context.Context, label string, n int, c *counters) {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			d := c.done.Load()
			fmt.Fprintf(os.Stderr, "    %s: %d/%d done, %.0f tasks/s\n", label, d, n,
				float64(d)/time.Since(start).Seconds())
		}
	}
}

// pipeline runs producers and consumers together; returns seconds to the last completion.
func pipeline(o opts, n int, label string) (float64, *counters) {
	c := &counters{}
	ctx := context.Background()
	start := time.Now()
	done := make(chan struct{})
	go func() { produce(ctx, o, n, c); close(done) }()
	consume(ctx, o, n, c, label)
	<-done
	return time.Since(start).Seconds(), c
}

func emit(v map[string]any) {
	out, _ := json.Marshal(v)
	fmt.Println(string(out))
}

// Marker lines on stderr around the measured part of `run`: the harness samples the
// server's CPU time when it reads them, so warm-up work is not charged to the figure.
const (
	windowStart = "loadgen: measured window start"
	windowEnd   = "loadgen: measured window end"
)

func modeRun(o opts) {
	if o.warmup > 0 {
		pipeline(o, o.warmup, "")
		// Requests the warm-up cancelled may still be in the server's hands; let them end
		// before the measured tasks exist, so none of those claims a measured task.
		time.Sleep(200 * time.Millisecond)
	}
	fmt.Fprintln(os.Stderr, windowStart)
	cpu0 := cpuSeconds()
	secs, c := pipeline(o, o.n, fmt.Sprintf("batch %d", o.batch))
	cpu := cpuSeconds() - cpu0
	fmt.Fprintln(os.Stderr, windowEnd)
	// polls: the claims answered (empty ones included); tasks / polls is the claimed batch
	emit(map[string]any{"tasks": o.n, "seconds": secs, "tasks_per_s": float64(o.n) / secs,
		"client_cpu_s": cpu, "errors": c.errors.Load(), "polls": c.polls.Load()})
}

func modeFill(o opts) {
	o.batch = 100
	c := &counters{}
	start := time.Now()
	produce(context.Background(), o, o.n, c)
	secs := time.Since(start).Seconds()
	emit(map[string]any{"tasks": o.n, "seconds": secs, "tasks_per_s": float64(o.n) / secs,
		"errors": c.errors.Load()})
}

func modeDrain(o opts) {
	c := &counters{}
	cpu0 := cpuSeconds()
	start := time.Now()
	consume(context.Background(), o, o.n, c, fmt.Sprintf("drain batch %d", o.batch))
	secs := time.Since(start).Seconds()
	emit(map[string]any{"tasks": o.n, "seconds": secs, "tasks_per_s": float64(o.n) / secs,
		"client_cpu_s": cpuSeconds() - cpu0, "errors": c.errors.Load()})
}

// modeLatency: the worker is parked in a long-poll (on pollURL) before each enqueue (on url).
func modeLatency(o opts) {
	o.batch = 1
	o.waitMs = 30000
	ready := make(chan struct{})
	got := make(chan time.Time)
	ctx := context.Background()
	go func() {
		for {
			ready <- struct{}{}
			tasks, err := claim(ctx, o, o.pollURL)
			if err != nil || len(tasks) == 0 {
				if err != nil {
					fmt.Fprintln(os.Stderr, "poll:", err)
					time.Sleep(50 * time.Millisecond)
				}
				<-ready // re-arm without a sample
				continue
			}
			at := time.Now()
			// Completed before the sample is handed over: the last task never stays running.
			if err := complete(ctx, o.pollURL, tasks, true); err != nil {
				fmt.Fprintln(os.Stderr, "complete:", err)
			}
			got <- at
		}
	}()
	total := o.warmup + o.n
	samples := make([]float64, 0, o.n)
	enqueues := make([]float64, 0, o.n) // the enqueue call's own round trip (its commit)
	for i := 0; i < total; i++ {
		<-ready
		time.Sleep(20 * time.Millisecond) // let the poll reach the server and park
		sent := time.Now()
		if err := enqueue(ctx, o, i, 1, map[string]any{"i": i}); err != nil {
			fmt.Fprintln(os.Stderr, "enqueue:", err)
			os.Exit(1)
		}
		acked := time.Since(sent)
		at := <-got
		if i >= o.warmup {
			samples = append(samples, float64(at.Sub(sent).Microseconds())/1000)
			enqueues = append(enqueues, float64(acked.Microseconds())/1000)
		}
		if (i+1)%50 == 0 {
			fmt.Fprintf(os.Stderr, "    latency: %d/%d samples\n", i+1, total)
		}
	}
	sort.Float64s(samples)
	sort.Float64s(enqueues)
	q := func(xs []float64, p float64) float64 { return xs[min(len(xs)-1, int(p*float64(len(xs))))] }
	emit(map[string]any{"samples": len(samples), "p50_ms": q(samples, 0.50), "p99_ms": q(samples, 0.99),
		"max_ms": samples[len(samples)-1], "min_ms": samples[0],
		"enqueue_p50_ms": q(enqueues, 0.50), "enqueue_p99_ms": q(enqueues, 0.99)})
}

// modeStub answers like the server with canned bodies, doing no work: the ceiling of
// `run` against it is the most this client can drive on this machine.
func modeStub(addr string, batch int) {
	one := `{"id":"task_x","handler_name":"noop","queue_name":"default","params":{},"context":{},"headers":{},"priority":0,"attempt":1,"max_attempts":3,"lease":{"id":"lease_x","worker_id":"w","attempt":1,"expires_at":"2026-01-01T00:00:00Z"},"checkpoint":null,"good_until":null,"created_at":"2026-01-01T00:00:00Z","metadata":{"attempt":1,"max_attempts":3,"created_at":"2026-01-01T00:00:00Z"}}`
	tasks := strings.TrimSuffix(strings.Repeat(one+",", batch), ",")
	batchBody := []byte(`{"tasks":[` + tasks + `],"next_poll_after_ms":0}`)
	mux := http.NewServeMux()
	reply := func(body []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		}
	}
	mux.HandleFunc("/workers/tasks/poll/batch", reply(batchBody))
	mux.HandleFunc("/workers/tasks/poll", reply([]byte(one)))
	mux.HandleFunc("/", reply([]byte(`{"tasks":[]}`)))
	// Bound before it is announced, so a caller reading the line (port 0 included) never
	// races the bind; the line is the only thing the stub writes to stdout.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("loadgen stub listening on http://" + ln.Addr().String())
	if err := http.Serve(ln, mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func main() {
	var o opts
	mode := flag.String("mode", "run", "run | fill | drain | latency | stub")
	flag.StringVar(&o.url, "url", "http://127.0.0.1:3001", "server (enqueue side)")
	flag.StringVar(&o.pollURL, "poll-url", "", "server the workers poll (default: -url)")
	flag.IntVar(&o.n, "n", 10000, "tasks (or latency samples)")
	flag.IntVar(&o.warmup, "warmup", 0, "uncounted warm-up tasks before the measurement")
	flag.IntVar(&o.batch, "batch", 100, "enqueue/claim/complete batch size (1 = single endpoints)")
	flag.IntVar(&o.producers, "producers", 2, "enqueueing goroutines")
	flag.IntVar(&o.consumers, "consumers", 4, "claiming goroutines")
	flag.StringVar(&o.handler, "handler", "noop", "handler name")
	flag.IntVar(&o.waitMs, "wait-ms", 1000, "long-poll wait of the consumers")
	flag.BoolVar(&o.completeEach, "complete-each", false, "one complete call per task")
	flag.IntVar(&o.keys, "keys", 0, "distinct concurrency keys, task i gets k<i % keys> (0: no key)")
	flag.IntVar(&o.keyLimit, "key-limit", 1, "max_concurrency of each keyed task")
	addr := flag.String("listen", "127.0.0.1:0", "stub: listen address")
	flag.Parse()
	if o.pollURL == "" {
		o.pollURL = o.url
	}
	switch *mode {
	case "run":
		modeRun(o)
	case "fill":
		modeFill(o)
	case "drain":
		modeDrain(o)
	case "latency":
		modeLatency(o)
	case "stub":
		modeStub(*addr, o.batch)
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", *mode)
		os.Exit(2)
	}
}
