//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/failoverkit/failover/examples/taintcontroller/controller"
)

// k8sVersion and karmadaVersion key the binary cache; hack/e2e-binaries.sh
// builds these versions.
const (
	k8sVersion     = "v1.36.3"
	karmadaVersion = "v1.18.0"
)

// leaseNamespace holds the leader election Leases of the in-process tests.
const leaseNamespace = "failover-e2e"

// controllerUser authenticates with controllerToken and has no rights but
// those deploy/rbac.yaml grants it.
const (
	controllerUser  = "e2e-taintcontroller"
	controllerToken = "failover-e2e-controller-token"
)

// env is the API server every test talks to, started once by TestMain.
var env *apiEnv

type apiEnv struct {
	dir     string
	bin     binaries
	procs   []*process
	config  *rest.Config
	dynamic dynamic.Interface
	kube    kubernetes.Interface
}

type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

func TestMain(m *testing.M) {
	// The test binary started again as the fork's controller-manager
	// (TestKarmadaForkApplicationFailoverRestart): a process of its own.
	if len(os.Args) > 1 && os.Args[1] == forkControllerManagerArg {
		if err := forkControllerManager(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "fork controller-manager:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	bin, err := findBinaries()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	start := time.Now()
	e, err := startEnv(bin)
	if e != nil {
		defer e.stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if e != nil {
			e.dumpLogs()
		}
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: etcd and kube-apiserver %s ready at %s in %v\n", k8sVersion, e.config.Host, time.Since(start).Round(time.Millisecond))
	env = e
	code := m.Run()
	if code != 0 {
		e.dumpLogs()
	}
	return code
}

// binaries are the programs hack/e2e-binaries.sh builds.
type binaries struct {
	dir       string // etcd and kube-apiserver
	scheduler string // karmada-scheduler
}

// findBinaries finds the binaries hack/e2e-binaries.sh builds: in
// $FAILOVER_E2E_BIN_DIR, else in the cache under their versions. A missing
// binary is an error, never a skip: CI must not pass without having run the
// suite.
func findBinaries() (binaries, error) {
	var b binaries
	b.dir = os.Getenv("FAILOVER_E2E_BIN_DIR")
	b.scheduler = filepath.Join(b.dir, "karmada-scheduler")
	if b.dir == "" {
		root := os.Getenv("FAILOVER_E2E_CACHE")
		if root == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return b, fmt.Errorf("e2e: no home directory to find the binary cache in (set FAILOVER_E2E_CACHE): %w", err)
			}
			root = filepath.Join(home, ".cache", "failover-e2e")
		}
		b.dir = filepath.Join(root, k8sVersion)
		b.scheduler = filepath.Join(root, "karmada-"+karmadaVersion, "karmada-scheduler")
	}
	for _, path := range []string{filepath.Join(b.dir, "etcd"), filepath.Join(b.dir, "kube-apiserver"), b.scheduler} {
		fi, err := os.Stat(path)
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return b, fmt.Errorf("e2e: %s not found: run `bash hack/e2e-binaries.sh` from the repository root first "+
				"(it builds kube-apiserver and etcd %s and karmada-scheduler %s from the Go module proxy into the cache), "+
				"or point FAILOVER_E2E_BIN_DIR at a directory holding all three", path, k8sVersion, karmadaVersion)
		}
	}
	return b, nil
}

// startEnv starts the suite's API server: examples/taintcontroller's CRDs,
// and Karmada's own policy and work CRDs beside them.
func startEnv(b binaries) (*apiEnv, error) {
	return startEnvWith(b, func(ctx context.Context, e *apiEnv) error {
		if err := e.installCRDs(ctx, filepath.Join("..", "examples", "taintcontroller", "crds")); err != nil {
			return err
		}
		return e.installKarmadaCRDs(ctx)
	})
}

