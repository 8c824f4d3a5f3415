package main

import (
	"fmt"
	"image/color"
	"io"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/failoverkit/failover/examples/fleetsim/internal/whatif"
)

// whatIfMaxBars bounds the surviving clusters the room panel shows: those
// receiving the most replicas.
const whatIfMaxBars = 30

// Colours of the what-if figure, beside the timeline's.
var (
	colRoomBefore = color.RGBA{R: 0x90, G: 0xca, B: 0xf9, A: 0xff}
	colRoomAfter  = color.RGBA{R: 0x15, G: 0x65, B: 0xc0, A: 0xff}
	colArriving   = color.RGBA{R: 0xef, G: 0x6c, B: 0x00, A: 0xff}
)

// writeWhatIfFigure draws the plan to path (.svg or .png, as --plot checks):
// the surviving clusters' room before and after, with the replicas
// arriving, and the evictions over time at the rate.
func writeWhatIfFigure(r *whatif.Report, path string) error {
	return writePlot(path, func(ext string, w io.Writer) error { return renderWhatIf(r, ext, w) })
}

func renderWhatIf(r *whatif.Report, ext string, w io.Writer) error {
	c, err := newCanvas(ext)
	if err != nil {
		return err
	}
	if err := drawWhatIf(r, draw.New(c)); err != nil {
		return err
	}
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("fleetsim: --plot: %w", err)
	}
	return nil
}

func drawWhatIf(r *whatif.Report, dc draw.Canvas) error {
	dc.FillPolygon(color.White, []vg.Point{dc.Min, {X: dc.Max.X, Y: dc.Min.Y}, dc.Max, {X: dc.Min.X, Y: dc.Max.Y}})
	title := textStyle(sansBold, 14)
	title.XAlign, title.YAlign = draw.XCenter, draw.YTop
	dc.FillText(title, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - 6},
		fmt.Sprintf("what if %s=%s fails: %d of %d clusters, %d bindings on them", r.Failure.By, strings.Join(r.Failure.Names, ","),
			len(r.Failure.Clusters), r.Fleet.Clusters, r.Fleet.BindingsOnFailed))
	sub := textStyle(sans, 10)
	sub.XAlign, sub.YAlign = draw.XCenter, draw.YTop
	sub.Color = color.Gray{Y: 0x40}
	t := r.Totals
	dc.FillText(sub, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - 25},
		fmt.Sprintf("%d move, %d wait for room, %d refused, %d stay, %d rescheduled by karmada-scheduler, %d paused · rate %s/s (%s rule)",
			t.Moves, t.Waits, t.Refused, t.Stays, t.Rescheduled, t.Paused, trimFloat(r.Rate.PerSecond), r.Rate.Rule))

	room, err := whatIfRoomPlot(r)
	if err != nil {
		return err
	}
	timeline := whatIfTimelinePlot(r)
	area := draw.Crop(dc, 0, 0, 0, -titleHeight)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: 14, PadLeft: 6, PadRight: 12, PadBottom: 4}
	canvases := plot.Align([][]*plot.Plot{{room}, {timeline}}, tiles, area)
	room.Draw(canvases[0][0])
	timeline.Draw(canvases[1][0])
	return nil
}

func whatIfPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sansBold, 11)
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	p.X.Label.TextStyle.Font = font.From(sans, 11)
	p.Y.Label.TextStyle.Font = font.From(sans, 11)
	p.X.Tick.Label.Font = font.From(sans, 9)
	p.Y.Tick.Label.Font = font.From(sans, 9)
	p.Y.Min = 0
	p.Y.Tick.Marker = plainTicks{}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = 6, -4
	p.Legend.TextStyle.Font = font.From(sans, 9.5)
	p.Add(plotter.NewGrid())
	return p
}

