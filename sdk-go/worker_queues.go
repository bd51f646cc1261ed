package orch8

import (
	"fmt"
	"maps"
	"slices"
	"sort"
)

// Bounds of a worker's queue list (P-QUEUE-2, P-QUEUE-3).
const (
	MaxQueueNames  = 10
	MinQueueWeight = 1
	MaxQueueWeight = 1000
)

// checkQueues refuses a queue configuration the server would refuse on every poll
// (P-QUEUE-4), so NewWorker fails before any request instead (P-SDK-23).
func (o WorkerOptions) checkQueues() error {
	if o.QueueNames == nil {
		if o.QueueWeights != nil {
			return invalidOption("QueueWeights needs QueueNames")
		}
		return nil
	}
	if o.QueueName != "" {
		return invalidOption("QueueName and QueueNames are exclusive: give one queue or a list")
	}
	if len(o.QueueNames) == 0 {
		return invalidOption("QueueNames is empty: give 1 to %d queue names, or leave it nil", MaxQueueNames)
	}
	if len(o.QueueNames) > MaxQueueNames {
		return invalidOption("QueueNames has %d names, at most %d", len(o.QueueNames), MaxQueueNames)
	}
	seen := make(map[string]bool, len(o.QueueNames))
	for i, name := range o.QueueNames {
		if name == "" {
			return invalidOption("QueueNames[%d] is empty", i)
		}
		if seen[name] {
			return invalidOption("QueueNames has %q twice", name)
		}
		seen[name] = true
	}
	if o.QueueWeights == nil {
		return nil
	}
	for _, name := range o.QueueNames {
		if _, ok := o.QueueWeights[name]; !ok {
			return invalidOption("QueueWeights has no weight for %q: give one for every name of QueueNames", name)
		}
	}
	named := make([]string, 0, len(o.QueueWeights))
	for name := range o.QueueWeights {
		named = append(named, name)
	}
	sort.Strings(named) // the same error for the same options
	for _, name := range named {
		if !seen[name] {
			return invalidOption("QueueWeights names %q, which is not in QueueNames", name)
		}
		if w := o.QueueWeights[name]; w < MinQueueWeight || w > MaxQueueWeight {
			return invalidOption("QueueWeights[%q] is %d, not in %d..%d", name, w, MinQueueWeight, MaxQueueWeight)
		}
	}
	return nil
}

func invalidOption(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...)
}

// ownQueues copies the list and weights, so a caller changing them after NewWorker does
// not change what the worker sends.
func (o WorkerOptions) ownQueues() WorkerOptions {
	o.QueueNames = slices.Clone(o.QueueNames)
	o.QueueWeights = maps.Clone(o.QueueWeights)
	return o
}

// registeredQueues is the registration's `queues`: the list, else the one queue, else
// "default" (P-SDK-21, P-SDK-23).
func (o WorkerOptions) registeredQueues() []string {
	switch {
	case len(o.QueueNames) > 0:
		return o.QueueNames
	case o.QueueName != "":
		return []string{o.QueueName}
	}
	return []string{"default"}
}
