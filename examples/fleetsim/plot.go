package main

import (
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/failoverkit/failover/ratelimit"
)

// The figure is 1200×900 pixels at 96 dpi (900×675 points); the SVG has
// the same size.
const (
	figureWidth  vg.Length = 900
	figureHeight vg.Length = 675
	figureDPI              = 96
)

// figure is what the timeline figure of a run shows. Times are minutes
// since the start.
type figure struct {
	title, subtitle string
	end             float64
	clusters        int
	cfg             ratelimit.Config
	phases          []figurePhase
	faulty, rate    plotter.XYs
	notReady        plotter.XYs
	depth           [2]plotter.XYs
	evicted         plotter.XYs
	abandoned       plotter.XYs
	cancelled       plotter.XYs
}

type figurePhase struct {
	name     string
	from, to float64
	shaded   bool // the phases of the timeline; not the steady state before them
}

// figure collects what the figure shows from a finished run.
func (s *sim) figure() *figure {
	start := s.sc.Start
	end := s.clk.Now()
	at := func(t time.Time) float64 { return t.Sub(start).Minutes() }
	var nb [2]int
	for _, b := range s.w.bindings {
		nb[b.queue]++
	}
	f := &figure{
		title: fmt.Sprintf("fleetsim %s: %d clusters, %d ResourceBindings and %d ClusterResourceBindings, %s simulated",
			s.sc.Name, len(s.w.clusters), nb[qRB], nb[qCRB], fmtMinutes(end.Sub(start).Minutes())),
		end:      at(end),
		clusters: len(s.w.clusters),
		cfg:      s.cfg,
	}
	rel, above := ">", "slow to the secondary rate"
	if f.clusters <= s.cfg.LargeClusterNumThreshold {
		rel, above = "≤", "pause"
	}
	f.subtitle = fmt.Sprintf("a fleet of %d %s --%s=%d: above --%s=%g, evictions %s · %s per queue, both queues share one Limiter",
		f.clusters, rel, ratelimit.FlagLargeClusterNumThreshold, s.cfg.LargeClusterNumThreshold,
		ratelimit.FlagUnhealthyClusterThreshold, s.cfg.UnhealthyClusterThreshold, above, plural(s.sc.Workers, "worker", "workers"))

	prev, prevName := 0.0, "steady state"
	shaded := false
	for _, p := range s.phases {
		if x := at(p.t); x > prev {
			f.phases = append(f.phases, figurePhase{prevName, prev, x, shaded})
		}
		prev, prevName, shaded = at(p.t), p.name, true
	}
	if f.end > prev {
		f.phases = append(f.phases, figurePhase{prevName, prev, f.end, shaded})
	}

	f.notReady = plotter.XYs{{X: 0, Y: float64(s.notReady0)}}
	for _, m := range s.notReady {
		f.notReady = append(f.notReady, plotter.XY{X: at(m.t), Y: float64(m.n)})
	}
	f.faulty = plotter.XYs{{X: 0, Y: 0}}
	for _, m := range s.faulty {
		f.faulty = append(f.faulty, plotter.XY{X: at(m.t), Y: float64(m.n)})
	}
	for i := range 2 {
		last := -1
		for _, d := range s.depth {
			if d.n[i] != last {
				f.depth[i] = append(f.depth[i], plotter.XY{X: at(d.t), Y: float64(d.n[i])})
				last = d.n[i]
			}
		}
	}
	rec := s.w.rec
	var ev, ab, ca int
	f.evicted, f.abandoned, f.cancelled = plotter.XYs{{}}, plotter.XYs{{}}, plotter.XYs{{}}
	for _, e := range rec.log {
		x := at(e.t)
		switch {
		case e.kind == entryRate:
			f.rate = append(f.rate, plotter.XY{X: x, Y: e.rate})
		case e.kind == entryCancel:
			ca += e.n
			f.cancelled = append(f.cancelled, plotter.XY{X: x, Y: float64(ca)})
		case e.kind == entryPermit && e.result == "evicted":
			ev++
			f.evicted = append(f.evicted, plotter.XY{X: x, Y: float64(ev)})
		case e.kind == entryPermit && e.result == "abandoned":
			ab++
			f.abandoned = append(f.abandoned, plotter.XY{X: x, Y: float64(ab)})
		}
	}
	// Every series runs to the end of the run.
	for _, xys := range []*plotter.XYs{&f.faulty, &f.notReady, &f.rate, &f.depth[0], &f.depth[1], &f.evicted, &f.abandoned, &f.cancelled} {
		if n := len(*xys); n > 0 && (*xys)[n-1].X < f.end {
			*xys = append(*xys, plotter.XY{X: f.end, Y: (*xys)[n-1].Y})
		}
	}
	return f
}

