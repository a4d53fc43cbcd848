package ai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/durable"
	"github.com/google/jsonschema-go/jsonschema"
)

// OutputFormat asks a model for a reply that is one JSON value matching a schema: the
// structured output of [AskAs] and of agents declared with [Output]. It is what a
// provider implementing [NativeOutput] receives in [Request.Output].
type OutputFormat struct {
	// Name names the schema for the vendor ([A-Za-z0-9_-], at most 64 bytes).
	Name string
	// Schema is the JSON Schema of the reply, always an object schema: a value of
	// another type is asked for wrapped as {"value": …}, as vendors require an object.
	Schema json.RawMessage
	// Strict reports that the schema meets the rules of vendors' strict modes (OpenAI's
	// strict: true): every object closed (additionalProperties false) and every property
	// required. Inferred schemas of structs without omitempty fields do.
	Strict bool
}

// NativeOutput is implemented by providers that honour [Request.Output] in the vendor's
// own structured-output mode (OpenAI's JSON-schema response format, Anthropic's
// output_config or a forced tool). NativeOutput reports whether this provider value
// does; the providers of ai/providers let an option turn it off for servers that lack it.
//
// The fallback, for every other provider: the schema goes into the system prompt with
// the instruction to answer with one JSON value and nothing else, and the reply's text
// (a Markdown code fence around it is tolerated) is decoded. Either way the reply is
// validated, and asked again with its issues when it does not pass.
type NativeOutput interface {
	NativeOutput() bool
}

// DefaultOutputRetries is how many times a structured reply that does not validate is
// asked again, with its issues, before the call fails with [InvalidModelOutput].
const DefaultOutputRetries = 2

// InvalidOutputData is the payload of [InvalidModelOutput]: the issues of the last
// reply, one "path: message" string each.
type InvalidOutputData struct {
	Issues []string `json:"issues"`
}

// InvalidModelOutput is the error of a structured call whose replies did not validate
// against the schema, after the retries ([DefaultOutputRetries]). A flow that returns it
// declares it (engine.Errors(ai.InvalidModelOutput)), so callers see the code and the
// issues; 502, as the fault is the model's, upstream of the server.
var InvalidModelOutput = engine.NewCode[InvalidOutputData]("InvalidModelOutput", http.StatusBadGateway)

// structured is a prepared structured output of one Go type: the format the model is
// asked for and the check of its replies.
type structured struct {
	format  OutputFormat
	wrapped bool // the type is not an object: asked for as {"value": …}
	// decode checks one reply's JSON and returns the value, re-encoded, or the issues.
	decode func(raw []byte) (json.RawMessage, []string)
}

// structuredFor prepares the structured output of T under name.
func structuredFor[T any](name string) (*structured, error) {
	dec, err := engine.NewDecoder[T]()
	if err != nil {
		return nil, fmt.Errorf("ai: structured output: %w", err)
	}
	schema := dec.Schema()
	st := &structured{}
	if schema.Type != "object" {
		st.wrapped = true
		schema = &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"value": schema},
			Required: []string{"value"}, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("ai: structured output: encoding the schema: %w", err)
	}
	st.format = OutputFormat{Name: formatName(name), Schema: raw, Strict: strictSchema(schema)}
	st.decode = func(reply []byte) (json.RawMessage, []string) {
		body, ok := jsonText(reply)
		if !ok {
			return nil, []string{"the reply is not a JSON value: answer with the JSON value alone"}
		}
		if st.wrapped {
			var w struct {
				Value json.RawMessage `json:"value"`
			}
			if err := json.Unmarshal(body, &w); err != nil || w.Value == nil {
				return nil, []string{`value: required (answer as {"value": …})`}
			}
			body = w.Value
		}
		v, err := dec.Decode(body)
		if err != nil {
			return nil, issueStrings(err)
		}
		out, err := json.Marshal(v)
		if err != nil {
			return nil, []string{err.Error()}
		}
		return out, nil
	}
	return st, nil
}

