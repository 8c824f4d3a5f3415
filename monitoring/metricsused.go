package monitoring

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// promql parses as Prometheus does by default.
var promql = parser.NewParser(parser.Options{})

// metricsUsed lists, per naming, every series name a rule or a dashboard
// query of files reads, recorded series excepted: the names fleetsim must
// serve. It fails on a query that does not parse, on a selector without a
// metric name, and on a rules file Prometheus would refuse.
func metricsUsed(files []File) ([]byte, error) {
	var lines []string
	for _, n := range Namings {
		used := map[string]bool{}
		recorded := map[string]bool{}
		for _, f := range files {
			var exprs []string
			var err error
			switch f.Path {
			case n.RulesFile():
				exprs, err = ruleExprs(f.Data, recorded)
			case n.DashboardFile():
				exprs, err = dashboardExprs(f.Data)
			default:
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("monitoring: %s: %w", f.Path, err)
			}
			for _, e := range exprs {
				names, err := seriesNames(e)
				if err != nil {
					return nil, fmt.Errorf("monitoring: %s: %w", f.Path, err)
				}
				for _, name := range names {
					used[name] = true
				}
			}
		}
		for name := range used {
			if !recorded[name] {
				lines = append(lines, n.Set+" "+name)
			}
		}
	}
	slices.Sort(lines)
	return []byte("# " + header + "\n" +
		"# Every series the rules and dashboards read, by naming (recorded series\n" +
		"# left out). examples/fleetsim's TestServesTheSeriesMonitoringReads checks\n" +
		"# that fleetsim serves each of them under that naming.\n" +
		strings.Join(lines, "\n") + "\n"), nil
}

// ruleExprs parses a rules file as Prometheus loads one, and returns its
// expressions; the series it records are added to recorded.
func ruleExprs(data []byte, recorded map[string]bool) ([]string, error) {
	groups, errs := rulefmt.Parse(data, false, model.LegacyValidation, promql, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w", errs[0])
	}
	var exprs []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recorded[r.Record] = true
			}
			exprs = append(exprs, r.Expr)
		}
	}
	return exprs, nil
}

// dashboardExprs returns the queries of a dashboard: each panel target's
// expression, and the metric a label_values variable reads.
func dashboardExprs(data []byte) ([]string, error) {
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, err
	}
	var exprs []string
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			if t.Expr == "" {
				return nil, fmt.Errorf("panel %q has a target without an expression", p.Title)
			}
			exprs = append(exprs, grafanaVars.ReplaceAllStringFunc(t.Expr, grafanaValue))
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(string); ok && v.Type == "query" {
			m := labelValues.FindStringSubmatch(q)
			if m == nil {
				return nil, fmt.Errorf("variable query %q is not label_values(metric, label)", q)
			}
			exprs = append(exprs, m[1])
		}
	}
	return exprs, nil
}

var (
	grafanaVars = regexp.MustCompile(`\$(__rate_interval|__interval|\{\w+\}|\w+)`)
	labelValues = regexp.MustCompile(`^label_values\(\s*([^,]+?)\s*,\s*\w+\s*\)$`)
)

// grafanaValue stands in for a Grafana variable, so the query parses as
// PromQL: a duration for the interval variables, a label value otherwise
// (the dashboards use variables only in those two places).
func grafanaValue(v string) string {
	if strings.HasPrefix(v, "$__") {
		return "5m"
	}
	return "x"
}

// seriesNames returns the metric names the selectors of expr read.
func seriesNames(expr string) ([]string, error) {
	e, err := promql.ParseExpr(expr)
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", expr, err)
	}
	var names []string
	var bad error
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name == "" {
			bad = fmt.Errorf("query %q: selector %s names no series", expr, vs)
		}
		names = append(names, name)
		return nil
	})
	return names, bad
}
