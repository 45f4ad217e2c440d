package client

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"memindex"
)

// referenceLineMsg is LineMsg as it was before lineObject: the line
// decoded into a map of raw values and marshalled again. LineMsg must
// send the same bytes with the same id.
func referenceLineMsg(line []byte, namespace string, raw bool) (*nats.Msg, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil || obj == nil {
		if raw && namespace != "" {
			m := nats.NewMsg(memindex.EventSubject(namespace))
			m.Data = append([]byte(nil), line...)
			return m, nil
		}
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	str := func(k string) string {
		var s string
		if v, ok := obj[k]; ok {
			_ = json.Unmarshal(v, &s)
		}
		return s
	}
	ns := str("namespace")
	if ns == "" {
		ns = namespace
	}
	if ns == "" {
		return nil, errors.New("no namespace")
	}
	if !memindex.ValidNamespace(ns) && !raw {
		return nil, fmt.Errorf("namespace %q", ns)
	}
	var data []byte
	if raw {
		data = append(data, line...)
	} else {
		if _, ok := obj["type"]; !ok {
			obj["type"] = json.RawMessage(`"message"`)
		}
		if _, ok := obj["namespace"]; !ok {
			obj["namespace"], _ = json.Marshal(ns)
		}
		var err error
		if data, err = json.Marshal(obj); err != nil {
			return nil, err
		}
	}
	id := ""
	if e := str("eventId"); e != "" {
		id = ns + "/" + e
	} else if t := str("type"); t == "" || t == memindex.TypeMessage {
		if seq, ok := obj["seq"]; ok && str("sessionKey") != "" {
			id = ns + "/" + str("sessionKey") + "/" + str("sessionId") + "/" + string(seq)
		}
	}
	if id == "" {
		h := sha256.Sum256(data)
		id = ns + "/" + hex.EncodeToString(h[:16])
	}
	m := nats.NewMsg(memindex.EventSubject(ns))
	m.Data = data
	m.Header.Set(nats.MsgIdHdr, id)
	return m, nil
}

// TestLineObjectMarshalsAsAMap: LineMsg sends the bytes and the message id
// that decoding the line into a map[string]json.RawMessage and marshalling
// it gave, for lines as publishers write them and for lines made to be
// awkward: keys out of order and duplicated, escapes in keys and values,
// invalid UTF-8, characters json.Marshal escapes (<, >, &, U+2028),
// whitespace inside and between values, nested values, every JSON type;
// and it refuses what the map refused.
func TestLineObjectMarshalsAsAMap(t *testing.T) {
	fixed := []string{
		`{"type":"message","namespace":"ns1","sessionKey":"k","sessionId":"s","seq":42,"id":"k/s/42","speaker":"Ana","text":"hello there","timestamp":"2026-11-30T09:00:00Z"}`,
		`{"seq":1,"sessionKey":"k","text":"no type, no namespace"}`,
		` { "text" : "spaced \u00e9 out" , "seq" : 7 , "sessionKey":"k" } `,
		`{"text":"a","text":"the last wins","seq":1,"seq":2,"sessionKey":"k"}`,
		`{"te\u0078t":"escaped key","n\u0061mespace":"ns2","seq":3,"sessionKey":"k"}`,
		`{"text":"<b>bold</b> & more \u2028 sep","seq":1,"sessionKey":"k"}`,
		"{\"text\":\"raw \xe2\x80\xa8 and \xe2\x80\xa9 and \xe2\x82\xac\",\"seq\":1,\"sessionKey\":\"k\"}",
		"{\"text\":\"bad utf8 \xff\xfe\",\"k\xffey\":1,\"seq\":1,\"sessionKey\":\"k\xff\"}",
		`{"meta":{"b":[1, 2, {"c":"}"}],"a":"]"},"list":[ "x" , null ,true,false,-1.5e3],"seq":1,"sessionKey":"k"}`,
		`{"type":"record.added","namespace":"ns1","eventId":"e-1","record":{"text":"x"}}`,
		`{"type":"session.reset","namespace":"ns1","sessionKey":"k"}`,
		`{"namespace":"bad namespace!","text":"x"}`,
		`{"namespace":42,"text":"x"}`,
		`{"eventId":"with \"quotes\"","seq":1}`,
		`{}`,
		`{"<":1,"a&b":">"}`,
		`[1,2]`, `"str"`, `12`, `null`, `not json`, `{"a":1,}`, `{"a" 1}`, ``, `{"a":1}x`,
	}
	r := rand.New(rand.NewPCG(1, 2))
	var lines []string
	lines = append(lines, fixed...)
	for range 2000 {
		lines = append(lines, randomLine(r))
	}
	checked := 0
	for _, line := range lines {
		for _, c := range []struct {
			ns  string
			raw bool
		}{{"", false}, {"def", false}, {"def", true}} {
			want, wantErr := referenceLineMsg([]byte(line), c.ns, c.raw)
			got, err := LineMsg([]byte(line), c.ns, c.raw)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("LineMsg(%q, %q, raw %v): error %v, the map's %v", line, c.ns, c.raw, err, wantErr)
			}
			if err != nil {
				continue
			}
			if string(got.Data) != string(want.Data) || got.Subject != want.Subject ||
				got.Header.Get(nats.MsgIdHdr) != want.Header.Get(nats.MsgIdHdr) {
				t.Fatalf("LineMsg(%q, %q, raw %v):\n got %s %q id %q\nwant %s %q id %q", line, c.ns, c.raw,
					got.Subject, got.Data, got.Header.Get(nats.MsgIdHdr), want.Subject, want.Data, want.Header.Get(nats.MsgIdHdr))
			}
			checked++
		}
	}
	if checked < 3000 {
		t.Fatalf("only %d lines were accepted by both; the generator makes too few valid ones", checked)
	}
}

