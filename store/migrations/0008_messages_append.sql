-- 0008_messages_append: messages becomes a rowid table, rows stored in the
-- order they arrive, with its key (namespace, session_key, session_id, seq)
-- a unique index beside it. As a WITHOUT ROWID table keyed by session, a
-- batch of one namespace's interleaved sessions wrote each message into the
-- leaf of its own session, a random page each, and split full ones: 1,665
-- leaf pages of messages in the WAL for a batch of 1,000 messages over
-- 1,000 sessions (of 3,616 in all). Appended rows fill pages in order; the
-- key index's entries are small, so a batch dirties a few hundred of its
-- pages. Reads of a session's messages go through the key index, as every
-- query on messages names the key's leading columns; ON CONFLICT of the
-- upsert names the same columns, which the unique index satisfies.
CREATE TABLE messages_rowid (
  namespace   TEXT NOT NULL,
  session_key TEXT NOT NULL,
  session_id  TEXT NOT NULL,
  seq         INTEGER NOT NULL,
  id          TEXT NOT NULL DEFAULT '',
  role        TEXT NOT NULL DEFAULT '',
  speaker     TEXT NOT NULL DEFAULT '',
  text        TEXT NOT NULL,
  ts          INTEGER
);
INSERT INTO messages_rowid(namespace, session_key, session_id, seq, id, role, speaker, text, ts)
  SELECT namespace, session_key, session_id, seq, id, role, speaker, text, ts FROM messages
  ORDER BY namespace, session_key, session_id, seq;
DROP TABLE messages;
ALTER TABLE messages_rowid RENAME TO messages;
CREATE UNIQUE INDEX messages_key ON messages(namespace, session_key, session_id, seq);
