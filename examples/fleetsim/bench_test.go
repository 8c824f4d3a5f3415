package main

import (
	"context"
	"io"
	"path/filepath"
	"testing"
)

// BenchmarkBuiltinScenarioPlot runs the built-in scenario as `go run
// ./examples/fleetsim` does, without a figure and with each kind of
// figure: the difference is what --plot costs (the target: under 0.5 s).
func BenchmarkBuiltinScenarioPlot(b *testing.B) {
	dir := b.TempDir()
	for _, bc := range []struct {
		name string
		args []string
	}{
		{"no-plot", nil},
		{"plot-png", []string{"--plot", filepath.Join(dir, "out.png")}},
		{"plot-svg", []string{"--plot", filepath.Join(dir, "out.svg")}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := run(context.Background(), bc.args, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFigure is the figure alone, from a finished run.
func BenchmarkFigure(b *testing.B) {
	s, _ := runSim(b, "")
	f := s.figure()
	for _, ext := range []string{".png", ".svg"} {
		b.Run(ext[1:], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := renderFigure(f, ext, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
