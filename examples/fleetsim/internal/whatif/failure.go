package whatif

import (
	"fmt"
	"slices"
	"strings"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
)

// Failure is what fails: every cluster of some regions or zones, or some
// clusters by name (--fail region=NAME, zone=NAME, clusters=A,B).
type Failure struct {
	// By is FailRegion, FailZone or FailClusters.
	By string
	// Names are the regions, zones or clusters that fail.
	Names []string
}

// The kinds of failure --fail names.
const (
	FailRegion   = "region"
	FailZone     = "zone"
	FailClusters = "clusters"
)

// ParseFailure reads --fail: region=NAME, zone=NAME or clusters=A,B (a
// comma-separated list of names for each).
func ParseFailure(s string) (Failure, error) {
	by, list, ok := strings.Cut(s, "=")
	if !ok {
		return Failure{}, usageErr("--fail %q: want region=NAME, zone=NAME or clusters=NAME[,NAME…]", s)
	}
	switch by {
	case FailRegion, FailZone, FailClusters:
	default:
		return Failure{}, usageErr("--fail %q: %q is not region, zone or clusters", s, by)
	}
	var names []string
	for n := range strings.SplitSeq(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			return Failure{}, usageErr("--fail %q: an empty name in %q", s, list)
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return Failure{By: by, Names: names}, nil
}

// String is the failure as --fail takes it.
func (f Failure) String() string { return f.By + "=" + strings.Join(f.Names, ",") }

// resolve returns the names of the clusters f fails, sorted, or an error
// naming each value of f that no cluster has. A cluster in several zones
// fails with a zone failure only when every one of its zones fails.
func (f Failure) resolve(clusters []clusterv1alpha1.Cluster) ([]string, error) {
	found := map[string]bool{}
	var out []string
	for i := range clusters {
		c := &clusters[i]
		hit := false
		switch f.By {
		case FailRegion:
			if slices.Contains(f.Names, c.Spec.Region) {
				hit = true
				found[c.Spec.Region] = true
			}
		case FailZone:
			zones := c.Spec.Zones
			if len(zones) == 0 && c.Spec.Zone != "" {
				zones = []string{c.Spec.Zone}
			}
			all := len(zones) > 0
			for _, z := range zones {
				if slices.Contains(f.Names, z) {
					found[z] = true
				} else {
					all = false
				}
			}
			hit = all
		case FailClusters:
			if slices.Contains(f.Names, c.Name) {
				hit = true
				found[c.Name] = true
			}
		}
		if hit {
			out = append(out, c.Name)
		}
	}
	var unknown []string
	for _, n := range f.Names {
		if !found[n] {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		what := map[string]string{FailRegion: "no cluster is in region", FailZone: "no cluster is in zone", FailClusters: "no cluster is named"}[f.By]
		return nil, &ExitError{Code: ExitUnknownName, Err: fmt.Errorf("fleetsim: --fail %s: %s %s (the control plane has %d clusters%s)",
			f, what, quoteAll(unknown), len(clusters), known(f.By, clusters))}
	}
	if len(out) == 0 {
		return nil, &ExitError{Code: ExitUnknownName, Err: fmt.Errorf("fleetsim: --fail %s: no cluster lies wholly in it", f)}
	}
	slices.Sort(out)
	return out, nil
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// known lists, for an error, the regions or zones the fleet has.
func known(by string, clusters []clusterv1alpha1.Cluster) string {
	if by == FailClusters {
		return ""
	}
	set := map[string]bool{}
	for i := range clusters {
		c := &clusters[i]
		if by == FailRegion {
			if c.Spec.Region != "" {
				set[c.Spec.Region] = true
			}
			continue
		}
		for _, z := range c.Spec.Zones {
			set[z] = true
		}
		if c.Spec.Zone != "" {
			set[c.Spec.Zone] = true
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "; none has a " + by
	}
	if len(names) > 10 {
		names = append(names[:10], "…")
	}
	return "; its " + by + "s: " + strings.Join(names, ", ")
}