// fmtMinutes shows a number of minutes without a needless fraction.
func fmtMinutes(m float64) string {
	return strings.TrimSuffix(fmt.Sprintf("%.1f", m), ".0") + " min"
}

// Colours: one per series, readable on white and on the phases' tints.
var (
	colFaulty    = color.RGBA{R: 0xc6, G: 0x28, B: 0x28, A: 0xff}
	colNotReady  = color.RGBA{R: 0xf0, G: 0x9a, B: 0x8a, A: 0xff}
	colThreshold = color.RGBA{R: 0x6d, G: 0x1b, B: 0x1b, A: 0xff}
	colRate      = color.RGBA{R: 0x15, G: 0x65, B: 0xc0, A: 0xff}
	colReference = color.RGBA{R: 0x75, G: 0x75, B: 0x75, A: 0xff}
	colRB        = color.RGBA{R: 0x00, G: 0x89, B: 0x7b, A: 0xff}
	colCRB       = color.RGBA{R: 0xef, G: 0x6c, B: 0x00, A: 0xff}
	colEvicted   = color.RGBA{R: 0x2e, G: 0x7d, B: 0x32, A: 0xff}
	colAbandoned = color.RGBA{R: 0x8e, G: 0x24, B: 0xaa, A: 0xff}
	colCancelled = color.RGBA{R: 0x54, G: 0x6e, B: 0x7a, A: 0xff}
	phaseTints   = []color.Color{
		color.RGBA{R: 0xe3, G: 0xec, B: 0xf7, A: 0xff},
		color.RGBA{R: 0xf6, G: 0xec, B: 0xdc, A: 0xff},
	}
)

var (
	sans     = font.Font{Typeface: "Liberation", Variant: "Sans"}
	sansBold = font.Font{Typeface: "Liberation", Variant: "Sans", Weight: xfont.WeightBold}
)

func textStyle(f font.Font, size vg.Length) text.Style {
	return text.Style{Color: color.Black, Font: font.From(f, size), Handler: plot.DefaultTextHandler}
}

// writeFigure draws f into path, as SVG or PNG by its extension.
func writeFigure(f *figure, path string) error {
	return writePlot(path, func(ext string, w io.Writer) error { return renderFigure(f, ext, w) })
}

// writePlot creates path and has render draw into it, by the path's
// extension (.svg or .png); a failed drawing leaves no file behind.
func writePlot(path string, render func(ext string, w io.Writer) error) error {
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("fleetsim: --plot: %w", err)
	}
	if err := render(strings.ToLower(filepath.Ext(path)), out); err != nil {
		out.Close()
		os.Remove(path)
		return err
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("fleetsim: --plot: %w", err)
	}
	return nil
}

// figureFormat checks --plot's extension before the run, so that a typo
// does not cost a whole simulation.
func figureFormat(path string) error {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg", ".png":
		return nil
	}
	return fmt.Errorf("fleetsim: --plot %q: the file name must end in .svg or .png", path)
}

// newCanvas is a figure's canvas for ext: ".svg" or ".png".
func newCanvas(ext string) (vg.CanvasWriterTo, error) {
	switch ext {
	case ".svg":
		return vgsvg.New(figureWidth, figureHeight), nil
	case ".png":
		return vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(figureWidth, figureHeight), vgimg.UseDPI(figureDPI), vgimg.UseBackgroundColor(color.White))}, nil
	}
	return nil, fmt.Errorf("fleetsim: --plot: unknown format %q: use .svg or .png", ext)
}

// renderFigure draws f as ext (".svg" or ".png") to w.
func renderFigure(f *figure, ext string, w io.Writer) error {
	c, err := newCanvas(ext)
	if err != nil {
		return err
	}
	if err := f.draw(draw.New(c)); err != nil {
		return err
	}
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("fleetsim: --plot: %w", err)
	}
	return nil
}

// The layout, in points: a title strip, a strip for the phases' names,
// four panels sharing the time axis, and a column on the right for the
// legends, so that no legend covers data.
const (
	titleHeight  = 40
	phaseHeight  = 28
	legendWidth  = 235
	lineWidthPts = 1.6
)

