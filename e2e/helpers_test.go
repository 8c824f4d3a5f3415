//go:build e2e

package e2e

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/failoverkit/failover"
	"github.com/failoverkit/failover/examples/taintcontroller/controller"
	"github.com/failoverkit/failover/karmada"
	"github.com/failoverkit/failover/karmada/scheduling"
)

const (
	notReadyKey = "cluster.karmada.io/not-ready"
	userKey     = "example.com/maintenance"
)

// userTaint is a taint no policy lists; every write must keep it.
var userTaint = corev1.Taint{Key: userKey, Value: "by-user", Effect: corev1.TaintEffectNoSchedule}

// noLeaks fails the test if a goroutine it started outlives it (checked after
// every other cleanup, so after the controllers are stopped). Connections the
// shared clients keep alive to the API server are not leaks, and neither is
// the read loop of an HTTP/2 connection that replaced one of them during the
// test: kube-apiserver closes an HTTP/2 connection idle for 90s, which a
// test building the example with a cold build cache does reach, and the
// next request dials again. That loop belongs to the shared transport; a
// controller left running still shows its informers and workers. Nor is
// the priority queue of a controller-runtime v0.23.1 controller that was
// shut down while it handed a worker an item: that send never completes,
// holding the queue's lock (controller-runtime#3538, fixed by #3540 after
// v0.23.1, the module's floor); its other goroutine then waits for the
// lock. The many managers the Karmada fork's subtests start and stop
// meet it now and then.
func noLeaks(t *testing.T) {
	const pq = "sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue.(*priorityqueue[...])."
	opts := []goleak.Option{
		goleak.IgnoreCurrent(),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
		goleak.IgnoreAnyFunction(pq + "handleReadyItems"),
		goleak.IgnoreAnyFunction(pq + "handleWaitingItems"),
		// Karmada's scheduling framework, which the FailbackController's
		// in-process scheduler builds once per process, never ends it.
		goleak.IgnoreAnyFunction(scheduling.LeakedGoroutine),
	}
	t.Cleanup(func() { goleak.VerifyNone(t, opts...) })
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// createCluster stores a Cluster with taints and a Ready condition that last
// changed at since (written through the status subresource, as Karmada's
// cluster status controller does).
func createCluster(t *testing.T, name string, ready metav1.ConditionStatus, since time.Time, taints ...corev1.Taint) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"apiEndpoint": "https://" + name + ".invalid:6443"},
	}}
	if len(taints) > 0 {
		require.NoError(t, unstructured.SetNestedSlice(u.Object, taintsToList(t, taints), "spec", "taints"))
	}
	_, err := env.dynamic.Resource(controller.ClusterGVR).Create(ctxFor(t), u, metav1.CreateOptions{FieldManager: "e2e-user"})
	require.NoError(t, err)
	setReady(t, name, ready, since)
}

func taintsToList(t *testing.T, taints []corev1.Taint) []any {
	t.Helper()
	list := make([]any, 0, len(taints))
	for i := range taints {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&taints[i])
		require.NoError(t, err)
		list = append(list, m)
	}
	return list
}

// setReady writes the Ready condition with the given lastTransitionTime.
func setReady(t *testing.T, name string, status metav1.ConditionStatus, since time.Time) {
	t.Helper()
	ctx := ctxFor(t)
	clusters := env.dynamic.Resource(controller.ClusterGVR)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := clusters.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cond := map[string]any{
			"type": "Ready", "status": string(status), "reason": "E2E", "message": "set by the e2e test",
			"lastTransitionTime": since.UTC().Format(time.RFC3339),
		}
		if err := unstructured.SetNestedSlice(u.Object, []any{cond}, "status", "conditions"); err != nil {
			return err
		}
		_, err = clusters.UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: "e2e-status"})
		return err
	}))
}

// editTaints changes a cluster's taints as a user would, with its own
// optimistic-concurrency retry.
func editTaints(t *testing.T, name string, edit func([]corev1.Taint) []corev1.Taint) {
	t.Helper()
	ctx := ctxFor(t)
	clusters := env.dynamic.Resource(controller.ClusterGVR)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := clusters.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c, err := karmada.FromUnstructuredCluster(u)
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedSlice(u.Object, taintsToList(t, edit(c.Taints)), "spec", "taints"); err != nil {
			return err
		}
		_, err = clusters.Update(ctx, u, metav1.UpdateOptions{FieldManager: "e2e-user"})
		return err
	}))
}

