#!/usr/bin/env bash
# wire/ci.sh: fails when a wire_gen.go under wire/ (wire, wire/pluginwire, and
# wire/internal/exampleinjector, the injector package wire's doc comment shows)
# is not what `wire gen` would write from the wire.go beside it and the
# provider sets, or when Wire cannot generate it (run `go generate ./wire/...`
# to fix).
# Called from .ci/run; runs from any directory.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! out=$(go run github.com/google/wire/cmd/wire diff ./wire/... 2>&1); then
	printf '%s\n' "$out"
	echo "wire/ci.sh: a wire_gen.go under wire/ is stale or the injectors do not build: run 'go generate ./wire/...'" >&2
	exit 1
fi
echo "wire/ci.sh: every wire_gen.go under wire/ matches its injectors"
