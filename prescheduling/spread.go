package prescheduling

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/failoverkit/failover"
)

// spreadKey is a spread constraint ready to group clusters.
type spreadKey struct {
	field    SpreadFieldValue // empty when label is set
	label    string
	min, max int
	index    int // position in placement.spreadConstraints
}

func newSpreadKey(sc SpreadConstraint, path string) (spreadKey, error) {
	if sc.SpreadByLabel != "" {
		if sc.SpreadByField != "" {
			return spreadKey{}, fmt.Errorf("prescheduling: placement.%s: spreadByField %q and spreadByLabel %q cannot both be set", path, sc.SpreadByField, sc.SpreadByLabel)
		}
		if msgs := validation.IsQualifiedName(sc.SpreadByLabel); len(msgs) > 0 {
			return spreadKey{}, fmt.Errorf("prescheduling: placement.%s.spreadByLabel: %q: %s", path, sc.SpreadByLabel, strings.Join(msgs, "; "))
		}
		return spreadKey{label: sc.SpreadByLabel}, nil
	}
	switch sc.SpreadByField {
	case "":
		return spreadKey{field: SpreadByFieldCluster}, nil
	case SpreadByFieldCluster, SpreadByFieldRegion, SpreadByFieldZone, SpreadByFieldProvider:
		return spreadKey{field: sc.SpreadByField}, nil
	}
	return spreadKey{}, fmt.Errorf("prescheduling: placement.%s.spreadByField: unknown value %q: want cluster, region, zone or provider", path, sc.SpreadByField)
}

// has reports whether c passes Karmada's SpreadConstraint filter for k: a
// constraint by provider, region or zone rules out a cluster without that
// field (by zone, a cluster's zones are its Zones, else its Zone, as the API
// server moves a lone zone into zones). By cluster or label, every cluster
// passes.
func (k *spreadKey) has(c *failover.Cluster) bool {
	switch k.field {
	case SpreadByFieldProvider:
		return c.Provider != ""
	case SpreadByFieldRegion:
		return c.Region != ""
	case SpreadByFieldZone:
		return len(c.Zones) > 0 || c.Zone != ""
	}
	return true
}

// noun names n groups in a Reason: "1 region", "3 values of label team".
func (k *spreadKey) noun(n int) string {
	switch {
	case k.field == "" && n == 1:
		return "1 value of label " + k.label
	case k.field == "":
		return fmt.Sprintf("%d values of label %s", n, k.label)
	case n == 1:
		return "1 " + string(k.field)
	}
	return fmt.Sprintf("%d %ss", n, k.field)
}

// one names a single group: "one region", "one value of label team".
func (k *spreadKey) one() string {
	if k.field == "" {
		return "one value of label " + k.label
	}
	return "one " + string(k.field)
}