// startEnvWith starts etcd and kube-apiserver, then install puts the CRDs
// in place.
func startEnvWith(b binaries, install func(context.Context, *apiEnv) error) (*apiEnv, error) {
	dir, err := os.MkdirTemp("", "failover-e2e-")
	if err != nil {
		return nil, err
	}
	e := &apiEnv{dir: dir, bin: b}
	bin := b.dir

	clientPort, peerPort, apiPort, err := freePorts()
	if err != nil {
		return e, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	if err := e.start("etcd", filepath.Join(bin, "etcd"),
		"--name=e2e",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=e2e="+peerURL,
		"--unsafe-no-fsync", // a throwaway store: durability only costs time
		"--log-level=warn",
	); err != nil {
		return e, err
	}
	if err := e.waitHTTP("etcd", etcdURL+"/health", nil, ""); err != nil {
		return e, err
	}

	const token = "failover-e2e-admin-token"
	keyFile := filepath.Join(dir, "sa.key")
	if err := writeServiceAccountKey(keyFile); err != nil {
		return e, err
	}
	// Two identities: an admin for the tests, and a user with no rights of
	// its own, bound by the binary test to the example's deploy/rbac.yaml.
	tokenFile := filepath.Join(dir, "tokens.csv")
	tokens := token + ",e2e-admin,e2e-admin,system:masters\n" +
		controllerToken + "," + controllerUser + "," + controllerUser + "\n"
	if err := os.WriteFile(tokenFile, []byte(tokens), 0o600); err != nil {
		return e, err
	}
	apiURL := "https://127.0.0.1:" + strconv.Itoa(apiPort)
	if err := e.start("kube-apiserver", filepath.Join(bin, "kube-apiserver"),
		"--etcd-servers="+etcdURL,
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(apiPort),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--service-account-issuer=https://failover-e2e.invalid",
		"--service-account-key-file="+keyFile,
		"--service-account-signing-key-file="+keyFile,
		"--token-auth-file="+tokenFile,
		"--authorization-mode=RBAC",
		// Flow control only delays readiness here: a handful of clients.
		"--enable-priority-and-fairness=false",
	); err != nil {
		return e, err
	}
	insecure := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // a self-signed throwaway server on loopback
	if err := e.waitHTTP("kube-apiserver", apiURL+"/readyz", insecure, token); err != nil {
		return e, err
	}

	e.config = &rest.Config{
		Host:            apiURL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             200,
		Burst:           400,
	}
	if e.dynamic, err = dynamic.NewForConfig(e.config); err != nil {
		return e, err
	}
	if e.kube, err = kubernetes.NewForConfig(e.config); err != nil {
		return e, err
	}
	if err := e.writeKubeconfig("kubeconfig", token); err != nil {
		return e, err
	}
	if err := e.writeKubeconfig("kubeconfig-controller", controllerToken); err != nil {
		return e, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace}}, metav1.CreateOptions{}); err != nil {
		return e, fmt.Errorf("e2e: creating namespace %s: %w", leaseNamespace, err)
	}
	if err := install(ctx, e); err != nil {
		return e, err
	}
	return e, nil
}

// installKarmadaCRDs installs Karmada v1.18's own policy and work CRDs from
// the module cache (charts/karmada/_crds/bases in the
// github.com/karmada-io/karmada module this module requires), so the
// karmadafork tests run on Karmada's real schemas. ClusterTaintPolicy is left
// out: examples/taintcontroller's CRD already serves that name, and it stores
// the released form Karmada's CRD does (it keeps unknown fields).
func (e *apiEnv) installKarmadaCRDs(ctx context.Context) error {
	bases, err := karmadaCRDBases(ctx)
	if err != nil {
		return err
	}
	var files []string
	for _, sub := range []string{"policy", "work"} {
		fs, err := filepath.Glob(filepath.Join(bases, sub, "*.yaml"))
		if err != nil || len(fs) == 0 {
			return fmt.Errorf("e2e: no CRD manifests in %s: %v", filepath.Join(bases, sub), err)
		}
		for _, f := range fs {
			if filepath.Base(f) != "policy.karmada.io_clustertaintpolicies.yaml" {
				files = append(files, f)
			}
		}
	}
	return e.createCRDs(ctx, files,
		schema.GroupVersionResource{Group: "work.karmada.io", Version: "v1alpha2", Resource: "resourcebindings"},
		schema.GroupVersionResource{Group: "work.karmada.io", Version: "v1alpha2", Resource: "clusterresourcebindings"})
}