func (f *figure) draw(dc draw.Canvas) error {
	dc.FillPolygon(color.White, []vg.Point{dc.Min, {X: dc.Max.X, Y: dc.Min.Y}, dc.Max, {X: dc.Min.X, Y: dc.Max.Y}})
	title := textStyle(sansBold, 14)
	title.XAlign, title.YAlign = draw.XCenter, draw.YTop
	dc.FillText(title, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - 6}, f.title)
	sub := textStyle(sans, 10)
	sub.XAlign, sub.YAlign = draw.XCenter, draw.YTop
	sub.Color = color.Gray{Y: 0x40}
	dc.FillText(sub, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - 25}, f.subtitle)

	panels := f.panels()
	rows := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		p := pn.Plot
		p.X.Min, p.X.Max = 0, f.end
		p.X.Tick.Marker = minuteTicks{labels: i == len(panels)-1}
		p.Add(plotter.NewGrid())
		rows[i] = []*plot.Plot{p}
	}
	panels[len(panels)-1].X.Label.Text = "simulated time since the start (minutes)"
	area := draw.Crop(dc, 0, -legendWidth, 0, -(titleHeight + phaseHeight))
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadY: 10, PadLeft: 6, PadRight: 10, PadBottom: 4}
	canvases := plot.Align(rows, tiles, area)
	for i, p := range panels {
		p.Draw(canvases[i][0])
		data := p.DataCanvas(canvases[i][0])
		legend := draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: dc.Max.X - legendWidth + 4, Y: data.Min.Y},
			Max: vg.Point{X: dc.Max.X - 4, Y: data.Max.Y},
		}}
		p.legend.Draw(legend)
	}
	f.drawPhaseNames(dc, panels[0].Plot, canvases[0][0])
	return nil
}

// panels are the figure's stacked plots, top to bottom.
func (f *figure) panels() []*panel {
	return []*panel{f.healthPanel(), f.ratePanel(), f.queuePanel(), f.outcomePanel()}
}

// panel is one of the figure's stacked plots, with the legend drawn in the
// column on its right rather than over its data.
type panel struct {
	*plot.Plot
	legend plot.Legend
	names  []string // the legend's entries
}

// add adds a legend entry.
func (p *panel) add(name string, thumb plot.Thumbnailer) {
	p.legend.Add(name, thumb)
	p.names = append(p.names, name)
}

// newPanel is a panel with the phases shaded behind its data.
func (f *figure) newPanel(ylabel string) *panel {
	p := &panel{Plot: plot.New(), legend: plot.NewLegend()}
	p.Y.Label.Text = ylabel
	p.Y.Label.TextStyle.Font = font.From(sans, 11)
	p.X.Label.TextStyle.Font = font.From(sans, 11)
	p.Y.Tick.Label.Font = font.From(sans, 9)
	p.X.Tick.Label.Font = font.From(sans, 9)
	p.Y.Min = 0
	p.Y.Tick.Marker = plainTicks{}
	p.legend.Top, p.legend.Left = true, true
	p.legend.TextStyle.Font = font.From(sans, 9.5)
	p.legend.ThumbnailWidth = 22
	p.legend.Padding = 2
	p.Add(phaseBands{f.phases})
	return p
}

func line(xys plotter.XYs, c color.Color, dashes ...vg.Length) *plotter.Line {
	// The series come from the run: finite numbers, in time order, so the
	// validation plotter.NewLine does is not needed (nor its error).
	l := &plotter.Line{XYs: xys, StepStyle: plotter.PostStep}
	l.LineStyle = draw.LineStyle{Color: c, Width: lineWidthPts, Dashes: dashes}
	return l
}

// flat is a horizontal line across the run at y.
func (f *figure) flat(y float64, c color.Color, dashes ...vg.Length) *plotter.Line {
	l := line(plotter.XYs{{X: 0, Y: y}, {X: f.end, Y: y}}, c, dashes...)
	l.Width = 1.1
	return l
}

func (f *figure) healthPanel() *panel {
	p := f.newPanel("clusters")
	threshold := f.cfg.UnhealthyClusterThreshold * float64(f.clusters)
	th := f.flat(threshold, colThreshold, 6, 3)
	faulty := line(f.faulty, colFaulty)
	notReady := line(f.notReady, colNotReady)
	notReady.Width = 1.1
	p.Add(th, notReady, faulty)
	p.add(fmt.Sprintf("faulty of %d (NoExecute/PreferNoExecute)", f.clusters), faulty)
	p.add("not Ready (tainted after the windows)", notReady)
	p.add(fmt.Sprintf("unhealthy-cluster-threshold %s = %s clusters", fmtPercent(f.cfg.UnhealthyClusterThreshold), trimFloat(threshold)), th)
	p.Y.Max = float64(f.clusters)
	return p
}

