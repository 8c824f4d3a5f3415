#!/usr/bin/env bash
# Builds promtool, Prometheus's own rule checker and rule unit-test runner,
# that CI runs on monitoring/prometheus, from the Go module proxy with
# `go install` at a pinned version, and caches it as hack/e2e-binaries.sh
# caches the API server. The version is the github.com/prometheus/prometheus
# that monitoring/go.mod requires, so the rules are checked by the same
# PromQL parser the monitoring module's tests use (TestPromtoolVersion keeps
# the two in step).
#
# Output: ${FAILOVER_PROMTOOL_CACHE:-$HOME/.cache/failover-promtool}/<version>/promtool.
# Present: nothing is rebuilt. The script prints the directory on its last line.
set -euo pipefail

PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"
if [[ -z "${FAILOVER_PROMTOOL_CACHE:-}" && -z "${HOME:-}" ]]; then
	echo "promtool: neither FAILOVER_PROMTOOL_CACHE nor HOME is set: set FAILOVER_PROMTOOL_CACHE to the directory to build into" >&2
	exit 1
fi
OUT="${FAILOVER_PROMTOOL_CACHE:-$HOME/.cache/failover-promtool}/$PROMETHEUS_VERSION"

if [[ -x "$OUT/promtool" ]]; then
	echo "promtool already built" >&2
	echo "$OUT"
	exit 0
fi

mkdir -p "$OUT"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "promtool: building github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION (a few minutes, once)" >&2
# Outside any module or workspace, so nothing of this repository's go.work
# or go.mod takes part; go install takes the Go toolchain the module asks for.
# Built into a scratch directory and moved into place (atomic within one
# file system), so an interrupted build never leaves a half binary that the
# check above would trust.
(cd "$work" && GOWORK=off GOBIN="$work/bin" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" \
	"github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION")
mv -f "$work/bin/promtool" "$OUT/.promtool.partial"
mv -f "$OUT/.promtool.partial" "$OUT/promtool"
echo "$OUT"
