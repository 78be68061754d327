#!/usr/bin/env bash
# Vets and tests the rocketmqgo integration module, which is its own Go module:
# the root module's `go test ./...` does not descend into it.
set -euo pipefail
cd "$(dirname "$0")"
go vet ./...
go test -race ./...