// karmadaCRDBases is charts/karmada/_crds/bases in the
// github.com/karmada-io/karmada module this module requires.
func karmadaCRDBases(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/karmada-io/karmada").Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		return "", fmt.Errorf("e2e: the github.com/karmada-io/karmada module is not in the module cache (run `go mod download` in e2e/): %v", err)
	}
	return filepath.Join(dir, "charts", "karmada", "_crds", "bases"), nil
}

// freePorts asks the kernel for three unused loopback ports. Another process
// could take one before etcd or the API server binds it; that shows up as a
// start failure in their log, not as a wrong result.
func freePorts() (int, int, int, error) {
	var ports [3]int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, 0, 0, fmt.Errorf("e2e: no free port: %w", err)
		}
		lns = append(lns, ln)
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports[0], ports[1], ports[2], nil
}

func writeServiceAccountKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
}

func (e *apiEnv) start(name, path string, args ...string) error {
	logPath := filepath.Join(e.dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	killWithParent(cmd)
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("e2e: starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	e.procs = append(e.procs, p)
	return nil
}

// terminate sends the process SIGTERM and kills it if it has not exited
// within grace; a process that has exited already is left as it is.
func (p *process) terminate(grace time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// waitHTTP polls url until it answers 200, failing early if the process
// behind it exits.
func (e *apiEnv) waitHTTP(name, url string, tlsConfig *tls.Config, token string) error {
	p := e.procs[len(e.procs)-1]
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	defer client.CloseIdleConnections()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case <-p.done:
			return false, fmt.Errorf("e2e: %s exited: %v", name, p.err)
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		body := new(bytes.Buffer)
		_, _ = body.ReadFrom(resp.Body)
		_ = resp.Body.Close()
		last = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(body.String()))
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("e2e: waiting for %s at %s (last answer: %s): %w", name, url, last, err)
	}
	return nil
}

// writeKubeconfig writes a kubeconfig for token into the temporary
// directory: the binary test runs with one, and after a run with
// FAILOVER_E2E_KEEP the admin's is there for kubectl.
func (e *apiEnv) writeKubeconfig(name, token string) error {
	data, err := kubeconfig(e.config.Host, token, "")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(e.dir, name), data, 0o600)
}

// kubeconfig is a kubeconfig for the API server at host that authenticates
// with token and, when as is set, impersonates as, in groups.
func kubeconfig(host, token, as string, groups ...string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: host, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["e2e"] = &clientcmdapi.AuthInfo{Token: token, Impersonate: as, ImpersonateGroups: groups}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "e2e"}
	cfg.CurrentContext = "e2e"
	return clientcmd.Write(*cfg)
}

// installCRDs creates the example's CRDs and waits until both kinds are
// served.
func (e *apiEnv) installCRDs(ctx context.Context, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("e2e: no CRD manifests in %s: %v", dir, err)
	}
	return e.createCRDs(ctx, files, controller.ClusterGVR, controller.PolicyGVR)
}

// createCRDs creates the CRDs in files and waits until each of served is
// served.
func (e *apiEnv) createCRDs(ctx context.Context, files []string, served ...schema.GroupVersionResource) error {
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			return fmt.Errorf("e2e: %s: %w", f, err)
		}
		if _, err := e.dynamic.Resource(crdGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("e2e: installing %s: %w", f, err)
		}
	}
	for _, gvr := range served {
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			_, err := e.dynamic.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
			return err == nil, nil
		})
		if err != nil {
			return fmt.Errorf("e2e: %s never served: %w", gvr, err)
		}
	}
	return nil
}

// stop ends the API server, then etcd, and removes the temporary directory
// unless FAILOVER_E2E_KEEP is set.
func (e *apiEnv) stop() {
	for i := len(e.procs) - 1; i >= 0; i-- {
		e.procs[i].terminate(15 * time.Second)
	}
	if os.Getenv("FAILOVER_E2E_KEEP") != "" {
		fmt.Fprintf(os.Stderr, "e2e: kept logs and kubeconfig in %s\n", e.dir)
		return
	}
	_ = os.RemoveAll(e.dir)
}

// dumpLogs prints the end of each process's log, where a failed start or a
// failed request leaves its reason.
func (e *apiEnv) dumpLogs() {
	for _, p := range e.procs {
		data, err := os.ReadFile(p.log)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		fmt.Fprintf(os.Stderr, "---- last lines of %s log ----\n%s\n", p.name, strings.Join(lines, "\n"))
	}
}
