package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bbc28f59/engine/internal/jsonx"
)

// LogPolicy is the vocabulary of an event log, which the journal does not know on its
// own: which events are deltas it coalesces, which events end a run's part of the log,
// and the events it stores itself when it truncates or expires a log. The journal only
// requires every event to be a JSON object whose string member "type" names its type.
//
// The package that writes a log gives its policy to the log's writer
// ([LogOptions.Policy]) and to the journal for retention ([Options.LogPolicy],
// [Journal.SetLogPolicy]); the agent package (ai) does so for its runs' logs. The zero
// LogPolicy coalesces nothing, knows no ending event, and marks truncation and expiry
// with the journal's own events, {"type":"journal.truncated","maxRows":…} and
// {"type":"journal.expired","maxAge":"…"}.
//
// A policy is read, never changed, by the writers and journals that use it: build it
// once and share it.
type LogPolicy struct {
	// Deltas are the types of events that each carry a piece of text continuing the one
	// before, such as the tokens of a message: consecutive deltas of one type and one
	// key are stored as one row (see [LogOptions] for when a row is sealed), and a delta
	// gets no seq of its own.
	Deltas []DeltaType
	// Ends are the types of events that end a run's part of the log, finished or
	// failed: such an event is committed before Write returns its seq, never batched,
	// and [LogWriter.WriteEnd] takes no other.
	Ends []string
	// Truncated returns the event stored once, in place of the deltas dropped, when a
	// log reaches maxRows ([LogOptions.MaxRows]). A writer that continues a log
	// recognises an earlier writer's marker by its bytes, so it must return the same
	// bytes for the same maxRows.
	Truncated func(maxRows int64) json.RawMessage
	// Expired returns the event retention stores when it closes a log left unfinished
	// for maxAge ([Options.UnfinishedMaxAge]); it becomes the log's only row.
	Expired func(maxAge time.Duration) json.RawMessage
}

// DeltaType is one type of delta event. A delta is coalesced with the pending row when
// that row has its type and its key; the row is the first delta with its Text member
// holding the texts of all of them joined.
type DeltaType struct {
	// Type is the event type.
	Type string
	// Key names the string member that says what a delta continues (a message, a
	// call). An event of the type without it is stored as a row of its own.
	Key string
	// Text names the string member holding a delta's text. An event of the type without
	// it, or with null, is stored as a row of its own.
	Text string
}

// plainPolicy is the zero policy, used when neither the writer nor the journal has one.
var plainPolicy = &LogPolicy{}

// check returns why the policy cannot work, or nil.
func (p *LogPolicy) check() error {
	if p == nil {
		return nil
	}
	for i, d := range p.Deltas {
		switch {
		case d.Type == "" || d.Key == "" || d.Text == "":
			return fmt.Errorf("journal: LogPolicy.Deltas[%d] needs a Type, a Key and a Text member: %+v", i, d)
		case d.Key == d.Text || d.Key == "type" || d.Text == "type":
			return fmt.Errorf(`journal: LogPolicy.Deltas[%d]: Key and Text must be two members other than "type": %+v`, i, d)
		case p.delta(d.Type) != &p.Deltas[i]:
			return fmt.Errorf("journal: LogPolicy.Deltas: %q is listed twice", d.Type)
		case p.ends(d.Type):
			return fmt.Errorf("journal: LogPolicy: %q is both a delta and an ending event", d.Type)
		}
	}
	for _, t := range p.Ends {
		if t == "" {
			return errors.New("journal: LogPolicy.Ends lists an empty type")
		}
	}
	return nil
}

// delta returns the delta type named typ, or nil when events of typ are not deltas.
func (p *LogPolicy) delta(typ string) *DeltaType {
	for i := range p.Deltas {
		if p.Deltas[i].Type == typ {
			return &p.Deltas[i]
		}
	}
	return nil
}

// ends reports whether events of typ end a run's part of the log.
func (p *LogPolicy) ends(typ string) bool {
	for _, t := range p.Ends {
		if t == typ {
			return true
		}
	}
	return false
}

// truncated is the marker stored when a log reaches maxRows.
func (p *LogPolicy) truncated(maxRows int64) json.RawMessage {
	if p.Truncated != nil {
		return p.Truncated(maxRows)
	}
	return fmt.Appendf(nil, `{"type":"journal.truncated","maxRows":%d}`, maxRows)
}

// expired is the event retention closes a log with after maxAge.
func (p *LogPolicy) expired(maxAge time.Duration) json.RawMessage {
	if p.Expired != nil {
		return p.Expired(maxAge)
	}
	return fmt.Appendf(nil, `{"type":"journal.expired","maxAge":%q}`, maxAge.String())
}

// appendRow encodes the row of deltas of this type with key, given by their fields
// ([LogWriter.WriteDelta]): type, key and text, in that order.
func (d *DeltaType) appendRow(dst []byte, key string, text []byte) []byte {
	dst = jsonx.AppendString(append(dst, `{"type":`...), d.Type)
	dst = jsonx.AppendString(append(dst, ','), d.Key)
	dst = jsonx.AppendString(append(dst, ':'), key)
	dst = jsonx.AppendString(append(dst, ','), d.Text)
	dst = jsonx.AppendBytes(append(dst, ':'), text)
	return append(dst, '}')
}
