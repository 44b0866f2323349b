// Package otlp is the host's OTLP log channel: the daemon's own slog
// records, sent to the clients that subscribe to them as OTLP/JSON log
// exports. It knows nothing of the host; the host wires it in.
//
// The contract, as VS Code's agent host and its e2e suites have it
// (protocolContractsSuite, protocolLifecycleSuite) and the protocol's
// channels-otlp types:
//
//   - initialize advertises InitializeResult.telemetry = {"logs":
//     "ahp-otlp://logs/{level}"} (LogsTemplate). The client expands
//     {level} to trace, debug, info, warn, error or fatal (any case) and
//     subscribes to the result, e.g. "ahp-otlp://logs/warn" (LogsChannel,
//     ParseLogsChannel).
//   - The channel is stateless: subscribe answers {} and initialize's
//     initialSubscriptions installs it with no snapshot. A level the
//     template does not define ("ahp-otlp://logs/verbose", or the bare
//     "ahp-otlp://logs") is acknowledged with {} and installs nothing.
//   - While subscribed, the client gets "otlp/exportLogs" notifications
//     whose params are {"channel": <the canonical channel URI>, "payload":
//     <an OTLP/JSON ExportLogsServiceRequest>}, carrying the records whose
//     severityNumber is at or above the band of its level (info: >= 9).
//     Each distinct level is its own subscription with its own stream.
//   - Nothing is replayed: unsubscribe stops the stream, and a reconnect
//     that lists the channel in its subscriptions installs it again from
//     the live edge.
//
// A Handler tees the daemon's slog.Handler: every record still goes to the
// daemon's own handler, and those some subscriber wants become OTLP
// LogRecords handed to a Hub. The Hub fans each record out to its
// Subscriptions (one per client channel subscription), each with a minimum
// level and a bounded buffer that a goroutine of its own batches into
// exports and hands to the host's sink. The logger never waits for a
// client: a subscriber whose buffer is full loses the records that do not
// fit, and is told how many by a record of its own.
package otlp
