#!/usr/bin/env bash
# make dist-check: validates the distribution files without Docker or a
# GitHub runner:
#   - goreleaser check on .goreleaser.yaml;
#   - actionlint on examples/github-actions.yml as an outside repository
#     sees it;
#   - actionlint on the same workflow pointed at this checkout's action.yml
#     (uses: ./), which checks its inputs against the action's (actionlint
#     reads a local action's metadata only inside a git project with
#     .github/workflows, so one is made in a temporary directory).
# Both tools are pinned and built through the Go module proxy into a
# temporary GOBIN (minutes on a cold build cache; not part of `make test`).
# Override with GORELEASER=module@version / ACTIONLINT=module@version.
set -euo pipefail
cd "$(dirname "$0")/.."

goreleaser=${GORELEASER:-github.com/goreleaser/goreleaser/v2@v2.16.0}
actionlint=${ACTIONLINT:-github.com/rhysd/actionlint/cmd/actionlint@v1.7.12}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "building $goreleaser and $actionlint"
GOBIN="$tmp/bin" go install "$goreleaser"
GOBIN="$tmp/bin" go install "$actionlint"

echo "== goreleaser check"
"$tmp/bin/goreleaser" check

echo "== actionlint examples/github-actions.yml"
"$tmp/bin/actionlint" examples/github-actions.yml

echo "== actionlint: the example's inputs against action.yml"
proj="$tmp/project"
mkdir -p "$proj/.github/workflows"
cp action.yml "$proj/"
sed 's#uses: idemcheck/idemcheck@[^ ]*#uses: ./#' examples/github-actions.yml >"$proj/.github/workflows/example.yml"
if ! grep -q 'uses: \./$' "$proj/.github/workflows/example.yml"; then
  echo "check-dist: examples/github-actions.yml no longer uses idemcheck/idemcheck@..." >&2
  exit 1
fi
git -C "$proj" init -q
(cd "$proj" && "$tmp/bin/actionlint")
echo "dist-check: ok"
