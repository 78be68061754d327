// Package pluginv1 is the generated Go code of mqfault's plugin protocol,
// version 1: the Detector and Filter gRPC services and the error codes that
// cross the boundary. The .proto files beside it are the source; regenerate
// with plugins/gen.sh and never edit the .pb.go files by hand.
//
// Plugin authors do not use this package directly: plugins/sdk serves a Go
// interface over it, and plugins/host hands the host the same Go interfaces.
package pluginv1
