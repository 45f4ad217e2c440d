package bench

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The growth plot: log-log charts of each figure against corpus size, two
// panels to a row, drawn with gonum.org/v1/plot (fonts, axes, ticks and
// legends come with it).

// plotSeries is one line of a panel: Y against X, both positive (other
// points are left out).
type plotSeries struct {
	Name string
	X, Y []float64
}

// plotPanel is one chart; XLabel names its x axis (default chunks).
type plotPanel struct {
	Title  string
	XLabel string
	YLabel string
	Series []plotSeries
}

const (
	// PanelWidth and PanelHeight are the size of one panel of growth.png,
	// in pixels; the image is two panels wide, a row of panels per two,
	// under a title band of plotTitleHeight pixels.
	PanelWidth, PanelHeight = 480, 330
	plotTitleHeight         = 28
	plotDPI                 = 96
)

// seriesColors are the series' colours, in order (then again).
var seriesColors = []color.Color{
	color.RGBA{31, 119, 180, 255},
	color.RGBA{214, 39, 40, 255},
	color.RGBA{44, 160, 44, 255},
	color.RGBA{255, 127, 14, 255},
	color.RGBA{148, 103, 189, 255},
	color.RGBA{140, 86, 75, 255},
}

// pixels is n pixels of growth.png as a length.
func pixels(n int) vg.Length { return vg.Length(n) * vg.Inch / plotDPI }

// writePlot draws panels two to a row under title and encodes the PNG to w.
func writePlot(w io.Writer, title string, panels []plotPanel) error {
	rows := (len(panels) + 1) / 2
	c := vgimg.NewWith(vgimg.UseWH(pixels(2*PanelWidth), pixels(rows*PanelHeight+plotTitleHeight)),
		vgimg.UseDPI(plotDPI), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(c)
	dc.FillText(text.Style{Color: color.Black, Font: font.From(plot.DefaultFont, 13), YAlign: draw.YCenter, Handler: plot.DefaultTextHandler},
		vg.Point{X: pixels(8), Y: dc.Max.Y - pixels(plotTitleHeight/2)}, title)
	tiles := draw.Tiles{Rows: max(rows, 1), Cols: 2, PadTop: pixels(plotTitleHeight)}
	for i, p := range panels {
		pl, err := panelPlot(p)
		if err != nil {
			return fmt.Errorf("panel %q: %w", p.Title, err)
		}
		pl.Draw(draw.Crop(tiles.At(dc, i%2, i/2), pixels(6), -pixels(10), pixels(4), -pixels(6)))
	}
	_, err := vgimg.PngCanvas{Canvas: c}.WriteTo(w)
	return err
}

// panelPlot is p as a log-log plot with a line and points per series and
// a legend of them.
func panelPlot(p plotPanel) (*plot.Plot, error) {
	pl := plot.New()
	pl.Title.Text = p.Title
	pl.X.Label.Text = cmp.Or(p.XLabel, "chunks")
	pl.Y.Label.Text = p.YLabel
	pl.X.Scale, pl.Y.Scale = plot.LogScale{}, plot.LogScale{}
	pl.X.Tick.Marker, pl.Y.Tick.Marker = logTicks{}, logTicks{}
	pl.Legend.Top, pl.Legend.Left = true, true
	pl.Legend.TextStyle.Font.Size = vg.Points(8)
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = color.Gray{Y: 220}, color.Gray{Y: 220}
	pl.Add(grid)
	var xs, ys []float64
	for i, s := range p.Series {
		var xy plotter.XYs
		for j := range s.X {
			if j < len(s.Y) && s.X[j] > 0 && s.Y[j] > 0 {
				xy = append(xy, plotter.XY{X: s.X[j], Y: s.Y[j]})
				xs, ys = append(xs, s.X[j]), append(ys, s.Y[j])
			}
		}
		if len(xy) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, err
		}
		c := seriesColors[i%len(seriesColors)]
		line.Color, line.Width = c, vg.Points(1.5)
		points.Color, points.Shape, points.Radius = c, draw.CircleGlyph{}, vg.Points(2.5)
		pl.Add(line, points)
		pl.Legend.Add(s.Name, line, points)
	}
	if len(xs) == 0 {
		pl.Title.Text += " (no data)"
		xs, ys = []float64{1}, []float64{1}
	}
	pl.X.Min, pl.X.Max = logRange(xs)
	pl.Y.Min, pl.Y.Max = logRange(ys)
	return pl, nil
}

// logRange returns bounds that hold every value of v, padded by 8 % of
// the range in log10, and at least one decade wide.
func logRange(v []float64) (lo, hi float64) {
	l, h := math.Log10(slices.Min(v)), math.Log10(slices.Max(v))
	if h-l < 1 {
		mid := (l + h) / 2
		l, h = mid-0.5, mid+0.5
	}
	pad := (h - l) * 0.08
	return math.Pow(10, l-pad), math.Pow(10, h+pad)
}

// logTicks marks 1, 2 and 5 times the powers of ten with labels (only 1
// over more than three decades) and the other multiples without.
type logTicks struct{}

// Ticks returns the ticks between lo and hi.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	wide := math.Log10(hi)-math.Log10(lo) > 3
	var out []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for m := 1.0; m < 10; m++ {
			v := m * math.Pow(10, e)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (!wide && (m == 2 || m == 5)) {
				t.Label = plotTick(v)
			}
			out = append(out, t)
		}
	}
	return out
}

// plotTick labels v with a K, M or G suffix from a thousand up.
func plotTick(v float64) string {
	switch {
	case v >= 1e9:
		return plotTrim(v/1e9) + "G"
	case v >= 1e6:
		return plotTrim(v/1e6) + "M"
	case v >= 1e3:
		return plotTrim(v/1e3) + "K"
	case v >= 1:
		return plotTrim(v)
	default:
		return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.4f", v), "0"), ".")
	}
}

func plotTrim(v float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.1f", v), "0"), ".")
}
