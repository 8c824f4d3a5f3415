//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/controllers"
	"github.com/failoverkit/failover/ratelimit"
)

// The identity examples/karmadafork/deploy/rbac.yaml binds. The fork runs
// impersonating it, so it holds exactly the rights of the shipped manifest.
const (
	forkNamespace      = "karmada-system"
	forkServiceAccount = "failover-karmadafork"
	// suiteLabel keeps each subtest's objects apart: a subtest's managers
	// cache only the objects carrying its value.
	suiteLabel = "e2e.failoverkit.io/suite"
	// forkTaintKey is the taint the released-form policy adds.
	forkTaintKey = "cluster.karmada.io/not-ready"
)

var (
	forkScheme     = runtime.NewScheme()
	forkSchemeOnce sync.Once
)

func scheme(t *testing.T) *runtime.Scheme {
	forkSchemeOnce.Do(func() { require.NoError(t, controllers.AddToScheme(forkScheme)) })
	return forkScheme
}

// adminClient is a controller-runtime client with the test's own (admin)
// rights: it plays Karmada's scheduler, its agents and the users.
func adminClient(t *testing.T) client.Client {
	c, err := client.New(env.config, client.Options{Scheme: scheme(t)})
	require.NoError(t, err)
	return c
}

// forkConfig is the API server as the deployed ServiceAccount sees it.
func forkConfig() *rest.Config {
	cfg := rest.CopyConfig(env.config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + forkNamespace + ":" + forkServiceAccount,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + forkNamespace, "system:authenticated"},
	}
	return cfg
}

// applyForkManifests creates examples/karmadafork/deploy/rbac.yaml as it
// is, checks that deployment.yaml runs two replicas as its ServiceAccount,
// and that the ServiceAccount cannot do more than the fork needs.
func applyForkManifests(t *testing.T) {
	t.Helper()
	ctx := ctxFor(t)
	c := adminClient(t)
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: forkNamespace}})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	// Each test that runs the fork applies them; the first creates them.
	for _, obj := range readManifests(t, "rbac.yaml") {
		if err := c.Create(ctx, obj); !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err, "creating %s %s", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName())
		}
	}
	deps := readManifests(t, "deployment.yaml")
	require.Len(t, deps, 1)
	dep, ok := deps[0].(*appsv1.Deployment)
	require.True(t, ok, "deployment.yaml holds a %T", deps[0])
	require.Equal(t, int32(2), ptr.Deref(dep.Spec.Replicas, 1), "replicas")
	require.Equal(t, forkServiceAccount, dep.Spec.Template.Spec.ServiceAccountName)

	restricted, err := client.New(forkConfig(), client.Options{Scheme: scheme(t)})
	require.NoError(t, err)
	err = restricted.Delete(ctx, &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "no-such-binding"}})
	require.True(t, apierrors.IsForbidden(err), "the fork's ServiceAccount may delete bindings: %v", err)
	err = restricted.Create(ctx, &policyv1alpha1.ClusterTaintPolicy{ObjectMeta: metav1.ObjectMeta{Name: "forbidden"}})
	require.True(t, apierrors.IsForbidden(err), "the fork's ServiceAccount may create policies: %v", err)
}

// readManifests decodes a multi-document file of deploy/ into typed objects.
func readManifests(t *testing.T, name string) []client.Object {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "examples", "karmadafork", "deploy", name))
	require.NoError(t, err)
	var out []client.Object
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var tm metav1.TypeMeta
		require.NoError(t, yaml.Unmarshal([]byte(doc), &tm))
		if tm.Kind == "" {
			continue
		}
		obj, err := scheme(t).New(tm.GroupVersionKind())
		require.NoError(t, err, "kind %s in %s", tm.GroupVersionKind(), name)
		require.NoError(t, yaml.UnmarshalStrict([]byte(doc), obj), "in %s", name)
		out = append(out, obj.(client.Object))
	}
	return out
}

// suite is one subtest's world: its clusters, bindings and policies carry
// its label, and its managers see nothing else.
type suite struct {
	t     *testing.T
	name  string
	c     client.Client
	ns    string
	since time.Time
}

