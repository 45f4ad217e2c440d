package schemas_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"memindex"
)

// goEvent is the worker's verdict on an event payload (DecodeEvent within
// the default limits, as the consumer decodes).
func goEvent(data []byte) error {
	_, err := memindex.DecodeEvent(data)
	return err
}

// goSearch is the service's verdict on a search request sent to
// memindex.search.<ns>: decoded, its optional type checked, its namespace
// taken from the subject when it names none (and refused when it names
// another), normalized within the default limits. TestWorkerAgrees checks
// this model against a real worker.
func goSearch(ns string, data []byte) error {
	var r memindex.SearchRequest
	if err := json.Unmarshal(data, &r); err != nil {
		return err
	}
	if r.Type != "" && r.Type != "search" {
		return fmt.Errorf("type %q", r.Type)
	}
	if err := subjectNamespace(&r.Namespace, ns); err != nil {
		return err
	}
	return r.Normalize()
}

// goRead is the service's verdict on a read request (its type is not
// checked: see knownDifferences).
func goRead(ns string, data []byte) error {
	var r memindex.ReadRequest
	if err := json.Unmarshal(data, &r); err != nil {
		return err
	}
	if err := subjectNamespace(&r.Namespace, ns); err != nil {
		return err
	}
	return r.Normalize()
}

func subjectNamespace(body *string, subject string) error {
	switch {
	case *body == "":
		*body = subject
	case *body != subject:
		return fmt.Errorf("namespace %q differs from the subject's %q", *body, subject)
	}
	return nil
}

// agreeCase is one payload the schema and Go must judge alike.
type agreeCase struct {
	name string
	json string
}

