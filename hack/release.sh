#!/usr/bin/env bash
# Usage: hack/release.sh [-n] VERSION
#
# Releases every module of the workspace (go.work) at VERSION, as
# OpenTelemetry-Go releases its modules together:
#
#  1. every requirement of one of the library's modules by another moves to
#     VERSION (go mod edit), in one commit; none moves if they already
#     require VERSION, as before the first release, v0.4.0;
#  2. hack/importcheck.sh proves that commit consumable: a module with no
#     replace directive gets the core and the karmada module at VERSION from
#     a local module proxy of it, and builds every package of both;
#  3. one annotated tag per module on that commit, named as the go command
#     looks it up: VERSION for the core, DIR/VERSION for the module in DIR
#     (karmada/v0.4.0, examples/taintcontroller/v0.4.0, ...).
#
# It pushes nothing: it prints the push command. With -n (dry run) it prints
# the requirements it would move and the tags it would create, and changes
# nothing.
#
# The replace directives stay: they serve development (GOWORK=off builds, the
# floor step in .ci/run) and an importer ignores them. monitoring/ and
# hack/modproxy are outside go.work and are not released. VERSION is vX.Y.Z
# with X 0 or 1: from v2 on, module paths need a /vX suffix.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

dry=
if [[ "${1:-}" == -n ]]; then
	dry=1
	shift
fi
if [[ $# -ne 1 ]]; then
	echo "usage: hack/release.sh [-n] VERSION" >&2
	exit 2
fi
version="$1"
if ! [[ "$version" =~ ^v[01]\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$ ]]; then
	echo "release: $version: want vX.Y.Z with X 0 or 1 (v2 and later need /vX module paths)" >&2
	exit 2
fi

core=github.com/failoverkit/failover
mapfile -t modules < <(go work edit -json | sed -n 's/^[[:space:]]*"DiskPath": "\(.*\)"$/\1/p')

# The requirements to move ("go.mod path version") and the tags.
moves=()
tags=()
for m in "${modules[@]}"; do
	dir="${m#./}"
	path="$(awk '$1 == "module" { print $2; exit }' "$m/go.mod")"
	if [[ "$m" == . ]]; then
		want="$core" tag="$version"
	else
		want="$core/$dir" tag="$dir/$version"
	fi
	if [[ "$path" != "$want" ]]; then
		echo "release: $m/go.mod declares $path; its tag $tag would name $want" >&2
		exit 1
	fi
	if git rev-parse -q --verify "refs/tags/$tag" >/dev/null; then
		echo "release: tag $tag exists already" >&2
		exit 1
	fi
	tags+=("$tag")
	while read -r req old; do
		if [[ "$old" != "$version" ]]; then
			if [[ "$(printf '%s\n' "$old" "$version" | sort -V | tail -n 1)" != "$version" ]]; then
				echo "release: $m/go.mod requires $req $old, newer than $version" >&2
				exit 1
			fi
			gomod="$m/go.mod"
			moves+=("${gomod#./} $req $old")
		fi
	done < <(awk '$1 == "require" { $1 = ""; $0 = $0 }
		$1 ~ /^github\.com\/failoverkit\/failover(\/|$)/ && $2 ~ /^v[0-9]/ { print $1, $2 }' "$m/go.mod")
done

if [[ -n "$dry" ]]; then
	echo "release (dry run): $version"
	for mv in "${moves[@]}"; do
		read -r file req old <<<"$mv"
		echo "  $file: require $req $old -> $version"
	done
	[[ ${#moves[@]} -eq 0 ]] && echo "  every module already requires its siblings at $version: nothing to commit"
	echo "then hack/importcheck.sh at $version, and on that commit:"
	printf '  git tag -a %s\n' "${tags[@]}"
	exit 0
fi

if [[ -n "$(git status --porcelain)" ]]; then
	echo "release: the work tree has changes; commit or stash them first" >&2
	exit 1
fi
if [[ ${#moves[@]} -gt 0 ]]; then
	files=()
	for mv in "${moves[@]}"; do
		read -r file req old <<<"$mv"
		go mod edit -require="$req@$version" "$file"
		echo "release: $file: require $req $old -> $version"
		files+=("$file")
	done
	git commit -q -m "release $version: the modules require each other at $version

hack/release.sh moves the requirements together, so that each module's tag
$version names siblings tagged at the same commit." -- "${files[@]}"
fi
commit="$(git rev-parse HEAD)"

if ! IMPORTCHECK_REV="$commit" bash hack/importcheck.sh; then
	echo "release: $commit is not consumable at $version; no tag created (the requirements' commit, if any, stays)" >&2
	exit 1
fi

for t in "${tags[@]}"; do
	d="${t%"$version"}"
	git tag -a "$t" -m "${core}${d:+/${d%/}} $version" "$commit"
	echo "release: tagged $t"
done
echo "release: $version tagged on $commit; nothing pushed. To publish:"
echo "  git push origin ${tags[*]}"
