#!/usr/bin/env bash
# CI check for the plugin protocol's generated code: installs protoc if the
# machine has none (Debian's protobuf-compiler), regenerates the .pb.go files
# with plugins/gen.sh and fails when they differ from what is committed.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v protoc >/dev/null; then
  echo "plugins/ci.sh: installing protobuf-compiler"
  export DEBIAN_FRONTEND=noninteractive
  as_root=()
  if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then
    as_root=(sudo -E)
  fi
  "${as_root[@]}" apt-get update -qq
  "${as_root[@]}" apt-get install -y -qq protobuf-compiler >/dev/null
fi
protoc --version

bash plugins/gen.sh
if ! git diff --exit-code -- plugins/proto; then
  echo "plugins/proto differs from what plugins/gen.sh writes: run plugins/gen.sh and commit" >&2
  exit 1
fi
untracked=$(git status --porcelain -- plugins/proto)
if [ -n "$untracked" ]; then
  echo "$untracked"
  echo "plugins/gen.sh left files git does not know: commit them" >&2
  exit 1
fi
echo "plugins: generated code is up to date"
