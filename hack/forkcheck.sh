#!/usr/bin/env bash
# Does the library drop into a Karmada fork? In a throwaway copy of Karmada's
# own module (KARMADA_VERSION, default v1.18.0; CI also runs the newest v1.18
# patch), built by the Go its go directive names, as a fork builds it:
#
#  1. record the go directive and the versions of k8s.io/*,
#     sigs.k8s.io/controller-runtime and github.com/prometheus/client_golang;
#  2. add the library as the guide's first steps do, running its
#     "sh fork-steps" block as written (`go get
#     github.com/failoverkit/failover/karmada@V` with no replace directive,
#     the fork's diff to cmd/controller-manager/app,
#     examples/karmadafork/karmada-v1.18.patch, and `go mod tidy`), V being
#     the version the library's modules require of each other, served from
#     a local module proxy of this checkout (hack/modproxy.sh: what `git
#     add -A` would commit) that stands in for the release's tags; fail if
#     the fork's go.mod then lacks the module; then a package that imports
#     every package of both modules, and `go mod tidy` again;
#  3. fail if step 1's versions moved, or if karmada-controller-manager and
#     that package do not build;
#  4. run the built karmada-controller-manager --help: its "Failover flags"
#     section must list the library's flags;
#  5. run hack/testdata/failover_optin_test.go inside the patched
#     cmd/controller-manager/app: through Karmada's own command and table,
#     Karmada's flags (default, or its deployment's) start none of the
#     library's controllers and fail nothing, those named beside
#     Karmada's fail with the corrected flags, and the documented flags
#     turn them on;
#  6. start the built binary with Karmada's default flags and a kubeconfig
#     whose server is not there: it must stop on Karmada's own connection
#     error, never on the library's.
#
# Karmada's source comes from the Go module proxy (or the module cache);
# nothing fetched is kept. Karmada's module has no checksum-database entry
# here, and the checksum database has never seen the library's served
# versions, hence GONOSUMDB. The build runs on a scratch module cache, so
# that the served versions never stand for the real tags in this machine's
# own; that cache fills from the machine's cache (as a file proxy listed
# after the library's) before the network, and -trimpath keeps its build
# cache entries valid from one run, and one scratch directory, to the next.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

KARMADA_VERSION="${KARMADA_VERSION:-v1.18.0}"
PATCH="$root/examples/karmadafork/karmada-v1.18.patch"
export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}github.com/karmada-io/karmada,github.com/failoverkit"

work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

version="$(bash "$root/hack/modproxy.sh" "$work/proxy" | tail -n 1)"
# Every package of both modules (not their main packages, not internal ones,
# which no importer can name), listed from this checkout: one that a module
# zip lost fails the build below.
packages="$(for m in "$root" "$root/karmada"; do
	(cd "$m" && go list -f '{{if ne .Name "main"}}{{.ImportPath}}{{end}}' ./...)
done | grep -v /internal/)"

echo "forkcheck: Karmada $KARMADA_VERSION"
src="$(cd "$work" && GOWORK=off GOFLAGS= go mod download -json "github.com/karmada-io/karmada@$KARMADA_VERSION" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
if [[ -z "$src" ]]; then
	echo "forkcheck: github.com/karmada-io/karmada@$KARMADA_VERSION: not downloaded" >&2
	exit 1
fi
cp -R "$src" "$work/karmada"
chmod -R u+w "$work/karmada"
cd "$work/karmada"

gover="$(awk '$1 == "go" { print $2; exit }' go.mod)"
proxy="file://$work/proxy,file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)"
export GOWORK=off GOFLAGS="-mod=mod -modcacherw -trimpath" GOTOOLCHAIN="go$gover"

# The versions a fork must not see move: the go and toolchain directives,
# every k8s.io module, controller-runtime and client_golang.
pinned() {
	awk '$1 == "go" || $1 == "toolchain" { print $1, $2 }' go.mod
	go list -m -f '{{.Path}} {{.Version}}' all |
		grep -E '^(k8s\.io/|sigs\.k8s\.io/controller-runtime |github\.com/prometheus/client_golang )' || true
}
before="$(pinned)"

# From here on the modules come from the scratch cache; the toolchain stays
# the one Karmada's go directive names, found in the machine's cache.
PATH="$(go env GOROOT)/bin:$PATH"
export GOTOOLCHAIN=local GOPROXY="$proxy" GOMODCACHE="$work/modcache"
# The guide's first steps as written (its "sh fork-steps" block): go get,
# the patch, go mod tidy, with this change's version and the patch's path.
# In another order, tidy drops the module before anything imports it.
steps="$(awk '/^```sh fork-steps$/ { on = 1; next } on && /^```$/ { exit } on' "$root/karmada/controller-manager.md")"
if [[ "$(wc -l <<<"$steps")" -ne 3 ]]; then
	echo "forkcheck: karmada/controller-manager.md: want three lines in its \`\`\`sh fork-steps block, found:" >&2
	echo "$steps" >&2
	exit 1
