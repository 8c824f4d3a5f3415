package monitoring

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
)

var update = flag.Bool("update", false, "rewrite the generated files")

// TestGenerated keeps the committed files what Generate makes of the
// templates and the dashboard code, and the generated directories free of
// files Generate no longer makes.
func TestGenerated(t *testing.T) {
	files, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, f := range files {
		want[f.Path] = true
		if *update {
			if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f.Path, f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(f.Path)
		if err != nil || !bytes.Equal(got, f.Data) {
			t.Errorf("%s is stale (%v): run `go test -run TestGenerated -update .` in monitoring/ and commit the result", f.Path, err)
		}
	}
	for _, dir := range []string{"prometheus", "grafana"} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if p := dir + "/" + e.Name(); !want[p] {
				t.Errorf("%s is not generated any more: delete it", p)
			}
		}
	}
}

// alerts returns the alerting rules of a generated rules file.
func alerts(t *testing.T, n Names) []rulefmt.Rule {
	t.Helper()
	data, err := os.ReadFile(n.RulesFile())
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(data, false, model.LegacyValidation, promql, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var out []rulefmt.Rule
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

// The issues' alerts, in both namings, each with a severity, a summary,
// a description and a runbook link to a section that exists.
func TestEveryAlertHasItsRunbookSection(t *testing.T) {
	runbook, err := os.ReadFile("runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (\S+)$`).FindAllStringSubmatch(string(runbook), -1) {
		sections[m[1]] = true
	}
	wantAlerts := []string{
		"FailoverEvictionsPaused", "FailoverEvictionQueueNotDraining", "FailoverClusterFailureRateHigh",
		"FailoverInFlightEvictionsExpiring", "FailoverEvictionHandlerErrors", "FailoverDomainFullDisruption",
		"FailoverEvictionsFrozen", "FailoverEvictionStormHold", "FailoverEvictionsWaitingForTransitBudget", "FailoverFailbacksNotPlaced",
		"FailoverApplicationFailoverBadRolloutHold", "FailoverApplicationFailoversRefused",
	}
	for _, n := range Namings {
		var names []string
		for _, r := range alerts(t, n) {
			names = append(names, r.Alert)
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("%s (%s): severity %q", r.Alert, n.Set, s)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s (%s): no summary or description", r.Alert, n.Set)
			}
			if want := RunbookURL + "#" + strings.ToLower(r.Alert); r.Annotations["runbook_url"] != want {
				t.Errorf("%s (%s): runbook_url %q, want %q", r.Alert, n.Set, r.Annotations["runbook_url"], want)
			}
			if !sections[r.Alert] {
				t.Errorf("%s: runbook.md has no section \"## %s\"", r.Alert, r.Alert)
			}
		}
		if !slices.Equal(names, wantAlerts) {
			t.Errorf("%s alerts %v, want %v", n.Set, names, wantAlerts)
		}
	}
	for s := range sections {
		if strings.HasPrefix(s, "Failover") && !slices.Contains(wantAlerts, s) {
			t.Errorf("runbook.md has a section for %s, which is no alert", s)
		}
	}
}

// The two namings differ only where Karmada's names do: the Karmada rules
// file never reads the library's four queue series names, nor the other way round.
func TestNamingsDoNotMix(t *testing.T) {
	for _, n := range Namings {
		other := Karmada
		if n.Set == Karmada.Set {
			other = Library
		}
		for _, f := range []string{n.RulesFile(), n.DashboardFile()} {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{other.QueueDepth, other.KindDepth, other.Cluster} {
				if regexp.MustCompile(`\b` + name + `\b`).Match(data) {
					t.Errorf("%s reads %s, a name of the %s naming", f, name, other.Set)
				}
			}
		}
	}
}

// The dashboards carry the panels the issue asks for, and Grafana's own
// types read them back.
func TestDashboardPanels(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	want := []string{
		"Faulty clusters", "Failure rate", "Rate in force", "Queued evictions", "In flight", "Domains in full disruption",
		"Fleet health", "Disruption state by domain", "Rate in force and achieved evictions", "Evictions frozen",
		"Failure storm hold", "Waiting for a transit budget", "Failback",
		"Held by a bad rollout", "Application failover decisions",
		"Queue depth by queue", "Queue depth by cluster and kind", "Processing latency", "Outcomes",
		"In-flight evictions", "Handler error ratio",
	}
	for _, n := range Namings {
		data, err := os.ReadFile(n.DashboardFile())
		if err != nil {
			t.Fatal(err)
		}
		//lint:ignore SA1019 the classic model, as Dashboard builds it
		var d dashboard.Dashboard
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s dashboard: %v", n.Set, err)
		}
		var titles []string
		for _, p := range d.Panels {
			if p.Panel != nil && p.Panel.Title != nil {
				titles = append(titles, *p.Panel.Title)
			}
		}
		if !slices.Equal(titles, want) {
			t.Errorf("%s dashboard panels\n%q\nwant\n%q", n.Set, titles, want)
		}
	}
}

// hack/promtool.sh builds the promtool of the Prometheus this module's tests
// parse with, so `promtool test rules` and these tests read PromQL alike.
func TestPromtoolVersion(t *testing.T) {
	script, err := os.ReadFile("../hack/promtool.sh")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	s := regexp.MustCompile(`PROMETHEUS_VERSION="\$\{PROMETHEUS_VERSION:-(v[^}]+)\}"`).FindSubmatch(script)
	m := regexp.MustCompile(`github.com/prometheus/prometheus (v\S+)`).FindSubmatch(mod)
	if s == nil || m == nil || string(s[1]) != string(m[1]) {
		t.Errorf("hack/promtool.sh builds %q, go.mod requires %q: keep them equal", s, m)
	}
}
