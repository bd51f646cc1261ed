// Command instance-keys starts three monthly reports of one account under an instance
// concurrency key of limit 2: the third is running but waits, with no step started, until
// an instance of the key ends.
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
	_, err = client.DefineSequence(ctx, orch8.NewSequence{
		Name: "monthly_report",
		Blocks: []orch8.Step{
			{Type: orch8.Ptr(orch8.BlockStep), ID: "build", Handler: orch8.Ptr("build_report")},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	// At most 2 reports of one account at once, from start to end, whatever their steps do.
	var reports []string
	for _, month := range []string{"2026-09", "2026-10", "2026-11"} {
		inst, err := client.StartInstance(ctx, orch8.NewInstance{
			Sequence: "monthly_report", Input: orch8.JSONObject{"account": "acme", "month": month},
			ConcurrencyKey: orch8.Ptr("acme"), MaxConcurrency: orch8.Ptr(2)})
		if err != nil {
			log.Fatal(err)
		}
		reports = append(reports, inst.ID)
	}
	third, err := client.GetInstance(ctx, reports[2], nil) // running, but no step started
	if err != nil || third.Waiting == nil {
		log.Fatalf("the third report should wait: %+v, %v", third, err)
	}
	fmt.Println(third.Status, stepStatuses(third))                                // running [pending]
	fmt.Println(third.Waiting.Reason, *third.Waiting.Running, *third.Waiting.Cap) // concurrency_key 2 2

	// An instance of the key ends: the third starts.
	if _, err := client.CancelInstance(ctx, reports[0], orch8.TaskCancellation{}); err != nil {
		log.Fatal(err)
	}
	third, err = client.GetInstance(ctx, reports[2], nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(*third.ConcurrencyKey, *third.MaxConcurrency, stepStatuses(third)) // acme 2 [running]
}

// stepStatuses lists the status of each step of inst, in order.
func stepStatuses(inst *orch8.Instance) []orch8.StepStatus {
	var statuses []orch8.StepStatus
	for _, step := range inst.Steps {
		statuses = append(statuses, step.Status)
	}
	return statuses
}
