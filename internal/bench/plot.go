package bench

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"slices"
	"strings"
)

// The growth plot is drawn with the standard library only: log-log line
// charts of each figure against corpus size, labelled with a 3×5 pixel font.

// plotSeries is one line of a panel: Y against X, both positive.
type plotSeries struct {
	Name string
	X, Y []float64
}

// plotPanel is one chart; XLabel names its x axis (default CHUNKS).
type plotPanel struct {
	Title  string
	XLabel string
	Series []plotSeries
}

var plotPalette = color.Palette{
	color.RGBA{255, 255, 255, 255}, // background
	color.RGBA{0, 0, 0, 255},       // text, axes
	color.RGBA{220, 220, 220, 255}, // grid
	color.RGBA{31, 119, 180, 255},
	color.RGBA{214, 39, 40, 255},
	color.RGBA{44, 160, 44, 255},
	color.RGBA{255, 127, 14, 255},
	color.RGBA{148, 103, 189, 255},
	color.RGBA{140, 86, 75, 255},
}

const (
	colBG, colInk, colGrid, colFirstSeries = 0, 1, 2, 3
	PanelWidth, PanelHeight                = 480, 330
	marginL, marginR, marginT, marginB     = 64, 12, 30, 34
	fontScale                              = 2
)

// writePlot draws panels two to a row and encodes the PNG to w.
func writePlot(w io.Writer, title string, panels []plotPanel) error {
	rows := (len(panels) + 1) / 2
	img := image.NewPaletted(image.Rect(0, 0, 2*PanelWidth, rows*PanelHeight+24), plotPalette)
	plotText(img, 8, 6, title, colInk)
	for i, p := range panels {
		plotDrawPanel(img, (i%2)*PanelWidth, 24+(i/2)*PanelHeight, p)
	}
	return png.Encode(w, img)
}

func plotDrawPanel(img *image.Paletted, ox, oy int, p plotPanel) {
	plotText(img, ox+marginL, oy+8, p.Title, colInk)
	var xs, ys []float64
	for _, s := range p.Series {
		for i := range s.X {
			if s.X[i] > 0 && s.Y[i] > 0 {
				xs, ys = append(xs, s.X[i]), append(ys, s.Y[i])
			}
		}
	}
	x0, y0 := ox+marginL, oy+PanelHeight-marginB // plot origin (bottom left)
	pw, ph := PanelWidth-marginL-marginR, PanelHeight-marginT-marginB
	if len(xs) == 0 {
		plotText(img, x0+10, oy+PanelHeight/2, "NO DATA", colInk)
		return
	}
	xlo, xhi := plotLogRange(xs)
	ylo, yhi := plotLogRange(ys)
	px := func(x float64) int { return x0 + int(math.Round((math.Log10(x)-xlo)/(xhi-xlo)*float64(pw))) }
	py := func(y float64) int { return y0 - int(math.Round((math.Log10(y)-ylo)/(yhi-ylo)*float64(ph))) }
	// Grid and tick labels at 1, 2, 5 × powers of ten.
	for e := math.Floor(ylo); e <= yhi; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if l := math.Log10(v); l < ylo-1e-9 || l > yhi+1e-9 || (m != 1 && yhi-ylo > 3) {
				continue
			}
			y := py(v)
			plotHLine(img, x0, x0+pw, y, colGrid)
			lbl := plotTick(v)
			plotText(img, x0-4-plotTextWidth(lbl), y-5, lbl, colInk)
		}
	}
	for e := math.Floor(xlo); e <= xhi; e++ {
		v := math.Pow(10, e)
		if l := math.Log10(v); l < xlo-1e-9 || l > xhi+1e-9 {
			continue
		}
		x := px(v)
		plotVLine(img, x, y0-ph, y0, colGrid)
		lbl := plotTick(v)
		plotText(img, x-plotTextWidth(lbl)/2, y0+6, lbl, colInk)
	}
	plotHLine(img, x0, x0+pw, y0, colInk)
	plotVLine(img, x0, y0-ph, y0, colInk)
	xl := p.XLabel
	if xl == "" {
		xl = "CHUNKS"
	}
	plotText(img, x0+pw/2-plotTextWidth(xl)/2, y0+20, xl, colInk)
	for i, s := range p.Series {
		c := uint8(colFirstSeries + i%(len(plotPalette)-colFirstSeries))
		var lx, ly int
		first := true
		for j := range s.X {
			if s.X[j] <= 0 || s.Y[j] <= 0 {
				continue
			}
			x, y := px(s.X[j]), py(s.Y[j])
			plotRect(img, x-3, y-3, x+3, y+3, c)
			if !first {
				plotLine(img, lx, ly, x, y, c)
			}
			lx, ly, first = x, y, false
		}
		// Legend, top left inside the plot.
		ly0 := y0 - ph + 6 + i*14
		plotRect(img, x0+8, ly0, x0+20, ly0+8, c)
		plotText(img, x0+26, ly0-1, s.Name, colInk)
	}
}