func newSuite(t *testing.T, name string) *suite {
	s := &suite{t: t, name: name, c: adminClient(t), ns: "fork-" + name, since: time.Now()}
	require.NoError(t, s.c.Create(ctxFor(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}}))
	return s
}

func (s *suite) labels() map[string]string { return map[string]string{suiteLabel: s.name} }

// forkOptions are what a test varies in the controllers' options.
type forkOptions struct {
	Rate                         ratelimit.Config
	EnableNoExecuteTaintEviction bool
	GracefulEvictionTimeout      time.Duration
	// NoLedger turns off the ledger of evictions in flight
	// (--eviction-capacity-hold=0).
	NoLedger bool
	// MaxInFlight caps the evictions of each queue in flight
	// (--max-evictions-in-flight); 0: unlimited.
	MaxInFlight int
	// StatusPeriod is how often the test reports the Clusters' resource
	// summaries (Karmada's --cluster-status-update-frequency); 0: the
	// default.
	StatusPeriod time.Duration
	// MaxClustersInTransit is the budget of clusters in transit of a
	// binding without an annotation of its own (--max-clusters-in-transit);
	// 0: unlimited.
	MaxClustersInTransit int
	// FailbackWindow, when set, adds the FailbackController beside the
	// three, as examples/karmadafork adds it, with this
	// --failback-stabilization-window; 0: not added.
	FailbackWindow time.Duration
	// MaxFailbacksInFlight is its --max-failbacks-in-flight; 0: the
	// default.
	MaxFailbacksInFlight int
	// Freeze is the operator's freeze ConfigMap the controllers honour
	// (--eviction-freeze-configmap); unset: none. deploy/rbac.yaml lets
	// them read karmada-system/failover-freeze only.
	Freeze types.NamespacedName
}

// forkRun is one replica of the fork, started in-process.
type forkRun struct {
	name     string
	reg      *prometheus.Registry
	eviction *controllers.EvictionController
	mgr      ctrl.Manager
	stop     func() error
}

// start runs a replica named name until the test ends or stop is called.
// newClient, when set, wraps the replica's client.
func (s *suite) start(name string, opts forkOptions, newClient func(client.Client) client.Client) *forkRun {
	t := s.t
	t.Helper()
	sel := labels.SelectorFromSet(s.labels())
	reg := prometheus.NewRegistry()
	mgrOpts := ctrl.Options{
		Scheme:                        scheme(t),
		Logger:                        klog.Background().WithName(name),
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		LeaderElection:                true,
		LeaderElectionID:              "fork-" + s.name,
		LeaderElectionNamespace:       forkNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 ptr.To(4 * time.Second),
		RenewDeadline:                 ptr.To(3 * time.Second),
		RetryPeriod:                   ptr.To(200 * time.Millisecond),
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&clusterv1alpha1.Cluster{}:             {Label: sel},
			&policyv1alpha1.ClusterTaintPolicy{}:   {Label: sel},
			&workv1alpha2.ResourceBinding{}:        {Label: sel},
			&workv1alpha2.ClusterResourceBinding{}: {Label: sel},
		}},
		// Several managers share this process; their controllers share names.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}
	if newClient != nil {
		mgrOpts.NewClient = func(cfg *rest.Config, o client.Options) (client.Client, error) {
			c, err := client.New(cfg, o)
			if err != nil {
				return nil, err
			}
			return newClient(c), nil
		}
	}
	mgr, err := ctrl.NewManager(forkConfig(), mgrOpts)
	require.NoError(t, err)
	// The three controllers, as examples/karmadafork's main adds them (and
	// the FailbackController, with a window).
	eviction, err := controllers.Setup(mgr, controllers.ClusterTaintPolicyOptions{}, controllers.EvictionOptions{
		Rate: opts.Rate, EnableNoExecuteTaintEviction: opts.EnableNoExecuteTaintEviction, Registerer: reg,
		DisableLedger: opts.NoLedger, ClusterStatusUpdateFrequency: opts.StatusPeriod,
		MaxInFlight: opts.MaxInFlight, InFlightTTL: opts.GracefulEvictionTimeout,
		MaxClustersInTransit: opts.MaxClustersInTransit, Freeze: opts.Freeze,
	}, controllers.GracefulEvictionOptions{
		Timeout: opts.GracefulEvictionTimeout,
	})
	require.NoError(t, err)
	if opts.FailbackWindow > 0 {
		// Sharing the eviction controller's fleet, rate and freeze.
		fb, err := controllers.NewFailbackController(controllers.FailbackOptions{
			Window: opts.FailbackWindow, MaxInFlight: opts.MaxFailbacksInFlight,
		}, eviction)
		require.NoError(t, err)
		require.NoError(t, fb.SetupWithManager(mgr))
	}
	r := &forkRun{name: name, reg: reg, eviction: eviction, mgr: mgr}
	r.stop = runUntilStopped(t, name, mgr.Start)
	return r
}

