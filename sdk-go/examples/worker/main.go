// Command worker runs Orch8 tasks of handler "sha256": each task's params carry
// {"text": "..."} and the task completes with {"sha256": "<hex digest>"}.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
)

func main() {
	// The server address comes from ORCH8_URL (default http://localhost:3001), the
	// optional API key from ORCH8_API_KEY.
	client, err := orch8.NewClient(orch8.Config{})
	if err != nil {
		log.Fatal(err)
	}
	w, err := orch8.NewWorker(client, orch8.WorkerOptions{Concurrency: 4})
	if err != nil {
		log.Fatal(err)
	}
	w.Handle("sha256", func(ctx context.Context, t *orch8.Task) (any, error) {
		text, ok := t.Params["text"].(string)
		if !ok {
			// A bad input never gets better: fail without retrying.
			return nil, orch8.Permanent(errors.New("params.text must be a string"))
		}
		sum := sha256.Sum256([]byte(text))
		return map[string]any{"sha256": hex.EncodeToString(sum[:])}, nil
	})
	// Runs until SIGTERM or SIGINT, then lets running tasks finish (25 s at most),
	// deregisters and returns. A second signal stops at once.
	if err := w.RunWithSignals(context.Background()); err != nil {
		log.Fatal(err)
	}
}
