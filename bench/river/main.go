// River peer (github.com/riverqueue/river, pgx v5 driver), measured like
// orch8bench/peers.py and node/pgboss.mjs: River's migrations first, then a running client
// with a no-op worker, jobs inserted in batches of 100 meanwhile (one InsertMany call per
// batch), timed until the database shows every job completed. An uncounted warm-up goes
// first, in the same process. Prints one JSON line: tasks, seconds, tasks_per_s, cpu_s
// (this process's CPU over the timed part: client and producer together), settings, and
// completed: the database's count of completed jobs when the clock stopped (warm-up
// included), so a caller can check that the time covers every job.
//
// Usage: river URL TASKS WARMUP
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

const batch = 100

// River's documented best-throughput configuration: riverqueue.com/docs/benchmarks ("with
// 2,000 worker goroutines"), whose `river bench` command (cmd/river/riverbench) runs the
// client with MaxWorkers 2,000 on its queue, FetchCooldown 2 ms and FetchPollInterval
// 20 ms ("much better than the client's default values", 100 ms and 1 s), on a pgxpool
// with pgx's default size, as here. Batches go through InsertMany
// (riverqueue.com/docs/batch-job-insertion: "fewer round trips and optimal performance";
// InsertManyFast's COPY FROM is named there for thousands of jobs at once, not 100).
var (
	fetchCooldown     = 2 * time.Millisecond
	fetchPollInterval = 20 * time.Millisecond
	maxWorkers        = 2000
)

type noopArgs struct{}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

type result struct {
	Tasks      int     `json:"tasks"`
	Seconds    float64 `json:"seconds"`
	TasksPerS  float64 `json:"tasks_per_s"`
	CPUSeconds float64 `json:"cpu_s"`
	Settings   string  `json:"settings"`
	Completed  int     `json:"completed"`
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// riverVersion is the River module this binary was built with (river/go.mod pins it).
func riverVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/riverqueue/river" {
				return dep.Version
			}
		}
	}
	return "(version unknown)"
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: river URL TASKS WARMUP")
		os.Exit(2)
	}
	url := os.Args[1]
	tasks, err1 := strconv.Atoi(os.Args[2])
	warmup, err2 := strconv.Atoi(os.Args[3])
	if err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, "TASKS and WARMUP are job counts")
		os.Exit(2)
	}
	out, err := run(context.Background(), url, tasks, warmup)
	if err != nil {
		fmt.Fprintln(os.Stderr, "river peer:", err)
		os.Exit(1)
	}
	line, _ := json.Marshal(out)
	fmt.Println(string(line))
}

func run(ctx context.Context, url string, tasks, warmup int) (*result, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		return nil, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}

	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{})
	client, err := river.NewClient(driver, &river.Config{
		FetchCooldown:     fetchCooldown,
		FetchPollInterval: fetchPollInterval,
		// River logs each start and stop at Info; only trouble goes to stderr.
		Logger:  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}},
		Workers: workers,
	})
	if err != nil {
		return nil, err
	}
	if err := client.Start(ctx); err != nil {
		return nil, err
	}
	defer func() { _ = client.Stop(ctx) }()

	// The done count reads on a connection of its own, as the other peers' drivers do, so
	// it never waits for one of the client's pool connections.
	counter, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer counter.Close(ctx)
	completed := func() (int, error) {
		var n int
		err := counter.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE state = 'completed'").Scan(&n)
		return n, err
	}

	params := make([]river.InsertManyParams, batch)
	for i := range params {
		params[i].Args = noopArgs{}
	}
	// One run: n jobs inserted while the client works, timed until `already + n` are done.
	one := func(n, already int) (secs, cpu float64, done int, err error) {
		cpu0, start := cpuSeconds(), time.Now()
		for i := 0; i < n; i += batch {
			if _, err := client.InsertMany(ctx, params[:min(batch, n-i)]); err != nil {
				return 0, 0, 0, fmt.Errorf("insert: %w", err)
			}
		}
		for done < already+n {
			time.Sleep(5 * time.Millisecond)
			if done, err = completed(); err != nil {
				return 0, 0, 0, err
			}
		}
		return time.Since(start).Seconds(), cpuSeconds() - cpu0, done, nil
	}

	if warmup > 0 {
		if _, _, _, err := one(warmup, 0); err != nil {
			return nil, err
		}
	}
	secs, cpu, done, err := one(tasks, warmup)
	if err != nil {
		return nil, err
	}
	settings := fmt.Sprintf("River %s (riverpgxv5), queue MaxWorkers %d, FetchCooldown %s, "+
		"FetchPollInterval %s, LISTEN/NOTIFY, InsertMany per 100 (docs: riverqueue.com/docs/benchmarks, "+
		"its `river bench` settings; riverqueue.com/docs/batch-job-insertion)",
		riverVersion(), maxWorkers, fetchCooldown, fetchPollInterval)
	return &result{Tasks: tasks, Seconds: secs, TasksPerS: float64(tasks) / secs, CPUSeconds: cpu,
		Settings: settings, Completed: done}, nil
}
