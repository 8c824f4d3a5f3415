package whatif

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/failoverkit/failover/karmada"
)

// PageSize is how many objects one list call asks for.
const PageSize = 500

// Scheme is the Karmada scheme the planner reads with: clusters, policies
// and work.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clusterv1alpha1.Install, policyv1alpha1.Install, workv1alpha2.Install} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Connect returns a client for the control plane of the kubeconfig at
// path, and the server's name for errors. It only reads (Read calls List,
// nothing else).
func Connect(path string) (client.Reader, string, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, "", &ExitError{Code: ExitUnreachable, Err: fmt.Errorf("fleetsim: --kubeconfig %s: %w", path, err)}
	}
	server := fmt.Sprintf("%s (--kubeconfig %s)", cfg.Host, path)
	cfg.UserAgent = "fleetsim-what-if"
	s, err := Scheme()
	if err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, "", classify("connecting to "+server, err)
	}
	return c, server, nil
}

// Read lists the Clusters, ClusterTaintPolicies, ResourceBindings and
// ClusterResourceBindings, PageSize at a time, printing a progress line
// to progress (nil: none) while it reads. Any error ends the read: a
// partial fleet is never planned on. ClusterTaintPolicies are read as
// unstructured so that the windows of the fork's CRD extension are kept,
// and converted by karmada.FromUnstructuredClusterTaintPolicy.
func Read(ctx context.Context, c client.Reader, server string, progress io.Writer) (*Input, error) {
	in := &Input{}
	pr := &progressLine{w: progress}
	defer pr.done()

	err := list(ctx, c, &clusterv1alpha1.ClusterList{}, func(l *clusterv1alpha1.ClusterList) int {
		in.Clusters = append(in.Clusters, l.Items...)
		return len(in.Clusters)
	}, pr.counter("Clusters"))
	if err != nil {
		return nil, classify("listing Clusters on "+server, err)
	}
	ul := &unstructured.UnstructuredList{}
	ul.SetGroupVersionKind(karmada.ClusterTaintPolicyGVK.GroupVersion().WithKind("ClusterTaintPolicyList"))
	var raw []unstructured.Unstructured
	err = list(ctx, c, ul, func(l *unstructured.UnstructuredList) int {
		raw = append(raw, l.Items...)
		return len(raw)
	}, pr.counter("ClusterTaintPolicies"))
	if err != nil {
		return nil, classify("listing ClusterTaintPolicies on "+server, err)
	}
	for i := range raw {
		raw[i].SetGroupVersionKind(karmada.ClusterTaintPolicyGVK)
		p, err := karmada.FromUnstructuredClusterTaintPolicy(&raw[i])
		if err != nil {
			return nil, &ExitError{Code: ExitBadObject, Err: fmt.Errorf("fleetsim: ClusterTaintPolicy %s cannot be used: %w", raw[i].GetName(), err)}
		}
		in.Policies = append(in.Policies, p)
	}
	err = list(ctx, c, &workv1alpha2.ResourceBindingList{}, func(l *workv1alpha2.ResourceBindingList) int {
		in.ResourceBindings = append(in.ResourceBindings, l.Items...)
		return len(in.ResourceBindings)
	}, pr.counter("ResourceBindings"))
	if err != nil {
		return nil, classify("listing ResourceBindings on "+server, err)
	}
	err = list(ctx, c, &workv1alpha2.ClusterResourceBindingList{}, func(l *workv1alpha2.ClusterResourceBindingList) int {
		in.ClusterResourceBindings = append(in.ClusterResourceBindings, l.Items...)
		return len(in.ClusterResourceBindings)
	}, pr.counter("ClusterResourceBindings"))
	if err != nil {
		return nil, classify("listing ClusterResourceBindings on "+server, err)
	}
	return in, nil
}

// list reads every page of a list into keep, which returns the count kept
// so far, and reports each page to page.
func list[L client.ObjectList](ctx context.Context, c client.Reader, l L, keep func(L) int, page func(n int, remaining *int64)) error {
	opts := []client.ListOption{client.Limit(PageSize)}
	for {
		if err := c.List(ctx, l, opts...); err != nil {
			return err
		}
		n := keep(l)
		page(n, l.GetRemainingItemCount())
		cont := l.GetContinue()
		if cont == "" {
			return nil
		}
		opts = []client.ListOption{client.Limit(PageSize), client.Continue(cont)}
	}
}

// progressLine rewrites one line on w as pages arrive, once a list takes
// more than one page (a small fleet reads without a word).
type progressLine struct {
	w      io.Writer
	parts  []string
	counts []int64
	shown  bool
}

func (p *progressLine) counter(what string) func(n int, remaining *int64) {
	p.parts = append(p.parts, what)
	p.counts = append(p.counts, 0)
	i := len(p.parts) - 1
	return func(n int, remaining *int64) {
		p.counts[i] = int64(n)
		if p.w == nil || (!p.shown && (remaining == nil || *remaining == 0) && n <= PageSize) {
			return
		}
		p.shown = true
		line := "reading the control plane:"
		for j := 0; j <= i; j++ {
			line += fmt.Sprintf(" %d %s", p.counts[j], p.parts[j])
			if j == i && remaining != nil && *remaining > 0 {
				line += fmt.Sprintf(" (of about %d)", p.counts[j]+*remaining)
			}
			if j < i {
				line += ","
			}
		}
		fmt.Fprintf(p.w, "\r%s\033[K", line)
	}
}

func (p *progressLine) done() {
	if p.w != nil && p.shown {
		fmt.Fprintln(p.w)
	}
}

// classify gives an error reading the control plane its exit code and
// says what it means.
func classify(what string, err error) error {
	var ue *url.Error
	var ne net.Error
	switch {
	case apierrors.IsForbidden(err):
		return &ExitError{Code: ExitForbidden, Err: fmt.Errorf("fleetsim: %s: forbidden: the kubeconfig's user needs get and list on it (%w)", what, err)}
	case apierrors.IsUnauthorized(err):
		return &ExitError{Code: ExitForbidden, Err: fmt.Errorf("fleetsim: %s: unauthorized: the kubeconfig's credentials are refused (%w)", what, err)}
	case meta.IsNoMatchError(err), apierrors.IsNotFound(err):
		return &ExitError{Code: ExitUnreachable, Err: fmt.Errorf("fleetsim: %s: the server does not serve this kind: is it a Karmada control plane (v1.18)? (%w)", what, err)}
	case errors.As(err, &ue), errors.As(err, &ne):
		return &ExitError{Code: ExitUnreachable, Err: fmt.Errorf("fleetsim: %s: the server cannot be reached: %w", what, err)}
	}
	return &ExitError{Code: ExitUnreachable, Err: fmt.Errorf("fleetsim: %s: %w", what, err)}
}
