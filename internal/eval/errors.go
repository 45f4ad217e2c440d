package eval

import "errors"

var (
	// ErrCorpusFiles is returned by Load when a directory does not hold
	// exactly one *.events.jsonl and one *.queries.jsonl.
	ErrCorpusFiles = errors.New("corpus files")
	// ErrBadLine is returned by Load for a line that is not a JSON object
	// or lacks a field the eval needs; the error names the file and line.
	ErrBadLine = errors.New("bad line")
	// ErrBadTune is returned by ParseAxis for a --tune spec that is not
	// FLAG=v1,v2,...
	ErrBadTune = errors.New("bad tune spec")
	// ErrNoCandidate is returned by Choose when no candidate has the
	// system on the half asked for.
	ErrNoCandidate = errors.New("no candidate")
)