// clusterSpec is what a test varies between clusters.
type clusterSpec struct {
	ready  metav1.ConditionStatus // default True
	region string                 // spec.region, for disruption domains
	labels map[string]string      // besides the suite's label
	taints []corev1.Taint
	// status, when set, adds the rest of the cluster's first status
	// report, written with its Ready condition.
	status func(*clusterv1alpha1.ClusterStatus)
}

// cluster creates a Cluster with a Ready condition and taints.
func (s *suite) cluster(name string, ready metav1.ConditionStatus, taints ...corev1.Taint) {
	s.t.Helper()
	s.newCluster(name, clusterSpec{ready: ready, taints: taints})
}

// newCluster creates a Cluster as Karmada's agent or karmadactl join leaves
// it, its Ready condition written through the status subresource.
func (s *suite) newCluster(name string, cs clusterSpec) {
	t := s.t
	t.Helper()
	ctx := ctxFor(t)
	labels := s.labels()
	for k, v := range cs.labels {
		labels[k] = v
	}
	c := &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: clusterv1alpha1.ClusterSpec{
			APIEndpoint: "https://" + name + ".invalid:6443",
			Region:      cs.region,
			Taints:      cs.taints,
		},
	}
	require.NoError(t, s.c.Create(ctx, c))
	if cs.ready == "" {
		cs.ready = metav1.ConditionTrue
	}
	require.NoError(t, s.clusterStatus(ctx, name, func(st *clusterv1alpha1.ClusterStatus) {
		readyCondition(st, cs.ready)
		if cs.status != nil {
			cs.status(st)
		}
	}))
}

func (s *suite) setReady(name string, status metav1.ConditionStatus) {
	s.t.Helper()
	require.NoError(s.t, s.clusterStatus(ctxFor(s.t), name, func(st *clusterv1alpha1.ClusterStatus) {
		readyCondition(st, status)
	}))
}

// readyCondition makes Ready the status's only condition.
func readyCondition(st *clusterv1alpha1.ClusterStatus, status metav1.ConditionStatus) {
	st.Conditions = []metav1.Condition{{
		Type: clusterv1alpha1.ClusterConditionReady, Status: status, Reason: "E2E", Message: "set by the e2e test",
		LastTransitionTime: metav1.Now(),
	}}
}

// clusterStatus changes a Cluster's status as Karmada's cluster status
// controller writes it: through the status subresource, again on a
// conflict. It returns the error rather than failing the test, for the
// goroutines that play the controller.
func (s *suite) clusterStatus(ctx context.Context, name string, change func(*clusterv1alpha1.ClusterStatus)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var c clusterv1alpha1.Cluster
		if err := s.c.Get(ctx, client.ObjectKey{Name: name}, &c); err != nil {
			return err
		}
		change(&c.Status)
		return s.c.Status().Update(ctx, &c)
	})
}

func (s *suite) getCluster(name string) *clusterv1alpha1.Cluster {
	var c clusterv1alpha1.Cluster
	require.NoError(s.t, s.c.Get(ctxFor(s.t), client.ObjectKey{Name: name}, &c))
	return &c
}