// logRange returns log10 bounds that hold every value, padded, and at
// least one decade wide.
func plotLogRange(v []float64) (lo, hi float64) {
	lo, hi = math.Log10(slices.Min(v)), math.Log10(slices.Max(v))
	if hi-lo < 1 {
		mid := (lo + hi) / 2
		lo, hi = mid-0.5, mid+0.5
	}
	pad := (hi - lo) * 0.08
	return lo - pad, hi + pad
}

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

func plotHLine(img *image.Paletted, x0, x1, y int, c uint8) {
	for x := x0; x <= x1; x++ {
		plotPix(img, x, y, c)
	}
}

func plotVLine(img *image.Paletted, x, y0, y1 int, c uint8) {
	for y := y0; y <= y1; y++ {
		plotPix(img, x, y, c)
	}
}

func plotRect(img *image.Paletted, x0, y0, x1, y1 int, c uint8) {
	for y := y0; y <= y1; y++ {
		plotHLine(img, x0, x1, y, c)
	}
}

// line draws a two-pixel-thick segment (Bresenham).
func plotLine(img *image.Paletted, x0, y0, x1, y1 int, c uint8) {
	dx, dy := plotAbs(x1-x0), -plotAbs(y1-y0)
	sx, sy := plotSign(x1-x0), plotSign(y1-y0)
	e := dx + dy
	for {
		plotRect(img, x0, y0, x0+1, y0+1, c)
		if x0 == x1 && y0 == y1 {
			return
		}
		if e2 := 2 * e; e2 >= dy {
			e += dy
			x0 += sx
		} else {
			e += dx
			y0 += sy
		}
	}
}

func plotAbs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func plotSign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

func plotPix(img *image.Paletted, x, y int, c uint8) {
	if (image.Point{x, y}).In(img.Rect) {
		img.SetColorIndex(x, y, c)
	}
}

// glyphs is a 3×5 pixel font: five rows of three bits, most significant
// bit left. Lower-case letters are drawn as upper case.
var glyphs = map[rune][5]uint8{
	'0': {7, 5, 5, 5, 7}, '1': {2, 6, 2, 2, 7}, '2': {7, 1, 7, 4, 7}, '3': {7, 1, 7, 1, 7}, '4': {5, 5, 7, 1, 1},
	'5': {7, 4, 7, 1, 7}, '6': {7, 4, 7, 5, 7}, '7': {7, 1, 1, 1, 1}, '8': {7, 5, 7, 5, 7}, '9': {7, 5, 7, 1, 7},
	'A': {2, 5, 7, 5, 5}, 'B': {6, 5, 6, 5, 6}, 'C': {3, 4, 4, 4, 3}, 'D': {6, 5, 5, 5, 6}, 'E': {7, 4, 6, 4, 7},
	'F': {7, 4, 6, 4, 4}, 'G': {3, 4, 5, 5, 3}, 'H': {5, 5, 7, 5, 5}, 'I': {7, 2, 2, 2, 7}, 'J': {1, 1, 1, 5, 2},
	'K': {5, 5, 6, 5, 5}, 'L': {4, 4, 4, 4, 7}, 'M': {5, 7, 7, 5, 5}, 'N': {6, 5, 5, 5, 5}, 'O': {2, 5, 5, 5, 2},
	'P': {6, 5, 6, 4, 4}, 'Q': {2, 5, 5, 6, 3}, 'R': {6, 5, 6, 5, 5}, 'S': {3, 4, 2, 1, 6}, 'T': {7, 2, 2, 2, 2},
	'U': {5, 5, 5, 5, 7}, 'V': {5, 5, 5, 5, 2}, 'W': {5, 5, 7, 7, 5}, 'X': {5, 5, 2, 5, 5}, 'Y': {5, 5, 2, 2, 2},
	'Z': {7, 1, 2, 4, 7}, '.': {0, 0, 0, 0, 2}, ',': {0, 0, 0, 2, 4}, '-': {0, 0, 7, 0, 0}, '/': {1, 1, 2, 4, 4},
	'(': {2, 4, 4, 4, 2}, ')': {2, 1, 1, 1, 2}, '%': {5, 1, 2, 4, 5}, ':': {0, 2, 0, 2, 0}, '+': {0, 2, 7, 2, 0},
	'=': {0, 7, 0, 7, 0}, '_': {0, 0, 0, 0, 7}, '@': {7, 5, 7, 4, 7}, '>': {4, 2, 1, 2, 4}, '<': {1, 2, 4, 2, 1},
	' ': {},
}

func plotTextWidth(s string) int { return len([]rune(s)) * 4 * fontScale }

// drawText writes s with its top-left corner at (x, y).
func plotText(img *image.Paletted, x, y int, s string, c uint8) {
	for _, r := range strings.ToUpper(s) {
		g, ok := glyphs[r]
		if !ok {
			g = [5]uint8{7, 7, 7, 7, 7}
		}
		for row := 0; row < 5; row++ {
			for col := 0; col < 3; col++ {
				if g[row]&(4>>col) != 0 {
					plotRect(img, x+col*fontScale, y+row*fontScale, x+col*fontScale+fontScale-1, y+row*fontScale+fontScale-1, c)
				}
			}
		}
		x += 4 * fontScale
	}
}
