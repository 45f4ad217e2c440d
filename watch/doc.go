// Package watch keeps a memory folder in sync with the index while it runs:
// `memindex publish --files DIR --watch`. Run walks the folder once and
// sends what changed since the last run, then follows the file system
// (github.com/fsnotify/fsnotify, every directory of the tree watched, new
// ones as they appear) and sends each change as one file.upserted or
// file.deleted event through JetStream.
//
// It owns:
//
//   - Config (config.go): the folder, namespace, project dirPath and
//     --exclude globs (the one-shot walk's rule: client.ExcludedPath), the
//     debounce, the state file (DefaultStateFile) and the report hooks.
//   - Run (watch.go): the start sync and the watch loop. A path's events
//     are debounced (Config.Debounce of quiet, at most Config.MaxDelay
//     after its first event), and then the path is looked at, not its
//     events: it exists as a memory file with content whose hash differs
//     from the one last acknowledged → file.upserted; it is gone (or now
//     excluded, or no longer a file) and was sent before → file.deleted;
//     otherwise nothing. So an editor's save (write a temp file and rename
//     it over, or vim's rename-to-backup and write) is one file.upserted,
//     never a delete and an add; a rename is file.deleted of the old path
//     and file.upserted of the new one; a touch sends nothing.
//   - The state file (state.go): path → content hash of every file the
//     stream acknowledged, written after each round (temp file + rename).
//     It is what lets a restart send only what changed while it was down
//     and delete what was removed meanwhile: the workers have no endpoint
//     that lists a namespace's files.
//   - Message ids (publish.go): each event carries an eventId, so its
//     Nats-Msg-Id is "<ns>/<eventId>" by client.LineMsg's rule; the id is
//     new for every change (unique over the stream's duplicate window) and
//     kept while the same change is retried, so that a file that is
//     deleted and comes back with its old content within two minutes is
//     not taken for a duplicate of its first upsert.
//
// It must not import memindex/store, consumer, embedder, query or chunker,
// nor anything that needs cgo (TestBuildsWithoutCgo): it is a publisher,
// as pure Go as package client. It must not parse flags or print: Run
// reports through Config's hooks, and cmd/memindex prints.
package watch