// bindingSpec is what a test varies between bindings.
type bindingSpec struct {
	clusters    []string
	tolerations []corev1.Toleration
	affinity    []string // clusterAffinity.clusterNames; empty: any cluster
	failover    *policyv1alpha1.ClusterFailoverBehavior
}

// binding creates a ResourceBinding as Karmada's detector and scheduler
// leave it: the applied placement in spec.placement and its annotation, the
// schedule result in spec.clusters.
func (s *suite) binding(name string, b bindingSpec) *workv1alpha2.ResourceBinding {
	t := s.t
	t.Helper()
	rb := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name, Labels: s.labels()}}
	rb.Spec = s.spec(name, b)
	rb.Annotations = s.appliedPlacement(&rb.Spec)
	require.NoError(t, s.c.Create(ctxFor(t), rb))
	return rb
}

// appliedPlacement is the annotation in which Karmada's detector records
// the placement it applied, where Karmada's taint manager (and the
// library's) reads the tolerations.
func (s *suite) appliedPlacement(spec *workv1alpha2.ResourceBindingSpec) map[string]string {
	placement, err := json.Marshal(spec.Placement)
	require.NoError(s.t, err)
	return map[string]string{karmada.AppliedPlacementAnnotation: string(placement)}
}

// clusterBinding is binding for a ClusterResourceBinding.
func (s *suite) clusterBinding(name string, b bindingSpec) *workv1alpha2.ClusterResourceBinding {
	t := s.t
	t.Helper()
	crb := &workv1alpha2.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: s.name + "-" + name, Labels: s.labels()}}
	crb.Spec = s.spec(name, b)
	crb.Annotations = s.appliedPlacement(&crb.Spec)
	require.NoError(t, s.c.Create(ctxFor(t), crb))
	return crb
}

func (s *suite) spec(name string, b bindingSpec) workv1alpha2.ResourceBindingSpec {
	spec := workv1alpha2.ResourceBindingSpec{
		Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: s.ns, Name: name},
		Placement: &policyv1alpha1.Placement{
			ClusterTolerations: b.tolerations,
		},
	}
	if len(b.affinity) > 0 {
		spec.Placement.ClusterAffinity = &policyv1alpha1.ClusterAffinity{ClusterNames: b.affinity}
	}
	if b.failover != nil {
		spec.Failover = &policyv1alpha1.FailoverBehavior{Cluster: b.failover}
	}
	for _, c := range b.clusters {
		spec.Clusters = append(spec.Clusters, workv1alpha2.TargetCluster{Name: c, Replicas: 1})
	}
	return spec
}

func (s *suite) getBinding(name string) *workv1alpha2.ResourceBinding {
	var rb workv1alpha2.ResourceBinding
	require.NoError(s.t, s.c.Get(ctxFor(s.t), client.ObjectKey{Namespace: s.ns, Name: name}, &rb))
	return &rb
}

func targets(spec *workv1alpha2.ResourceBindingSpec) []string {
	var out []string
	for _, c := range spec.Clusters {
		out = append(out, c.Name)
	}
	return out
}

// taskLog records every graceful eviction task a watch on the suite's
// bindings ever shows, as first seen: a Directly task is assessed done and
// removed at once, so polling could miss it.
type taskLog struct {
	mu   sync.Mutex
	seen map[string]workv1alpha2.GracefulEvictionTask // "kind/namespace/name/cluster"
}

func taskKey(kind string, o client.Object, cluster string) string {
	return kind + "/" + o.GetNamespace() + "/" + o.GetName() + "/" + cluster
}

// watchTasks starts recording the tasks of the suite's bindings until the
// test ends.
func (s *suite) watchTasks() *taskLog {
	s.t.Helper()
	l := &taskLog{seen: map[string]workv1alpha2.GracefulEvictionTask{}}
	s.watch(l.record, &workv1alpha2.ResourceBindingList{}, &workv1alpha2.ClusterResourceBindingList{})
	return l
}

