// The Go SDK's Worker with a no-op handler, as a user would run it.
// Usage: goworker URL CONCURRENCY [HANDLER]  (stops on SIGTERM)
// Every 100th handler call prints the count so far on stdout: the bench follows a drain
// by it, instead of asking the server (orch8bench/sdks.py).
// ORCH8_BENCH_SLEEP_MS=M: each call first sleeps a uniform random 0..M ms, the handler
// shape under which orch8bench/requests.py counts each SDK's requests (issue 32).
// ORCH8_TELEMETRY=1: with orch8otel (telemetry.go); built with -tags orch8before against
// the SDK before issue 18 (before.go, orch8bench/before.py).
package main

import (
	"context"
	"fmt"
	"log"
	"math/rand"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
)

func main() {
	concurrency, _ := strconv.Atoi(os.Args[2])
	handler := "noop"
	if len(os.Args) > 3 {
		handler = os.Args[3]
	}
	client, err := orch8.NewClient(config(os.Args[1]))
	if err != nil {
		log.Fatal(err)
	}
	w, err := orch8.NewWorker(client, orch8.WorkerOptions{WorkerID: "bench-go-" + handler, Concurrency: concurrency})
	if err != nil {
		log.Fatal(err)
	}
	sleepMs, _ := strconv.ParseFloat(os.Getenv("ORCH8_BENCH_SLEEP_MS"), 64)
	var handled atomic.Int64
	w.Handle(handler, func(ctx context.Context, t *orch8.Task) (any, error) {
		if sleepMs > 0 {
			time.Sleep(time.Duration(rand.Float64() * sleepMs * float64(time.Millisecond)))
		}
		if n := handled.Add(1); n%100 == 0 {
			fmt.Println(n)
		}
		return nil, nil
	})
	if err := w.RunWithSignals(context.Background()); err != nil {
		log.Fatal(err)
	}
}
