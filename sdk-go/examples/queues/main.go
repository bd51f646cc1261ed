// Command queues runs two workers of handler "notify": one claims from "urgent" before
// "default" (strict order), the other from "reports" and "exports" by weight, 3 to 1.
package main

import (
	"context"
	"log"
	"os"
	"os/signal"
	"sync"
	"syscall"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
)

func main() {
	client, err := orch8.NewClient(orch8.Config{})
	if err != nil {
		log.Fatal(err)
	}
	// Strict order: a "default" task is claimed only while "urgent" has none.
	strict, err := orch8.NewWorker(client, orch8.WorkerOptions{
		QueueNames: []string{"urgent", "default"},
	})
	if err != nil {
		log.Fatal(err) // a bad list: errors.Is(err, orch8.ErrInvalidOptions)
	}
	// Weighted: while both have work, about 3 claims in 4 come from "reports".
	weighted, err := orch8.NewWorker(client, orch8.WorkerOptions{
		QueueNames:   []string{"reports", "exports"},
		QueueWeights: map[string]int{"reports": 3, "exports": 1},
	})
	if err != nil {
		log.Fatal(err)
	}
	notify := func(ctx context.Context, t *orch8.Task) (any, error) {
		// t.QueueName is the queue this task was claimed from.
		log.Printf("task %s from queue %s", t.ID, t.QueueName)
		return map[string]any{"queue": t.QueueName}, nil
	}
	strict.Handle("notify", notify)
	weighted.Handle("notify", notify)

	// SIGTERM or SIGINT stops both workers gracefully.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var wg sync.WaitGroup
	for _, w := range []*orch8.Worker{strict, weighted} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(ctx); err != nil {
				log.Print(err)
			}
		}()
	}
	wg.Wait()
}
