package telemetry

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/metric"
)

// instruments are the metrics of one app: the semantic conventions' where they name one,
// engine's own (prefix engine.) otherwise.
type instruments struct {
	httpDuration  metric.Float64Histogram
	genaiDuration metric.Float64Histogram
	tokenUsage    metric.Int64Histogram
	openStreams   metric.Int64UpDownCounter
	rateLimited   metric.Int64Counter
	agentRuns     metric.Int64Counter
	parks         metric.Int64Counter
	decisions     metric.Int64Counter
	decisionWait  metric.Float64Histogram
	journalWrite  metric.Float64Histogram
	truncated     metric.Int64Counter
	logBatch      metric.Int64Histogram
}

// durationBuckets are the conventions' advised boundaries for request durations (s).
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// genaiBuckets are the GenAI conventions' advised boundaries for operation durations (s).
var genaiBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}

// tokenBuckets are the GenAI conventions' advised boundaries for token counts.
var tokenBuckets = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}

func newInstruments(m metric.Meter) (*instruments, error) {
	var i instruments
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	var err error
	i.httpDuration, err = m.Float64Histogram("http.server.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of HTTP server requests."), metric.WithExplicitBucketBoundaries(durationBuckets...))
	add(err)
	i.genaiDuration, err = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration."), metric.WithExplicitBucketBoundaries(genaiBuckets...))
	add(err)
	i.tokenUsage, err = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used."), metric.WithExplicitBucketBoundaries(tokenBuckets...))
	add(err)
	i.openStreams, err = m.Int64UpDownCounter("engine.stream.open", metric.WithUnit("{stream}"),
		metric.WithDescription("Streaming calls being answered."))
	add(err)
	i.rateLimited, err = m.Int64Counter("engine.rate_limit.denials", metric.WithUnit("{call}"),
		metric.WithDescription("Calls a rate limit denied."))
	add(err)
	i.agentRuns, err = m.Int64Counter("engine.agent.runs", metric.WithUnit("{run}"),
		metric.WithDescription("Executions of agent runs by how they ended (a stop reason, parked or error)."))
	add(err)
	i.parks, err = m.Int64Counter("engine.durable.parks", metric.WithUnit("{run}"),
		metric.WithDescription("Durable runs parked awaiting a decision."))
	add(err)
	i.decisions, err = m.Int64Counter("engine.durable.decisions", metric.WithUnit("{decision}"),
		metric.WithDescription("Decisions on parked runs (approvals, denials, signals, timeouts)."))
	add(err)
	i.decisionWait, err = m.Float64Histogram("engine.durable.decision.wait", metric.WithUnit("s"),
		metric.WithDescription("How long a parked run waited for its decision."))
	add(err)
	i.journalWrite, err = m.Float64Histogram("engine.journal.write.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of journal writes, retries included."), metric.WithExplicitBucketBoundaries(durationBuckets...))
	add(err)
	i.logBatch, err = m.Int64Histogram("engine.journal.log.batch.size", metric.WithUnit("{append}"),
		metric.WithDescription("Streams' appends stored in one write of the event log's batch."))
	add(err)
	i.truncated, err = m.Int64Counter("engine.journal.log.truncated", metric.WithUnit("{stream}"),
		metric.WithDescription("Event logs that reached their row cap and drop deltas."))
	add(err)
	return &i, errors.Join(errs...)
}

// enabled reports whether the meter provider records anything (one instrument stands
// for all: they come from one provider).
func (i *instruments) enabled(ctx context.Context) bool { return i.tokenUsage.Enabled(ctx) }
