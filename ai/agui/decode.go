package agui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrNoType reports JSON that is not an object with a non-empty string "type". Readers
// skip such frames (the contract's readAgentEvents does), so it is a sentinel rather
// than a parse failure.
var ErrNoType = errors.New("agui: not an event object with a type")

// Decode parses one event. Known types come back as their struct value (RunStarted, not
// *RunStarted); any other type comes back as [Unknown] holding a copy of data. Valid JSON
// that is not an object with a string type gives [ErrNoType]; malformed JSON, or a known
// type whose members have the wrong JSON types, gives a descriptive error.
func Decode(data []byte) (Event, error) {
	typ, ok := leadingType(data)
	if !ok {
		var head struct {
			Type json.RawMessage `json:"type"`
		}
		if err := json.Unmarshal(data, &head); err != nil {
			if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
				return nil, ErrNoType
			}
			return nil, fmt.Errorf("agui: event is not valid JSON: %w", err)
		}
		if len(head.Type) == 0 || head.Type[0] != '"' || json.Unmarshal(head.Type, &typ) != nil || typ == "" {
			return nil, ErrNoType
		}
	}
	switch typ {
	case TypeRunStarted:
		return decodeAs[RunStarted](typ, data)
	case TypeRunFinished:
		return decodeAs[RunFinished](typ, data)
	case TypeRunError:
		return decodeAs[RunError](typ, data)
	case TypeStepStarted:
		return decodeAs[StepStarted](typ, data)
	case TypeStepFinished:
		return decodeAs[StepFinished](typ, data)
	case TypeTextMessageStart:
		return decodeAs[TextMessageStart](typ, data)
	case TypeTextMessageContent:
		return decodeAs[TextMessageContent](typ, data)
	case TypeTextMessageEnd:
		return decodeAs[TextMessageEnd](typ, data)
	case TypeToolCallStart:
		return decodeAs[ToolCallStart](typ, data)
	case TypeToolCallArgs:
		return decodeAs[ToolCallArgs](typ, data)
	case TypeToolCallEnd:
		return decodeAs[ToolCallEnd](typ, data)
	case TypeToolCallResult:
		return decodeAs[ToolCallResult](typ, data)
	case TypeCustom:
		return decodeAs[Custom](typ, data)
	case TypeStateSnapshot:
		return decodeAs[StateSnapshot](typ, data)
	case TypeStateDelta:
		return decodeAs[StateDelta](typ, data)
	case TypeMessagesSnapshot:
		return decodeAs[MessagesSnapshot](typ, data)
	case TypeReasoningStart:
		return decodeAs[ReasoningStart](typ, data)
	case TypeReasoningMessageStart:
		return decodeAs[ReasoningMessageStart](typ, data)
	case TypeReasoningMessageContent:
		return decodeAs[ReasoningMessageContent](typ, data)
	case TypeReasoningMessageEnd:
		return decodeAs[ReasoningMessageEnd](typ, data)
	case TypeReasoningEnd:
		return decodeAs[ReasoningEnd](typ, data)
	case TypeReasoningEncryptedValue:
		return decodeAs[ReasoningEncryptedValue](typ, data)
	default:
		if ok && !json.Valid(data) { // the fast path has not looked past the type
			return nil, fmt.Errorf("agui: %s event is not valid JSON", typ)
		}
		return Unknown{TypeName: typ, JSON: append(json.RawMessage(nil), data...)}, nil
	}
}

// TypeOf returns the type of an encoded event without decoding the rest of it: from the
// leading "type" member every event this package encodes opens with, else by decoding
// the object's "type" member; "" when data has none.
func TypeOf(data []byte) Type {
	if typ, ok := leadingType(data); ok {
		return typ
	}
	var head struct {
		Type Type `json:"type"`
	}
	_ = json.Unmarshal(data, &head)
	return head.Type
}

// leadingType reads the type of an object that opens with a plain "type" member, as
// every event this package encodes does, saving a full parse of the frame. Anything
// else (spaces, escapes, another member first) reports false and takes the slow path.
// A duplicate "type" member later on is ignored, where encoding/json would take the last.
func leadingType(data []byte) (Type, bool) {
	const prefix = `{"type":"`
	if !bytes.HasPrefix(data, []byte(prefix)) {
		return "", false
	}
	rest := data[len(prefix):]
	end := bytes.IndexByte(rest, '"')
	if end <= 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return "", false
	}
	return Type(rest[:end]), true
}

// decodeAs fills the struct of one known type. The struct has MarshalJSON but no
// UnmarshalJSON, so the default decoder applies and the "type" member is ignored.
func decodeAs[E Event](typ Type, data []byte) (Event, error) {
	var e E
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("agui: decode %s: %w", typ, err)
	}
	return e, nil
}
