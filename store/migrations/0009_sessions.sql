-- 0009_sessions: each session (namespace, session_key, session_id) gets a
-- small integer, sid, and the indexes that find a session's messages and
-- chunks are keyed by it instead of by the three strings.
--
-- Why: a batch of one namespace's interleaved sessions adds a row at the
-- end of every session it touches, so it dirties the leaf of each of those
-- sessions in both indexes. Keyed by the strings, an entry is the size of
-- the names (22 bytes in the hot benchmark, 60-100 with real agent session
-- keys and UUID session ids), the index has that many more leaves, and a
-- batch over 1,000 sessions rewrote nearly all of them: 685 leaves of
-- messages_key and 685 of chunks_session of 2,946 pages in the WAL for
-- 1,000 messages into 100,000. Keyed by (sid, seq) an entry is a few bytes,
-- so many sessions share a leaf.
--
-- The strings stay in messages and chunks (every reader and filter uses
-- them); sessions maps them to sid, which the writer assigns (and caches)
-- when a session's first row is written, and deletes with the session's
-- last row. Readers name a session by its strings and find its sid through
-- sessions' unique index.
CREATE TABLE sessions (
  sid         INTEGER PRIMARY KEY,
  namespace   TEXT NOT NULL,
  session_key TEXT NOT NULL,
  session_id  TEXT NOT NULL,
  UNIQUE (namespace, session_key, session_id)
);
INSERT INTO sessions(namespace, session_key, session_id)
  SELECT namespace, session_key, session_id FROM messages
  UNION SELECT namespace, session_key, session_id FROM chunks;

DROP INDEX messages_key;
ALTER TABLE messages ADD COLUMN sid INTEGER NOT NULL DEFAULT 0;
UPDATE messages SET sid = (SELECT s.sid FROM sessions s WHERE s.namespace = messages.namespace
  AND s.session_key = messages.session_key AND s.session_id = messages.session_id);
CREATE UNIQUE INDEX messages_key ON messages(sid, seq);

DROP INDEX chunks_session;
ALTER TABLE chunks ADD COLUMN sid INTEGER NOT NULL DEFAULT 0;
UPDATE chunks SET sid = (SELECT s.sid FROM sessions s WHERE s.namespace = chunks.namespace
  AND s.session_key = chunks.session_key AND s.session_id = chunks.session_id);
CREATE INDEX chunks_session ON chunks(sid, seq_start);
