// Package protocol is the boundary between mqfault and its plugins: the
// go-plugin handshake (magic cookie and protocol version), the gRPC shims
// that carry a detector or a batch filter across a process boundary, and the
// conversions between Go errors and the wire's explicit error codes.
//
// Plugin authors use package plugins/sdk, hosts use package plugins/host;
// both are built on this package. Start with [Handshake], [DetectorPlugin]
// and [FilterPlugin].
//
// Errors cross the boundary as a pluginv1.Code plus a reason, never as bare
// text: a plugin's context.DeadlineExceeded, syscall.ECONNREFUSED,
// probe.ErrInconclusive, [ErrNotServing] and the other sentinels of
// the code table come back on the host as a [*RemoteError] that matches the
// same sentinel with errors.Is.
package protocol
