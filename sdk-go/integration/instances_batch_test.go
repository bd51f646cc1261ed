package integration_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
)

// TestP_WF_14_StartInstances: StartInstances starts a batch against the real server in one
// transaction (P-WF-14): the instances come back in request order, each with its own id
// and its first step running; items with idempotency keys replay to the same instances;
// an unknown sequence is the SDK's 404 problem and nothing of that batch is stored.
func TestP_WF_14_StartInstances(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := newClient(t, s, nil)
	ctx := context.Background()
	if _, err := c.DefineSequence(ctx, orch8.NewSequence{Name: "invoice", Blocks: []orch8.Step{
		{Type: orch8.Ptr(orch8.BlockStep), ID: "send", Handler: orch8.Ptr("send_invoice")}}}); err != nil {
		t.Fatal(err)
	}

	// Three instances, in request order, each with its first step dispatched.
	var items []orch8.NewInstance
	for n := 1; n <= 3; n++ {
		items = append(items, orch8.NewInstance{Sequence: "invoice", Input: orch8.JSONObject{"n": n}})
	}
	started, err := c.StartInstances(ctx, orch8.NewInstanceBatch{Instances: items})
	if err != nil {
		t.Fatal(err)
	}
	if len(started.Instances) != 3 {
		t.Fatalf("want 3 instances, got %+v", started.Instances)
	}
	ids := map[string]bool{}
	for i, inst := range started.Instances {
		ids[inst.ID] = true
		if inst.Sequence != "invoice" || fmt.Sprint(inst.Input["n"]) != fmt.Sprint(i+1) {
			t.Errorf("instance %d is %s with input %v, want invoice with n=%d (request order)", i, inst.Sequence, inst.Input, i+1)
		}
		if inst.Status != orch8.InstanceRunning || len(inst.Steps) != 1 || inst.Steps[0].Status != orch8.StepRunning ||
			inst.Steps[0].TaskID == nil {
			t.Errorf("instance %d: status %s, steps %+v; want running with its first step running and dispatched", i, inst.Status, inst.Steps)
		}
	}
	if len(ids) != 3 {
		t.Fatalf("ids %v are not distinct", ids)
	}

	// Items with idempotency keys: sent twice, the replay returns the same instances.
	keyed := orch8.NewInstanceBatch{Instances: []orch8.NewInstance{
		{Sequence: "invoice", Input: orch8.JSONObject{"n": 4}, IdempotencyKey: orch8.Ptr("invoice-4")},
		{Sequence: "invoice", Input: orch8.JSONObject{"n": 5}, IdempotencyKey: orch8.Ptr("invoice-5")},
	}}
	first, err := c.StartInstances(ctx, keyed)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.StartInstances(ctx, keyed)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Instances) != 2 || len(again.Instances) != 2 {
		t.Fatalf("keyed batch: %d then %d instances, want 2 each", len(first.Instances), len(again.Instances))
	}
	for i := range first.Instances {
		if ids[first.Instances[i].ID] {
			t.Errorf("keyed item %d got %s, an instance of the first batch", i, first.Instances[i].ID)
		}
		if again.Instances[i].ID != first.Instances[i].ID {
			t.Errorf("replayed item %d is %s, want %s", i, again.Instances[i].ID, first.Instances[i].ID)
		}
	}
	if first.Instances[0].ID == first.Instances[1].ID {
		t.Errorf("two keys, one instance %s", first.Instances[0].ID)
	}

	// An unknown sequence rejects the whole batch: the SDK's problem error, nothing stored.
	count := func() int {
		t.Helper()
		page, err := c.ListInstances(ctx, &orch8.ListInstancesParams{Limit: orch8.Ptr(500)})
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Instances)
	}
	before := count()
	if before != 5 {
		t.Fatalf("%d instances stored before the bad batch, want 5", before)
	}
	_, err = c.StartInstances(ctx, orch8.NewInstanceBatch{Instances: []orch8.NewInstance{
		{Sequence: "invoice", Input: orch8.JSONObject{"n": 6}, IdempotencyKey: orch8.Ptr("invoice-6")},
		{Sequence: "no_such_sequence"},
	}})
	var pe *orch8.ProblemError
	if !errors.Is(err, orch8.ErrNotFound) || !errors.As(err, &pe) || pe.Status != 404 || pe.Code != "not_found" {
		t.Fatalf("unknown sequence in a batch: want a 404 not_found *orch8.ProblemError, got %v", err)
	}
	if pe.Detail != "instances/1: no sequence no_such_sequence" {
		t.Errorf("detail %q does not name the item", pe.Detail)
	}
	if after := count(); after != before {
		t.Fatalf("%d instances after the rejected batch, want %d (none of it stored)", after, before)
	}
}
