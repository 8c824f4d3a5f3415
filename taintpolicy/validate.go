package taintpolicy

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/failoverkit/failover"
)

// ValidateOptions tunes ValidateWith. The zero value is what Validate uses.
type ValidateOptions struct {
	// DenyNoExecute refuses taints with effect NoExecute, which evict every
	// workload that does not tolerate them. Karmada's webhook refuses them
	// unless --allow-no-execute-taint-policy is set. Default false: allowed.
	DenyNoExecute bool
	// APIVersion is the group/version policies are served under, for a
	// controller that serves ClusterTaintPolicy from a CRD of its own group
	// (with this package's schema) rather than Karmada's: for example
	// "fleet.example.com/v1alpha1". Policies must then carry it, or no
	// apiVersion at all; Karmada's is refused like any other, since a
	// document in a group the controller does not serve is more likely a
	// mistake than a policy. The kind stays ClusterTaintPolicy. Default
	// (empty): APIVersion, Karmada's policy.karmada.io/v1alpha1.
	APIVersion string
}

// apiVersion is the apiVersion opts accept.
func (o ValidateOptions) apiVersion() string {
	if o.APIVersion == "" {
		return APIVersion
	}
	return o.APIVersion
}

// check refuses an APIVersion that is not a group/version a CRD can serve.
func (o ValidateOptions) check() error {
	if o.APIVersion == "" {
		return nil
	}
	group, version, ok := strings.Cut(o.APIVersion, "/")
	var why []string
	switch {
	case !ok || strings.Contains(version, "/"):
		why = []string{"want group/version, e.g. fleet.example.com/v1alpha1"}
	case group == "":
		why = []string{"the core group serves no ClusterTaintPolicy: name a group"}
	default:
		why = append(why, content.IsDNS1123Subdomain(group)...)
		for _, msg := range validation.IsDNS1035Label(version) {
			why = append(why, "version: "+msg)
		}
	}
	if len(why) > 0 {
		return fmt.Errorf("taintpolicy: ValidateOptions.APIVersion %q: %s", o.APIVersion, strings.Join(why, "; "))
	}
	return nil
}

var (
	supportedOperators = []MatchConditionOperator{MatchConditionOpIn, MatchConditionOpNotIn}
	supportedStatuses  = []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}
	supportedEffects   = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, failover.TaintEffectPreferNoExecute, corev1.TaintEffectNoExecute}
)

// Validate reports every problem of p, each with its field path (for example
// spec.matchConditions[0].operator). NoExecute taints are allowed; use
// ValidateWith to refuse them. A nil or empty list means p is valid.
func (p *ClusterTaintPolicy) Validate() field.ErrorList {
	return p.validate(ValidateOptions{}, nil) // the zero options are valid
}

// ValidateWith is Validate with options.
func (p *ClusterTaintPolicy) ValidateWith(opts ValidateOptions) field.ErrorList {
	return p.validate(opts, opts.check())
}

// validate is ValidateWith with the options already checked: optsErr is
// what opts.check returned. LoadPoliciesWith and the Evaluator check their
// options once, refusing bad ones, and pass nil for every policy.
func (p *ClusterTaintPolicy) validate(opts ValidateOptions, optsErr error) field.ErrorList {
	var errs field.ErrorList
	if optsErr != nil {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), p.APIVersion, optsErr.Error()))
	} else if want := opts.apiVersion(); p.APIVersion != "" && p.APIVersion != want {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), p.APIVersion, []string{want}))
	}
	if p.Kind != "" && p.Kind != Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), p.Kind, []string{Kind}))
	}
	if p.Name == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), "the evaluator orders and identifies policies by name"))
	}

	spec := &p.Spec
	path := field.NewPath("spec")
	if spec.Released() {
		if spec.windowed() {
			for _, f := range []struct {
				name string
				set  bool
			}{
				{"targetCluster", spec.TargetCluster != nil},
				{"matchConditions", len(spec.MatchConditions) > 0},
				{"taintsToAdd", len(spec.TaintsToAdd) > 0},
			} {
				if f.set {
					errs = append(errs, field.Forbidden(path.Child(f.name),
						"may not be combined with the released form (targetClusters, addOnConditions, removeOnConditions, taints)"))
				}
			}
		}
		errs = append(errs, validateAffinity(spec.TargetClusters, path.Child("targetClusters"))...)
		errs = append(errs, validateConditions(spec.AddOnConditions, path.Child("addOnConditions"))...)
		errs = append(errs, validateConditions(spec.RemoveOnConditions, path.Child("removeOnConditions"))...)
		if len(spec.Taints) == 0 {
			errs = append(errs, field.Required(path.Child("taints"), "the released form needs at least one taint"))
		}
		seen := make(map[taintID]int, len(spec.Taints))
		for i, t := range spec.Taints {
			tp := path.Child("taints").Index(i)
			errs = append(errs, validateTaint(t.Key, t.Effect, t.Value, tp, opts)...)
			errs = append(errs, checkDuplicate(seen, taintID{t.Key, t.Effect}, i, tp)...)
			// 0 is allowed here, unlike in taintsToAdd: it is "no window",
			// what an unset field means in the released form.
			if t.AddOnMatchSeconds != nil && *t.AddOnMatchSeconds < 0 {
				errs = append(errs, field.Invalid(tp.Child("addOnMatchSeconds"), *t.AddOnMatchSeconds, "must be at least 0"))
			}
			if t.RemoveOnMismatchSeconds != nil && *t.RemoveOnMismatchSeconds < 0 {
				errs = append(errs, field.Invalid(tp.Child("removeOnMismatchSeconds"), *t.RemoveOnMismatchSeconds, "must be at least 0"))
			}
		}
		return errs
	}

	errs = append(errs, validateAffinity(spec.TargetCluster, path.Child("targetCluster"))...)
	errs = append(errs, validateConditions(spec.MatchConditions, path.Child("matchConditions"))...)
	if len(spec.TaintsToAdd) == 0 {
		// As in the released form: a policy that adds nothing is a mistake.
		errs = append(errs, field.Required(path.Child("taintsToAdd"), "a policy needs at least one taint to add"))
	}
	seen := make(map[taintID]int, len(spec.TaintsToAdd))
	for i, t := range spec.TaintsToAdd {
		tp := path.Child("taintsToAdd").Index(i)
		errs = append(errs, validateTaint(t.Key, t.Effect, t.Value, tp, opts)...)
		errs = append(errs, checkDuplicate(seen, taintID{t.Key, t.Effect}, i, tp)...)
		if t.AddOnMatchSeconds != nil && *t.AddOnMatchSeconds < 1 {
			errs = append(errs, field.Invalid(tp.Child("addOnMatchSeconds"), *t.AddOnMatchSeconds, "must be at least 1"))
		}
		if t.RemoveOnMismatchSeconds != nil && *t.RemoveOnMismatchSeconds < 1 {
			errs = append(errs, field.Invalid(tp.Child("removeOnMismatchSeconds"), *t.RemoveOnMismatchSeconds, "must be at least 1"))
		}
	}
	return errs
}

