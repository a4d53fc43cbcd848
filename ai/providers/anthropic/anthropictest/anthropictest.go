// Package anthropictest is an in-process fake of the Anthropic Messages streaming API, for tests of code that talks
// to Anthropic. It speaks the real wire format: `event:`/`data:` pairs message_start, content_block_start, ping,
// content_block_delta (text_delta, input_json_delta, thinking_delta, signature_delta), content_block_stop,
// message_delta and message_stop, and it checks extended thinking as the API does.
package anthropictest

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/bbc28f59/engine/ai/providers/internal/wirefake"
)

// Turn scripts one response of the fake.
type Turn struct {
	// Thinking is streamed first, as a thinking block of thinking_delta events, word by word, signed (see
	// [Signature]).
	Thinking string
	// RedactedThinking, when set, is the data of a redacted_thinking block streamed after the thinking.
	RedactedThinking string
	// Text is streamed as one text block of text_delta events, word by word.
	Text string
	// ToolCalls are streamed after the text, each as a tool_use block whose input arrives in input_json_delta
	// pieces.
	ToolCalls []ToolCall
	// OmitToolCallIDs sends tool_use blocks with an empty id (Anthropic itself always sends one; compatible
	// gateways may not), to exercise the agent loop's fallback.
	OmitToolCallIDs bool
	// Usage is reported in message_start (input) and message_delta (output); nil leaves usage out of both events.
	Usage *Usage
	// StopReason overrides the reason sent; by default "tool_use" when the turn calls tools, else "end_turn".
	StopReason string
	// Delay is waited before every event: a slow server, for cancellation tests.
	Delay time.Duration
	// Status, when not zero, answers with this HTTP status and an Anthropic error body carrying ErrorMessage
	// instead of a stream.
	Status int
	// ErrorMessage is the message of the HTTP error (Status) or, when Status is zero, of an `event: error` sent in
	// the middle of the stream, after the text.
	ErrorMessage string
}

// ToolCall is a tool call the fake model makes. Arguments is JSON text.
type ToolCall struct {
	ID, Name, Arguments string
}

// Usage is the token counts the fake reports.
type Usage struct {
	InputTokens, OutputTokens int64
}

// Request is a Messages request as the fake decoded it.
type Request struct {
	Model     string          `json:"model"`
	MaxTokens int64           `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  []Message       `json:"messages"`
	Tools     []Tool          `json:"tools"`
	Stream    bool            `json:"stream"`
	Thinking  *Thinking       `json:"thinking"`
	// ToolChoice is the request's tool_choice, nil when absent.
	ToolChoice *ToolChoice `json:"tool_choice"`
	// OutputConfig is the request's output_config (structured outputs), nil when absent.
	OutputConfig *OutputConfig `json:"output_config"`
	// Header is the request's HTTP header (x-api-key, anthropic-version, ...).
	Header http.Header `json:"-"`
	// Raw is the request body as received.
	Raw json.RawMessage `json:"-"`
}

// ToolChoice is a request's tool_choice: {"type": "auto" | "any" | "none"} or
// {"type": "tool", "name": …}.
type ToolChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

// OutputConfig is a request's output_config.
type OutputConfig struct {
	Format *OutputFormat `json:"format"`
}

// OutputFormat is output_config.format: {"type": "json_schema", "schema": …}.
type OutputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

// SystemText returns the system prompt: the string itself, or the text blocks joined.
func (r Request) SystemText() string { return text(r.System) }

// Message is one request message. Content is decoded as blocks whether it was sent as a string or a list.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// UnmarshalJSON accepts both content forms of the API: a plain string becomes one text block.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.Role = raw.Role
	var s string
	if json.Unmarshal(raw.Content, &s) == nil {
		m.Content = []Block{{Type: "text", Text: s}}
		return nil
	}
	return json.Unmarshal(raw.Content, &m.Content)
}

// Block is a content block of a request message (text, tool_use, tool_result, thinking or redacted_thinking).
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	Signature string          `json:"signature,omitempty"`
	Data      string          `json:"data,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// ContentText returns a tool_result's content as text.
func (b Block) ContentText() string { return text(b.Content) }

// Tool is a tool offered in the request.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	for _, p := range parts {
		s += p.Text
	}
	return s
}

// Server is the running fake. It is safe for concurrent requests; Requests, RequestCount,
// Disconnected and Close come from the shared fake server.
type Server struct {
	*wirefake.Server[Request, Turn]
}

var vendor = wirefake.Vendor[Request, Turn]{
	Name:        "anthropictest",
	Path:        "/v1/messages",
	ContentType: "text/event-stream; charset=utf-8",
	Received: func(req *Request, body []byte, header http.Header) {
		req.Raw, req.Header = body, header
	},
	Assistants: func(req Request) int {
		n := 0
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				n++
			}
		}
		return n
	},
	Failure:    func(t Turn) (int, string) { return t.Status, t.ErrorMessage },
	Check:      checkRequest,
	Delay:      func(t Turn) time.Duration { return t.Delay },
	Frames:     func(t Turn, req Request, n int) [][]byte { return events(t, req.Model, n) },
	WriteError: writeError,
}

// NewServer starts a fake that answers a request holding n assistant messages with turns[n], so concurrent
// conversations and replays get the same script. A request past the end of the script gets HTTP 500.
func NewServer(turns ...Turn) *Server { return &Server{wirefake.New(vendor, turns, nil)} }

// NewServerFunc starts a fake that answers each request with the turn fn picks for it. fn may be called
// concurrently.
func NewServerFunc(fn func(req Request) Turn) *Server { return &Server{wirefake.New(vendor, nil, fn)} }

// URL is the base URL to give the provider.
func (s *Server) URL() string { return s.BaseURL() }

// writeError answers as the Anthropic API does on failure.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	body, _ := json.Marshal(errorEvent{Type: "error", Error: errorBody{Type: errorType(status), Message: msg}})
	_, _ = w.Write(body)
}

func errorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}
