// Package capacity is the capacity benchmark: how many live conversations a server holds
// while every token still reaches its client on time.
//
// # Process layout
//
// The load client (this package, in the process of the capacity command or a test) and
// the server are separate processes: the command starts its own executable again as the
// target server ([MaybeServe], [ServerConfig]) through internal/testenv, ends it by its
// pid, and reads the server's CPU time and resident memory from /proc/<pid>, its heap
// from the server's [StatsPath], and database commits from Postgres' pg_stat_database
// (each Postgres target gets a database of its own) or SQLite's commit hook. A server of
// yours is loaded the same way through an [Endpoint] (URL, body template, headers) and,
// with its pid, measured the same way.
//
// # Conversations and token delay
//
// Each conversation posts a [Pace] as the user's message: a reply of some hundred tokens
// at a model's pace with jitter, and in a configurable share a tool call first, which on
// a durable flow needs an approval: the client approves it through the approval route
// (clientx/agent.Approve) and follows the resumed run from the last id it saw
// (clientx/agent.Follow), as a client would. The server's [Model] emits every token at
// its scheduled time and writes that time into the token; the client reads the streams
// with the real SSE reader (httpx.SSEReader) and takes each token's delay as its arrival
// minus its scheduled time. Delays on the live stream decide the knee; tokens a follower
// reads back after an approval arrive in the log's coalesced rows, so their delay is
// reported apart (follow p99). For an app whose model does not stamp its tokens,
// [SchedulePace] takes the first token as on time and each next one as due 1/rate later.
//
// # The ramp and the knee
//
// [RunRamp] holds N conversations going back to back (a closed loop: each that ends is
// followed by a new one; new ones start spread over a second with a random first length,
// so they do not run in step), lets a level warm up, measures a window, and grows N
// while the token-delay p99 stays within the threshold and no conversation fails. A level
// that fails on delay alone is measured once more and judged by its better window, so a
// neighbour's burst on a shared machine does not set the knee. After the first failing
// level it bisects between it and the last level that held. The knee is the largest level
// that held; the ramp has a time budget and a largest level, past which the knee is
// reported as a lower bound. [RunInterleaved] ramps several targets together, every level
// held on each in turn, for comparing knees on a machine whose speed drifts. The idle end
// ([IdleStreams]) opens conversations whose model waits an hour for its first token and
// reads the server's growth per open stream.
//
// Figures that could not be read are [Figure] NaN (null in JSON, "-" in tables), never 0.
package capacity
