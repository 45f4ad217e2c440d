package schemas_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"memindex"
	"memindex/client"
)

// example is one wire example found in a document.
type example struct {
	where string // file:line
	data  []byte
	// loc is its schema, "" to classify by content; ns the namespace of
	// its subject, when it has one.
	loc, ns string
	// wire: it is in a section about the wire, so it must classify.
	wire bool
}

var eventTypes = map[string]bool{
	memindex.TypeMessage: true, memindex.TypeMessages: true, memindex.TypeSessionDeleted: true, memindex.TypeFileUpserted: true,
	memindex.TypeFileDeleted: true, memindex.TypeRecordUpserted: true, memindex.TypeRecordDeleted: true,
}

// classify names the schema of a JSON example by its content: its type,
// else its shape (query: a search; code and error: an error reply); ""
// when it is no wire message.
func classify(data []byte) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil {
		return ""
	}
	var typ string
	_ = json.Unmarshal(obj["type"], &typ)
	switch {
	case eventTypes[typ]:
		return "event"
	case typ == "search", typ == "" && obj["query"] != nil:
		return "search-request"
	case typ == "read":
		return "read-request"
	case typ == "search.result":
		return "search-response"
	case typ == "read.result":
		return "read-response"
	case typ == "status":
		return "status-response"
	case typ == "health":
		return "health-response"
	case typ == "" && obj["code"] != nil && obj["error"] != nil:
		return "error"
	}
	return ""
}

var (
	fenceRE   = regexp.MustCompile("^\\s*```\\s*([A-Za-z0-9_-]*)")
	natsRE    = regexp.MustCompile(`nats (?:pub|req|request) (memindex\.[A-Za-z0-9_.-]+) '([^']*)'`)
	spanRE    = regexp.MustCompile("`(\\{\"[^`]*)`")
	wireTitle = regexp.MustCompile(`^## Wire `)
)

// readmeExamples finds the wire examples of a markdown file by the rule
// the README's "Wire schemas" section states:
//   - every JSON value in a ```json block, and every inline code span
//     that starts with {" and holds a key (":), is an example; in a "## Wire
//     ..." section each must be a wire message, elsewhere those that are
//     (by type or shape, see classify) are checked and others (configs,
//     HTTP bodies) skipped;
//   - the payload of `nats pub|req memindex.events|search|read.<ns> '...'`
//     in any block is an event, search or read request to namespace ns.
func readmeExamples(t *testing.T, path string) []example {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []example
	wire := false
	var fence string // the open fence's language; "" outside
	var block []string
	var blockStart int
	var para []string
	paraStart := 0
	flushPara := func() {
		text := strings.Join(para, "\n")
		for _, m := range spanRE.FindAllStringSubmatchIndex(text, -1) {
			span := strings.ReplaceAll(text[m[2]:m[3]], "\n", " ")
			if !strings.Contains(span, `":`) {
				continue // a list of field names, not JSON
			}
			line := paraStart + strings.Count(text[:m[2]], "\n")
			out = append(out, example{where: path + ":" + strconv.Itoa(line), data: []byte(span), wire: wire})
		}
		para = para[:0]
	}
	for i, l := range lines {
		n := i + 1
		if m := fenceRE.FindStringSubmatch(l); m != nil {
			if fence == "" {
				flushPara()
				fence, block, blockStart = m[1]+" ", nil, n+1
				continue
			}
			if fence == "json " {
				dec := json.NewDecoder(strings.NewReader(strings.Join(block, "\n")))
				for {
					var raw json.RawMessage
					off := dec.InputOffset()
					if err := dec.Decode(&raw); err == io.EOF {
						break
					} else if err != nil {
						t.Errorf("%s:%d: a ```json block that is not JSON values: %v", path, blockStart, err)
						break
					}
					line := blockStart + strings.Count(strings.Join(block, "\n")[:off], "\n")
					out = append(out, example{where: path + ":" + strconv.Itoa(line), data: raw, wire: wire})
				}
			}
			fence = ""
			continue
		}
		if fence != "" {
			block = append(block, l)
			for _, m := range natsRE.FindAllStringSubmatch(l, -1) {
				subject, payload := m[1], m[2]
				ns := subject[strings.LastIndexByte(subject, '.')+1:]
				var loc string
				switch {
				case strings.HasPrefix(subject, memindex.EventSubjectPrefix+"."):
					loc = "event"
				case strings.HasPrefix(subject, memindex.SearchSubjectPrefix+"."):
					loc = "search-request"
				case strings.HasPrefix(subject, memindex.ReadSubjectPrefix+"."):
					loc = "read-request"
				default:
					continue // status and health ignore the body
				}
				out = append(out, example{where: path + ":" + strconv.Itoa(n), data: []byte(payload), loc: loc, ns: ns, wire: true})
			}
			continue
		}
		if strings.HasPrefix(l, "## ") {
			flushPara()
			wire = wireTitle.MatchString(l)
		}
		if strings.TrimSpace(l) == "" {
			flushPara()
			continue
		}
		if len(para) == 0 {
			paraStart = n
		}
		para = append(para, l)
	}
	flushPara()
	return out
}