// taintID is what makes two taints the same taint: Kubernetes allows one
// taint per key and effect.
type taintID struct {
	key    string
	effect corev1.TaintEffect
}

func checkDuplicate(seen map[taintID]int, id taintID, i int, path *field.Path) field.ErrorList {
	if first, ok := seen[id]; ok {
		return field.ErrorList{field.Duplicate(path, id.key+":"+string(id.effect)+" (first at index "+strconv.Itoa(first)+")")}
	}
	seen[id] = i
	return nil
}

func validateTaint(key string, effect corev1.TaintEffect, value string, path *field.Path, opts ValidateOptions) field.ErrorList {
	var errs field.ErrorList
	if key == "" {
		errs = append(errs, field.Required(path.Child("key"), ""))
	} else if msgs := content.IsLabelKey(key); len(msgs) > 0 {
		errs = append(errs, field.Invalid(path.Child("key"), key, strings.Join(msgs, "; ")))
	}
	switch {
	case effect == "":
		errs = append(errs, field.Required(path.Child("effect"), ""))
	case effect == corev1.TaintEffectNoExecute && opts.DenyNoExecute:
		errs = append(errs, field.Forbidden(path.Child("effect"),
			"NoExecute evicts every workload that does not tolerate it and is refused here; use PreferNoExecute or NoSchedule"))
	case !slices.Contains(supportedEffects, effect):
		errs = append(errs, field.NotSupported(path.Child("effect"), effect, supportedEffects))
	}
	if msgs := content.IsLabelValue(value); len(msgs) > 0 {
		errs = append(errs, field.Invalid(path.Child("value"), value, strings.Join(msgs, "; ")))
	}
	return errs
}

func validateConditions(conds []MatchCondition, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range conds {
		cp := path.Index(i)
		if c.ConditionType == "" {
			errs = append(errs, field.Required(cp.Child("conditionType"), ""))
		}
		if !slices.Contains(supportedOperators, c.Operator) {
			errs = append(errs, field.NotSupported(cp.Child("operator"), c.Operator, supportedOperators))
		}
		if len(c.StatusValues) == 0 {
			errs = append(errs, field.Required(cp.Child("statusValues"), "at least one of True, False, Unknown"))
		}
		for j, s := range c.StatusValues {
			if !slices.Contains(supportedStatuses, s) {
				errs = append(errs, field.NotSupported(cp.Child("statusValues").Index(j), s, supportedStatuses))
			}
		}
	}
	return errs
}

// validateAffinity checks each selector on its own, so that an error points
// at the selector (and the expression) that does not parse.
func validateAffinity(a *failover.ClusterAffinity, path *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if a.LabelSelector != nil {
		only := failover.ClusterAffinity{LabelSelector: a.LabelSelector}
		if err := only.Validate(); err != nil {
			errs = append(errs, field.Invalid(path.Child("labelSelector"), metav1.FormatLabelSelector(a.LabelSelector), trimRoot(err)))
		}
	}
	if a.FieldSelector != nil {
		for i, e := range a.FieldSelector.MatchExpressions {
			only := failover.ClusterAffinity{FieldSelector: &failover.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{e}}}
			if err := only.Validate(); err != nil {
				errs = append(errs, field.Invalid(path.Child("fieldSelector", "matchExpressions").Index(i),
					e.Key+" "+string(e.Operator)+" "+strings.Join(e.Values, ","), trimRoot(err)))
			}
		}
	}
	return errs
}

// trimRoot drops the root package's "failover: clusterAffinity.<field>:"
// prefix, which repeats the path the field error already carries.
func trimRoot(err error) string {
	if ae := (*failover.AffinityError)(nil); errors.As(err, &ae) {
		return ae.Err.Error()
	}
	return err.Error()
}
