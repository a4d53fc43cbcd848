package uimessage

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bbc28f59/engine/internal/jsonx"
)

// The chunk types the engine sends, as the ai package's uiMessageChunkSchema names them.
const (
	ChunkStart               = "start"
	ChunkFinish              = "finish"
	ChunkStartStep           = "start-step"
	ChunkFinishStep          = "finish-step"
	ChunkTextStart           = "text-start"
	ChunkTextDelta           = "text-delta"
	ChunkTextEnd             = "text-end"
	ChunkReasoningStart      = "reasoning-start"
	ChunkReasoningDelta      = "reasoning-delta"
	ChunkReasoningEnd        = "reasoning-end"
	ChunkToolInputStart      = "tool-input-start"
	ChunkToolInputDelta      = "tool-input-delta"
	ChunkToolInputAvailable  = "tool-input-available"
	ChunkToolOutputAvailable = "tool-output-available"
	ChunkToolOutputDenied    = "tool-output-denied"
	ChunkToolApprovalRequest = "tool-approval-request"
	ChunkError               = "error"
	// ChunkDataPrefix prefixes the type of a data chunk: "data-" and its name.
	ChunkDataPrefix = "data-"
)

// The finish reasons of a finish chunk the engine sends.
const (
	FinishStop        = "stop"
	FinishToolCalls   = "tool-calls"
	FinishError       = "error"
	FinishInterrupted = "interrupted"
	FinishOther       = "other"
)

// Chunk is one chunk of a UI message stream. Type says which members it carries; its
// JSON holds exactly those (see [AppendJSON]), so it passes the AI SDK's schema. Input,
// Output and Data are JSON values.
type Chunk struct {
	Type           string          `json:"type"`
	ID             string          `json:"id,omitempty"`             // text-*, reasoning-*, data-*
	Delta          string          `json:"delta,omitempty"`          // text-delta, reasoning-delta
	MessageID      string          `json:"messageId,omitempty"`      // start
	ToolCallID     string          `json:"toolCallId,omitempty"`     // tool-*
	ToolName       string          `json:"toolName,omitempty"`       // tool-input-start, tool-input-available
	InputTextDelta string          `json:"inputTextDelta,omitempty"` // tool-input-delta
	Input          json.RawMessage `json:"input,omitempty"`          // tool-input-available
	Output         json.RawMessage `json:"output,omitempty"`         // tool-output-available
	ApprovalID     string          `json:"approvalId,omitempty"`     // tool-approval-request
	Reason         string          `json:"reason,omitempty"`         // tool-approval-request
	ErrorText      string          `json:"errorText,omitempty"`      // error
	FinishReason   string          `json:"finishReason,omitempty"`   // finish
	Data           json.RawMessage `json:"data,omitempty"`           // data-*
	Transient      bool            `json:"transient,omitempty"`      // data-*
}

// MarshalJSON encodes the chunk as [AppendJSON] does.
func (c Chunk) MarshalJSON() ([]byte, error) { return AppendJSON(nil, c) }

// AppendJSON appends the wire JSON of c to dst: its type, then the members its type
// carries, required ones always (an empty delta is "delta":""), optional ones when set.
// A chunk of an unknown type, or one whose JSON members are not JSON, is an error.
func AppendJSON(dst []byte, c Chunk) ([]byte, error) {
	dst = jsonx.AppendString(append(dst, `{"type":`...), c.Type)
	var err error
	switch c.Type {
	case ChunkStart:
		dst = appendOpt(dst, "messageId", c.MessageID)
	case ChunkFinish:
		dst = appendOpt(dst, "finishReason", c.FinishReason)
	case ChunkStartStep, ChunkFinishStep:
	case ChunkTextStart, ChunkTextEnd, ChunkReasoningStart, ChunkReasoningEnd:
		dst = appendStr(dst, "id", c.ID)
	case ChunkTextDelta, ChunkReasoningDelta:
		dst = appendStr(appendStr(dst, "id", c.ID), "delta", c.Delta)
	case ChunkToolInputStart:
		dst = appendStr(appendStr(dst, "toolCallId", c.ToolCallID), "toolName", c.ToolName)
	case ChunkToolInputDelta:
		dst = appendStr(appendStr(dst, "toolCallId", c.ToolCallID), "inputTextDelta", c.InputTextDelta)
	case ChunkToolInputAvailable:
		dst = appendStr(appendStr(dst, "toolCallId", c.ToolCallID), "toolName", c.ToolName)
		dst, err = appendRaw(dst, c.Type, "input", c.Input)
	case ChunkToolOutputAvailable:
		dst, err = appendRaw(appendStr(dst, "toolCallId", c.ToolCallID), c.Type, "output", c.Output)
	case ChunkToolOutputDenied:
		dst = appendStr(dst, "toolCallId", c.ToolCallID)
	case ChunkToolApprovalRequest:
		dst = appendStr(appendStr(dst, "approvalId", c.ApprovalID), "toolCallId", c.ToolCallID)
		dst = appendOpt(dst, "reason", c.Reason)
	case ChunkError:
		dst = appendStr(dst, "errorText", c.ErrorText)
	default:
		if !strings.HasPrefix(c.Type, ChunkDataPrefix) || len(c.Type) == len(ChunkDataPrefix) {
			return dst, fmt.Errorf("uimessage: unknown chunk type %q", c.Type)
		}
		dst, err = appendRaw(appendOpt(dst, "id", c.ID), c.Type, "data", c.Data)
		if c.Transient {
			dst = append(dst, `,"transient":true`...)
		}
	}
	if err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// appendStr appends the member key with the string v.
func appendStr(dst []byte, key, v string) []byte {
	dst = append(append(append(dst, ',', '"'), key...), '"', ':')
	return jsonx.AppendString(dst, v)
}

// appendOpt appends the member key with v unless v is empty.
func appendOpt(dst []byte, key, v string) []byte {
	if v == "" {
		return dst
	}
	return appendStr(dst, key, v)
}

// appendRaw appends the member key with the JSON value v, compacted and checked as
// json.Marshal would; nil is null.
func appendRaw(dst []byte, typ, key string, v json.RawMessage) ([]byte, error) {
	if len(v) == 0 {
		v = json.RawMessage("null")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return dst, fmt.Errorf("uimessage: %s chunk %s: %w", typ, key, err)
	}
	return append(append(append(append(dst, ',', '"'), key...), '"', ':'), b...), nil
}
