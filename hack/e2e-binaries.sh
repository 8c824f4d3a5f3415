#!/usr/bin/env bash
# Builds the binaries the e2e module runs, using nothing but the Go module
# proxy: no release download site, no root, no apt.
#
# kube-apiserver: k8s.io/kubernetes cannot be fetched with `go install
# ...@version` because its go.mod replaces every staging module (k8s.io/api,
# k8s.io/apiserver, ...) with a local directory at v0.0.0. A scratch module
# that requires k8s.io/kubernetes and replaces each of those v0.0.0 staging
# requirements with the published v0.<minor>.<patch> tag resolves the same
# code. etcd: the server module that k8s.io/kubernetes itself requires
# (v3.6.x for v1.36), built in the same scratch module so both binaries share
# one dependency graph. Debian's etcd-server package would need root and is
# 3.4, older than what this Kubernetes release is tested with.
#
# karmada-scheduler: Karmada's go.mod has no replace directives, so a scratch
# module that requires github.com/karmada-io/karmada at the release builds
# cmd/scheduler at exactly the versions Karmada's release declares; with
# FAILOVER_E2E_SCALE set, cmd/controller-manager beside it, for the opt-in
# scale run.
#
# K8S_VERSION and KARMADA_VERSION may be overridden to try another release;
# the e2e module looks for the versions in its k8sVersion and karmadaVersion
# constants, so change both together.
#
# Output, under ${FAILOVER_E2E_CACHE:-$HOME/.cache/failover-e2e}:
# <k8s version>/{kube-apiserver,etcd} and
# karmada-<karmada version>/karmada-scheduler (and karmada-controller-manager).
# A binary already there is not rebuilt, each set on its own. The script
# prints the Kubernetes directory on its last line; the e2e tests look there.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.36.3}"
KARMADA_VERSION="${KARMADA_VERSION:-v1.18.0}"
if [[ -z "${FAILOVER_E2E_CACHE:-}" && -z "${HOME:-}" ]]; then
	echo "e2e-binaries: neither FAILOVER_E2E_CACHE nor HOME is set: set FAILOVER_E2E_CACHE to the directory to build into" >&2
	exit 1
fi
CACHE_ROOT="${FAILOVER_E2E_CACHE:-$HOME/.cache/failover-e2e}"
REPO="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$CACHE_ROOT/$K8S_VERSION"
KARMADA_OUT="$CACHE_ROOT/karmada-$KARMADA_VERSION"

# karmada_binary builds Karmada's cmd/$1 into $KARMADA_OUT/$2 unless it is
# there: into a directory beside it, then renamed into place, so an
# interrupted build never leaves a half binary the check would trust.
karmada_binary() {
	local cmd="$1" name="$2"
	if [[ -x "$KARMADA_OUT/$name" ]]; then
		echo "e2e-binaries: $name $KARMADA_VERSION already built" >&2
		return
	fi
	mkdir -p "$KARMADA_OUT"
	local gobin="$KARMADA_OUT/.gobin.partial"
	rm -rf "$gobin"
	# The checksum database may not know this Karmada release (it has no
	# entry for it behind some proxies), so Karmada's module is checked
	# against the hash the repository's karmada/go.sum records instead; every
	# other module goes through the checksum database as usual.
	local want got
	want="$(awk -v v="$KARMADA_VERSION" '$1 == "github.com/karmada-io/karmada" && $2 == v { print $3 }' "$REPO/karmada/go.sum")"
	if [[ -z "$want" ]]; then
		echo "e2e-binaries: karmada/go.sum has no hash for github.com/karmada-io/karmada $KARMADA_VERSION" >&2
		exit 1
	fi
	export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}github.com/karmada-io/karmada"
	got="$(go mod download -json "github.com/karmada-io/karmada@$KARMADA_VERSION" | sed -n 's/^[[:space:]]*"Sum": "\(.*\)",$/\1/p')"
	if [[ "$got" != "$want" ]]; then
		echo "e2e-binaries: github.com/karmada-io/karmada@$KARMADA_VERSION has hash ${got:-none}, karmada/go.sum records $want" >&2
		exit 1
	fi
	# `go install ...@version` would also ask the proxy for the module's
	# version list (to report a deprecation), which some proxies refuse; a
	# scratch module requiring Karmada's release builds the same code at the
	# versions Karmada's go.mod selects, and asks for nothing else.
	local scratch
	scratch="$(mktemp -d)"
	printf 'module failover.local/karmada-%s\n\ngo %s\n\nrequire github.com/karmada-io/karmada %s\n' \
		"$cmd" "$(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/')" "$KARMADA_VERSION" >"$scratch/go.mod"
	local pkg=github.com/karmada-io/karmada/pkg/version
	echo "e2e-binaries: building $name $KARMADA_VERSION" >&2
	(
		cd "$scratch"
		GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -o "$gobin/$cmd" \
			-ldflags "-s -w -X $pkg.gitVersion=$KARMADA_VERSION -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z" \
			"github.com/karmada-io/karmada/cmd/$cmd"
	) || { rm -rf "$scratch"; exit 1; }
	rm -rf "$scratch"
	mv -f "$gobin/$cmd" "$KARMADA_OUT/$name"
	rm -rf "$gobin"
}
karmada_binary scheduler karmada-scheduler
# The opt-in scale run (hack/scale-run.sh) also runs Karmada's own
# controller-manager, as stock Karmada runs it.
if [[ -n "${FAILOVER_E2E_SCALE:-}" ]]; then
	karmada_binary controller-manager karmada-controller-manager