// whatIfRoomPlot is the surviving clusters' room, before and after, with
// the replicas arriving: those receiving the most, by name.
func whatIfRoomPlot(r *whatif.Report) (*plot.Plot, error) {
	rooms := slices.Clone(r.Clusters)
	slices.SortStableFunc(rooms, func(a, b whatif.Room) int { return int(b.Arriving - a.Arriving) })
	title := "surviving clusters: room for pods before and after the failover"
	if len(rooms) > whatIfMaxBars {
		title += fmt.Sprintf(" (the %d receiving the most of %d)", whatIfMaxBars, len(rooms))
		rooms = rooms[:whatIfMaxBars]
	}
	slices.SortFunc(rooms, func(a, b whatif.Room) int { return strings.Compare(a.Name, b.Name) })
	p := whatIfPlot(title, "", "pods")
	if len(rooms) == 0 {
		p.X.Min, p.X.Max = 0, 1
		return p, nil
	}
	var before, after, arriving plotter.Values
	names := make([]string, len(rooms))
	for i, c := range rooms {
		before = append(before, float64(c.PodsBefore))
		after = append(after, float64(c.PodsAfter))
		arriving = append(arriving, float64(c.Arriving))
		names[i] = c.Name
	}
	width := vg.Points(float64(min(18, 600/(3*len(rooms)))))
	for i, s := range []struct {
		name string
		v    plotter.Values
		c    color.Color
	}{{"room before", before, colRoomBefore}, {"replicas arriving", arriving, colArriving}, {"room after", after, colRoomAfter}} {
		bars, err := plotter.NewBarChart(s.v, width)
		if err != nil {
			return nil, fmt.Errorf("fleetsim: --plot: %w", err)
		}
		bars.Color = s.c
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(i-1) * width
		p.Add(bars)
		p.Legend.Add(s.name, bars)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.7, float64(len(names))-0.3
	// Headroom for the legend, above the tallest bar.
	top := 1.0
	for _, c := range rooms {
		top = max(top, float64(c.PodsBefore), float64(c.PodsAfter), float64(c.Arriving))
	}
	p.Y.Max = top * 1.3
	if len(names) > 12 {
		p.X.Tick.Label.Rotation = 0.8
		p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	}
	return p, nil
}

// whatIfTimelinePlot is the evictions over time at the rate, from the
// failure, and how many never go while the rule pauses them.
func whatIfTimelinePlot(r *whatif.Report) *plot.Plot {
	p := whatIfPlot("evictions over time at the rate", "seconds after the failure", "evictions")
	var at []float64
	for _, e := range r.Evictions {
		if e.AtSeconds != nil {
			at = append(at, *e.AtSeconds)
		}
	}
	slices.Sort(at)
	xys := plotter.XYs{{X: 0, Y: 0}}
	for i, x := range at {
		xys = append(xys, plotter.XY{X: x, Y: float64(i + 1)}) // a step: line draws them post-step
	}
	end := 1.0
	if len(at) > 0 {
		end = max(at[len(at)-1]*1.05, 1)
	}
	xys = append(xys, plotter.XY{X: end, Y: float64(len(at))})
	l := line(xys, colEvicted)
	p.Add(l)
	p.Legend.Add(fmt.Sprintf("evicted (%d)", len(at)), l)
	if r.Rate.StormHoldSeconds > 0 {
		hold := line(plotter.XYs{{X: r.Rate.StormHoldSeconds, Y: 0}, {X: r.Rate.StormHoldSeconds, Y: float64(max(len(at), 1))}}, colThreshold, 4, 3)
		p.Add(hold)
		p.Legend.Add("the storm's hold ends", hold)
	}
	if r.Totals.Paused > 0 {
		paused := line(plotter.XYs{{X: 0, Y: float64(r.Totals.Paused)}, {X: end, Y: float64(r.Totals.Paused)}}, colAbandoned, 4, 3)
		p.Add(paused)
		p.Legend.Add(fmt.Sprintf("paused by the rule: never go (%d)", r.Totals.Paused), paused)
	}
	p.X.Min, p.X.Max = 0, end
	p.Y.Max = float64(max(len(at), r.Totals.Paused, 1)) * 1.3 // headroom for the legend
	return p
}
