package protocol

import (
	"github.com/hashicorp/go-plugin"
)

// ProtocolVersion is the version of the plugin protocol this package speaks
// (the services of plugins/proto/mqfault/plugin/v1). go-plugin negotiates it
// at start: a host and a plugin with no version in common refuse each other.
const ProtocolVersion = 1

// MagicCookieKey is the environment variable through which the host tells a
// plugin binary that it was started as a plugin, and of which kind.
const MagicCookieKey = "MQFAULT_PLUGIN"

// HostWatchKey is the environment variable through which the host tells a
// plugin how to notice that the host is gone. Its one value, HostWatchStdin:
// the host holds the write end of the plugin's standard input open for as
// long as it runs and never writes to it, so end of file there means the
// host has exited, however it ended (SIGKILL included); the plugin then
// exits (package plugins/sdk does). The plugin's stdin is the SDK's.
const HostWatchKey = "MQFAULT_PLUGIN_HOST_WATCH"

// HostWatchStdin is HostWatchKey's value: watch standard input.
const HostWatchStdin = "stdin"

// Kind is what a plugin does.
type Kind string

const (
	// KindDetector is a plugin that serves a probe.ServiceDetector.
	KindDetector Kind = "detector"
	// KindFilter is a plugin that serves a BatchFilter.
	KindFilter Kind = "filter"
)

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool { return k == KindDetector || k == KindFilter }

// Handshake returns the go-plugin handshake of a plugin of kind k. The magic
// cookie's value names the kind, so a host that starts a filter plugin as a
// detector (or a program that is no mqfault plugin at all) is refused at the
// handshake instead of failing on its first call.
func Handshake(k Kind) plugin.HandshakeConfig {
	return plugin.HandshakeConfig{
		ProtocolVersion:  ProtocolVersion,
		MagicCookieKey:   MagicCookieKey,
		MagicCookieValue: "mqfault-" + string(k) + "-plugin",
	}
}