fi
echo "forkcheck: the guide's first steps as written, at $version (no replace; GOPROXY=file://.../proxy,...):"
while IFS= read -r line; do
	line="${line%%#*}"
	line="$(sed -E "s|@v[0-9]+\.[0-9]+\.[0-9]+|@$version|" <<<"$line")"
	line="${line//karmada-v1.18.patch/$PATCH}"
	echo "+ $line"
	eval "$line"
done <<<"$steps"
if ! grep -q "github.com/failoverkit/failover/karmada $version" go.mod; then
	echo "forkcheck: after the guide's first steps, the fork's go.mod does not require github.com/failoverkit/failover/karmada $version" >&2
	exit 1
fi
mkdir failovercheck
{
	echo "// Package failovercheck imports every package of the failover library."
	echo "package failovercheck"
	echo
	echo "import ("
	sed 's/.*/\t_ "&"/' <<<"$packages"
	echo ")"
} >failovercheck/imports.go
go mod tidy

after="$(pinned)"
moved="$(join -a1 -a2 -e '(none)' -o 0,1.2,2.2 <(sort <<<"$before") <(sort <<<"$after") | awk '$2 != $3')"
echo "forkcheck: $(wc -l <<<"$before") pinned versions (go directive, k8s.io/*, controller-runtime, client_golang) checked"
if [[ -n "$moved" ]]; then
	echo "forkcheck: adding the library moved (module, before, after):" >&2
	echo "$moved" >&2
	exit 1
fi
echo "forkcheck: none moved"
if grep -q 'github.com/failoverkit/' <(awk '$1 == "replace" || /^replace \(/,/^\)/' go.mod); then
	echo "forkcheck: the fork's go.mod replaces a module of the library" >&2
	exit 1
fi
got="$(go list -m -f '{{.Path}} {{.Version}}' github.com/failoverkit/failover github.com/failoverkit/failover/karmada)"
if [[ "$got" != "$(printf 'github.com/failoverkit/failover %s\ngithub.com/failoverkit/failover/karmada %s' "$version" "$version")" ]]; then
	echo "forkcheck: the fork's build list holds the library at (want $version):" >&2
	echo "$got" >&2
	exit 1
fi

go build -o "$work/karmada-controller-manager" ./cmd/controller-manager
go build ./failovercheck
echo "forkcheck: karmada-controller-manager and every package of the library build"

help="$("$work/karmada-controller-manager" --help)"
section="$(awk '/^Failover flags:/ { on = 1; next } on && /^[A-Z][a-z ]* flags:/ { exit } on' <<<"$help")"
for f in --secondary-resource-eviction-rate --unhealthy-cluster-threshold --large-cluster-num-threshold --disruption-domain --eviction-workers; do
	if ! grep -q -- "$f " <<<"$section"; then
		echo "forkcheck: karmada-controller-manager --help has no $f in a \"Failover flags\" section" >&2
		exit 1
	fi
done
for n in failoverEviction failoverGracefulEviction failoverClusterTaintPolicy; do
	if ! grep -q "$n" <<<"$help"; then
		echo "forkcheck: karmada-controller-manager --help does not list the controller $n" >&2
		exit 1
	fi
done
echo "forkcheck: --help shows the failover section and the three controllers"

cp "$root/hack/testdata/failover_optin_test.go" cmd/controller-manager/app/
go test -count=1 -run '^TestFailoverOptIn$' ./cmd/controller-manager/app
echo "forkcheck: Karmada's flags start none of the library's controllers; named beside Karmada's they fail with the flags to change"

# Nothing listens on port 1. Karmada stops where it first needs the API
# server, before its controller table; the library must not stop it sooner.
cat >"$work/kubeconfig" <<'KUBECONFIG'
apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
KUBECONFIG
rc=0
out="$(timeout 120 "$work/karmada-controller-manager" --kubeconfig="$work/kubeconfig" 2>&1)" || rc=$?
if [[ $rc -eq 0 || $rc -eq 124 ]] || grep -q 'failover:' <<<"$out" || ! grep -q '127.0.0.1:1' <<<"$out"; then
	echo "forkcheck: karmada-controller-manager with Karmada's default flags and no server (exit $rc):" >&2
	tail -20 <<<"$out" >&2
	exit 1
fi
echo "forkcheck: with Karmada's default flags it stops on Karmada's own connection error (exit $rc):"
grep -m1 '127.0.0.1:1' <<<"$out" | cut -c1-300
