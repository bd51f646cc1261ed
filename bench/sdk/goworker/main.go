// The Go SDK's Worker with a no-op handler, as a user would run it.
// Usage: goworker URL CONCURRENCY  (stops on SIGTERM)
package main

import (
	"context"
	"log"
	"os"
	"strconv"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
)

func main() {
	concurrency, _ := strconv.Atoi(os.Args[2])
	client, err := orch8.NewClient(orch8.Config{BaseURL: os.Args[1]})
	if err != nil {
		log.Fatal(err)
	}
	w, err := orch8.NewWorker(client, orch8.WorkerOptions{WorkerID: "bench-go", Concurrency: concurrency})
	if err != nil {
		log.Fatal(err)
	}
	w.Handle("noop", func(ctx context.Context, t *orch8.Task) (any, error) { return nil, nil })
	if err := w.RunWithSignals(context.Background()); err != nil {
		log.Fatal(err)
	}
}
