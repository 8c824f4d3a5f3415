package main

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/failoverkit/failover/ratelimit"
)

// compare runs a scenario under the fleet rule and the region rule.
func compare(t *testing.T, args ...string) (fleet, region outcome) {
	t.Helper()
	o, err := parseFlags(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	_, runs, err := runDomains(context.Background(), o, ratelimit.DomainFleet, ratelimit.DomainRegion)
	if err != nil {
		t.Fatal(err)
	}
	return runs[0], runs[1]
}

// assertVerdicts requires every check of the verdict, the rate bound and
// the last copy among them, to pass under both rules.
func assertVerdicts(t *testing.T, runs ...outcome) {
	t.Helper()
	for _, o := range runs {
		for _, c := range o.Checks {
			if !c.Pass {
				t.Errorf("--disruption-domain=%s: check %q failed: %v", o.Domain, c.Name, c.Details)
			}
		}
	}
}

func TestRegionRuleEvacuatesDownRegionsThreeTimesSooner(t *testing.T) {
	// Two regions down, 24 of 40 clusters: the fleet rule slows every
	// eviction to the secondary rate, the region rule evicts from the two
	// fully disrupted regions at the primary rate.
	fleet, region := compare(t, "--scenario", "testdata/two-regions-down.yaml")
	assertVerdicts(t, fleet, region)
	if !fleet.Drained || !region.Drained {
		t.Fatalf("every evictable workload must leave under both rules: fleet %+v, region %+v", fleet, region)
	}
	if 3*region.Left > fleet.Left {
		t.Errorf("region: the down regions emptied in %v, fleet in %v: want at least 3× sooner", region.Left, fleet.Left)
	}
	if region.Cancelled > fleet.Cancelled {
		t.Errorf("region cancelled %d evictions unserved, fleet %d: want no more", region.Cancelled, fleet.Cancelled)
	}
	if region.Served != fleet.Served {
		t.Errorf("the same workloads must leave under both rules: fleet served %d, region %d", fleet.Served, region.Served)
	}
	if region.PeakRate > 0.5 || region.PeakMinute > 31 {
		t.Errorf("region: the total must stay within the primary rate (0.5/s, 30+1 a minute): peak %v, %d in a minute", region.PeakRate, region.PeakMinute)
	}
	if fleet.PeakRate != 0.1 {
		t.Errorf("fleet: 60%% faulty must slow every eviction to 0.1/s, peak %v", fleet.PeakRate)
	}
}

func TestRegionRuleOnTheBuiltinScenario(t *testing.T) {
	// southeastasia's 18 clusters go down while us-east-1 is still out:
	// the fleet rule crawls at 0.1/s and cancels what it has not served
	// when the region returns; the region rule serves at 0.5/s and, since
	// the items abandoned for want of a target cost no permit, gets every
	// evictable workload off the failed clusters before they recover.
	fleet, region := compare(t)
	assertVerdicts(t, fleet, region)
	if fleet.Drained || fleet.Cancelled == 0 {
		t.Errorf("fleet: want evictions cancelled unserved at the recovery, got %+v", fleet)
	}
	if !region.Drained {
		t.Errorf("region: every evictable workload must leave before the recovery, got %+v", region)
	}
	if region.Served <= fleet.Served || region.Abandoned == 0 {
		t.Errorf("region must serve more, abandoning some: fleet %+v, region %+v", fleet, region)
	}
}

func TestCompareDomainsPrintsBothRules(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--compare-domains", "--scenario", "testdata/two-regions-down.yaml"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"fleet", "region",
		"every evictable workload off the faulty clusters",
		"evictions served", "cancelled unserved", "peak total rate in force",
		"verdict                                           PASS",
		// Two regions lost within a minute are a failure storm under both
		// rules (the domain rule exempts one domain's outage only): both
		// hold 5m (--storm-confirm) before evicting, 6m38s+5m against
		// 33m10s+5m.
		"region: every evictable workload left 3.3× sooner than under fleet",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestCompareDomainsFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--compare-domains", "--json"}, "cannot take --json"},
		{[]string{"--compare-domains", "--plot", "x.svg"}, "cannot take --plot"},
		{[]string{"--compare-domains", "--disruption-domain=fleet"}, "not --disruption-domain=fleet"},
	} {
		err := run(context.Background(), tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

func TestCompareDomainsWithZone(t *testing.T) {
	o, err := parseFlags([]string{"--compare-domains", "--disruption-domain=zone"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.compare != ratelimit.DomainZone {
		t.Fatalf("--disruption-domain=zone: compares with %q", o.compare)
	}
}

func TestRecorderBoundsEachDomainByItsOwnRate(t *testing.T) {
	t0 := time.Date(2025, 1, 17, 2, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	for _, tc := range []struct {
		name    string
		permits map[string][]float64
		want    string // "" when within every bound
	}{
		{"each domain and the total within their rates", map[string][]float64{"southeastasia": {0, 2, 4}, "europe-west1": {10, 20}}, ""},
		{"a domain above its own rate, the total within", map[string][]float64{"europe-west1": {0, 4}}, `domain "europe-west1": 2 evictions in 4.0s`},
		{"domains within theirs, the total above", map[string][]float64{"southeastasia": {0, 2}, "us-east-1": {1}}, "2 evictions in 1.0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder()
			r.rate(t0, 0.5, 0.5)
			r.domainRate(t0, "southeastasia", 0.5)
			r.domainRate(t0, "us-east-1", 0.5)
			r.domainRate(t0, "europe-west1", 0.1)
			var calls []entry
			for d, ss := range tc.permits {
				for _, s := range ss {
					calls = append(calls, entry{t: at(s), domain: d})
				}
			}
			slices.SortFunc(calls, func(a, b entry) int { return a.t.Compare(b.t) })
			for _, c := range calls {
				r.permit(qRB, c.t, 0.5, 10, c.domain)
				r.setResult("evicted")
			}
			r.analyse(nil, nil, at(60))
			v := r.violations[checkRateBound]
			switch {
			case tc.want == "" && len(v) > 0:
				t.Errorf("want no violation, got %v", v)
			case tc.want != "" && (len(v) != 1 || !strings.Contains(v[0], tc.want)):
				t.Errorf("want one violation containing %q, got %v", tc.want, v)
			}
		})
	}
}
