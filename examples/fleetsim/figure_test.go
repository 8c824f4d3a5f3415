package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the committed figures (go generate does)")

// figureFile is where the committed figure of a shipped scenario lives.
func figureFile(scenario string) string {
	return filepath.Join("figures", strings.TrimSuffix(filepath.Base(scenario), ".yaml")+".png")
}

// TestFigures draws every shipped scenario, checks the picture, and holds
// the committed figures (examples/fleetsim/README.md shows them) to what
// the code draws now. `go generate` rewrites them.
func TestFigures(t *testing.T) {
	files, err := filepath.Glob("scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, _ := runSim(t, f)
			fig := s.figure()
			var buf bytes.Buffer
			if err := renderFigure(fig, ".png", &buf); err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatalf("the PNG does not decode: %v", err)
			}
			if b := img.Bounds(); b.Dx() != 1200 || b.Dy() != 900 {
				t.Errorf("size %dx%d, want 1200x900", b.Dx(), b.Dy())
			}
			assertNotBlank(t, img)
			if buf.Len() > 300<<10 {
				t.Errorf("the PNG is %d KB, want well under 300 KB", buf.Len()>>10)
			}

			path := figureFile(f)
			if *update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			committed, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v: run go generate ./examples/fleetsim", err)
			}
			want, err := png.Decode(bytes.NewReader(committed))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if n := differentPixels(img, want); n > 0 {
				t.Errorf("%s is stale: %d pixels differ from what fleetsim draws now; run go generate ./examples/fleetsim", path, n)
			}

			buf.Reset()
			if err := renderFigure(fig, ".svg", &buf); err != nil {
				t.Fatal(err)
			}
			assertSVG(t, buf.Bytes())
		})
	}
}

// assertNotBlank wants a picture with ink on it and in colour: the series.
func assertNotBlank(t *testing.T, img image.Image) {
	t.Helper()
	b := img.Bounds()
	ink, colours := 0, map[color.RGBA]bool{}
	// Every pixel: a line one pixel wide (a series at one level all run
	// long) falls between every other one.
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			if c != (color.RGBA{R: 0xff, G: 0xff, B: 0xff, A: 0xff}) {
				ink++
			}
			colours[c] = true
		}
	}
	if total := b.Dx() * b.Dy(); ink < total/10 || len(colours) < 20 {
		t.Errorf("the figure looks blank: %d of %d pixels not white, %d colours", ink, total, len(colours))
	}
	for _, c := range []color.RGBA{colFaulty, colRate, colRB, colCRB, colEvicted} {
		if !colours[c] {
			t.Errorf("no pixel of a series' colour %v: a series is missing", c)
		}
	}
}

// differentPixels counts the pixels that differ by more than a few levels
// in a channel: anti-aliasing may round differently on another
// architecture (fused multiply-add), a changed figure moves lines or text.
func differentPixels(a, b image.Image) int {
	if a.Bounds() != b.Bounds() {
		return a.Bounds().Dx() * a.Bounds().Dy()
	}
	n := 0
	const tolerance = 8 << 8
	bb := a.Bounds()
	for y := bb.Min.Y; y < bb.Max.Y; y++ {
		for x := bb.Min.X; x < bb.Max.X; x++ {
			r1, g1, b1, a1 := a.At(x, y).RGBA()
			r2, g2, b2, a2 := b.At(x, y).RGBA()
			if absDiff(r1, r2) > tolerance || absDiff(g1, g2) > tolerance || absDiff(b1, b2) > tolerance || absDiff(a1, a2) > tolerance {
				n++
			}
		}
	}
	return n
}

func absDiff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}

// assertSVG wants well-formed XML with an svg root and the title in it.
func assertSVG(t *testing.T, data []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	root := ""
	texts := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			if se.Name.Local == "text" {
				texts++
			}
		}
	}
	if root != "svg" || texts < 20 {
		t.Errorf("SVG root %q with %d text elements, want svg with the labels", root, texts)
	}
}

// Every legend entry fits the column beside the panels.
func TestFigureLegendsFit(t *testing.T) {
	for _, f := range []string{"", "scenarios/small-fleet-pause.yaml", "scenarios/flapping-region.yaml"} {
		s, _ := runSim(t, f)
		for _, p := range s.figure().panels() {
			for _, name := range p.names {
				if w := p.legend.TextStyle.Width(name) + p.legend.ThumbnailWidth; w > legendWidth-10 {
					t.Errorf("legend entry %q is %.0fpt wide, the column %dpt", name, w, legendWidth)
				}
			}
		}
	}
}

func TestPlotFlag(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"out.png", "out.svg", "OUT.PNG"} {
		path := filepath.Join(dir, name)
		if err := run(t.Context(), []string{"--scenario", "scenarios/small-fleet-pause.yaml", "--plot", path}, io.Discard); err != nil {
			t.Fatalf("--plot %s: %v", name, err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
			t.Errorf("--plot %s wrote nothing: %v", name, err)
		}
	}
	for _, bad := range []string{"out.pdf", "out", "out.svg.txt"} {
		err := run(t.Context(), []string{"--scenario", "scenarios/small-fleet-pause.yaml", "--plot", filepath.Join(dir, bad)}, io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), "fleetsim: --plot") || !strings.Contains(err.Error(), ".svg or .png") {
			t.Errorf("--plot %s: got %v, want an error naming the flag and the formats", bad, err)
		}
	}
	err := run(t.Context(), []string{"--scenario", "scenarios/small-fleet-pause.yaml", "--plot", filepath.Join(dir, "no-such-dir", "x.png")}, io.Discard)
	if err == nil || !strings.HasPrefix(err.Error(), "fleetsim: --plot") {
		t.Errorf("--plot into a missing directory: got %v", err)
	}
}
