package telemetry

import (
	"context"
	"encoding/json"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys of the GenAI semantic conventions and engine's own.
const (
	keyOperation    = attribute.Key("gen_ai.operation.name")
	keyProvider     = attribute.Key("gen_ai.provider.name")
	keyAgentName    = attribute.Key("gen_ai.agent.name")
	keyConversation = attribute.Key("gen_ai.conversation.id")
	keyReqModel     = attribute.Key("gen_ai.request.model")
	keyRespModel    = attribute.Key("gen_ai.response.model")
	keyInTokens     = attribute.Key("gen_ai.usage.input_tokens")
	keyOutTokens    = attribute.Key("gen_ai.usage.output_tokens")
	keyFinish       = attribute.Key("gen_ai.response.finish_reasons")
	keyTokenType    = attribute.Key("gen_ai.token.type")
	keyToolName     = attribute.Key("gen_ai.tool.name")
	keyToolCallID   = attribute.Key("gen_ai.tool.call.id")
	keyToolType     = attribute.Key("gen_ai.tool.type")
	keySystem       = attribute.Key("gen_ai.system_instructions")
	keyInput        = attribute.Key("gen_ai.input.messages")
	keyOutput       = attribute.Key("gen_ai.output.messages")
	keyToolArgs     = attribute.Key("gen_ai.tool.call.arguments")
	keyToolResult   = attribute.Key("gen_ai.tool.call.result")
	keyRunID        = attribute.Key("engine.run.id")
	keyResumed      = attribute.Key("engine.run.resumed")
	keyStopReason   = attribute.Key("engine.run.stop_reason")
	keyParked       = attribute.Key("engine.run.parked")
	keyCost         = attribute.Key("engine.cost")
)

// agentObserver makes the GenAI spans of the agent runs of one app.
type agentObserver struct{ t *telemetry }

var _ ai.Observer = (*agentObserver)(nil)

func (o *agentObserver) AgentRun(ctx context.Context, run ai.RunInfo) (context.Context, func(ai.RunEnd)) {
	ctx, span := o.t.tracer.Start(ctx, "invoke_agent "+run.Agent, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(keyOperation.String("invoke_agent"), keyAgentName.String(run.Agent),
			keyProvider.String(run.Provider), keyReqModel.String(run.Model), keyRunID.String(run.RunID),
			keyConversation.String(run.ThreadID), keyResumed.Bool(run.Resumed)))
	return ctx, func(e ai.RunEnd) {
		status := "completed"
		switch {
		case e.Err != nil:
			status = "error"
		case e.Parked:
			status = "parked"
		case e.StopReason != "":
			status = e.StopReason
		}
		if o.t.m.agentRuns.Enabled(ctx) {
			o.t.m.agentRuns.Add(ctx, 1, metric.WithAttributes(keyAgentName.String(run.Agent), keyRunStatus.String(status)))
		}
		if span.IsRecording() {
			span.SetAttributes(usageAttrs(e.Usage)...)
			span.SetAttributes(keyCost.Float64(e.Cost), keyParked.Bool(e.Parked))
			if e.StopReason != "" {
				span.SetAttributes(keyStopReason.String(e.StopReason))
			}
			if e.Err != nil {
				span.SetStatus(codes.Error, e.Err.Error())
				span.SetAttributes(keyError.String(errorType(e.Err)))
			}
		}
		span.End()
	}
}

func (o *agentObserver) ModelCall(ctx context.Context, call ai.ModelCallInfo) (context.Context, func(ai.ModelCallEnd)) {
	model := call.Request.Model
	start := time.Now()
	ctx, span := o.t.tracer.Start(ctx, "chat "+model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(keyOperation.String("chat"), keyProvider.String(call.Provider),
			keyReqModel.String(model), keyAgentName.String(call.Agent)))
	if o.t.capture && span.IsRecording() {
		if call.Request.System != "" {
			span.SetAttributes(keySystem.String(call.Request.System))
		}
		span.SetAttributes(keyInput.String(jsonString(call.Request.Messages)))
	}
	return ctx, func(e ai.ModelCallEnd) {
		if o.t.m.enabled(ctx) {
			o.t.recordModelCall(ctx, call.Provider, model, time.Since(start), e)
		}
		if span.IsRecording() {
			span.SetAttributes(keyRespModel.String(model), keyCost.Float64(e.Cost))
			span.SetAttributes(usageAttrs(e.Usage)...)
			if e.FinishReason != "" {
				span.SetAttributes(keyFinish.StringSlice([]string{e.FinishReason}))
			}
			if o.t.capture {
				span.SetAttributes(keyOutput.String(jsonString(ai.Message{Role: ai.RoleAssistant, Content: e.Text, ToolCalls: e.ToolCalls})))
			}
			if e.Err != nil {
				span.SetStatus(codes.Error, e.Err.Error())
				span.SetAttributes(keyError.String(errorType(e.Err)))
			}
		}
		span.End()
	}
}

func (o *agentObserver) ToolCall(ctx context.Context, call ai.ToolCallInfo) (context.Context, func(ai.ToolCallEnd)) {
	ctx, span := o.t.tracer.Start(ctx, "execute_tool "+call.Tool, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(keyOperation.String("execute_tool"), keyToolName.String(call.Tool),
			keyToolCallID.String(call.CallID), keyToolType.String("function"), keyAgentName.String(call.Agent)))
	if o.t.capture && span.IsRecording() {
		span.SetAttributes(keyToolArgs.String(call.Arguments))
	}
	return ctx, func(e ai.ToolCallEnd) {
		if span.IsRecording() {
			if o.t.capture && e.Err == nil {
				span.SetAttributes(keyToolResult.String(e.Content))
			}
			if e.Err != nil {
				span.SetStatus(codes.Error, e.Err.Error())
				span.SetAttributes(keyError.String(errorType(e.Err)))
			}
		}
		span.End()
	}
}

// keyRunStatus is the status attribute of the runs counter.
const keyRunStatus = attribute.Key("engine.run.status")

// usageAttrs returns the token counts the model reported (absent ones stay absent).
func usageAttrs(u ai.Usage) []attribute.KeyValue {
	var kv []attribute.KeyValue
	if u.InputTokens != nil {
		kv = append(kv, keyInTokens.Int64(*u.InputTokens))
	}
	if u.OutputTokens != nil {
		kv = append(kv, keyOutTokens.Int64(*u.OutputTokens))
	}
	return kv
}

// errorType returns the error.type of err: the envelope's or the run's code where it
// has one, its Go type otherwise.
func errorType(err error) string {
	if _, code, _ := outcome(err); code != "" && code != engine.CodeInternal {
		return code
	}
	if re, ok := err.(*ai.RunError); ok && re.Code != "" {
		return re.Code
	}
	return "_OTHER"
}

// jsonString returns v as JSON, the form the conventions give structured content.
func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// recordModelCall records a model call's duration and tokens.
func (t *telemetry) recordModelCall(ctx context.Context, provider, model string, d time.Duration, e ai.ModelCallEnd) {
	base := []attribute.KeyValue{keyOperation.String("chat"), keyProvider.String(provider), keyReqModel.String(model)}
	if e.Usage.InputTokens != nil {
		t.m.tokenUsage.Record(ctx, *e.Usage.InputTokens, metric.WithAttributes(append(base[:3:3], keyTokenType.String("input"))...))
	}
	if e.Usage.OutputTokens != nil {
		t.m.tokenUsage.Record(ctx, *e.Usage.OutputTokens, metric.WithAttributes(append(base[:3:3], keyTokenType.String("output"))...))
	}
	if e.Err != nil {
		base = append(base, keyError.String(errorType(e.Err)))
	}
	t.m.genaiDuration.Record(ctx, d.Seconds(), metric.WithAttributes(base...))
}
