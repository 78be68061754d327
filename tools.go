//go:build tools

// Package tools pins the code generators this module runs with `go run`, so a
// fresh machine needs no manual install: go.mod records their versions.
package tools

import (
	_ "github.com/google/wire/cmd/wire"
	_ "go.uber.org/mock/mockgen"
	_ "google.golang.org/grpc/cmd/protoc-gen-go-grpc"
	_ "google.golang.org/protobuf/cmd/protoc-gen-go"
)