// formatName makes name acceptable to vendors as a schema name.
func formatName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() == 64 {
			break
		}
	}
	if b.Len() == 0 {
		return "output"
	}
	return b.String()
}

// strictSchema reports whether every object of s is closed and requires all its
// properties, as strict modes demand.
func strictSchema(s *jsonschema.Schema) bool {
	if s == nil {
		return true
	}
	if s.Type == "object" || s.Properties != nil {
		if s.AdditionalProperties == nil || s.AdditionalProperties.Not == nil || len(s.Required) != len(s.Properties) {
			return false
		}
	}
	for _, p := range s.Properties {
		if !strictSchema(p) {
			return false
		}
	}
	for _, sub := range [][]*jsonschema.Schema{{s.Items}, s.AnyOf, s.OneOf, s.AllOf, s.PrefixItems} {
		for _, c := range sub {
			if !strictSchema(c) {
				return false
			}
		}
	}
	for _, d := range s.Defs {
		if !strictSchema(d) {
			return false
		}
	}
	return true
}

// jsonText finds the JSON value of a reply: the whole text, or the inside of one
// Markdown code fence around it, as models without a native mode tend to write.
func jsonText(reply []byte) ([]byte, bool) {
	b := bytes.TrimSpace(reply)
	if rest, ok := bytes.CutPrefix(b, []byte("```")); ok {
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			rest = rest[i+1:]
		}
		if body, ok := bytes.CutSuffix(bytes.TrimSpace(rest), []byte("```")); ok {
			b = bytes.TrimSpace(body)
		}
	}
	return b, json.Valid(b)
}

// issueStrings turns a decode failure into "path: message" strings.
func issueStrings(err error) []string {
	var data engine.ValidationData
	if e := engine.AsError(err); e != nil {
		if d, ok := e.Data.(engine.ValidationData); ok {
			data = d
		}
	}
	if len(data.Issues) == 0 {
		return []string{err.Error()}
	}
	out := make([]string, 0, len(data.Issues))
	for _, is := range data.Issues {
		if is.Path == "" {
			out = append(out, is.Message)
			continue
		}
		out = append(out, is.Path+": "+is.Message)
	}
	return out
}

// native reports whether p takes [Request.Output] itself.
func native(p Provider) bool {
	n, ok := p.(NativeOutput)
	return ok && n.NativeOutput()
}

// instruction is the fallback's addition to the system prompt.
func (st *structured) instruction() string {
	return "Answer with one JSON value that matches this JSON Schema, and nothing else (no prose, no code fence):\n" +
		string(st.format.Schema)
}

// apply sets req up for a structured reply: the vendor's mode, or the fallback's prompt.
func (st *structured) apply(req *Request, p Provider) {
	if native(p) {
		f := st.format
		req.Output = &f
		return
	}
	if req.System != "" {
		req.System += "\n\n"
	}
	req.System += st.instruction()
}

// retryPrompt is the user message that asks again after a reply with issues.
func retryPrompt(issues []string) string {
	return "Your reply did not match the required JSON Schema:\n- " + strings.Join(issues, "\n- ") +
		"\nAnswer again with only the corrected JSON value."
}

