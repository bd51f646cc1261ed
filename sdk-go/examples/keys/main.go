// Command keys enqueues two invoice syncs of one customer under a concurrency key (the
// second is held behind the first) and starts a workflow whose step names its key with a
// template of the instance.
package main

import (
	"context"
	"fmt"
	"log"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
)

func main() {
	ctx := context.Background()
	client, err := orch8.NewClient(orch8.Config{})
	if err != nil {
		log.Fatal(err)
	}
	// At most one invoice sync per customer at a time, on every worker and replica
	// (MaxConcurrency nil: the limit is 1).
	sync := orch8.NewTask{HandlerName: "sync_invoices", Params: orch8.JSONObject{"customer_id": "c-42"},
		ConcurrencyKey: orch8.Ptr("c-42")}
	if _, err := client.Enqueue(ctx, sync); err != nil {
		log.Fatal(err)
	}
	second, err := client.Enqueue(ctx, sync)
	if err != nil {
		log.Fatal(err)
	}
	held, err := client.GetTask(ctx, second.ID) // held: pending, not claimable yet
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(held.Waiting.Reason, *held.Waiting.Running, *held.Waiting.Cap) // concurrency_key 1 1

	// A step's key may be a template of the instance (P-WF-12); its task carries the result.
	_, err = client.DefineSequence(ctx, orch8.NewSequence{
		Name: "monthly_close",
		Blocks: []orch8.Step{
			{Type: orch8.Ptr(orch8.BlockStep), ID: "sync", Handler: orch8.Ptr("sync_invoices"),
				ConcurrencyKey: orch8.Ptr("{{context.data.customer_id}}"), MaxConcurrency: orch8.Ptr(2)},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	inst, err := client.StartInstance(ctx, orch8.NewInstance{
		Sequence: "monthly_close", Input: orch8.JSONObject{"customer_id": "c-7"}})
	if err != nil {
		log.Fatal(err)
	}
	page, err := client.ListTasks(ctx, &orch8.ListTasksParams{InstanceID: &inst.ID})
	if err != nil || len(page.Tasks) != 1 {
		log.Fatalf("the step's task: %v, %v", page, err)
	}
	step := page.Tasks[0]
	fmt.Println(*step.ConcurrencyKey, *step.MaxConcurrency) // c-7 2
}
