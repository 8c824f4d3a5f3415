#!/usr/bin/env bash
# Usage: hack/modproxy.sh DIR [REV]
#
# Writes into DIR a Go module proxy (GOPROXY=file://DIR) that serves every
# module of the workspace (go.work) at the version the modules require of
# each other, as the module proxy will once that version's tags are pushed
# (hack/modproxy). The files are what git holds at REV, or with no REV what
# `git add -A` would commit now. Prints the version on its last line.
#
# The modules' requirements of each other must all name one version, a
# release (vX.Y.Z): hack/release.sh moves them together. Their replace
# directives serve development only; an importer ignores them, and so does
# whoever consumes this proxy from a module of its own.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

if [[ $# -lt 1 || $# -gt 2 ]]; then
	echo "usage: hack/modproxy.sh DIR [REV]" >&2
	exit 2
fi
out="$1"
rev="${2:-}"

# The modules a release tags: those go.work uses.
mapfile -t modules < <(cd "$root" && go work edit -json | sed -n 's/^[[:space:]]*"DiskPath": "\(.*\)"$/\1/p')
# "module required-path version" for every requirement of one of the
# library's modules by another.
requires="$(for m in "${modules[@]}"; do
	awk -v m="$m" '$1 == "require" { $1 = "" ; $0 = $0 }
		$1 ~ /^github\.com\/failoverkit\/failover(\/|$)/ && $2 ~ /^v[0-9]/ { print m, $1, $2 }' "$root/$m/go.mod"
done)"
versions="$(awk '{ print $3 }' <<<"$requires" | sort -u)"
if [[ -z "$versions" || "$(wc -l <<<"$versions")" -ne 1 ]]; then
	echo "modproxy: the modules must require each other at one version; they require:" >&2
	echo "${requires:-(nothing)}" >&2
	exit 1
fi
if ! [[ "$versions" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
	echo "modproxy: the modules require each other at $versions, not a release vX.Y.Z" >&2
	exit 1
fi

mkdir -p "$out"
(cd "$root/hack/modproxy" && GOWORK=off go run . -o "$out" -version "$versions" -rev "$rev" -repo "$root" "${modules[@]}")
echo "$versions"
