// Package capacityplot draws the capacity benchmark's figures (bench/capacity)
// with gonum/plot: token-delay p99 against concurrent conversations, and server memory per
// conversation, one line per target. It lives in the lab module so the SDK's go.mod does
// not carry a plotting library.
package capacityplot

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/bbc28f59/engine/bench/capacity"
)

// Files are the plots [Save] writes, by name.
var Files = []string{"capacity-delay.png", "capacity-memory.png"}

// Save writes the report's plots into dir as PNG files ([Files]) and returns their paths.
func Save(rep capacity.Report, dir string) ([]string, error) {
	plots := []*plot.Plot{Delay(rep), Memory(rep)}
	var paths []string
	for i, p := range plots {
		path := filepath.Join(dir, Files[i])
		if err := p.Save(8*vg.Inch, 5*vg.Inch, path); err != nil {
			return nil, fmt.Errorf("capacityplot: %s: %w", path, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// Delay plots each target's token-delay p99 against its concurrent conversations, on a
// log scale, with the threshold the knee is read at. The legend sits below the lines,
// in room the axis leaves for it.
func Delay(rep capacity.Report) *plot.Plot {
	p := plot.New()
	p.Title.Text = "Token delay p99 against concurrent conversations" + label(rep)
	p.X.Label.Text = "concurrent conversations"
	p.Y.Label.Text = "token delay p99 (ms, log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = false, false
	maxX, minY, maxY := 1.0, math.Inf(1), 0.0
	lines(p, rep, func(l capacity.Level) float64 {
		v := math.Max(0.1, float64(l.DelayP99)) // a log scale has no zero
		maxX, minY, maxY = math.Max(maxX, float64(l.Conversations)), math.Min(minY, v), math.Max(maxY, v)
		return v
	})
	thr := float64(rep.Threshold) / 1e6
	if thr > 0 {
		fn := plotter.NewFunction(func(float64) float64 { return thr })
		fn.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
		fn.Color = color.Gray{Y: 96}
		p.Add(fn)
		p.Legend.Add(fmt.Sprintf("threshold %g ms", thr), fn)
		maxY = math.Max(maxY, thr)
	}
	if maxY > 0 {
		// Two decades below the lowest line leave the legend room under the lines.
		p.Y.Min, p.Y.Max = math.Max(0.01, minY/100), maxY*1.5
	}
	p.X.Min, p.X.Max = 0, maxX*1.05
	p.Add(plotter.NewGrid())
	return p
}

// Memory plots each target's growth of server resident memory per open conversation
// (over the server before the ramp) against its concurrent conversations. The legend
// sits above the lines, in room the axis leaves for it.
func Memory(rep capacity.Report) *plot.Plot {
	p := plot.New()
	p.Title.Text = "Server memory per conversation (resident growth ÷ conversations)" + label(rep)
	p.X.Label.Text = "concurrent conversations"
	p.Y.Label.Text = "KiB per conversation"
	p.Legend.Top = true
	maxY := 0.0
	lines(p, rep, func(l capacity.Level) float64 {
		v := float64(l.RSSPerConv) / 1024
		if !math.IsNaN(v) {
			maxY = math.Max(maxY, v)
		}
		return v
	})
	p.Add(plotter.NewGrid())
	p.Y.Min = 0
	if maxY > 0 {
		p.Y.Max = maxY * 1.7
	}
	return p
}

// lines adds one line per measured target: y of each level with a known value, by
// conversations (a ramp's bisection steps come back in between).
func lines(p *plot.Plot, rep capacity.Report, y func(capacity.Level) float64) {
	for i, r := range rep.Results {
		if r.Ramp == nil {
			continue
		}
		levels := slices.SortedFunc(slices.Values(r.Ramp.Levels), func(a, b capacity.Level) int {
			return cmp.Compare(a.Conversations, b.Conversations)
		})
		var xys plotter.XYs
		for _, l := range levels {
			v := y(l)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			xys = append(xys, plotter.XY{X: float64(l.Conversations), Y: v})
		}
		if len(xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			continue // NewLinePoints refuses only NaN and Inf, dropped above
		}
		c := palette[i%len(palette)]
		line.Color, points.Color = c, c
		line.Width = vg.Points(1.5)
		if i >= len(palette) {
			line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		}
		points.Shape = draw.CircleGlyph{}
		p.Add(line, points)
		p.Legend.Add(r.Target, line, points)
	}
}

func label(rep capacity.Report) string {
	if rep.Label == "" {
		return ""
	}
	return " (" + rep.Label + ")"
}

// palette tells eight lines apart, dark enough on white.
var palette = []color.Color{
	color.RGBA{R: 0x00, G: 0x00, B: 0x00, A: 0xff},
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff},
}