// AskAs sends one prompt to model and returns its reply as a T: T's JSON Schema
// (inferred as a flow's input schema is) goes to the provider's structured-output mode
// ([NativeOutput]; the fallback puts it in the system prompt), the reply is validated
// against it and decoded. A reply that does not validate is asked again with its issues,
// at most opts.Retries times ([DefaultOutputRetries] when zero; a negative value asks
// once); then AskAs fails with [InvalidModelOutput] carrying the last reply's issues.
//
//	type Weather struct {
//		City  string  `json:"city"`
//		TempC float64 `json:"tempC"`
//	}
//	w, err := ai.AskAs[Weather](fx, model, "Extract the city and temperature: "+text, ai.AskOptions{Name: "weather"})
//
// Inside a durable flow the typed result (or the failure with its issues) is one
// journal step, so a replay returns it without calling the model.
func AskAs[T any](fx *engine.Fx, model *ModelDef, prompt string, opts AskOptions) (T, error) {
	var zero T
	if err := model.Validate(); err != nil {
		return zero, err
	}
	name := opts.Name
	if name == "" {
		name = "ask"
	}
	st, err := structuredFor[T](name)
	if err != nil {
		return zero, err
	}
	type outcome struct {
		Value  json.RawMessage `json:"value,omitempty"`
		Issues []string        `json:"issues,omitempty"`
		Cost   float64         `json:"cost"`
	}
	o, err := durable.Step(fx, "ask-as:"+name, func(ctx context.Context) (outcome, error) {
		var o outcome
		req := Request{Model: model.ModelID(), System: opts.System, Messages: []Message{{Role: RoleUser, Content: prompt}}}
		st.apply(&req, model.Provider())
		for attempt := 0; ; attempt++ {
			reply, err := Collect(model.stream(ctx, req))
			if err != nil {
				return outcome{}, err
			}
			if c, ok := model.Cost(reply.Usage); ok {
				o.Cost += c
			}
			o.Value, o.Issues = st.decode([]byte(reply.Text))
			if o.Issues == nil || attempt >= retries(opts.Retries) {
				return o, nil
			}
			req.Messages = append(req.Messages, Message{Role: RoleAssistant, Content: reply.Text},
				Message{Role: RoleUser, Content: retryPrompt(o.Issues)})
		}
	})
	if err != nil {
		return zero, err
	}
	if opts.MaxCostPerCall > 0 && o.Cost > opts.MaxCostPerCall {
		return zero, &BudgetExceededError{Prompt: name, Cost: o.Cost, Max: opts.MaxCostPerCall}
	}
	if o.Issues != nil {
		return zero, InvalidModelOutput.New(InvalidOutputData{Issues: o.Issues})
	}
	var v T
	if err := json.Unmarshal(o.Value, &v); err != nil {
		return zero, fmt.Errorf("ai: decoding the recorded output of %s: %w", name, err)
	}
	return v, nil
}

// retries is the number of retries an option value means.
func retries(n int) int {
	switch {
	case n == 0:
		return DefaultOutputRetries
	case n < 0:
		return 0
	}
	return n
}

// Output gives an agent a typed final output: T's JSON Schema goes to the provider's
// structured-output mode on every model call (the fallback: the system prompt says the
// final answer is a JSON value of that schema), the model's final answer (its turn
// without tool calls) is validated and decoded, and RUN_FINISHED.result.output is the
// value (clients decode it typed: agui.OutputOf). A final answer that does not validate
// is fed back with its issues for another turn, at most [DefaultOutputRetries] times;
// then the run fails with RUN_ERROR code InvalidModelOutput, naming the issues.
//
//	extractor := ai.Agent("extractor", model, ai.Tools(Weather), 6, ai.Output[Forecast]())
func Output[T any]() AgentOption {
	return func(a *AgentDef) {
		a.output, a.outputErr = structuredFor[T](a.name)
	}
}

// finalOutput checks a final answer of an agent with a typed output: its value, or the
// issues, and whether the loop should ask again.
func (s *loopState) finalOutput(text string) (value json.RawMessage, again bool, err error) {
	st := s.r.agent.output
	value, issues := st.decode([]byte(text))
	if issues == nil {
		return value, false, nil
	}
	if s.outputRetries < DefaultOutputRetries {
		s.outputRetries++
		s.history = append(s.history, Message{Role: RoleUser, Content: retryPrompt(issues)})
		return nil, true, nil
	}
	return nil, false, &stopError{code: InvalidModelOutput.Code(),
		msg: "ai: the final answer did not match the output schema: " + strings.Join(issues, "; ")}
}
