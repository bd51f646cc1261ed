// Command workflow defines a two-step sequence ("resize", then "publish" with the URL
// resize returned), starts an instance of it, runs a worker with both handlers and waits
// for the instance's final output.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
)

func main() {
	ctx := context.Background()
	client, err := orch8.NewClient(orch8.Config{})
	if err != nil {
		log.Fatal(err)
	}
	// Version 1 of "thumbnail"; defining the same steps again stores nothing (P-WF-1).
	// A {"$from": ...} params value is replaced when its step starts (P-WF-2).
	_, err = client.DefineSequence(ctx, orch8.NewSequence{
		Name: "thumbnail",
		Steps: []orch8.Step{
			{ID: "resize", Handler: orch8.Ptr("resize"), Params: &orch8.StepParams{
				"image": map[string]any{"$from": "input.image"}, "width": 200}},
			{ID: "publish", Handler: orch8.Ptr("publish"), Params: &orch8.StepParams{
				"url": map[string]any{"$from": "steps.resize.output.url"}}},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	inst, err := client.StartInstance(ctx, orch8.NewInstance{
		Sequence: "thumbnail", Input: orch8.JSONObject{"image": "cat.png"}})
	if err != nil {
		log.Fatal(err)
	}

	// Steps are ordinary tasks: any worker with the handlers runs them (P-WF-4).
	w, err := orch8.NewWorker(client, orch8.WorkerOptions{})
	if err != nil {
		log.Fatal(err)
	}
	w.Handle("resize", func(ctx context.Context, t *orch8.Task) (any, error) {
		image, _ := t.Params["image"].(string)
		return map[string]any{"url": fmt.Sprintf("https://cdn.example/%v/%s", t.Params["width"], image)}, nil
	})
	w.Handle("publish", func(ctx context.Context, t *orch8.Task) (any, error) {
		return map[string]any{"published": t.Params["url"]}, nil
	})
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(ctx) }()

	// Long-polls in rounds of at most 30 s until the instance is completed, failed or
	// cancelled; after a minute: errors.Is(err, orch8.ErrWaitTimeout), with the last state.
	final, err := client.WaitInstance(ctx, inst.ID, time.Minute)
	w.Stop()
	if runErr := <-stopped; runErr != nil {
		log.Fatal(runErr)
	}
	if err != nil {
		log.Fatal(err)
	}
	out, _ := json.Marshal(final.Output) // the last step's output (P-WF-10)
	fmt.Println(final.Status, string(out))
}
