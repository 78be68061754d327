#!/usr/bin/env bash
# Regenerates the Go code of mqfault's plugin protocol from plugins/proto.
#
# protoc comes from the system (Debian's protobuf-compiler); the two Go code
# generators are the versions go.mod pins (see tools.go), run with `go run`.
# protoc's own version is printed in every generated header; this script
# replaces it with a fixed text, so the output depends only on the .proto
# files and go.mod, not on which protoc release the machine has.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v protoc >/dev/null || { echo "gen.sh: protoc not found (apt-get install protobuf-compiler)" >&2; exit 1; }

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
root=$(pwd)
for gen in protoc-gen-go:google.golang.org/protobuf/cmd/protoc-gen-go \
           protoc-gen-go-grpc:google.golang.org/grpc/cmd/protoc-gen-go-grpc; do
  name=${gen%%:*}
  pkg=${gen#*:}
  printf '#!/bin/sh\ncd "%s" && exec go run %s "$@"\n' "$root" "$pkg" > "$bin/$name"
  chmod +x "$bin/$name"
done

mapfile -t protos < <(cd plugins/proto && find . -name '*.proto' | sed 's|^\./||' | LC_ALL=C sort)
(
  cd plugins/proto
  protoc -I . \
    --plugin=protoc-gen-go="$bin/protoc-gen-go" \
    --plugin=protoc-gen-go-grpc="$bin/protoc-gen-go-grpc" \
    --go_out=. --go_opt=paths=source_relative \
    --go-grpc_out=. --go-grpc_opt=paths=source_relative \
    "${protos[@]}"
)

# Replace the protoc version in the generated headers.
find plugins/proto -name '*.pb.go' -print0 | xargs -0 sed -i -E \
  -e 's#^(//[[:space:]]+(- )?protoc[[:space:]]+)v[0-9][^[:space:]]*$#\1(version not recorded, see plugins/gen.sh)#'
gofmt -w plugins/proto
