package capacityplot

import (
	"image/png"
	"os"
	"testing"
	"time"

	"github.com/bbc28f59/engine/bench/capacity"
)

// TestMain lets the test binary serve the ramp's target, as the capacity command does.
func TestMain(m *testing.M) {
	capacity.MaybeServe()
	os.Exit(m.Run())
}

// TestRampAndPlots runs the smallest ramp against a deliberately slow raw server (every
// token holds a process-wide lock for 2 ms), so a knee appears within seconds, and
// decodes the plots it draws back: PNG images of the size asked for. No timing is
// asserted: only that the ramp found a failing level and the plots are well formed.
func TestRampAndPlots(t *testing.T) {
	t.Parallel()
	rep, err := capacity.Run(t.Context(), capacity.Options{
		Targets:   []string{"raw"},
		SlowToken: 2 * time.Millisecond,
		Idle:      -1,
		Ramp: capacity.RampOptions{Pace: capacity.Pace{Tokens: 20, Rate: 100, Jitter: 0.2}, Start: 2, Growth: 2, Refine: 1,
			Warmup: 300 * time.Millisecond, Window: 700 * time.Millisecond, Budget: 30 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	if r.Error != "" || r.Ramp == nil || r.Ramp.Bounded {
		t.Fatalf("the ramp found no knee: %+v", r)
	}
	paths, err := Save(rep, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != len(Files) {
		t.Fatalf("%d plots written, want %d", len(paths), len(Files))
	}
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b := img.Bounds()
		if b.Dx() != 8*96 || b.Dy() != 5*96 {
			t.Fatalf("%s: %dx%d pixels, want 768x480 (8x5 in at 96 dpi)", path, b.Dx(), b.Dy())
		}
		colours := map[[4]uint32]bool{}
		for y := b.Min.Y; y < b.Max.Y; y += 2 {
			for x := b.Min.X; x < b.Max.X; x += 2 {
				r, g, bl, a := img.At(x, y).RGBA()
				colours[[4]uint32{r, g, bl, a}] = true
			}
		}
		if len(colours) < 3 {
			t.Fatalf("%s is blank: %d colours", path, len(colours))
		}
	}
}
