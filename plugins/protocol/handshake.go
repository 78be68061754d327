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

// Kind is what a plugin does.
type Kind string

const (
	// KindDetector is a plugin that serves a latency.ServiceDetector.
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
