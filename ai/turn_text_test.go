package ai

import (
	"strings"
	"testing"
)

// TestTextBlocksGatherEveryPiece writes pieces of every length up to a few blocks,
// across block boundaries, and checks the text read back at each step and after a
// release and reuse.
func TestTextBlocksGatherEveryPiece(t *testing.T) {
	var tb textBlocks
	for round := range 2 {
		var want strings.Builder
		for i := range 300 {
			piece := strings.Repeat(string(rune('a'+i%26)), i%37) + "é"
			tb.write(piece)
			want.WriteString(piece)
			if i%50 == 0 || i == 299 {
				if got := tb.String(); got != want.String() {
					t.Fatalf("round %d, after %d pieces: %d bytes read back, want %d (first difference at %d)",
						round, i+1, len(got), want.Len(), firstDiff(got, want.String()))
				}
			}
		}
		tb.write(strings.Repeat("x", 3*textBlockSize+5)) // one piece longer than a block
		want.WriteString(strings.Repeat("x", 3*textBlockSize+5))
		if got := tb.String(); got != want.String() || tb.n != want.Len() {
			t.Fatalf("round %d: a long piece read back as %d bytes, want %d", round, len(got), want.Len())
		}
		if len(tb.full)+1 != (want.Len()+textBlockSize-1)/textBlockSize {
			t.Fatalf("round %d: %d blocks for %d bytes", round, len(tb.full)+1, want.Len())
		}
		tb.release()
		if tb.n != 0 || len(tb.full) != 0 || tb.cur != nil || tb.String() != "" {
			t.Fatalf("round %d: release left %d bytes in %d blocks", round, tb.n, len(tb.full))
		}
	}
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// BenchmarkTurnText gathers a reply of 300 tokens of 13 bytes (the capacity benchmark's)
// as a turn does, against the strings.Builder the turn used before (started at 512
// bytes): B/op is what a reply leaves the collector.
func BenchmarkTurnText(b *testing.B) {
	const piece = "t1a2b3c4d5e6 "
	b.Run("blocks", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var tb textBlocks
			for range 300 {
				tb.write(piece)
			}
			if len(tb.String()) != 300*len(piece) {
				b.Fatal("short text")
			}
			tb.release()
		}
	})
	b.Run("builder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var sb strings.Builder
			sb.Grow(512)
			for range 300 {
				sb.WriteString(piece)
			}
			if len(sb.String()) != 300*len(piece) {
				b.Fatal("short text")
			}
		}
	})
}
