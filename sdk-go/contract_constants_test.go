package orch8

import (
	"testing"
	"time"

	"github.com/orch8/orch8-workers/sdk-go/api"
)

// TestWorkerConstantsAreTheContracts pins the worker's own copies of the contract's defaults
// and limits (x-orch8-constants, generated into api/constants.gen.go) to the generated
// values until those files import them; config.go and the client already do.
func TestWorkerConstantsAreTheContracts(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for name, pair := range map[string][2]any{
		"maxCompleteBatch":        {maxCompleteBatch, api.MaxCompletionBatchItems},
		"maxFailMessageBytes":     {maxFailMessageBytes, api.MaxFailureMessageBytes},
		"maxFailDetailsBytes":     {maxFailDetailsBytes, api.MaxFailureDetailsBytes},
		"failDetailsPreviewBytes": {failDetailsPreviewBytes, api.FailureDetailsPreviewBytes},
		"minLeaseHeartbeat":       {minLeaseHeartbeat, ms(api.MinHeartbeatIntervalMs)},
		"MaxQueueNames":           {MaxQueueNames, api.MaxQueueNames},
		"MinQueueWeight":          {MinQueueWeight, api.MinQueueWeight},
		"MaxQueueWeight":          {MaxQueueWeight, api.MaxQueueWeight},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s = %v, the contract says %v", name, pair[0], pair[1])
		}
	}
}
