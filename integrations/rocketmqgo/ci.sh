#!/usr/bin/env bash
# Vets and tests the rocketmqgo integration module, which is its own Go module:
# the root module's `go test ./...` does not descend into it.
#
# The module's go.mod requires the root module at a placeholder version that
# no proxy serves, and replaces exactly that version with this checkout (a
# consumer's build ignores the replace and writes its own: README, "Using it
# from your module"). Two ways to build it here:
#   - workspace mode, through the root go.work (what a developer gets): gofmt,
#     vet, the mock drift check;
#   - module mode (GOWORK=off, the module's own pins): go mod tidy -diff, the
#     tests on the pinned client v2.1.2 under -race -cpu=1,2,4, and the tests
#     on the client's master pseudo-version (a go get into a temporary copy of
#     go.mod/go.sum; -modfile is refused in workspace mode, hence GOWORK=off;
#     nothing committed changes).
# Finally a throwaway consumer module outside the repository, with the go.mod
# README documents, must tidy and build.
# GOFLAGS from the environment apply to every step; one that sets -mod or
# -modfile breaks the workspace steps (the go command refuses them there).
set -euo pipefail
cd "$(dirname "$0")"
here=$(pwd)
root=$(cd ../.. && pwd)

master=v2.1.3-0.20251226070945-2173d070fd1b

step() { printf '\n--- rocketmqgo: %s\n' "$*"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# modcopy DIR: a copy of go.mod/go.sum in DIR.
modcopy() {
  mkdir -p "$1"
  cp go.mod "$1/go.mod"
  cp go.sum "$1/go.sum"
}

step "gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "not gofmt-formatted:"; echo "$unformatted"; exit 1
fi

step "go vet (workspace mode, through the root go.work)"
go vet ./...

step "mocks are what go generate writes"
go generate ./mocks
git diff --exit-code -- mocks || { echo "mocks/ differs from what go generate writes: run go generate ./mocks and commit"; exit 1; }
test -z "$(git status --porcelain -- mocks)" || { git status --porcelain -- mocks; echo "go generate ./mocks left untracked files"; exit 1; }

step "go.mod is tidy (go mod tidy -diff, module mode)"
if grep -Eq '^[[:space:]]*(replace[[:space:]]+)?github.com/mqfault/mqfault[[:space:]]*=>' go.mod; then
  echo "go.mod replaces the root module at every version: replace only the placeholder version, so a real requirement is never shadowed"; exit 1
fi
GOWORK=off go mod tidy -diff || { echo "go.mod/go.sum are not tidy: run GOWORK=off go mod tidy here and commit"; exit 1; }

step "go test -race -cpu=1,2,4 ./... on rocketmq-client-go v2.1.2 (the module's pin)"
GOWORK=off go test -race -cpu=1,2,4 ./...

step "go test -race ./... on rocketmq-client-go $master (the client's master; not committed)"
modcopy "$tmp/master"
GOWORK=off go get -modfile="$tmp/master/go.mod" "github.com/apache/rocketmq-client-go/v2@$master"
GOWORK=off go mod tidy -modfile="$tmp/master/go.mod"
GOWORK=off go list -modfile="$tmp/master/go.mod" -m github.com/apache/rocketmq-client-go/v2 | grep -q "$master" || { echo "the master run did not select $master"; exit 1; }
# -modfile goes through GOFLAGS so that the go build the plugin's tests run
# (plugintest) uses it too.
GOWORK=off GOFLAGS="${GOFLAGS:-} -modfile=$tmp/master/go.mod" go test -race -count=1 ./...

step "a consumer module outside the repository resolves and builds (README's go.mod)"
consumer="$tmp/consumer"
mkdir -p "$consumer"
# The go.mod is the integration's block of the root README's Install section
# (the second go.mod block; internal/doccheck's TestReadmeInstall checks that this
# README gives the same lines), with the checkout's path for /src/mqfault.
{
  printf 'module example.com/consumer\n\ngo 1.26.0\n\n'
  awk '/^## Install$/{s=1;next} s&&/^## /{exit} s&&/^```go.mod$/{n++;if(n==2){b=1;next}} b&&/^```$/{exit} b{print}' "$root/README.md" \
    | sed "s#/src/mqfault#$root#g"
} > "$consumer/go.mod"
grep -q "integrations/rocketmqgo => $root/integrations/rocketmqgo" "$consumer/go.mod" \
  || { echo "README's Install section has no integration go.mod block:"; cat "$consumer/go.mod"; exit 1; }
cat > "$consumer/main.go" <<'GO'
package main

import (
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/mqfault/mqfault/integrations/rocketmqgo"
)

func main() {
	p, err := rocketmqgo.NewProducer([]producer.Option{
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{"127.0.0.1:9876"})),
	})
	if err != nil {
		panic(err)
	}
	_ = p
}
GO
(cd "$consumer" && GOWORK=off go mod tidy && GOWORK=off go build ./... && GOWORK=off go vet ./...)
