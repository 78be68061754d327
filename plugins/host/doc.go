// Package host loads mqfault plugin binaries and hands back the Go interfaces
// the core uses, so a caller cannot tell a plugin from a built-in:
// [NewDetector] gives a probe.ServiceDetector, [NewFilter] a
// route.QueueFilter.
//
// Each plugin runs as a child process, in a process group of its own,
// started with go-plugin (magic cookie handshake, protocol version
// negotiation, automatic mutual TLS), optionally pinned to the SHA-256 of its
// executable (a pinned plugin runs from a private copy that was hashed). The
// host supervises it: when the process dies, or stops answering health
// checks, it logs it and restarts it with exponential backoff; meanwhile a
// detector answers every probe as inconclusive and a filter admits every
// queue (fails open), so no pick and no send is lost. Every call to a plugin
// has a deadline, and a plugin that does not answer by it is never taken as
// a verdict on a broker. The plugin's log lines (package plugins/sdk's
// Logger), its stderr and its stdout go to a slog logger
// (Config.OutputLogger), at a bounded rate (Config.OutputRate).
//
// A filter never calls its plugin on the pick path: it keeps the plugin's
// verdicts for each route in a cache that Filter reads without locking or
// allocating. Tell it of every new route with [Filter.Update] (the verdicts
// are fetched in the background); it also refreshes every route's verdicts
// every RefreshInterval and after a plugin restart.
//
// Close stops the plugin process (gracefully for at most StopTimeout, then
// by SIGKILL to its whole process group), removes go-plugin's temporary
// directory and the pinned copy, and stops every goroutine the host
// started; it always returns. A host that is killed (SIGKILL) cannot do
// that: its plugins then exit on their own (the host holds their standard
// input open while it runs, see protocol.HostWatchKey), and the next host
// start removes the directories the dead host made (each holds a file the
// host keeps locked while it runs).
package host
