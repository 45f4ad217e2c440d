package importer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Input is one file (or stdin) to import. Inputs makes them.
type Input struct {
	// Name is the path as given or found ("-" for stdin).
	Name string
	// Size is the file's size in bytes (0 for stdin).
	Size int64
	// dir is the file's directory, where its sessions.json is ("" for
	// stdin).
	dir  string
	open func() (io.ReadCloser, error)
}

// Inputs returns the inputs the names give, in order: a file as itself, a
// directory walked (in lexical order) for transcript files (IsTranscript),
// "-" as stdin (at most once). An error names the path that cannot be read
// or the directory that holds no transcript, and wraps ErrInput.
func Inputs(names []string, stdin io.Reader) ([]Input, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("no input named (files, directories, or - for stdin): %w", ErrInput)
	}
	var ins []Input
	usedStdin := false
	for _, name := range names {
		if name == "-" {
			if usedStdin {
				return nil, fmt.Errorf("- (stdin) named twice: %w", ErrInput)
			}
			usedStdin = true
			ins = append(ins, Input{Name: "-", open: func() (io.ReadCloser, error) { return io.NopCloser(stdin), nil }})
			continue
		}
		st, err := os.Stat(name)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", err, ErrInput)
		}
		if !st.IsDir() {
			ins = append(ins, fileInput(name, st.Size()))
			continue
		}
		n := len(ins)
		err = filepath.WalkDir(name, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !IsTranscript(d.Name()) {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			ins = append(ins, fileInput(path, info.Size()))
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("walk %s: %w: %w", name, err, ErrInput)
		}
		if len(ins) == n {
			return nil, fmt.Errorf("%s holds no transcript (*.jsonl, *.jsonl.reset.*, *.jsonl.deleted.*): %w", name, ErrInput)
		}
	}
	return ins, nil
}

// IsTranscript reports whether a file of this name, found in a directory,
// is imported: *.jsonl, and the archives OpenClaw keeps of a session it
// reset or deleted (<sessionId>.jsonl.reset.<time>,
// <sessionId>.jsonl.deleted.<time>). Backups (*.bak*) are not.
func IsTranscript(name string) bool {
	if strings.HasPrefix(name, ".") || strings.Contains(name, ".bak") {
		return false
	}
	return strings.HasSuffix(name, ".jsonl") || strings.Contains(name, ".jsonl.reset.") || strings.Contains(name, ".jsonl.deleted.")
}

func fileInput(path string, size int64) Input {
	return Input{Name: path, Size: size, dir: filepath.Dir(path), open: func() (io.ReadCloser, error) { return os.Open(path) }}
}

// maxLine bounds a line read whole. OpenClaw lines can carry images in
// base64 or long tool output, so this is far over an event's size; a longer
// line is reported and skipped.
const maxLine = 64 << 20

// errLineTooLong is a line over maxLine (skipped to its end).
var errLineTooLong = fmt.Errorf("line is over %d MiB", maxLine>>20)

// lineReader reads lines of any length up to maxLine, counting them from 1.
type lineReader struct {
	r    *bufio.Reader
	n    int
	buf  []byte
	read func(int64)
}

func newLineReader(r io.Reader, read func(int64)) *lineReader {
	if read == nil {
		read = func(int64) {}
	}
	return &lineReader{r: bufio.NewReaderSize(r, 256<<10), read: read}
}

// next returns the next line without its newline (and a trailing \r), and
// its number; io.EOF at the end; errLineTooLong for a line skipped whole.
func (lr *lineReader) next() ([]byte, int, error) {
	lr.buf = lr.buf[:0]
	tooLong := false
	for {
		chunk, err := lr.r.ReadSlice('\n')
		lr.read(int64(len(chunk)))
		if !tooLong {
			if len(lr.buf)+len(chunk) > maxLine {
				tooLong, lr.buf = true, lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(chunk) == 0 && len(lr.buf) == 0 && !tooLong:
			return nil, lr.n, io.EOF
		case err != nil && err != io.EOF:
			return nil, lr.n, err
		}
		lr.n++
		if tooLong {
			return nil, lr.n, errLineTooLong
		}
		return bytes.TrimRight(lr.buf, "\r\n"), lr.n, nil
	}
}
