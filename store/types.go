package store

import "time"

// SessionRef names one session, or with an empty SessionID every session of a key.
type SessionRef struct {
	Namespace  string
	SessionKey string
	SessionID  string
}

// Message is one conversation turn as stored.
type Message struct {
	Namespace  string
	SessionKey string
	SessionID  string
	Seq        int64
	ID         string
	Role       string
	Speaker    string
	Text       string
	Time       time.Time
}

// Chunk is one unit of retrieval to store. A nil Vector means the chunk waits
// for one (it is keyword-searchable at once and marked pending).
type Chunk struct {
	ID         string
	Namespace  string
	Source     string // memindex.SourceSessions for now
	SessionKey string
	SessionID  string
	SeqStart   int64
	SeqEnd     int64
	Part       int
	Text       string
	// Context is indexed for keyword search with a lower weight than Text
	// and never shown: for a session chunk, its date and the messages before
	// it (chunker.Chunk.Context).
	Context   string
	TimeStart time.Time
	TimeEnd   time.Time
	Vector    []float32
	// Path and DirPath place a memory file's chunk (Source "files"); for
	// those, SeqStart and SeqEnd are its first and last line.
	Path    string
	DirPath string
}

// SessionChunks replaces the tail of one session's chunking: existing chunks of
// Session with SeqStart >= From are deleted unless their ID is in Chunks;
// chunks of Chunks not yet stored are inserted. Kept chunks keep their vectors.
// Every chunk of Chunks starts at From or later (Apply fails otherwise).
type SessionChunks struct {
	Session SessionRef
	From    int64
	Chunks  []Chunk
}

// Batch is everything one transaction applies. Apply runs, in order:
// DeleteSessions, Messages (upsert by namespace, sessionKey, sessionId, seq),
// Rechunk, then records Seq as the applied stream sequence.
type Batch struct {
	Seq            uint64
	DeleteSessions []SessionRef
	Messages       []Message
	Rechunk        []SessionChunks
	// DeleteFiles then Files apply after Rechunk: a file upsert replaces all
	// of the file's chunks.
	DeleteFiles []FileRef
	Files       []FileUpsert
	// DeleteRecords (FileRef.Path is the record id) then Records apply last.
	DeleteRecords []FileRef
	Records       []RecordUpsert
	// Committed, when set, is called once the batch's transaction has
	// committed, before the in-memory indexes take the batch (and before
	// Apply returns). A caller that bounds how many commits run at once
	// may let the next one start there.
	Committed func()
}

// RecordUpsert stores a memory record as one chunk (source "records", its id
// in Chunk.Path), replacing the record's previous text. With MergeInto set
// the text replaces that existing record instead (a near-duplicate), which
// keeps its id.
type RecordUpsert struct {
	Chunk     Chunk
	MergeInto string
}

// FileRef names one memory file.
type FileRef struct {
	Namespace string
	Path      string
}

// FileUpsert stores a memory file's content and replaces its chunks.
type FileUpsert struct {
	Namespace string
	Path      string
	DirPath   string
	Hash      string
	Content   string
	Chunks    []Chunk
}

// ApplyStats counts what one Apply changed.
type ApplyStats struct {
	Messages       int
	ChunksInserted int
	ChunksDeleted  int
	VectorsWritten int
}

// ChunkSpan is the position of one stored chunk within its session.
type ChunkSpan struct {
	ID       string
	SeqStart int64
	SeqEnd   int64
	Part     int
}

// PendingChunk is a stored chunk that waits for a vector.
type PendingChunk struct {
	ID      string
	Row     int64 // its rowid (ChunkRef)
	Text    string
	Context string
}

// ChunkVector is a vector for a stored chunk, named as PendingVectors
// returned it.
type ChunkVector struct {
	ID     string
	Row    int64
	Vector []float32
}

