// Package e2e tests examples/taintcontroller, the karmada module's
// controllers (beside Karmada's own karmada-scheduler) and
// examples/controllerruntime against a real kube-apiserver and etcd, built
// with karmada-scheduler by hack/e2e-binaries.sh. It is its own module so the
// library's users never inherit its test dependencies.
//
// Run from the repository root:
//
//	bash hack/e2e-binaries.sh
//	go test -tags e2e -race -count=1 ./e2e/...
//
// The binaries are looked up in $FAILOVER_E2E_BIN_DIR, else in
// ${FAILOVER_E2E_CACHE:-$HOME/.cache/failover-e2e}/v1.36.3 and
// .../karmada-v1.18.0, where the script puts them. The tests fail, naming
// the script, when one is missing.
package e2e
