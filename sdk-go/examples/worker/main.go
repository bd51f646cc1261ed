// Command worker is the minimal Orch8 worker of the README: it runs process_image tasks
// until SIGTERM or SIGINT, then shuts down gracefully.
package main

import (
	"context"
	"errors"
	"log"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
)

func main() {
	client, err := orch8.NewClient(orch8.Config{}) // ORCH8_URL, ORCH8_API_KEY
	if err != nil {
		log.Fatal(err)
	}
	w := orch8.NewWorker(client, orch8.WorkerOptions{WorkerID: "img-worker-1", Concurrency: 4})
	w.Handle("process_image", func(ctx context.Context, t *orch8.Task) (any, error) {
		url, _ := t.Params["image_url"].(string)
		if url == "" {
			return nil, orch8.Permanent(errors.New("params.image_url is required"))
		}
		// ... do the work, watching ctx.Done() ...
		return map[string]any{"url": "https://cdn.example.com/processed.png"}, nil
	})
	if err := w.RunWithSignals(context.Background()); err != nil {
		log.Fatal(err)
	}
}
