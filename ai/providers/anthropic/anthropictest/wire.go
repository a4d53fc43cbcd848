package anthropictest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bbc28f59/engine/ai/providers/internal/wirefake"
)

// The shapes below mirror Anthropic's stream events field for field, in Anthropic's order, so the bytes the fake
// sends match what api.anthropic.com sends.

type messageStart struct {
	Type    string  `json:"type"`
	Message message `json:"message"`
}

type message struct {
	ID           string  `json:"id"`
	Type         string  `json:"type"`
	Role         string  `json:"role"`
	Model        string  `json:"model"`
	Content      []any   `json:"content"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        *usage  `json:"usage,omitempty"`
}

type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

type blockStart struct {
	Type         string `json:"type"`
	Index        int    `json:"index"`
	ContentBlock any    `json:"content_block"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type toolUseBlock struct {
	Type  string   `json:"type"`
	ID    string   `json:"id"`
	Name  string   `json:"name"`
	Input struct{} `json:"input"`
}

type blockDelta struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Delta any    `json:"delta"`
}

type textDelta struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type inputJSONDelta struct {
	Type        string `json:"type"`
	PartialJSON string `json:"partial_json"`
}

type blockStop struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

type messageDelta struct {
	Type  string       `json:"type"`
	Delta stopDelta    `json:"delta"`
	Usage *outputUsage `json:"usage,omitempty"`
}

type stopDelta struct {
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

type outputUsage struct {
	OutputTokens int64 `json:"output_tokens"`
}

type typeOnly struct {
	Type string `json:"type"`
}

type errorEvent struct {
	Type  string    `json:"type"`
	Error errorBody `json:"error"`
}

type errorBody struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// events lays out the whole response of one turn as SSE events, in the order api.anthropic.com sends them. n numbers
// the turn, so ids differ between turns but not between runs.
func events(t Turn, model string, n int) [][]byte {
	var out [][]byte
	add := func(name string, v any) { out = append(out, event(name, v)) }

	start := message{ID: fmt.Sprintf("msg_fake_%d", n+1), Type: "message", Role: "assistant", Model: model, Content: []any{}}
	if t.Usage != nil {
		start.Usage = &usage{InputTokens: t.Usage.InputTokens, OutputTokens: 1}
	}
	add("message_start", messageStart{Type: "message_start", Message: start})

	index := thinkingEvents(t, 0, add)
	if t.Text != "" || t.ErrorMessage != "" {
		add("content_block_start", blockStart{Type: "content_block_start", Index: index, ContentBlock: textBlock{Type: "text"}})
		out = append(out, []byte("event: ping\ndata: {\"type\": \"ping\"}\n\n")) // Anthropic's own spacing
		if t.Text != "" {
			for _, w := range strings.SplitAfter(t.Text, " ") {
				add("content_block_delta", blockDelta{Type: "content_block_delta", Index: index,
					Delta: textDelta{Type: "text_delta", Text: w}})
			}
		}
		if t.ErrorMessage != "" {
			// A mid-stream failure: Anthropic sends an error event and stops.
			add("error", errorEvent{Type: "error", Error: errorBody{Type: "overloaded_error", Message: t.ErrorMessage}})
			return out
		}
		add("content_block_stop", blockStop{Type: "content_block_stop", Index: index})
		index++
	}
	for _, call := range t.ToolCalls {
		block := toolUseBlock{Type: "tool_use", ID: call.ID, Name: call.Name}
		if t.OmitToolCallIDs {
			block.ID = ""
		}
		add("content_block_start", blockStart{Type: "content_block_start", Index: index, ContentBlock: block})
		add("content_block_delta", blockDelta{Type: "content_block_delta", Index: index,
			Delta: inputJSONDelta{Type: "input_json_delta"}})
		for _, piece := range wirefake.SplitArgs(call.Arguments) {
			add("content_block_delta", blockDelta{Type: "content_block_delta", Index: index,
				Delta: inputJSONDelta{Type: "input_json_delta", PartialJSON: piece}})
		}
		add("content_block_stop", blockStop{Type: "content_block_stop", Index: index})
		index++
	}

	stop := t.StopReason
	if stop == "" {
		stop = "end_turn"
		if len(t.ToolCalls) > 0 {
			stop = "tool_use"
		}
	}
	md := messageDelta{Type: "message_delta", Delta: stopDelta{StopReason: stop}}
	if t.Usage != nil {
		md.Usage = &outputUsage{OutputTokens: t.Usage.OutputTokens}
	}
	add("message_delta", md)
	add("message_stop", typeOnly{Type: "message_stop"})
	return out
}

// event renders one `event:`/`data:` pair.
func event(name string, v any) []byte {
	var buf bytes.Buffer
	buf.WriteString("event: ")
	buf.WriteString(name)
	buf.WriteString("\ndata: ")
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // Anthropic sends <, > and & as they are
	_ = enc.Encode(v)        // plain structs of strings and numbers: cannot fail
	buf.WriteString("\n")    // Encode ended the data line; this blank line ends the event
	return buf.Bytes()
}