func getCluster(t *testing.T, name string) (failover.Cluster, *unstructured.Unstructured) {
	t.Helper()
	u, err := env.dynamic.Resource(controller.ClusterGVR).Get(ctxFor(t), name, metav1.GetOptions{})
	require.NoError(t, err)
	c, err := karmada.FromUnstructuredCluster(u)
	require.NoError(t, err)
	return c, u
}

func findTaint(taints []corev1.Taint, key string, effect corev1.TaintEffect) *corev1.Taint {
	for i := range taints {
		if taints[i].Key == key && taints[i].Effect == effect {
			return &taints[i]
		}
	}
	return nil
}

// requireUserTaint fails unless the user's taint is on the cluster exactly
// as the user wrote it.
func requireUserTaint(t *testing.T, c failover.Cluster) {
	t.Helper()
	got := findTaint(c.Taints, userKey, corev1.TaintEffectNoSchedule)
	require.NotNil(t, got, "the user's taint was lost; taints now %v", c.Taints)
	require.Equal(t, userTaint.Value, got.Value)
	require.Nil(t, got.TimeAdded, "the user's taint was rewritten")
}

// createPolicy stores a windowed ClusterTaintPolicy that taints one cluster
// with cluster.karmada.io/not-ready:PreferNoExecute while Ready is False or
// Unknown.
func createPolicy(t *testing.T, name, cluster string, addSeconds, removeSeconds int64) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterTaintPolicy",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"targetCluster":   map[string]any{"clusterNames": []any{cluster}},
			"matchConditions": []any{map[string]any{"conditionType": "Ready", "operator": "In", "statusValues": []any{"False", "Unknown"}}},
			"taintsToAdd": []any{map[string]any{
				"key": notReadyKey, "effect": "PreferNoExecute",
				"addOnMatchSeconds": addSeconds, "removeOnMismatchSeconds": removeSeconds,
			}},
		},
	}}
	_, err := env.dynamic.Resource(controller.PolicyGVR).Create(ctxFor(t), u, metav1.CreateOptions{})
	require.NoError(t, err)
}

// eventually polls cond every 50ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true,
		func(context.Context) (bool, error) { return cond(), nil })
	require.NoError(t, err, "waiting for %s", what)
}

// never checks, for the whole of d, that cond does not hold.
func never(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		require.False(t, cond(), what)
		time.Sleep(100 * time.Millisecond)
	}
}

// running is a controller started in-process against the test API server.
type running struct {
	name string
	reg  *prometheus.Registry
	stop func() error
}

// startController runs a Controller named name (its field manager is
// "taintcontroller-<name>") until the test ends or stop is called.
func startController(t *testing.T, name string, client dynamic.Interface) *running {
	t.Helper()
	r, ctrl := newController(t, name, client)
	r.stop = runUntilStopped(t, name, ctrl.Run)
	return r
}

func newController(t *testing.T, name string, client dynamic.Interface) (*running, *controller.Controller) {
	t.Helper()
	reg := prometheus.NewRegistry()
	ctrl, err := controller.New(controller.Config{
		Client:       client,
		Workers:      2,
		FieldManager: "taintcontroller-" + name,
		Registerer:   reg,
	})
	require.NoError(t, err)
	return &running{name: name, reg: reg}, ctrl
}

// runUntilStopped runs fn in a goroutine on a context carrying a logger
// named name, and returns an idempotent stop that cancels it and returns its
// error. The test's cleanup calls stop too.
func runUntilStopped(t *testing.T, name string, fn func(context.Context) error) func() error {
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background().WithName(name)))
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
	t.Cleanup(func() { require.NoError(t, stop()) })
	return stop
}

// metric returns the value of the counter or gauge called name whose labels
// include want, or 0 if the registry has none.
func (r *running) metric(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	families, err := r.reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			for k, v := range want {
				if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == k && l.GetValue() == v }) {
					continue metrics
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

// syncs is how many evaluations the controller has finished, whatever the
// result.
func (r *running) syncs(t *testing.T) float64 {
	return r.metric(t, "taintcontroller_syncs_total", map[string]string{"result": "unchanged"}) +
		r.metric(t, "taintcontroller_syncs_total", map[string]string{"result": "updated"})
}

// managers returns the field managers recorded on the object, with the time
// of each one's last write.
func managers(u *unstructured.Unstructured) map[string]time.Time {
	out := map[string]time.Time{}
	for _, mf := range u.GetManagedFields() {
		if mf.Time != nil {
			out[mf.Manager] = mf.Time.Time
		} else {
			out[mf.Manager] = time.Time{}
		}
	}
	return out
}

// conflictInjector wraps a dynamic client so that the first Update of one
// cluster is preceded by another writer's update of the same cluster: the
// controller's write then carries a stale resourceVersion and the real API
// server answers 409 Conflict.
type conflictInjector struct {
	dynamic.Interface
	t       *testing.T
	cluster string
	other   corev1.Taint

	mu       sync.Mutex
	injected bool
}

func (c *conflictInjector) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	r := c.Interface.Resource(gvr)
	if gvr != controller.ClusterGVR {
		return r
	}
	return &injectingClusters{NamespaceableResourceInterface: r, parent: c}
}

