// Command rates defines a rate limit, enqueues three tasks naming it with no worker running
// (the third waits for a token), lists the limit, and removes it.
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
	// The partner API allows 10 calls a second: at most 2 at once, then one per 100 ms.
	limit, err := client.SetRateLimit(ctx, "partner-api",
		orch8.RateLimitSettings{Limit: 10, PeriodMs: 1000, Burst: orch8.Ptr(2)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(limit.Key, limit.Limit, limit.PeriodMs, limit.Burst) // partner-api 10 1000 2
	var third *orch8.TaskRecord
	for n := range 3 {
		third, err = client.Enqueue(ctx, orch8.NewTask{HandlerName: "call_partner",
			Params: orch8.JSONObject{"n": n}, RateLimitKey: orch8.Ptr("partner-api")})
		if err != nil {
			log.Fatal(err)
		}
	}
	// No worker yet: the first 2 are claimable, the third waits for them to be claimed.
	held, err := client.GetTask(ctx, third.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(held.Waiting.Reason) // rate_limited
	limits, err := client.ListRateLimits(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range limits.RateLimits {
		fmt.Println(l.Key, l.Held) // partner-api 1
	}
	// No pace: its held tasks are claimable at once.
	if _, err := client.DeleteRateLimit(ctx, "partner-api"); err != nil {
		log.Fatal(err)
	}
	freed, err := client.GetTask(ctx, third.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(freed.Waiting.Reason) // no_poller
}