// watch calls record with every object of the suite, of the kinds of lists,
// that a watch delivers, until the test ends.
func (s *suite) watch(record func(runtime.Object), lists ...client.ObjectList) {
	t := s.t
	t.Helper()
	wc, err := client.NewWithWatch(env.config, client.Options{Scheme: scheme(t)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, list := range lists {
		w, err := wc.Watch(ctx, list, client.MatchingLabels(s.labels()))
		require.NoError(t, err)
		wg.Go(func() {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					record(ev.Object)
				}
			}
		})
	}
}

func (l *taskLog) record(obj runtime.Object) {
	var kind string
	var spec *workv1alpha2.ResourceBindingSpec
	switch o := obj.(type) {
	case *workv1alpha2.ResourceBinding:
		kind, spec = "rb", &o.Spec
	case *workv1alpha2.ClusterResourceBinding:
		kind, spec = "crb", &o.Spec
	default:
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, tk := range spec.GracefulEvictionTasks {
		k := taskKey(kind, obj.(client.Object), tk.FromCluster)
		if _, ok := l.seen[k]; !ok {
			l.seen[k] = *tk.DeepCopy()
		}
	}
}

func (l *taskLog) get(key string) (workv1alpha2.GracefulEvictionTask, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	tk, ok := l.seen[key]
	return tk, ok
}

// evicted waits for the first task of the binding from cluster.
func (s *suite) evicted(l *taskLog, o client.Object, cluster string, timeout time.Duration) workv1alpha2.GracefulEvictionTask {
	t := s.t
	t.Helper()
	kind := "rb"
	if o.GetNamespace() == "" {
		kind = "crb"
	}
	var tk workv1alpha2.GracefulEvictionTask
	eventually(t, timeout, o.GetName()+" evicted from "+cluster, func() bool {
		var ok bool
		tk, ok = l.get(taskKey(kind, o, cluster))
		return ok
	})
	require.NotNil(t, tk.CreationTimestamp, "task without creationTimestamp")
	return tk
}

// releasedPolicy creates a ClusterTaintPolicy in Karmada's released form:
// NoExecute not-ready while Ready is False, removed when it is True.
func (s *suite) releasedPolicy(clusters ...string) {
	p := &policyv1alpha1.ClusterTaintPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: s.name + "-not-ready", Labels: s.labels()},
		Spec: policyv1alpha1.ClusterTaintPolicySpec{
			TargetClusters: &policyv1alpha1.ClusterAffinity{ClusterNames: clusters},
			AddOnConditions: []policyv1alpha1.MatchCondition{{
				ConditionType: clusterv1alpha1.ClusterConditionReady, Operator: policyv1alpha1.MatchConditionOpIn,
				StatusValues: []metav1.ConditionStatus{metav1.ConditionFalse, metav1.ConditionUnknown},
			}},
			RemoveOnConditions: []policyv1alpha1.MatchCondition{{
				ConditionType: clusterv1alpha1.ClusterConditionReady, Operator: policyv1alpha1.MatchConditionOpIn,
				StatusValues: []metav1.ConditionStatus{metav1.ConditionTrue},
			}},
			Taints: []policyv1alpha1.Taint{{Key: forkTaintKey, Effect: corev1.TaintEffectNoExecute}},
		},
	}
	require.NoError(s.t, s.c.Create(ctxFor(s.t), p))
}

// elected reports whether the replica holds the Lease.
func (r *forkRun) elected() bool {
	select {
	case <-r.mgr.Elected():
		return true
	default:
		return false
	}
}

// metric is running.metric on the replica's own registry.
func (r *forkRun) metric(t *testing.T, name string, want map[string]string) float64 {
	return (&running{reg: r.reg}).metric(t, name, want)
}

// setTaints replaces a cluster's taints as a user or another controller
// would.
func (s *suite) setTaints(name string, taints ...corev1.Taint) {
	t := s.t
	t.Helper()
	ctx := ctxFor(t)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var c clusterv1alpha1.Cluster
		if err := s.c.Get(ctx, client.ObjectKey{Name: name}, &c); err != nil {
			return err
		}
		c.Spec.Taints = taints
		return s.c.Update(ctx, &c)
	}))
}

