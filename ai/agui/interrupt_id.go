package agui

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// ErrBadInterruptID reports an interrupt id that is not base64url("<run id>.<tool call id>").
var ErrBadInterruptID = errors.New("agui: malformed interrupt id")

// NewInterruptID builds the id of an approval interrupt: the unpadded base64url encoding
// of "<durable flow run id>.<tool call id>". The run id is the journal's, not the agent
// stream's, so a decision reaches the parked flow from any instance. The run id must not
// contain a dot; the tool call id may.
func NewInterruptID(flowRunID, toolCallID string) (string, error) {
	if flowRunID == "" || toolCallID == "" {
		return "", fmt.Errorf("%w: run id and tool call id are required", ErrBadInterruptID)
	}
	if strings.Contains(flowRunID, ".") {
		return "", fmt.Errorf("%w: run id %q contains a dot", ErrBadInterruptID, flowRunID)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(flowRunID + "." + toolCallID)), nil
}

// ParseInterruptID splits an id made by [NewInterruptID]. It accepts padded input too,
// since clients may re-pad base64url.
func ParseInterruptID(id string) (flowRunID, toolCallID string, err error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(id, "="))
	if err != nil {
		return "", "", fmt.Errorf("%w: %v", ErrBadInterruptID, err)
	}
	runID, callID, ok := strings.Cut(string(raw), ".")
	if !ok || runID == "" || callID == "" {
		return "", "", fmt.Errorf("%w: %q is not <run id>.<tool call id>", ErrBadInterruptID, raw)
	}
	return runID, callID, nil
}
