#!/usr/bin/env bash
# The other end of the version range: every module of the workspace with
# every dependency at its newest release, on the newest Go. In a throwaway
# copy of the repository (nothing here changes the tree or its go.mod
# files), each module alone (GOWORK=off) takes the newest Go (go get
# go@latest: the newest k8s.io releases already declare go 1.27, and
# GOTOOLCHAIN=auto fetches that toolchain from the module proxy), then the
# newest release of every module that provides one of its packages'
# dependencies, tests included (what `go get -u -t ./...` upgrades; @upgrade,
# so a newer pre-release already required is kept), then `go mod tidy`; then
# its tests run. .ci/run tests the floor, each module at exactly the
# versions it declares; this says whether a user on today's releases can
# still build and test with the library.
#
# Three kinds of module are not upgraded by name:
#   - the library's own, replaced by the directories of this copy as in the
#     repository (`go get -u` would look for a published release and fail);
#   - Karmada, held at the newest v1.18 patch, KARMADA_NEWEST: the karmada
#     module is written against v1.18's API (hack/forkcheck.sh builds the
#     same release);
#   - modules followed at a commit rather than a release (a pseudo-version,
#     such as k8s.io/kube-openapi or k8s.io/utils): they have no newest
#     release, and their newest commit need not build with the newest
#     release of what uses them (kube-openapi's head already uses
#     structured-merge-diff/v7, which k8s.io/apimachinery v0.37 does not), so
#     they move only as far as the upgraded releases require.
# The e2e module is only compiled (go vet -tags e2e): its suite needs an API
# server and runs once, at the workspace's versions.
#
# NEWEST_REPLACE (default empty) holds modules back where a newest release
# cannot be had: space-separated path=version pairs, each applied to every
# module as a replace of all of that path's versions, e.g.
# NEWEST_REPLACE="k8s.io/kube-openapi=v0.0.0-20260721132016-d427ff9ee9ad".
#
# Prints, per module, the direct requirements (and go directive) the upgrade
# moved, then the tests' results. Karmada's module has no checksum-database
# entry here, hence GONOSUMDB.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

KARMADA_NEWEST="${KARMADA_NEWEST:-v1.18.2}"
# The workspace's modules, and monitoring, which stays out of it (Prometheus
# needs newer versions than the floor).
MODULES=(. karmada examples/controllerruntime examples/fleetsim examples/taintcontroller examples/karmadafork e2e monitoring)

work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
# The tracked files only: no build output, no caches.
git -C "$root" ls-files -z | (cd "$root" && xargs -0 cp --parents -t "$work")

export GOTOOLCHAIN=auto GOWORK=off GOFLAGS=-mod=mod
export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}github.com/karmada-io/karmada"

# requirements prints the go directive and the direct requirements of the
# module in the current directory, a "path version" line each.
requirements() {
	awk '$1 == "go" && NF == 2 { print "go", $2 }
		/^require \($/ { block = 1; next }
		block && /^\)/ { block = 0; next }
		block && !/\/\/ indirect/ { print $1, $2 }
		/^require [^(]/ && !/\/\/ indirect/ { print $2, $3 }' go.mod
}

# upgrade takes "path version" lines and upgrades each module to its newest
# release, but for the library's own, Karmada (to KARMADA_NEWEST) and those
# at a pseudo-version. Its arguments are go get's flags.
upgrade() {
	local upgrades=() mod version
	while read -r mod version; do
		case "$mod" in
		github.com/failoverkit/failover | github.com/failoverkit/failover/*) ;;
		github.com/karmada-io/karmada) upgrades+=("$mod@$KARMADA_NEWEST") ;;
		*)
			if ! [[ "$version" =~ [0-9]{14}-[0-9a-f]{12}(\+incompatible)?$ ]]; then
				upgrades+=("$mod@upgrade")
			fi
			;;
		esac
	done
	go get -t "$@" "${upgrades[@]}"
}

status=0
for m in "${MODULES[@]}"; do
	echo "== newest: $m"
	# Not "( ... ) || ...": bash ignores set -e in a subshell whose status
	# is tested, and a failed go get would go unnoticed.
	set +e
	(
		set -e
		cd "$work/$m"
		declared="$(requirements)"
		tags=()
		[[ "$m" == e2e ]] && tags=(-tags e2e)
		go get go@latest
		for r in ${NEWEST_REPLACE:-}; do
			go mod edit -replace="${r%%=*}=${r%%=*}@${r#*=}"
		done
		# First the module's own requirements, then, once what they need is
		# in the graph, everything its packages import: asked for at once,
		# a dependency's release older than what an upgraded requirement
		# needs (go-spew v1.1.1, where k8s.io asks for a later commit)
		# would be a conflict.
		upgrade "${tags[@]}" < <(requirements | grep -v '^go ')
		upgrade "${tags[@]}" < <(go list -deps -test "${tags[@]}" -f '{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}}{{end}}{{end}}' ./... | sort -u)
		go mod tidy
		newest="$(requirements)"
		# What moved, as "module declared -> newest".
		join -a2 -e '(none)' -o 0,1.2,2.2 <(sort <<<"$declared") <(sort <<<"$newest") |
			awk 'NF == 3 && $2 != $3 { printf "   %s %s -> %s\n", $1, $2, $3 }'
		if [[ "$m" == e2e ]]; then
			go vet -tags e2e ./...
		else
			# failover_newest leaves out the model test's manager.Manager
			# stand-in, written to the floor's controller-runtime.
			go test -count=1 -tags failover_newest ./...
		fi
	)
	rc=$?
	set -e
	if ((rc != 0)); then
		echo "newest: $m failed" >&2
		status=1
	fi
done
exit "$status"
