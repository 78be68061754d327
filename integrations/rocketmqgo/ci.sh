#!/usr/bin/env bash
# Vets and tests the rocketmqgo integration module, which is its own Go module:
# the root module's `go test ./...` does not descend into it. Checks that the
# committed mocks are what `go generate ./mocks` writes (mockgen is pinned by
# this module's go.mod), then runs every test, end to end ones included, under
# the race detector.
set -euo pipefail
cd "$(dirname "$0")"

unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "not gofmt-formatted:"; echo "$unformatted"; exit 1
fi
go vet ./...

go generate ./mocks
git diff --exit-code -- mocks || { echo "mocks/ differs from what go generate writes: run go generate ./mocks and commit"; exit 1; }
test -z "$(git status --porcelain -- mocks)" || { git status --porcelain -- mocks; echo "go generate ./mocks left untracked files"; exit 1; }

go test -race ./...
