package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// seriesScraper is run's stdout for the tests below. Once the header has
// printed the /metrics address, it scrapes at every progress line (the
// simulation waits while Write runs, so each scrape sees one moment of the
// run) and on the --hold line, and collects the names of the series served.
// On the --hold line it also ends the run, as Ctrl-C would.
type seriesScraper struct {
	client *http.Client
	stop   context.CancelFunc

	mu       sync.Mutex
	out      bytes.Buffer
	url      string
	names    map[string]bool
	scrapes  int
	heldSeen bool // the --hold line came, and the scrape after it succeeded
	err      error
}

var (
	progressClock = regexp.MustCompile(`^\d\d:\d\d:\d\d `)
	sampleName    = regexp.MustCompile(`(?m)^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]`)
)

func (s *seriesScraper) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.Write(p)
	if m := metricsURL.FindSubmatch(p); m != nil {
		s.url = string(m[1])
	}
	held := bytes.HasPrefix(bytes.TrimSpace(p), []byte("holding: "))
	if s.url == "" || s.err != nil || !(progressClock.Match(p) || held) {
		return len(p), nil
	}
	if err := s.scrape(); err != nil {
		s.err = err
		return len(p), nil
	}
	if held {
		s.heldSeen = true
		s.stop()
	}
	return len(p), nil
}

func (s *seriesScraper) scrape() error {
	resp, err := s.client.Get(s.url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	for _, m := range sampleName.FindAllSubmatch(body, -1) {
		s.names[string(m[1])] = true
	}
	s.scrapes++
	return nil
}

// scrapeRun runs fleetsim with args and a --metrics-addr of its own, and
// returns the scraper that watched it.
func scrapeRun(t *testing.T, args ...string) *seriesScraper {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &seriesScraper{client: client, stop: cancel, names: map[string]bool{}}
	err := run(ctx, append([]string{"--metrics-addr", "127.0.0.1:0"}, args...), s)
	if err != nil {
		t.Fatalf("fleetsim %s: %v\n%s", strings.Join(args, " "), err, s.out.String())
	}
	if s.err != nil || s.scrapes == 0 {
		t.Fatalf("scraping %q: %v after %d scrapes\n%s", s.url, s.err, s.scrapes, s.out.String())
	}
	return s
}

// monitoringSeries reads monitoring/metrics.txt, the series names the
// monitoring rules and dashboards read, generated from them: naming ->
// names.
func monitoringSeries(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open("../../monitoring/metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		set, name, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("monitoring/metrics.txt: line %q is not \"<naming> <series>\"", line)
		}
		out[set] = append(out[set], name)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestServesTheSeriesMonitoringReads runs the flapping-region scenario under
// the region rule, at half its rate so that the recovery finds evictions
// still queued (background evictions, cancellations, disruption domains:
// every series has a reason to appear), with each naming, and the failback
// and application failover scenarios for their series, and finds every
// series the monitoring rules and dashboards read on /metrics during the
// runs.
func TestServesTheSeriesMonitoringReads(t *testing.T) {
	want := monitoringSeries(t)
	if len(want) != 2 {
		t.Fatalf("monitoring/metrics.txt names the namings %v, want library and karmada", want)
	}
	base := []string{"--scenario", "scenarios/flapping-region.yaml", "--disruption-domain", "region", "--resource-eviction-rate", "0.05"}
	for set, args := range map[string][]string{
		"library": base,
		"karmada": append(base[:len(base):len(base)], "--karmada-metric-names"),
	} {
		t.Run(set, func(t *testing.T) {
			if len(want[set]) == 0 {
				t.Fatalf("monitoring/metrics.txt lists no series for %s", set)
			}
			s := scrapeRun(t, args...)
			// The failback series, from the scenario that turns failback on.
			fbArgs := []string{"--scenario", "scenarios/failback.yaml"}
			if set == "karmada" {
				fbArgs = append(fbArgs, "--karmada-metric-names")
			}
			for name := range scrapeRun(t, fbArgs...).names {
				s.names[name] = true
			}
			// The application failover series, from the scenario that
			// turns application failover on.
			afArgs := []string{"--scenario", "scenarios/application-failover.yaml"}
			if set == "karmada" {
				afArgs = append(afArgs, "--karmada-metric-names")
			}
			for name := range scrapeRun(t, afArgs...).names {
				s.names[name] = true
			}
			for _, name := range want[set] {
				if !s.names[name] {
					t.Errorf("the monitoring rules or dashboards read %s, which fleetsim never served", name)
				}
			}
			// And the flag does switch the names: the other naming's queue
			// depth series is never served.
			other := map[string]string{"library": "eviction_queue_depth", "karmada": "eviction_total"}[set]
			if s.names[other] {
				t.Errorf("the %s naming served %s", set, other)
			}
		})
	}
}

// With --hold, /metrics stays up after the summary until the run is
// interrupted, and the interrupted hold is a clean end.
func TestHoldKeepsMetricsUpAfterTheRun(t *testing.T) {
	s := scrapeRun(t, "--hold")
	if !s.heldSeen {
		t.Fatalf("no scrape after the holding line\n%s", s.out.String())
	}
	out := s.out.String()
	if i, j := strings.Index(out, "verdict:"), strings.Index(out, "holding: "); i < 0 || j < i {
		t.Errorf("the holding line does not follow the summary\n%s", out)
	}
	if !s.names["cluster_failure_rate"] {
		t.Errorf("the scrape after the run served no cluster_failure_rate")
	}
}

func TestHoldAndKarmadaNamesFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--hold"}, "--hold keeps /metrics up after the run: it needs --metrics-addr"},
		{[]string{"--compare-domains", "--karmada-metric-names"}, "cannot take --karmada-metric-names"},
	} {
		if _, err := parseFlags(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}
