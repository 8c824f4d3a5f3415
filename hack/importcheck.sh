#!/usr/bin/env bash
# Can an importer use the release? In a scratch module with no replace
# directive, as a fork's first step does:
#
#   go get github.com/failoverkit/failover@V github.com/failoverkit/failover/karmada@V
#
# where V is the version the modules require of each other, served from a
# local module proxy of this checkout (hack/modproxy.sh: what git would hold
# once `git add -A` is committed, or at IMPORTCHECK_REV) that stands in for
# the tags hack/release.sh creates. Then a package that imports every package
# of both modules (not main packages, not internal ones, which no importer
# can name), `go mod tidy` and `go build`; and the build list must hold both
# modules at V, from the proxy. This fails where a module requires a sibling
# at a version that is not the release (v0.0.0 made every `go get` of the
# karmada module fail: issue 31), where a package is missing from a module's
# zip, or where the module zips cannot be made.
#
# The proxy comes first in GOPROXY; then this machine's module cache (as a
# file proxy, so that a scratch module cache copies instead of downloading
# again), then the environment's GOPROXY, for the third-party modules. The
# scratch module cache keeps the served versions out of the real one, where
# they would stand for the real tags. GONOSUMDB: the checksum database has
# never seen these versions.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

version="$(bash "$root/hack/modproxy.sh" "$work/proxy" "${IMPORTCHECK_REV:-}" | tail -n 1)"
core=github.com/failoverkit/failover
karmada="$core/karmada"
gover="$(awk '$1 == "go" { print $2; exit }' "$root/karmada/go.mod")"

# The packages, listed from this checkout: one that the module zip lost
# fails the build below.
packages="$(for m in "$root" "$root/karmada"; do
	(cd "$m" && go list -f '{{if ne .Name "main"}}{{.ImportPath}}{{end}}' ./...)
done | grep -v /internal/)"

proxy="file://$work/proxy,file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)"
# The oldest Go the karmada module admits, as the floor step and
# hack/forkcheck.sh build with: found once in the machine's module cache
# (fetched there if missing), so that the scratch cache need not hold it,
# and with -trimpath the build cache serves forkcheck the packages built here.
PATH="$(cd "$root/karmada" && GOWORK=off GOTOOLCHAIN="go$gover" go env GOROOT)/bin:$PATH"
export GOTOOLCHAIN=local GOPROXY="$proxy" GOWORK=off GOFLAGS="-modcacherw -trimpath" GOMODCACHE="$work/modcache"
export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}github.com/failoverkit"

mkdir "$work/importer"
cd "$work/importer"
cat >go.mod <<EOF
module example.com/failoverimporter

go $gover
EOF
# The hashes the core's and the karmada module's go.sum already hold, so that
# the checksum database is asked nothing it was not asked when they were
# added; they name no module of the library.
cat "$root/go.sum" "$root/karmada/go.sum" | sort -u >go.sum

echo "importcheck: $(go env GOVERSION): go get $core@$version $karmada@$version (no replace; GOPROXY=file://.../proxy,...)"
go get "$core@$version" "$karmada@$version"
{
	echo "// Package failoverimporter imports every package of the failover library."
	echo "package failoverimporter"
	echo
	echo "import ("
	sed 's/.*/\t_ "&"/' <<<"$packages"
	echo ")"
} >imports.go
go mod tidy
go build ./...

if grep -q '^replace' go.mod; then
	echo "importcheck: the importer's go.mod has a replace directive" >&2
	exit 1
fi
got="$(go list -m -f '{{.Path}} {{.Version}} {{if .Replace}}replaced{{end}}' "$core" "$karmada")"
want="$(printf '%s %s \n' "$core" "$version" "$karmada" "$version")"
if [[ "$got" != "$want" ]]; then
	echo "importcheck: the build list holds (want both at $version, not replaced):" >&2
	echo "$got" >&2
	exit 1
fi
echo "importcheck: $(wc -l <<<"$packages") packages of $core and $karmada at $version build in a module with no replace directive"
