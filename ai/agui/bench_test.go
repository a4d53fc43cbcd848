package agui_test

import (
	"encoding/json"
	"testing"

	"github.com/bbc28f59/engine/ai/agui"
)

// BenchmarkMarshal measures the per-token cost of encoding the hottest event through
// encoding/json, and BenchmarkAppendJSON through the allocation-free path.
func BenchmarkMarshal(b *testing.B) {
	ev := agui.Event(agui.TextMessageContent{MessageID: "m-1", Delta: "a typical token"})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(ev); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecode measures the client's per-frame decoding cost.
func BenchmarkDecode(b *testing.B) {
	data := []byte(`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"a typical token"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := agui.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	ev := agui.Event(agui.TextMessageContent{MessageID: "m-1", Delta: "a typical token"})
	b.ReportAllocs()
	buf := make([]byte, 0, 256)
	for b.Loop() {
		var err error
		if buf, err = agui.AppendJSON(buf[:0], ev); err != nil {
			b.Fatal(err)
		}
	}
}
