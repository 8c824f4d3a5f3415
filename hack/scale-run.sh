#!/usr/bin/env bash
# The opt-in scale run of issue 36, outside CI's budget: a regional outage at
# a fork's scale on a real kube-apiserver and etcd with the real
# karmada-scheduler, once with stock karmada-controller-manager's taint
# manager and once with the fork's eviction controller (examples/karmadafork),
# each on an API server of its own holding the same objects. See
# TestScaleRegionalOutage in e2e/scale_test.go for what it plays and reports.
#
# It builds what it runs first (hack/e2e-binaries.sh with FAILOVER_E2E_SCALE
# set adds Karmada's controller-manager: minutes the first time). Extra
# arguments go to go test. FAILOVER_E2E_SCALE_CLUSTERS (1000),
# FAILOVER_E2E_SCALE_BINDINGS (10000), FAILOVER_E2E_SCALE_RATE (25) and
# FAILOVER_E2E_SCALE_ONLY (karmada or fork) shape the run.
set -euo pipefail
cd "$(dirname "$0")/.."
export FAILOVER_E2E_SCALE=1
bash hack/e2e-binaries.sh >/dev/null
exec go test -tags e2e -count=1 -run '^TestScaleRegionalOutage$' -timeout 0 -v ./e2e/ "$@"
