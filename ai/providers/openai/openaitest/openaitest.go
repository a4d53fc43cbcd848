// Package openaitest is an in-process fake of the OpenAI chat-completions streaming API, for tests of code that
// talks to an OpenAI-compatible server (the openai provider, the agent loop, the agent stream route). It speaks the
// real wire format: `data: {chat.completion.chunk}` frames, tool-call deltas split over several chunks, a final usage
// chunk with empty choices when the request asks for it, and `data: [DONE]`.
package openaitest

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/bbc28f59/engine/ai/providers/internal/wirefake"
)

// Turn scripts one response of the fake.
type Turn struct {
	// Reasoning is streamed first, word by word, in the delta member ReasoningField names.
	Reasoning string
	// ReasoningField is the delta member reasoning travels in: "reasoning_content" (the default) or "reasoning".
	ReasoningField string
	// Text is streamed as content deltas, word by word.
	Text string
	// ToolCalls are streamed after the text, each as a head chunk (index, id, type, name) then its arguments split
	// over several chunks.
	ToolCalls []ToolCall
	// OmitToolCallIDs sends every tool call without an id, as some compatible servers do.
	OmitToolCallIDs bool
	// Usage is sent as the final chunk (empty choices) when the request set stream_options.include_usage; nil sends
	// no usage at all.
	Usage *Usage
	// FinishReason overrides the reason sent; by default "tool_calls" when the turn calls tools, else "stop".
	FinishReason string
	// Delay is waited before every frame: a slow server, for cancellation tests.
	Delay time.Duration
	// Status, when not zero, answers with this HTTP status and an OpenAI error body carrying ErrorMessage instead
	// of a stream.
	Status int
	// ErrorMessage is the message of the HTTP error (Status) or, when Status is zero, of an error frame sent in the
	// middle of the stream, after the text.
	ErrorMessage string
}

// ToolCall is a tool call the fake model makes. Arguments is JSON text.
type ToolCall struct {
	ID, Name, Arguments string
}

// Usage is the usage the fake reports. Cost, when set, is sent as the non-standard usage.cost some
// OpenAI-compatible servers add.
type Usage struct {
	PromptTokens, CompletionTokens int64
	// ReasoningTokens, when not zero, is sent as completion_tokens_details.reasoning_tokens (part of the completion
	// tokens).
	ReasoningTokens int64
	Cost            *float64
}

// Request is a chat-completions request as the fake decoded it.
type Request struct {
	Model               string         `json:"model"`
	Messages            []Message      `json:"messages"`
	Tools               []Tool         `json:"tools"`
	Stream              bool           `json:"stream"`
	StreamOptions       *StreamOptions `json:"stream_options"`
	MaxTokens           *int64         `json:"max_tokens"`
	MaxCompletionTokens *int64         `json:"max_completion_tokens"`
	ReasoningEffort     string         `json:"reasoning_effort"`
	// ResponseFormat is the requested response format (structured output), nil when
	// the request has none.
	ResponseFormat *ResponseFormat `json:"response_format"`
	// Header is the request's HTTP header (Authorization, ...).
	Header http.Header `json:"-"`
	// Raw is the request body as received.
	Raw json.RawMessage `json:"-"`
}

// ResponseFormat is a request's response_format: {"type": "json_schema", "json_schema":
// {name, schema, strict}} for structured output, or {"type": "json_object"} / "text".
type ResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema"`
}

// JSONSchema is the json_schema member of a response format.
type JSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict *bool           `json:"strict"`
}

// StreamOptions is the request's stream_options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Message is one request message. Content is kept raw because the API allows a string or a list of parts; see
// [Message.Text].
type Message struct {
	Role       string            `json:"role"`
	Content    json.RawMessage   `json:"content"`
	ToolCalls  []MessageToolCall `json:"tool_calls"`
	ToolCallID string            `json:"tool_call_id"`
}

// Text returns the message content as text: the string itself, or the text parts joined.
func (m Message) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	for _, p := range parts {
		s += p.Text
	}
	return s
}

// MessageToolCall is a tool call in an assistant message of the request.
type MessageToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Tool is a tool offered in the request.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// Server is the running fake. It is safe for concurrent requests; Requests, RequestCount,
// Disconnected and Close come from the shared fake server.
type Server struct {
	*wirefake.Server[Request, Turn]
}

var vendor = wirefake.Vendor[Request, Turn]{
	Name:        "openaitest",
	Path:        "/v1/chat/completions",
	ContentType: "text/event-stream",
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
	Check:   checkRequest,
	Failure: func(t Turn) (int, string) { return t.Status, t.ErrorMessage },
	Delay:   func(t Turn) time.Duration { return t.Delay },
	Frames: func(t Turn, req Request, n int) [][]byte {
		return frames(t, req.Model, n, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
	},
	WriteError: writeError,
}

// NewServer starts a fake that answers a request holding n assistant messages with turns[n], so concurrent
// conversations and replays get the same script. A request past the end of the script gets HTTP 500.
func NewServer(turns ...Turn) *Server { return &Server{wirefake.New(vendor, turns, nil)} }

// NewServerFunc starts a fake that answers each request with the turn fn picks for it. fn may be called
// concurrently.
func NewServerFunc(fn func(req Request) Turn) *Server { return &Server{wirefake.New(vendor, nil, fn)} }

// URL is the base URL to give the provider (it ends in /v1, as OpenAI's does).
func (s *Server) URL() string { return s.BaseURL() + "/v1" }

// writeError answers as the OpenAI API does on failure.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(errorJSON(msg, errorType(status)))
}

func errorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	case status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

// errorBody is OpenAI's error object, fields in OpenAI's order.
type errorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func errorJSON(msg, typ string) []byte {
	var e errorBody
	e.Error.Message, e.Error.Type = msg, typ
	b, _ := json.Marshal(e) // strings only: cannot fail
	return b
}
