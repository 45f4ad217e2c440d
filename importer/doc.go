// Package importer turns an agent's existing history into memindex message
// events (`memindex import`) and publishes them through the client. It
// builds with CGO_ENABLED=0.
//
// It owns:
//
//   - Inputs (source.go): the files to read from the names given: a file,
//     a directory walked for transcripts (*.jsonl and OpenClaw's archived
//     *.jsonl.reset.* / *.jsonl.deleted.*), or "-" for stdin.
//   - The OpenClaw transcript reader (openclaw.go): a session header, then
//     entries; message entries of role user and assistant become messages
//     (their text parts joined), toolResult ones only when asked, every
//     other entry is skipped and counted by its type. The sessionKey comes
//     from the sessions.json beside the transcript.
//   - The generic JSONL mapping (mapping.go, jsonl.go): `--map
//     'text=.content,speaker=.role,sessionKey="chat"'`, paths into each
//     line's JSON object or constants, over a default that reads the
//     field of the same name.
//   - Parse, DryRun and Run (import.go): every message validated as a
//     worker would, seq from the source (or the message's position in its
//     session, stable across runs), a bad line reported by file and line
//     with its reason while the rest continue, and a Summary (files,
//     sessions, messages, skipped records by reason, bad lines, what the
//     stream acknowledged, in messages). Run streams them through one
//     client.PublishLines (parsing on a goroutine it owns), which groups
//     messages of a session (interleaved with others' or not) into messages events
//     (Config.EventMessages, client.Grouper; DryRun prints the same). The groups depend only on
//     the input, so every event carries the same Nats-Msg-Id on every run
//     (a lone message "<namespace>/<sessionKey>/<sessionId>/<seq>", a
//     messages event the hash of its payload) and importing the same
//     history again stores nothing new (the stream de-duplicates within
//     its window; past it the worker upserts the same (session, seq) with
//     the same content).
//
// It must not import memindex/store, consumer, embedder, query or chunker,
// nor anything that needs cgo (TestBuildsWithoutCgo): an importer is run
// where the history is, beside an agent, not where the shards are. It
// never prints: progress and problems go to the callbacks of Config.
package importer
