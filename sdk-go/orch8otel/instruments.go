package orch8otel

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
)

// Instrument names of P-TEL-4; the same in every SDK.
const (
	MetricTaskDuration    = "orch8.worker.task.duration"
	MetricScheduleToStart = "orch8.worker.task.schedule_to_start"
	MetricTasksCompleted  = "orch8.worker.tasks.completed"
	MetricTasksFailed     = "orch8.worker.tasks.failed"
	MetricPolls           = "orch8.worker.polls"
	MetricHeartbeats      = "orch8.worker.heartbeats"
	MetricLeaseLosses     = "orch8.worker.lease_losses"
	MetricTasksInFlight   = "orch8.worker.tasks.in_flight"
	MetricSlotsFree       = "orch8.worker.slots.free"
)

// secondsBuckets suit task run times and queue waits, from 5 ms to 10 minutes (the
// SDK's default boundaries are meant for milliseconds).
var secondsBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// instruments are the worker metrics of P-TEL-4 on the meter "orch8".
type instruments struct {
	duration        metric.Float64Histogram
	scheduleToStart metric.Float64Histogram
	completed       metric.Int64Counter
	failed          metric.Int64Counter
	polls           metric.Int64Counter
	heartbeats      metric.Int64Counter
	leaseLosses     metric.Int64Counter
	inFlight        metric.Int64UpDownCounter
	slotsFree       metric.Int64Gauge
}

func newInstruments(m metric.Meter) instruments {
	var i instruments
	var err error
	// A failed registration leaves a no-op instrument in place (the API guarantees one);
	// it is reported through OpenTelemetry's error handler, never to the worker.
	report := func(e error) {
		if e != nil {
			otel.Handle(e)
		}
	}
	i.duration, err = m.Float64Histogram(MetricTaskDuration, metric.WithUnit("s"),
		metric.WithDescription("Handler run time."), metric.WithExplicitBucketBoundaries(secondsBuckets...))
	report(err)
	i.scheduleToStart, err = m.Float64Histogram(MetricScheduleToStart, metric.WithUnit("s"),
		metric.WithDescription("Claim time minus the time the attempt became claimable (ready_at)."),
		metric.WithExplicitBucketBoundaries(secondsBuckets...))
	report(err)
	i.completed, err = m.Int64Counter(MetricTasksCompleted, metric.WithUnit("{task}"),
		metric.WithDescription("Completions the server acknowledged."))
	report(err)
	i.failed, err = m.Int64Counter(MetricTasksFailed, metric.WithUnit("{task}"),
		metric.WithDescription("Failures the server acknowledged, by code."))
	report(err)
	i.polls, err = m.Int64Counter(MetricPolls, metric.WithUnit("{poll}"),
		metric.WithDescription("Polls answered or failed."))
	report(err)
	i.heartbeats, err = m.Int64Counter(MetricHeartbeats, metric.WithUnit("{heartbeat}"),
		metric.WithDescription("Worker heartbeats."))
	report(err)
	i.leaseLosses, err = m.Int64Counter(MetricLeaseLosses, metric.WithUnit("{task}"),
		metric.WithDescription("Tasks given up as lease lost."))
	report(err)
	i.inFlight, err = m.Int64UpDownCounter(MetricTasksInFlight, metric.WithUnit("{task}"),
		metric.WithDescription("Tasks held now."))
	report(err)
	i.slotsFree, err = m.Int64Gauge(MetricSlotsFree, metric.WithUnit("{slot}"),
		metric.WithDescription("Free slots: concurrency minus tasks in flight."))
	report(err)
	return i
}