// fail taints the clusters NoExecute now, as Karmada's cluster controller
// does to a cluster it lost; recover removes every taint. Neither needs a
// policy: the suites that use them have none.
func (s *suite) fail(names ...string) {
	s.t.Helper()
	for _, n := range names {
		s.setTaints(n, noExecute(time.Now()))
	}
}

func (s *suite) recover(names ...string) {
	s.t.Helper()
	for _, n := range names {
		s.setTaints(n)
	}
}

// bindings creates n ResourceBindings named prefix0, prefix1, ….
func (s *suite) bindings(prefix string, n int, b bindingSpec) []client.Object {
	s.t.Helper()
	out := make([]client.Object, n)
	for i := range out {
		out[i] = s.binding(prefix+strconv.Itoa(i), b)
	}
	return out
}

// from returns the creation timestamps of every task from cluster the log
// has seen, earliest first.
func (l *taskLog) from(cluster string) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []time.Time
	for _, tk := range l.seen {
		if tk.FromCluster == cluster && tk.CreationTimestamp != nil {
			out = append(out, tk.CreationTimestamp.Time)
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// perSecond is the rate that times, sorted, show: the number of intervals
// over the span. Timestamps are stored in whole seconds, so it is only as
// good as the span is long.
func perSecond(times []time.Time) float64 {
	if len(times) < 2 {
		return 0
	}
	span := times[len(times)-1].Sub(times[0])
	if span <= 0 {
		return math.Inf(1)
	}
	return float64(len(times)-1) / span.Seconds()
}

// taskEnded waits until the binding has no task from cluster and returns
// when that was seen.
func (s *suite) taskEnded(name, cluster string, timeout time.Duration) time.Time {
	s.t.Helper()
	var at time.Time
	eventually(s.t, timeout, "the task of "+name+" from "+cluster+" to end", func() bool {
		at = time.Now()
		return task(&s.getBinding(name).Spec, cluster) == nil
	})
	return at
}

// task returns the binding's graceful eviction task from cluster, or nil.
func task(spec *workv1alpha2.ResourceBindingSpec, cluster string) *workv1alpha2.GracefulEvictionTask {
	for i := range spec.GracefulEvictionTasks {
		if spec.GracefulEvictionTasks[i].FromCluster == cluster {
			return &spec.GracefulEvictionTasks[i]
		}
	}
	return nil
}

// scheduled plays Karmada's scheduler and agents: the new schedule result,
// the scheduler's observed generation, and each cluster's health.
func (s *suite) scheduled(name string, clusters []string, health map[string]workv1alpha2.ResourceHealth) {
	t := s.t
	t.Helper()
	ctx := ctxFor(t)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rb := s.getBinding(name)
		rb.Spec.Clusters = nil
		for _, c := range clusters {
			rb.Spec.Clusters = append(rb.Spec.Clusters, workv1alpha2.TargetCluster{Name: c, Replicas: 1})
		}
		if err := s.c.Update(ctx, rb); err != nil {
			return err
		}
		rb.Status.SchedulerObservedGeneration = rb.Generation
		rb.Status.AggregatedStatus = nil
		for _, c := range slices.Sorted(maps.Keys(health)) {
			rb.Status.AggregatedStatus = append(rb.Status.AggregatedStatus, workv1alpha2.AggregatedStatusItem{ClusterName: c, Health: health[c]})
		}
		return s.c.Status().Update(ctx, rb)
	}))
}

// events returns the Events regarding a ResourceBinding of the suite.
func (s *suite) events(name string) []eventsv1.Event {
	var list eventsv1.EventList
	require.NoError(s.t, s.c.List(ctxFor(s.t), &list, client.InNamespace(s.ns)))
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Regarding.Kind == "ResourceBinding" {
			out = append(out, e)
		}
	}
	return out
}

// noExecute is a NoExecute taint added at added.
func noExecute(added time.Time) corev1.Taint {
	return corev1.Taint{Key: forkTaintKey, Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: added}}
}
