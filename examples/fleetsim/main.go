// Command fleetsim runs the failover primitives end to end on a simulated
// fleet: clusters lose and regain their Ready condition, ClusterTaintPolicies
// taint them, a Tracker turns taints into fleet health, two eviction queues
// share one Limiter, every eviction passes the pre-scheduling check, evicted
// copies become graceful eviction tasks that the Assessor clears. Time is
// simulated, so a half-hour outage plays in well under a second.
//
//	go run ./examples/fleetsim                      # the built-in scenario
//	go run ./examples/fleetsim --scenario my.yaml   # your own (see REFERENCE.md)
//	go run ./examples/fleetsim --disruption-domain region   # health judged per region
//	go run ./examples/fleetsim --compare-domains    # fleet and region side by side
//
// It prints a line per simulated interval, a summary per phase and a verdict
// of checks; it exits non-zero when a check fails.
package main

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"

	"github.com/failoverkit/failover/metrics"
	"github.com/failoverkit/failover/ratelimit"
)

// The committed figures of the shipped scenarios (README.md shows them).
//go:generate go test -run ^TestFigures$ -update .

// builtinScenario is what runs without --scenario.
const builtinScenario = "scenarios/regional-outage.yaml"

//go:embed scenarios/*.yaml
var scenarios embed.FS

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	var ec exitCoder
	switch {
	case err == nil:
	case errors.Is(err, pflag.ErrHelp):
	case errors.Is(err, errChecksFailed):
		os.Exit(1)
	case errors.As(err, &ec):
		fmt.Fprintln(os.Stderr, err)
		os.Exit(ec.ExitCode())
	default:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

type options struct {
	scenario     string
	speed        float64
	realtime     bool
	metricsAddr  string
	hold         bool
	karmadaNames bool
	json         bool
	plot         string
	rates        ratelimit.Config
	flags        *pflag.FlagSet
	// compare is, with --compare-domains, the domain rule to compare the
	// fleet rule with; "" otherwise.
	compare ratelimit.Domain
	whatIf  whatIfOptions
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{rates: ratelimit.DefaultConfig()}
	fs := pflag.NewFlagSet("fleetsim", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.scenario, "scenario", "", "scenario file (YAML, see examples/fleetsim/REFERENCE.md); default: the built-in "+builtinScenario)
	fs.Float64Var(&o.speed, "speed", 0, "simulated seconds per wall-clock second; 0: as fast as possible")
	fs.BoolVar(&o.realtime, "realtime", false, "run in real time (--speed 1)")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve the Prometheus series on http://ADDR/metrics while the simulation runs, e.g. 127.0.0.1:9090")
	fs.BoolVar(&o.hold, "hold", false, "with --metrics-addr: keep serving /metrics after the run, until interrupted (Ctrl-C), for a Prometheus to scrape and a dashboard to show")
	fs.BoolVar(&o.karmadaNames, "karmada-metric-names", false, "give the queue series Karmada v1.18's names and labels (metrics.WithKarmadaNames), as a Karmada fork serves them")
	fs.BoolVar(&o.json, "json", false, "print a machine-readable summary (JSON) instead of the tables")
	fs.StringVar(&o.plot, "plot", "", "also draw the run's timeline to FILE: .svg or .png by its extension")
	compare := fs.Bool("compare-domains", false, "run the scenario under --disruption-domain=fleet and under region "+
		"(or the --disruption-domain given) and print the outcomes side by side instead of one run's lines")
	o.rates.AddFlags(fs)
	o.whatIf.addFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: fleetsim [flags]\n\nSimulates a fleet of clusters failing over, on a simulated clock.\n\nFlags:\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("fleetsim: %w (see fleetsim --help for the flags)", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("fleetsim: unexpected argument %q (flags only; see --help)", fs.Arg(0))
	}
	if o.speed < 0 || o.speed != o.speed {
		return nil, fmt.Errorf("fleetsim: --speed %v: must be ≥ 0", o.speed)
	}
	if o.hold && o.metricsAddr == "" {
		return nil, errors.New("fleetsim: --hold keeps /metrics up after the run: it needs --metrics-addr")
	}
	if o.plot != "" {
		if err := figureFormat(o.plot); err != nil {
			return nil, err
		}
	}
	if o.realtime {
		if fs.Changed("speed") && o.speed != 1 {
			return nil, errors.New("fleetsim: --realtime and --speed disagree: give one")
		}
		o.speed = 1
	}
	o.flags = fs
	if err := o.whatIf.check(fs); err != nil {
		return nil, err
	}
	if *compare {
		if err := o.compareWith(); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// compareWith sets, for --compare-domains, the domain rule to compare the
// fleet rule with, and rejects the flags that cannot go with it.
func (o *options) compareWith() error {
	for _, f := range []string{"json", "plot", "metrics-addr", "hold", "karmada-metric-names", "speed", "realtime"} {
		if o.flags.Changed(f) {
			return fmt.Errorf("fleetsim: --compare-domains prints a table of two runs made as fast as they go: it cannot take --%s", f)
		}
	}
	switch d := o.rates.DisruptionDomain; {
	case !o.flags.Changed(ratelimit.FlagDisruptionDomain):
		o.compare = ratelimit.DomainRegion
	case d.PerDomain():
		o.compare = d
	default:
		return fmt.Errorf("fleetsim: --compare-domains compares --%s=fleet with region, zone or provider: give one of those, not --%s=%s",
			ratelimit.FlagDisruptionDomain, ratelimit.FlagDisruptionDomain, d)
	}
	return nil
}

// rateConfig is the scenario's rates, overridden by the flags given.
func (o *options) rateConfig(sc *scenario) (ratelimit.Config, error) {
	cfg := ratelimit.DefaultConfig()
	if v := sc.Rates.ResourceEvictionRate; v != nil {
		cfg.ResourceEvictionRate = *v
	}
	if v := sc.Rates.SecondaryResourceEvictionRate; v != nil {
		cfg.SecondaryResourceEvictionRate = *v
	}
	if v := sc.Rates.UnhealthyClusterThreshold; v != nil {
		cfg.UnhealthyClusterThreshold = *v
	}
	if v := sc.Rates.LargeClusterNumThreshold; v != nil {
		cfg.LargeClusterNumThreshold = *v
	}
	if o.flags.Changed(ratelimit.FlagResourceEvictionRate) {
		cfg.ResourceEvictionRate = o.rates.ResourceEvictionRate
	}
	if o.flags.Changed(ratelimit.FlagSecondaryResourceEvictionRate) {
		cfg.SecondaryResourceEvictionRate = o.rates.SecondaryResourceEvictionRate
	}
	if o.flags.Changed(ratelimit.FlagUnhealthyClusterThreshold) {
		cfg.UnhealthyClusterThreshold = o.rates.UnhealthyClusterThreshold
	}
	if o.flags.Changed(ratelimit.FlagLargeClusterNumThreshold) {
		cfg.LargeClusterNumThreshold = o.rates.LargeClusterNumThreshold
	}
	if v := sc.Rates.DisruptionDomain; v != nil {
		cfg.DisruptionDomain = *v
	}
	if o.flags.Changed(ratelimit.FlagDisruptionDomain) {
		cfg.DisruptionDomain = o.rates.DisruptionDomain
	}
	if o.flags.Changed(ratelimit.FlagStormThreshold) {
		cfg.StormThreshold = o.rates.StormThreshold
	}
	if o.flags.Changed(ratelimit.FlagStormWindow) {
		cfg.StormWindow = o.rates.StormWindow
	}
	if o.flags.Changed(ratelimit.FlagStormConfirm) {
		cfg.StormConfirm = o.rates.StormConfirm
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("fleetsim: rates (scenario %s and flags): %w", sc.Source, err)
	}
	return cfg, nil
}

func readScenario(path string) (*scenario, error) {
	if path == "" {
		data, err := scenarios.ReadFile(builtinScenario)
		if err != nil {
			return nil, err
		}
		return loadScenario("built-in "+builtinScenario, bytes.NewReader(data))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("fleetsim: %w", err)
	}
	defer f.Close()
	return loadScenario(path, f)
}

// run is the whole program: parse args, run the scenario, print to stdout.
// It returns errChecksFailed when a check failed.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}
	if o.whatIf.on {
		return runWhatIf(ctx, o, stdout, os.Stderr)
	}
	if o.compare != "" {
		return compareDomains(ctx, o, o.compare, stdout)
	}
	sc, err := readScenario(o.scenario)
	if err != nil {
		return err
	}
	cfg, err := o.rateConfig(sc)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	progress := stdout
	if o.json {
		progress = nil
	}
	var metricsOpts []metrics.Option
	if o.karmadaNames {
		metricsOpts = append(metricsOpts, metrics.WithKarmadaNames())
	}
	s, err := newSim(sc, cfg, reg, progress, o.speed, metricsOpts...)
	if err != nil {
		return err
	}
	// Listen before printing anything: a busy address is a bad flag, and
	// fails the run before it starts.
	var ln net.Listener
	if o.metricsAddr != "" {
		if ln, err = net.Listen("tcp", o.metricsAddr); err != nil {
			return fmt.Errorf("fleetsim: --metrics-addr: %w", err)
		}
	}
	if !o.json {
		printHeader(stdout, s)
	}
	if ln != nil {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		served := make(chan struct{})
		go func() {
			defer close(served)
			_ = srv.Serve(ln) // returns when Shutdown closes it
		}()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
			<-served
		}()
		if !o.json {
			fmt.Fprintf(stdout, "metrics: http://%s/metrics\n\n", ln.Addr())
		}
	}
	runErr := s.run(ctx)
	r := s.report()
	if o.json {
		if err := printJSON(stdout, r); err != nil {
			return err
		}
	} else {
		printSummary(stdout, r)
	}
	if o.plot != "" && runErr == nil {
		if err := writeFigure(s.figure(), o.plot); err != nil {
			return err
		}
	}
	if o.hold && ctx.Err() == nil {
		fmt.Fprintf(stdout, "\nholding: http://%s/metrics stays up until interrupted (Ctrl-C)\n", ln.Addr())
		<-ctx.Done()
	}
	if runErr != nil {
		return fmt.Errorf("fleetsim: stopped at %s: %w", fmtClock(s.clk.Now().Sub(sc.Start)), runErr)
	}
	if !r.Pass {
		return errChecksFailed
	}
	return nil
}
