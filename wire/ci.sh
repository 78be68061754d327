#!/usr/bin/env bash
# wire/ci.sh: fails when wire/wire_gen.go or wire/pluginwire/wire_gen.go is
# not what `wire gen` would write from the wire.go beside it and the provider
# sets (run `go generate ./wire/...` to fix).
# Called from .ci/run; runs from any directory.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! out=$(go run github.com/google/wire/cmd/wire diff ./wire/... 2>&1); then
	printf '%s\n' "$out"
	echo "wire/ci.sh: a wire_gen.go under wire/ is stale or the injectors do not build: run 'go generate ./wire/...'" >&2
	exit 1
fi
echo "wire/ci.sh: wire/wire_gen.go and wire/pluginwire/wire_gen.go match the injectors"
