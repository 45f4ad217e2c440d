package importer

import "errors"

// Sentinel errors of package importer; test them with errors.Is.
var (
	// ErrMapping is returned by ParseMapping when the --map text is not a
	// list of field=expr with known fields and well-formed paths.
	ErrMapping = errors.New("bad mapping")
	// ErrConfig is returned by Config.Validate (and so by Parse, Run and
	// DryRun) when a setting is wrong: the namespace, the format.
	ErrConfig = errors.New("bad import configuration")
	// ErrInput is returned by Inputs when a named file or directory cannot
	// be read or holds no transcript.
	ErrInput = errors.New("bad input")
)