// goVerdict is the Go validation of a message of schema loc, where Go
// validates that kind (events and requests); nil for replies.
func goVerdict(loc, ns string, data []byte) error {
	if ns == "" {
		ns = "agent-7"
	}
	switch loc {
	case "event":
		return goEvent(data)
	case "search-request":
		return goSearch(ns, data)
	case "read-request":
		return goRead(ns, data)
	}
	return nil
}

// TestReadmeExamplesAreValid: every wire example in README.md (the rule:
// readmeExamples) is valid to its schema and, for events and requests, to
// the Go validation.
func TestReadmeExamplesAreValid(t *testing.T) {
	exs := readmeExamples(t, "../README.md")
	checked := map[string]int{}
	for _, ex := range exs {
		if ex.loc == "" {
			ex.loc = classify(ex.data)
		}
		if ex.loc == "" {
			if ex.wire {
				t.Errorf("%s: %s is in a wire section but no wire message (no event type, query, or code and error)", ex.where, ex.data)
			}
			continue
		}
		checked[ex.loc]++
		if err := validate(schemaAt(t, ex.loc), ex.data); err != nil {
			t.Errorf("%s: %s is not a valid %s: %v", ex.where, ex.data, ex.loc, err)
		} else if ex.ns != "" {
			if err := sameNamespace(ex.ns, ex.data); err != nil {
				t.Errorf("%s: %s: %v", ex.where, ex.data, err)
			}
		}
		if err := goVerdict(ex.loc, ex.ns, ex.data); err != nil {
			t.Errorf("%s: %s is refused by Go: %v", ex.where, ex.data, err)
		}
	}
	// The README's examples of the wire section and the quick start.
	for _, loc := range []string{"event", "search-request", "error"} {
		if checked[loc] == 0 {
			t.Errorf("found no %s example in README.md: did the rule stop finding them?", loc)
		}
	}
	t.Logf("README examples checked: %v", checked)
}

// repoRoot is the module root, the parent of this package's directory.
const repoRoot = ".."

// fuzzCorpora are the seed corpora of the wire decoders' fuzz tests:
// their directory, the schema their payloads are messages of, and which
// argument holds the payload (and the subject, -1: none).
var fuzzCorpora = []struct {
	dir              string
	loc              string
	payload, subject int
}{
	{"testdata/fuzz/FuzzDecodeEvent", "event", 0, -1},
	{"testdata/fuzz/FuzzSearchRequest", "search-request", 0, -1},
	{"query/testdata/fuzz/FuzzDecodeSearch", "search-request", 1, 0},
}

var corpusArg = regexp.MustCompile(`^(?:\[\]byte|string)\((".*")\)$`)

// corpusArgs returns the string and []byte arguments of a "go test fuzz
// v1" file, in order (other arguments as "").
func corpusArgs(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) == 0 || lines[0] != "go test fuzz v1" {
		t.Fatalf("%s: not a go test fuzz v1 file", path)
	}
	var out []string
	for _, l := range lines[1:] {
		m := corpusArg.FindStringSubmatch(l)
		if m == nil {
			out = append(out, "")
			continue
		}
		s, err := strconv.Unquote(m[1])
		if err != nil {
			t.Fatalf("%s: %q: %v", path, l, err)
		}
		out = append(out, s)
	}
	return out
}