// ChunkRef names a stored chunk as a search or PendingVectors found it: its
// id and the rowid it had then. Chunks and SetVectors read the row and
// take it only while it still holds that id: a chunk deleted since (its
// session re-chunked, its file replaced) is missing, even when a newer
// chunk took its rowid. The id is a content hash with no index of its own
// (migration 0010): inserting into one would write a random leaf of it for
// every new chunk.
type ChunkRef struct {
	ID  string
	Row int64
}

// Filter narrows a search. Zero fields do not filter. A chunk passes the time
// bounds when it overlaps [After, Before).
type Filter struct {
	SessionKey string
	SessionID  string
	After      time.Time
	Before     time.Time
	// Sources keeps only chunks of these sources (empty: all).
	Sources []string
	// DirPath, when set, keeps only the memory files of that project and the
	// global ones (dir path ""); chunks of other sources are not affected.
	DirPath string
}

// Candidate is one result of a single leg, best first. Score is in [0,1],
// higher is better; Rank is 1-based.
type Candidate struct {
	ID    string
	Row   int64 // the chunk's rowid when the leg ran (ChunkRef)
	Score float64
	Rank  int
	// Snippet is the keyword leg's matched passage with terms marked, when
	// the leg cut it; a leg ranked by the keyword index leaves it to
	// SnippetFor, so that only the hits a search returns are cut.
	Snippet string
	// snip cuts the snippet SnippetFor returns (nil: Snippet is it).
	snip *kwSnipper
}

// Ref names c's chunk for Chunks.
func (c Candidate) Ref() ChunkRef { return ChunkRef{ID: c.ID, Row: c.Row} }

// SnippetFor returns c's snippet given its chunk as Shard.Chunks read it:
// Snippet, or the passage the keyword leg would have marked in the chunk's
// text (see KeywordSearch), cut now. It is "" for a candidate of the vector
// leg.
func (c Candidate) SnippetFor(rec ChunkRecord) string {
	if c.snip == nil || c.Snippet != "" {
		return c.Snippet
	}
	return c.snip.cut(rec.Text, rec.ftsSeg)
}

// ChunkRecord is a stored chunk with its provenance, for hydrating hits.
type ChunkRecord struct {
	ID         string
	Namespace  string
	Source     string
	SessionKey string
	SessionID  string
	SeqStart   int64
	SeqEnd     int64
	Part       int
	MessageIDs []string
	Text       string
	// Context is what the chunk was indexed and embedded with beside its
	// text (Chunk.Context); never shown as a hit.
	Context   string
	TimeStart time.Time
	TimeEnd   time.Time
	Path      string
	DirPath   string
	// Message is the message of a session chunk that holds exactly one
	// (nil otherwise), whole even when the chunk is a piece of it.
	Message *Message
	// UnitID, when set, identifies what a hit of this chunk returns: the id
	// of the first piece of the split message this chunk is a later piece
	// of. Empty otherwise: the chunk's ID identifies it.
	UnitID string
	// ftsSeg is the text's index form when it has CJK words (chunks.fts_seg),
	// "" when that is the text: what a keyword snippet is cut from
	// (Candidate.SnippetFor), read with the row so that a search never
	// segments text.
	ftsSeg string
}

// Stats counts what a shard holds.
type Stats struct {
	AppliedSeq     uint64
	Messages       int64
	Chunks         int64
	Sessions       int64
	Namespaces     int64
	VectorsWaiting int64
	// OldestWaiting is when the chunk that has waited longest for a vector
	// was stored; zero when none waits.
	OldestWaiting time.Time
	// KeywordIndex says what ranks keyword searches: "memory" (the keyword
	// index, kwindex.go) or "fts5: " and why there is no index (kwAbsent:
	// loading at start, or dropped when it failed to follow a commit).
	// KeywordIndexBytes estimates the index's heap (its postings, per-row
	// fields and dictionary).
	KeywordIndex      string
	KeywordIndexBytes int64
	// VectorIndexBytes estimates the heap of the in-memory vector index
	// (int8 codes and per-vector fields).
	VectorIndexBytes int64
}
