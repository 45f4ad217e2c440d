package watch

import "errors"

// Sentinel errors of package watch; Run's and Validate's errors wrap them
// (test with errors.Is).
var (
	// ErrInvalid is returned by Config.Validate for a setting that cannot
	// work; the message names the field.
	ErrInvalid = errors.New("invalid watch config")
	// ErrNoDir is returned by Run when the folder does not exist, and when
	// it is removed or moved away while watched.
	ErrNoDir = errors.New("memory folder does not exist")
	// ErrNotDir is returned by Run when the folder is not a directory.
	ErrNotDir = errors.New("not a directory")
	// ErrState is returned by Run when the state file cannot be read or
	// written, or records another folder or namespace.
	ErrState = errors.New("watch state file")
)