// TestTestdataExamples applies the rule for the testdata directories:
//   - a *.events.jsonl file is `memindex publish` input, meant to be valid:
//     every line, as publish sends it (client.LineMsg), is a valid event
//     to the schema and to Go;
//   - the seed corpora of the wire decoders' fuzz tests hold valid and
//     invalid payloads on purpose: the schema must judge each as Go does,
//     except a payload no schema can see (not valid UTF-8, not one JSON
//     value, over the size limit), which Go refuses, and a search sent on a
//     subject whose namespace is not valid;
//   - any other file (golden chunker output, eval queries, transcripts to
//     import, provider replies) is no wire message.
func TestTestdataExamples(t *testing.T) {
	var events int
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".build" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".events.jsonl") || !strings.Contains(filepath.ToSlash(path), "/testdata/") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, memindex.MaxEventBytes+1)
		for n := 1; sc.Scan(); n++ {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			msg, err := client.LineMsg(line, "testdata", false)
			if err != nil {
				t.Errorf("%s:%d: publish refuses the line: %v", path, n, err)
				continue
			}
			if err := validate(schemaAt(t, "event"), msg.Data); err != nil {
				t.Errorf("%s:%d: %s is not a valid event: %v", path, n, msg.Data, err)
			}
			if err := goEvent(msg.Data); err != nil {
				t.Errorf("%s:%d: Go refuses %s: %v", path, n, msg.Data, err)
			}
			events++
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if events == 0 {
		t.Error("found no *.events.jsonl line under a testdata directory")
	}

	var agreed, blind int
	differ := map[string]int{}
	for _, c := range fuzzCorpora {
		files, err := filepath.Glob(filepath.Join(repoRoot, c.dir, "*"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no seeds in %s: %v", c.dir, err)
		}
		s := schemaAt(t, c.loc)
		for _, f := range files {
			args := corpusArgs(t, f)
			payload := []byte(args[c.payload])
			ns := "agent-7"
			if c.subject >= 0 {
				subject := args[c.subject]
				ns = subject[strings.LastIndexByte(subject, '.')+1:]
				if !memindex.ValidNamespace(ns) {
					blind++
					continue // the subject is wrong, whatever the body
				}
			}
			gErr := goVerdict(c.loc, ns, payload)
			// Events must be valid UTF-8; a search's invalid bytes become
			// U+FFFD, as the validator's decoder makes them too.
			badUTF8 := c.loc == "event" && !utf8.Valid(payload)
			if _, err := jsonschema.UnmarshalJSON(bytes.NewReader(payload)); err != nil || badUTF8 || len(payload) > memindex.MaxEventBytes {
				if gErr == nil {
					t.Errorf("%s: Go accepts a payload no schema can judge: %q", f, payload)
				}
				blind++
				continue
			}
			sErr := validate(s, payload)
			if sErr == nil && c.loc != "event" {
				sErr = sameNamespace(ns, payload)
			}
			if (sErr == nil) != (gErr == nil) {
				if why := listedDifference(c.loc, payload, sErr, gErr); why != "" {
					differ[why]++
					continue
				}
				t.Errorf("%s: schema says %s (%s), Go says %s (%v): %.200q", f, verdict(sErr), firstLine(sErr), verdict(gErr), gErr, payload)
			}
			agreed++
		}
	}
	t.Logf("testdata: %d event lines valid; fuzz seeds: %d judged alike, %d no schema can see, known differences %v", events, agreed, blind, differ)
	if agreed == 0 {
		t.Error("no fuzz seed judged")
	}
}

// listedDifference says which of the known differences (see
// knownDifferences) makes the schema and Go disagree on payload, or "".
func listedDifference(loc string, payload []byte, sErr, gErr error) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(payload, &obj) != nil {
		return ""
	}
	goType := map[string]reflect.Type{"event": reflect.TypeFor[memindex.Event](),
		"search-request": reflect.TypeFor[memindex.SearchRequest](), "read-request": reflect.TypeFor[memindex.ReadRequest]()}[loc]
	names := map[string]bool{}
	for _, f := range jsonFields(goType) {
		names[f.name] = true
	}
	if gErr == nil && sErr != nil {
		for k, v := range obj {
			if string(v) == "null" {
				return "a field set to null"
			}
			for n := range names {
				if k != n && strings.EqualFold(k, n) {
					return "a field name in another case"
				}
			}
		}
	}
	if sErr == nil && errors.Is(gErr, memindex.ErrTooLarge) && !isASCII(payload) {
		return "non-ASCII text over a byte limit"
	}
	return ""
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