fi

if [[ -x "$OUT/kube-apiserver" && -x "$OUT/etcd" ]]; then
	echo "e2e-binaries: kube-apiserver and etcd $K8S_VERSION already built" >&2
	echo "$OUT"
	exit 0
fi

# v1.36.3 -> staging modules are tagged v0.36.3.
STAGING_VERSION="v0.${K8S_VERSION#v1.}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

gomod="$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
if [[ -z "$gomod" || ! -f "$gomod" ]]; then
	echo "e2e-binaries: cannot locate go.mod of k8s.io/kubernetes@$K8S_VERSION" >&2
	exit 1
fi

# Staging modules are the k8s.io/* requirements pinned at the placeholder v0.0.0.
mapfile -t staging < <(awk '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" { print $1 }' "$gomod" | sort -u)
if [[ ${#staging[@]} -eq 0 ]]; then
	echo "e2e-binaries: found no v0.0.0 staging requirements in $gomod" >&2
	exit 1
fi
etcd_version="$(awk '$1 == "go.etcd.io/etcd/server/v3" { print $2; exit }' "$gomod")"
if [[ -z "$etcd_version" ]]; then
	echo "e2e-binaries: k8s.io/kubernetes@$K8S_VERSION does not require go.etcd.io/etcd/server/v3" >&2
	exit 1
fi

{
	echo "module failover.local/e2e-binaries"
	echo
	echo "go $(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/')"
	echo
	echo "require ("
	echo "	k8s.io/kubernetes $K8S_VERSION"
	echo "	go.etcd.io/etcd/server/v3 $etcd_version"
	echo ")"
	echo
	echo "replace ("
	for m in "${staging[@]}"; do
		echo "	$m => $m $STAGING_VERSION"
	done
	echo ")"
} >go.mod

echo "e2e-binaries: resolving k8s.io/kubernetes@$K8S_VERSION (${#staging[@]} staging modules at $STAGING_VERSION), etcd $etcd_version" >&2
go get "k8s.io/kubernetes/cmd/kube-apiserver@$K8S_VERSION" "go.etcd.io/etcd/server/v3@$etcd_version"

major="${K8S_VERSION#v}"; major="${major%%.*}"
minor="${K8S_VERSION#v*.}"; minor="${minor%%.*}"
# The same variables Kubernetes' own build stamps, so /version reports the
# release instead of v0.0.0-master and version-skew checks behave.
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X $pkg.gitVersion=$K8S_VERSION"
	ldflags+=" -X $pkg.gitMajor=$major"
	ldflags+=" -X $pkg.gitMinor=$minor"
	ldflags+=" -X $pkg.gitTreeState=clean"
	ldflags+=" -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

mkdir -p "$OUT"
export CGO_ENABLED=0
# Each binary is written under a temporary name in $OUT and renamed (atomic
# within one directory), so an interrupted build never leaves a half binary
# that the skip check above would trust.
echo "e2e-binaries: building kube-apiserver $K8S_VERSION" >&2
go build -trimpath -ldflags "$ldflags" -o "$OUT/.kube-apiserver.partial" k8s.io/kubernetes/cmd/kube-apiserver
echo "e2e-binaries: building etcd $etcd_version" >&2
go build -trimpath -ldflags "-s -w" -o "$OUT/.etcd.partial" go.etcd.io/etcd/server/v3
mv -f "$OUT/.etcd.partial" "$OUT/etcd"
mv -f "$OUT/.kube-apiserver.partial" "$OUT/kube-apiserver"
echo "$OUT"