func (c *conflictInjector) wasInjected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.injected
}

type injectingClusters struct {
	dynamic.NamespaceableResourceInterface
	parent *conflictInjector
}

func (r *injectingClusters) Update(ctx context.Context, obj *unstructured.Unstructured, opts metav1.UpdateOptions, subresources ...string) (*unstructured.Unstructured, error) {
	p := r.parent
	p.mu.Lock()
	inject := !p.injected && obj.GetName() == p.cluster && len(subresources) == 0
	p.injected = p.injected || inject
	p.mu.Unlock()
	if inject {
		// The other writer reads the current object and adds its own taint:
		// the resourceVersion in obj is now stale.
		u, err := p.Interface.Resource(controller.ClusterGVR).Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return nil, errors.Join(errors.New("e2e: the injected writer could not read"), err)
		}
		c, err := karmada.FromUnstructuredCluster(u)
		if err != nil {
			return nil, err
		}
		if err := unstructured.SetNestedSlice(u.Object, taintsToList(p.t, append(c.Taints, p.other)), "spec", "taints"); err != nil {
			return nil, err
		}
		if _, err := p.Interface.Resource(controller.ClusterGVR).Update(ctx, u, metav1.UpdateOptions{FieldManager: "e2e-other-writer"}); err != nil {
			return nil, errors.Join(errors.New("e2e: the injected writer could not write"), err)
		}
	}
	return r.NamespaceableResourceInterface.Update(ctx, obj, opts, subresources...)
}

// exampleProcess is an example program built and running for a test.
type exampleProcess struct {
	cmd    *exec.Cmd
	exited chan error
	log    string // its output, printed when the test fails
}

// startExample builds the example program in dir (relative to e2e/, in its
// own module) and starts it with args, its output going to a log file that
// is printed when the test fails. The cleanup kills it if it still runs.
func startExample(t *testing.T, dir string, args ...string) *exampleProcess {
	t.Helper()
	return runExample(t, buildExample(t, dir), args...)
}

// buildExample builds the example program in dir (relative to e2e/, in its
// own module) into the test's temporary directory and returns its path.
func buildExample(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(dir))
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building %s: %s", dir, out)
	return bin
}

// runExample starts the program bin, built by buildExample, with args, as
// startExample does; a test may start one binary several times.
func runExample(t *testing.T, bin string, args ...string) *exampleProcess {
	t.Helper()
	name := filepath.Base(bin)
	p := &exampleProcess{cmd: exec.Command(bin, args...), exited: make(chan error, 1), log: filepath.Join(t.TempDir(), name+".log")}
	logFile, err := os.Create(p.log)
	require.NoError(t, err)
	t.Cleanup(func() { _ = logFile.Close() })
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	killWithParent(p.cmd)
	require.NoError(t, p.cmd.Start())
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			data, _ := os.ReadFile(p.log)
			t.Logf("%s log (pid %d):\n%s", name, p.cmd.Process.Pid, data)
		}
	})
	return p
}

// kill sends SIGKILL, as the kernel's OOM killer or a node's loss would end
// the process (nothing of it runs after: no Lease released), and waits for
// it to exit.
func (p *exampleProcess) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Kill(), "killing %s (pid %d): did it exit on its own? its log: %s", filepath.Base(p.cmd.Path), p.cmd.Process.Pid, p.log)
	select {
	case err := <-p.exited:
		p.exited <- err // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("the binary did not exit within 10s of SIGKILL")
	}
}

// stop sends SIGTERM and requires a clean exit within 20s.
func (p *exampleProcess) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-p.exited:
		require.NoError(t, err, "exit status after SIGTERM")
		p.exited <- err // for the cleanup
	case <-time.After(20 * time.Second):
		t.Fatal("the binary did not exit within 20s of SIGTERM")
	}
}

// freeAddr returns a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