// Minimal valid events: only what each type requires. Removing any one
// field must make the event invalid, to both.
var minimalEvents = []agreeCase{
	{"message", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi"}`},
	{"message with only a caption", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"imageCaption":"a photo of a beagle"}`},
	{"messages", `{"type":"messages","sessionKey":"k","sessionId":"s","messages":[{"seq":1,"text":"hi"}]}`},
	{"session.deleted", `{"type":"session.deleted","sessionKey":"k"}`},
	{"file.upserted", `{"type":"file.upserted","path":"notes/MEMORY.md"}`},
	{"file.deleted", `{"type":"file.deleted","path":"notes/MEMORY.md"}`},
	{"record.upserted", `{"type":"record.upserted","id":"r1","text":"Ana prefers tea"}`},
	{"record.upserted by messageId", `{"type":"record.upserted","messageId":"r1","text":"Ana prefers tea"}`},
	{"record.deleted", `{"type":"record.deleted","id":"r1"}`},
}

var long = strings.Repeat("x", memindex.MaxKeyBytes+1)

// eventCases are valid and invalid events beyond the minimal ones.
var eventCases = []agreeCase{
	{"full message", `{"type":"message","namespace":"agent-7","sessionKey":"whatsapp:+4912345","sessionId":"2026-11-30","seq":12,"id":"m-812","role":"user","speaker":"Ana","text":"I'm moving to Lisbon in May","timestamp":"2026-11-30T09:12:00Z"}`},
	{"LoCoMo line", `{"type":"message","sessionKey":"conv-26","sessionId":"session_1","seq":3,"messageId":"D1:3","speaker":"Caroline","text":"I went to a support group","imageCaption":"a rainbow flag","timestamp":"2023-05-08T13:56:00Z"}`},
	{"unknown fields ignored", `{"type":"file.deleted","path":"a.md","eventId":"x","extra":{"a":[1]}}`},
	{"fractional seconds and offset", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi","timestamp":"2026-11-30T10:12:00.123456789+01:00"}`},
	{"empty timestamp", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi","timestamp":""}`},
	{"empty role", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi","role":""}`},
	{"role of a file event is not checked", `{"type":"file.deleted","path":"a.md","role":"bot"}`},
	{"seq of a record is not checked", `{"type":"record.deleted","id":"r","seq":-4}`},
	{"id wins over messageId", `{"type":"record.deleted","id":"r","messageId":"` + long + `"}`},
	{"empty id falls back to messageId", `{"type":"record.deleted","id":"","messageId":"r"}`},
	{"key of 256 bytes", `{"type":"file.deleted","path":"` + long[1:] + `"}`},
	{"text of 64 KiB", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"` + strings.Repeat("a", memindex.MaxTextBytes) + `"}`},
	{"CJK text", `{"type":"message","sessionKey":"微信:张三","sessionId":"二〇二六","seq":2,"speaker":"ユーザー","text":"我们的人工智能"}`},
	{"empty namespace", `{"type":"file.deleted","namespace":"","path":"a.md"}`},
	{"full messages", `{"type":"messages","namespace":"agent-7","sessionKey":"k","sessionId":"s","messages":[{"seq":1,"id":"m1","role":"user","speaker":"Ana","text":"hi","timestamp":"2026-11-30T09:12:00Z"},{"seq":2,"messageId":"D1:2","role":"assistant","imageCaption":"a beagle"}]}`},
	{"messages of 1,000", `{"type":"messages","sessionKey":"k","sessionId":"s","messages":[` + messagesJSON(1000) + `]}`},
	{"messages ignored by a message event", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi","messages":[{"seq":1,"text":"x"}]}`},
	{"messages of 1,001", `{"type":"messages","sessionKey":"k","sessionId":"s","messages":[` + messagesJSON(1001) + `]}`},
	{"messages empty", `{"type":"messages","sessionKey":"k","sessionId":"s","messages":[]}`},
	{"messages without sessionId", `{"type":"messages","sessionKey":"k","messages":[{"seq":1,"text":"hi"}]}`},
	{"messages not an array", `{"type":"messages","sessionKey":"k","sessionId":"s","messages":{"seq":1,"text":"hi"}}`},
	{"a message of messages with seq 0", `{"type":"messages","sessionKey":"k","sessionId":"s","messages":[{"seq":1,"text":"hi"},{"seq":0,"text":"hi"}]}`},
	{"a message of messages blank", `{"type":"messages","sessionKey":"k","sessionId":"s","messages":[{"seq":1,"text":" "}]}`},
	{"a message of messages with a bad role", `{"type":"messages","sessionKey":"k","sessionId":"s","messages":[{"seq":1,"text":"hi","role":"bot"}]}`},
	{"a message of messages with a bad timestamp", `{"type":"messages","sessionKey":"k","sessionId":"s","messages":[{"seq":1,"text":"hi","timestamp":"monday"}]}`},
	{"a message of messages with a long id", `{"type":"messages","sessionKey":"k","sessionId":"s","messages":[{"seq":1,"text":"hi","id":"` + long + `"}]}`},
	{"a message of messages with seq as a string", `{"type":"messages","sessionKey":"k","sessionId":"s","messages":[{"seq":"1","text":"hi"}]}`},

	{"no type", `{"sessionKey":"k","sessionId":"s","seq":1,"text":"hi"}`},
	{"unknown type", `{"type":"nope","sessionKey":"k"}`},
	{"type of another case", `{"type":"Message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi"}`},
	{"bad namespace", `{"type":"file.deleted","namespace":"a.b","path":"a.md"}`},
	{"namespace with a wildcard", `{"type":"file.deleted","namespace":"a>","path":"a.md"}`},
	{"namespace of 65", `{"type":"file.deleted","namespace":"` + strings.Repeat("n", 65) + `","path":"a.md"}`},
	{"bad role", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi","role":"bot"}`},
	{"bad timestamp", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi","timestamp":"monday"}`},
	{"timestamp without zone", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi","timestamp":"2026-11-30T09:12:00"}`},
	{"timestamp of month 13", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi","timestamp":"2026-13-01T09:12:00Z"}`},
	{"timestamp of 30 February", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi","timestamp":"2026-02-30T09:12:00Z"}`},
	{"leap second", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi","timestamp":"2026-12-31T23:59:60Z"}`},
	{"lower-case t", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi","timestamp":"2026-11-30t09:12:00Z"}`},
	{"seq 0", `{"type":"message","sessionKey":"k","sessionId":"s","seq":0,"text":"hi"}`},
	{"negative seq", `{"type":"message","sessionKey":"k","sessionId":"s","seq":-1,"text":"hi"}`},
	{"seq over int64", `{"type":"message","sessionKey":"k","sessionId":"s","seq":9223372036854775808,"text":"hi"}`},
	{"seq as a string", `{"type":"message","sessionKey":"k","sessionId":"s","seq":"1","text":"hi"}`},
	{"blank text", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":" \t\n"}`},
	{"text of Unicode spaces", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"\u00a0\u3000\u2028\u0085\u000b"}`},
	{"blank text and caption", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":" ","imageCaption":"  "}`},
	{"text over 64 KiB", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"` + strings.Repeat("a", memindex.MaxTextBytes+1) + `"}`},
	{"caption over 64 KiB", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi","imageCaption":"` + strings.Repeat("a", memindex.MaxTextBytes+1) + `"}`},
	{"control character in sessionKey", `{"type":"message","sessionKey":"k\u0007","sessionId":"s","seq":1,"text":"hi"}`},
	{"DEL in path", `{"type":"file.deleted","path":"a\u007f.md"}`},
	{"key over 256 bytes", `{"type":"file.deleted","path":"` + long + `"}`},
	{"speaker over 256 bytes", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi","speaker":"` + long + `"}`},
	{"message id over 256 bytes", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi","id":"` + long + `"}`},
	{"messageId alias over 256 bytes", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi","messageId":"` + long + `"}`},
	{"empty sessionKey", `{"type":"session.deleted","sessionKey":""}`},
	{"bad sessionId of session.deleted", `{"type":"session.deleted","sessionKey":"k","sessionId":"a\u0000"}`},
	{"record scope with a control character", `{"type":"record.deleted","id":"r","sessionKey":"\u001b[0m"}`},
	{"record text blank", `{"type":"record.upserted","id":"r","text":"   "}`},
	{"record text over 64 KiB", `{"type":"record.upserted","id":"r","text":"` + strings.Repeat("a", memindex.MaxTextBytes+1) + `"}`},
	{"record without id", `{"type":"record.deleted","messageId":""}`},
	{"tags not strings", `{"type":"record.upserted","id":"r","text":"t","tags":[1]}`},
	{"not an object", `[]`},
	{"null", `null`},
}

// searchCases are search requests sent to memindex.search.agent-7.
var searchCases = []agreeCase{
	{"query only", `{"query":"what did Ana say?"}`},
	{"every field", `{"type":"search","namespace":"agent-7","query":"Ana","k":200,"minScore":1,"sessionKey":"k","sessionId":"s","sources":["sessions","files","records"],"dirPath":"/src/app","after":"2026-01-01T00:00:00Z","before":"2026-12-01T00:00:00Z","updatedAfter":"2026-01-02T00:00:00+02:00","mode":"vector","fusion":"weighted","explain":true,"mmr":true,"mmrLambda":0,"halfLifeHours":0.5,"budget":5,"budgetTokens":300,"around":10}`},
	{"empty strings are defaults", `{"type":"","namespace":"","query":"q","mode":"","fusion":"","after":"","before":"","updatedAfter":""}`},
	{"k 0 is the default", `{"query":"q","k":0}`},
	{"unknown fields ignored", `{"query":"q","limit":5}`},
	{"query of 16 KiB", `{"query":"` + strings.Repeat("q", memindex.MaxQueryBytes) + `"}`},

	{"no query", `{"k":3}`},
	{"blank query", `{"query":"  \u3000"}`},
	{"query over 16 KiB", `{"query":"` + strings.Repeat("q", memindex.MaxQueryBytes+1) + `"}`},
	{"query not a string", `{"query":5}`},
	{"type of an event", `{"type":"message","query":"q"}`},
	{"bad namespace", `{"namespace":"a.b","query":"q"}`},
	{"another namespace", `{"namespace":"other","query":"q"}`},
	{"k over 200", `{"query":"q","k":201}`},
	{"negative k", `{"query":"q","k":-1}`},
	{"minScore over 1", `{"query":"q","minScore":1.5}`},
	{"negative minScore", `{"query":"q","minScore":-0.1}`},
	{"bad mode", `{"query":"q","mode":"fast"}`},
	{"bad fusion", `{"query":"q","fusion":"max"}`},
	{"bad source", `{"query":"q","sources":["web"]}`},
	{"bad after", `{"query":"q","after":"monday"}`},
	{"bad before", `{"query":"q","before":"2026-01-01"}`},
	{"bad updatedAfter", `{"query":"q","updatedAfter":"2026-01-01T25:00:00Z"}`},
	{"mmrLambda over 1", `{"query":"q","mmrLambda":2}`},
	{"negative halfLifeHours", `{"query":"q","halfLifeHours":-1}`},
	{"negative budget", `{"query":"q","budget":-1}`},
	{"negative budgetTokens", `{"query":"q","budgetTokens":-1}`},
	{"around over 10", `{"query":"q","around":11}`},
	{"negative around", `{"query":"q","around":-1}`},
	{"sessionKey over 256 bytes", `{"query":"q","sessionKey":"` + long + `"}`},
	{"sessionId with a control character", `{"query":"q","sessionId":"a\u0001"}`},
	{"explain not a boolean", `{"query":"q","explain":"yes"}`},
}

// readCases are read requests sent to memindex.read.agent-7.
var readCases = []agreeCase{
	{"session", `{"sessionKey":"k","sessionId":"s"}`},
	{"session range", `{"type":"read","namespace":"agent-7","sessionKey":"k","sessionId":"s","from":3,"count":500}`},
	{"file", `{"path":"notes/MEMORY.md","from":10,"count":5}`},
	{"file wins over session", `{"path":"notes/MEMORY.md","sessionKey":"` + long + `"}`},
	{"from 0 is 1", `{"sessionKey":"k","sessionId":"s","from":0,"count":0}`},

	{"nothing to read", `{}`},
	{"session without id", `{"sessionKey":"k"}`},
	{"empty path, no session", `{"path":"","sessionKey":"k"}`},
	{"path with a control character", `{"path":"a\u0000"}`},
	{"path over 256 bytes", `{"path":"` + long + `"}`},
	{"negative from", `{"sessionKey":"k","sessionId":"s","from":-1}`},
	{"count over 500", `{"sessionKey":"k","sessionId":"s","count":501}`},
	{"negative count", `{"sessionKey":"k","sessionId":"s","count":-1}`},
	{"bad namespace", `{"namespace":"a b","sessionKey":"k","sessionId":"s"}`},
	{"another namespace", `{"namespace":"other","sessionKey":"k","sessionId":"s"}`},
	{"count as a string", `{"sessionKey":"k","sessionId":"s","count":"5"}`},
}

// knownDifference is a payload the schema and the Go validation judge
// differently on purpose, and which side is stricter.
type knownDifference struct {
	loc, name, json string
	goValid         bool // true: Go accepts what the schema refuses
	why             string
}

// knownDifferences lists every difference: the README's "Wire schemas"
// section repeats them. The test fails when one stops being a difference,
// so the list stays true.
var knownDifferences = []knownDifference{
	{"event", "non-ASCII key over 256 bytes", `{"type":"file.deleted","path":"` + strings.Repeat("é", 200) + `"}`, false,
		"byte limits are maxLength, which counts characters: 200 é are 400 bytes"},
	{"event", "non-ASCII text over 64 KiB", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"` + strings.Repeat("é", memindex.MaxTextBytes/2+1) + `"}`, false,
		"byte limits are maxLength, which counts characters"},
	{"event", "seq written 1.0", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1.0,"text":"hi"}`, false,
		"JSON Schema's integer is mathematical (1.0 is one); encoding/json refuses a fraction for an int64"},
	{"event", "a field set to null", `{"type":"session.deleted","sessionKey":"k","sessionId":null}`, true,
		"encoding/json reads null as absent; the schema wants the field's type: send no field, not null"},
	{"event", "one-digit hour", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi","timestamp":"2026-11-30T9:12:00Z"}`, true,
		"Go's time.Parse(RFC3339) takes a one-digit hour; RFC 3339 does not"},
	{"event", "comma before the fraction", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi","timestamp":"2026-11-30T09:12:00,5Z"}`, true,
		"Go's time.Parse takes a comma before fractional seconds; RFC 3339 does not"},
	{"event", "offset minute 60", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi","timestamp":"2026-11-30T09:12:00+05:60"}`, true,
		"Go's time.Parse does not range-check the offset's minutes"},
	{"event", "messages out of seq order", `{"type":"messages","sessionKey":"k","sessionId":"s","messages":[{"seq":2,"text":"b"},{"seq":1,"text":"a"}]}`, false,
		"a schema cannot compare one item's value with the one before: a messages event's seqs must rise"},
	{"event", "a field name in another case", `{"TYPE":"file.deleted","Path":"a.md"}`, true,
		"encoding/json matches field names case-insensitively; the names on the wire are the schema's"},
	{"search-request", "a field set to null", `{"query":"q","mode":null}`, true,
		"encoding/json reads null as absent"},
	{"read-request", "type of another request", `{"type":"search","sessionKey":"k","sessionId":"s"}`, true,
		"the read endpoint ignores type (search refuses a wrong one); the schema asks for read or nothing"},
}

// judge fails t unless the schema at loc (and the subject rule, when the
// message travels on a subject of namespace ns) and goV agree on c.
func judge(t *testing.T, loc, ns string, goV func([]byte) error, c agreeCase) {
	t.Helper()
	s := schemaAt(t, loc)
	sErr := validate(s, []byte(c.json))
	if sErr == nil && ns != "" {
		sErr = sameNamespace(ns, []byte(c.json))
	}
	gErr := goV([]byte(c.json))
	if (sErr == nil) != (gErr == nil) {
		t.Errorf("%s %q: schema says %s (%s), Go says %s (%v)\n%.300s", loc, c.name, verdict(sErr), firstLine(sErr), verdict(gErr), gErr, c.json)
	}
}

// TestEventsAgreeWithGo: the event schema accepts exactly the events
// DecodeEvent accepts: the minimal event of each type, each with any one
// field removed, and the cases above.
func TestEventsAgreeWithGo(t *testing.T) {
	for _, c := range minimalEvents {
		if err := goEvent([]byte(c.json)); err != nil {
			t.Fatalf("minimal %s is invalid to Go: %v", c.name, err)
		}
		judge(t, "event", "", goEvent, c)
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(c.json), &obj); err != nil {
			t.Fatal(err)
		}
		for field := range obj {
			without := clone(obj)
			delete(without, field)
			data := mustJSON(t, without)
			if goEvent(data) == nil {
				t.Errorf("minimal %s without %s is valid to Go: the case is not minimal", c.name, field)
			}
			judge(t, "event", "", goEvent, agreeCase{c.name + " without " + field, string(data)})
		}
	}
	for _, c := range eventCases {
		judge(t, "event", "", goEvent, c)
	}
	// Every type's full form (every field filled) is valid to both.
	for _, typ := range []string{memindex.TypeMessage, memindex.TypeMessages, memindex.TypeSessionDeleted, memindex.TypeFileUpserted, memindex.TypeFileDeleted, memindex.TypeRecordUpserted, memindex.TypeRecordDeleted} {
		e := fill(wireTypes[0].typ, "").Interface().(memindex.Event)
		e.Type = typ
		data := mustJSON(t, e)
		if err := goEvent(data); err != nil {
			t.Errorf("full %s is invalid to Go: %v", typ, err)
		}
		judge(t, "event", "", goEvent, agreeCase{"full " + typ, string(data)})
	}
}

func TestRequestsAgreeWithGo(t *testing.T) {
	search := func(b []byte) error { return goSearch("agent-7", b) }
	read := func(b []byte) error { return goRead("agent-7", b) }
	for _, c := range searchCases {
		judge(t, "search-request", "agent-7", search, c)
	}
	for _, c := range readCases {
		judge(t, "read-request", "agent-7", read, c)
	}
}

func TestKnownDifferences(t *testing.T) {
	verdicts := map[string]func([]byte) error{
		"event":          goEvent,
		"search-request": func(b []byte) error { return goSearch("agent-7", b) },
		"read-request":   func(b []byte) error { return goRead("agent-7", b) },
	}
	for _, d := range knownDifferences {
		sErr := validate(schemaAt(t, d.loc), []byte(d.json))
		gErr := verdicts[d.loc]([]byte(d.json))
		if (gErr == nil) != d.goValid || (sErr == nil) == d.goValid {
			t.Errorf("%s %q: schema says %s, Go says %s; listed as Go %s and the schema %s (%s): update the list and the README",
				d.loc, d.name, verdict(sErr), verdict(gErr), verdict(boolErr(d.goValid)), verdict(boolErr(!d.goValid)), d.why)
		}
	}
}

// sameNamespace is the rule a schema states but cannot check: a body's
// namespace, when it names one, is the namespace of its subject.
func sameNamespace(subject string, data []byte) error {
	var body struct {
		Namespace string `json:"namespace"`
	}
	_ = json.Unmarshal(data, &body) // valid to the schema: an object
	if body.Namespace != "" && body.Namespace != subject {
		return fmt.Errorf("namespace %q is not the subject's %q", body.Namespace, subject)
	}
	return nil
}

func boolErr(valid bool) error {
	if valid {
		return nil
	}
	return fmt.Errorf("invalid")
}

// messagesJSON is n valid messages of a messages event, seqs 1 to n.
func messagesJSON(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"seq":%d,"text":"m%d"}`, i, i)
	}
	return b.String()
}