// randomLine writes a JSON object (sometimes broken) from a small set of
// keys and awkward values, with random whitespace.
func randomLine(r *rand.Rand) string {
	keys := []string{"type", "namespace", "sessionKey", "sessionId", "seq", "eventId", "text", "speaker", "b", "a", "<k>", "\u00e9t\u00e9", `q\"k`, `n\u0061mespace`}
	vals := []string{`"message"`, `"ns1"`, `"k1"`, `7`, `-0.5e2`, `true`, `null`, `"x & y <z>"`, `"\u2028"`, "\"\xe2\x80\xa9\"", `"tab\tx"`,
		`[1, "a" ,{"b":[]}]`, `{"n" : {"m":"}]"}}`, `"esc \" \\ \/ \n"`, "\"bad \xff\"", `""`, `"ns_2-b"`, `"bad ns"`}
	ws := func() string { return []string{"", "", " ", "\n", "\t ", "\r\n"}[r.IntN(6)] }
	var b strings.Builder
	b.WriteString(ws() + "{")
	n := r.IntN(7)
	for i := range n {
		if i > 0 {
			b.WriteString(ws() + "," + ws())
		}
		fmt.Fprintf(&b, "%s\"%s\"%s:%s%s", ws(), keys[r.IntN(len(keys))], ws(), ws(), vals[r.IntN(len(vals))])
	}
	b.WriteString(ws() + "}" + ws())
	s := b.String()
	if r.IntN(20) == 0 { // broken: cut short
		s = s[:r.IntN(len(s))]
	}
	return s
}

// BenchmarkLineMsg turns hot-suite-like message lines into NATS messages,
// cycling through 4,096 different lines, with LineMsg and with the map code
// it replaced.
func BenchmarkLineMsg(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("the quick brown fox jumps over a lazy dog while the walrus reads a book about distributed systems and memory")
	lines := make([][]byte, 4096)
	for i := range lines {
		t := make([]string, 12+r.IntN(24))
		for j := range t {
			t[j] = words[r.IntN(len(words))]
		}
		lines[i] = fmt.Appendf(nil, `{"type":"message","namespace":"bench-hot","sessionKey":"chat-%d","sessionId":"s1","seq":%d,"id":"chat-%d/s1/%d","speaker":"Ana","text":%q,"timestamp":"2026-11-30T09:00:00Z"}`,
			i%1000, i/1000+1, i%1000, i/1000+1, strings.Join(t, " "))
	}
	for _, c := range []struct {
		name string
		fn   func([]byte, string, bool) (*nats.Msg, error)
	}{{"LineMsg", LineMsg}, {"map", referenceLineMsg}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := c.fn(lines[i%len(lines)], "", false); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
