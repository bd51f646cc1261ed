// Command workflow defines a sequence in Orch8's block format ("resize", then a try_catch
// whose catch archives the image when "publish" fails for good), starts an instance of it,
// runs a worker with the three handlers and waits for the instance's final output.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
)

func main() {
	ctx := context.Background()
	client, err := orch8.NewClient(orch8.Config{})
	if err != nil {
		log.Fatal(err)
	}
	// Version 1 of "thumbnail"; defining the same blocks again stores nothing (P-WF-1).
	// A "{{ ... }}" params string is filled in when its step starts (P-WF-12); one that is
	// the whole string keeps the value's JSON type (private stays a bool).
	_, err = client.DefineSequence(ctx, orch8.NewSequence{
		Name: "thumbnail",
		Blocks: []orch8.Step{
			{Type: orch8.Ptr(orch8.BlockStep), ID: "resize", Handler: orch8.Ptr("resize"), Params: &orch8.StepParams{
				"image": "{{context.data.image}}", "width": 200}},
			{Type: orch8.Ptr(orch8.BlockTryCatch), ID: "delivery",
				TryBlock: &orch8.BlockList{
					{Type: orch8.Ptr(orch8.BlockStep), ID: "publish", Handler: orch8.Ptr("publish"), Params: &orch8.StepParams{
						"url": "{{steps.resize.output.url}}", "private": "{{context.data.private}}"}},
				},
				CatchBlock: &orch8.BlockList{
					{Type: orch8.Ptr(orch8.BlockStep), ID: "archive", Handler: orch8.Ptr("archive"), Params: &orch8.StepParams{
						"url": "{{steps.resize.output.url}}", "why": "{{steps.publish.error.message}}"}},
				}},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	// Input is the instance's context.data.
	inst, err := client.StartInstance(ctx, orch8.NewInstance{
		Sequence: "thumbnail", Input: orch8.JSONObject{"image": "cat.png", "private": true}})
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
		if private, _ := t.Params["private"].(bool); private {
			return nil, &orch8.PermanentError{Err: errors.New("private images are not published"), Code: "private"}
		}
		return map[string]any{"published": t.Params["url"]}, nil
	})
	w.Handle("archive", func(ctx context.Context, t *orch8.Task) (any, error) {
		return map[string]any{"archived": t.Params["url"], "why": t.Params["why"]}, nil
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
	out, _ := json.Marshal(final.Output) // the last block's output: the catch's (P-WF-10)
	fmt.Println(final.Status, string(out))
	runs := []string{}
	for _, s := range final.Steps { // one run per block, in start order: key, lane, status
		lane := "-"
		if s.Lane != nil {
			lane = *s.Lane
		}
		runs = append(runs, fmt.Sprintf("%s:%s:%s", s.Key, lane, s.Status))
	}
	fmt.Println(strings.Join(runs, " "))
}
