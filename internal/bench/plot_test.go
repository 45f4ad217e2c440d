package bench

import (
	"bytes"
	"image"
	"image/png"
	"testing"
)

// seriesDrawn counts the series colours that colour at least minPixels
// pixels of img, and reports which.
func seriesDrawn(img image.Image, minPixels int) (n int, drawn []bool) {
	counts := make([]int, len(seriesColors))
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			for i, c := range seriesColors {
				cr, cg, cb, _ := c.RGBA()
				if r == cr && g == cg && bl == cb {
					counts[i]++
				}
			}
		}
	}
	drawn = make([]bool, len(counts))
	for i, c := range counts {
		if drawn[i] = c >= minPixels; drawn[i] {
			n++
		}
	}
	return n, drawn
}

// TestGrowthPlotDrawsEverySeries renders growth.png from a small report
// and checks that it decodes at two panels wide and a row of panels per
// two, and that each panel draws as many series as the report has (the
// series' colours counted in the image).
func TestGrowthPlotDrawsEverySeries(t *testing.T) {
	var vec []VectorFigure
	for _, size := range []int{1000, 10000, 100000} {
		for i, v := range []string{VariantMemindex, VariantVec0, VariantJSON, VariantGoScan} {
			f := float64(size) / 1000 * float64(i+1)
			vec = append(vec, VectorFigure{Size: size, Variant: v, P50Ms: f, P99Ms: 2 * f, DiskBytes: int64(size) * 1600, RSSBytes: int64(size) * 400 * int64(i+1)})
		}
	}
	rep := Report{Date: "2026-12-02T06:00:00Z", Vector: vec,
		Search: []SearchFigure{{Chunks: 1000, Mode: "hybrid", P50Ms: 1.5, P99Ms: 4}, {Chunks: 10000, Mode: "hybrid", P50Ms: 3, P99Ms: 7}, {Chunks: 1000, Mode: "keyword", P50Ms: 1, P99Ms: 2}, {Chunks: 10000, Mode: "keyword", P50Ms: 2, P99Ms: 5}},
	}
	panels := growthPanels(rep)
	if len(panels) != 6 {
		t.Fatalf("growthPanels gave %d panels, want 4 of the vector suite and 2 of search (p50, p99)", len(panels))
	}
	var buf bytes.Buffer
	if err := writePlot(&buf, "test", panels); err != nil {
		t.Fatalf("writePlot: %v", err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("growth.png does not decode: %v", err)
	}
	if got, want := img.Bounds().Size(), (image.Point{X: 2 * PanelWidth, Y: 3*PanelHeight + plotTitleHeight}); got != want {
		t.Errorf("growth.png is %v, want %v (two panels wide, three rows of panels under the title)", got, want)
	}

	// One panel at a time: its series count is the number of colours drawn.
	for _, p := range panels {
		var buf bytes.Buffer
		if err := writePlot(&buf, "one panel", []plotPanel{p}); err != nil {
			t.Fatalf("writePlot(%q): %v", p.Title, err)
		}
		img, err := png.Decode(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if n, drawn := seriesDrawn(img, 20); n != len(p.Series) {
			t.Errorf("panel %q: %d series drawn %v, want %d", p.Title, n, drawn, len(p.Series))
		}
	}
	// The bytes-on-disk panel leaves go-scan out: three series.
	if n := len(panels[2].Series); n != 3 {
		t.Errorf("bytes-on-disk panel has %d series, want 3 (go-scan has no file)", n)
	}
}

// TestGrowthPlotWithoutFigures checks that a report without plotted
// figures still writes a PNG: the title band alone.
func TestGrowthPlotWithoutFigures(t *testing.T) {
	var buf bytes.Buffer
	if err := writePlot(&buf, "nothing", growthPanels(Report{})); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got := img.Bounds().Size(); got.X != 2*PanelWidth || got.Y != plotTitleHeight {
		t.Errorf("empty growth.png is %v, want %dx%d", got, 2*PanelWidth, plotTitleHeight)
	}
	if n, _ := seriesDrawn(img, 1); n != 0 {
		t.Errorf("empty growth.png draws %d series colours, want none", n)
	}
}
