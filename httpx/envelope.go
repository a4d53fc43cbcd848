// Package httpx holds the wire helpers that the server and the client share: the result
// envelope, and the SSE writer and reader.
package httpx

import (
	"encoding/json"
	"net/http"

	"github.com/bbc28f59/engine/internal/bufpool"
)

// Envelope is the wire form of every flow reply: {data, error, meta?}. Data and Error are
// raw JSON so the server can encode once and the client can decode into the flow's type.
type Envelope struct {
	// Data is the flow's output on success, JSON null on a failure.
	Data json.RawMessage `json:"data"`
	// Error is nil on success.
	Error *WireError `json:"error"`
	// Meta is present on some successes only (a list's nextCursor).
	Meta json.RawMessage `json:"meta,omitempty"`
}

// WireError is the error object of the envelope: a code and its per-code payload.
type WireError struct {
	// Code is a declared flow code, a gate code, a framework code or TransportError.
	Code string `json:"code"`
	// Data is the code's payload, an object ({} when the code carries none).
	Data json.RawMessage `json:"data"`
}

// ContentTypeJSON is the content type of every envelope reply.
const ContentTypeJSON = "application/json"

// WriteEnvelope answers w with status and the envelope [AppendEnvelope] builds (with
// Content-Type application/json), built in a buffer that is reused once written.
func WriteEnvelope(w http.ResponseWriter, status int, data json.RawMessage, errCode string, errData json.RawMessage, meta json.RawMessage) {
	buf := bufpool.Get()
	*buf = AppendEnvelope(*buf, data, errCode, errData, meta)
	w.Header().Set("Content-Type", ContentTypeJSON)
	w.WriteHeader(status)
	_, _ = w.Write(*buf)
	bufpool.Put(buf)
}

// AppendEnvelope appends the envelope for a success (errCode == "") or a failure to dst.
// It writes members in the spec's order and never fails on pre-encoded parts, which keeps
// the hot path free of reflection beyond the caller's own data encoding.
func AppendEnvelope(dst []byte, data json.RawMessage, errCode string, errData json.RawMessage, meta json.RawMessage) []byte {
	dst = append(dst, `{"data":`...)
	if len(data) == 0 || errCode != "" {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, data...)
	}
	dst = append(dst, `,"error":`...)
	if errCode == "" {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, `{"code":`...)
		code, _ := json.Marshal(errCode)
		dst = append(dst, code...)
		dst = append(dst, `,"data":`...)
		if len(errData) == 0 {
			dst = append(dst, "{}"...)
		} else {
			dst = append(dst, errData...)
		}
		dst = append(dst, '}')
	}
	if len(meta) > 0 && errCode == "" {
		dst = append(dst, `,"meta":`...)
		dst = append(dst, meta...)
	}
	return append(dst, '}', '\n')
}