func (f *figure) ratePanel() *panel {
	p := f.newPanel("evictions/s")
	primary := f.flat(f.cfg.ResourceEvictionRate, colReference, 2, 2)
	secondary := f.flat(f.cfg.SecondaryResourceEvictionRate, colReference, 6, 3)
	rate := line(f.rate, colRate)
	p.Add(primary, secondary, rate)
	p.add("rate in force (0: paused)", rate)
	p.add(fmt.Sprintf("resource-eviction-rate %g/s", f.cfg.ResourceEvictionRate), primary)
	p.add(fmt.Sprintf("secondary-resource-eviction-rate %g/s", f.cfg.SecondaryResourceEvictionRate), secondary)
	top := max(f.cfg.ResourceEvictionRate, f.cfg.SecondaryResourceEvictionRate)
	for _, r := range f.rate {
		top = max(top, r.Y)
	}
	p.Y.Max = top * 1.15
	return p
}

func (f *figure) queuePanel() *panel {
	p := f.newPanel("items queued")
	rb, crb := line(f.depth[qRB], colRB), line(f.depth[qCRB], colCRB)
	p.Add(rb, crb)
	p.add(queueNames[qRB]+" queue", rb)
	p.add(queueNames[qCRB]+" queue", crb)
	top := 1.0
	for _, d := range f.depth {
		for _, v := range d {
			top = max(top, v.Y)
		}
	}
	p.Y.Max = top * 1.08
	return p
}

func (f *figure) outcomePanel() *panel {
	p := f.newPanel("items (cumulative)")
	ev, ab, ca := line(f.evicted, colEvicted), line(f.abandoned, colAbandoned), line(f.cancelled, colCancelled)
	p.Add(ev, ab, ca)
	p.add("evicted", ev)
	p.add("abandoned (nowhere to go)", ab)
	p.add("cancelled (cluster recovered)", ca)
	top := 1.0
	for _, s := range []plotter.XYs{f.evicted, f.abandoned, f.cancelled} {
		top = max(top, s[len(s)-1].Y)
	}
	p.Y.Max = top * 1.08
	return p
}

func trimFloat(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", v), "0"), ".")
}

// phaseBands shades each phase of the timeline behind a panel's data and
// marks where it starts.
type phaseBands struct{ phases []figurePhase }

func (b phaseBands) Plot(c draw.Canvas, p *plot.Plot) {
	x, _ := p.Transforms(&c)
	edge := draw.LineStyle{Color: color.Gray{Y: 0x90}, Width: 0.8, Dashes: []vg.Length{3, 2}}
	tint := 0
	for _, ph := range b.phases {
		if !ph.shaded {
			continue
		}
		x0, x1 := x(ph.from), x(ph.to)
		c.FillPolygon(phaseTints[tint%len(phaseTints)], []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
		c.StrokeLine2(edge, x0, c.Min.Y, x0, c.Max.Y)
		tint++
	}
}

// drawPhaseNames writes each phase's name above the top panel, centred on
// its band, on a second row when it would run into its neighbour.
func (f *figure) drawPhaseNames(dc draw.Canvas, top *plot.Plot, c draw.Canvas) {
	data := top.DataCanvas(c)
	x, _ := top.Transforms(&data)
	sty := textStyle(sans, 9.5)
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YBottom
	rowEnd := []vg.Length{data.Min.X - 100, data.Min.X - 100}
	for _, ph := range f.phases {
		name := ph.name
		w := sty.Width(name)
		x0, x1 := x(ph.from), x(ph.to)
		left := max((x0+x1-w)/2, data.Min.X)
		left = min(left, data.Max.X-w)
		// The lower row first; the upper one when the name would run
		// into the previous one; failing both, after the upper one's.
		row := 0
		switch {
		case left >= rowEnd[0]+6:
		case left >= rowEnd[1]+6:
			row = 1
		default:
			row = 1
			left = rowEnd[1] + 6
		}
		rowEnd[row] = left + w
		y := data.Max.Y + 3 + vg.Length(row)*13
		dc.FillText(sty, vg.Point{X: left, Y: y}, name)
	}
}

// plainTicks are the default ticks, labelled without trailing zeros
// ("25", not "25.00").
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', -1, 64)
		}
	}
	return ticks
}

// minuteTicks are the default ticks of the time axis, with their labels
// only on the bottom panel.
type minuteTicks struct{ labels bool }

func (m minuteTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plainTicks{}.Ticks(lo, hi)
	if !m.labels {
		for i := range ticks {
			ticks[i].Label = ""
		}
	}
	return ticks
}
