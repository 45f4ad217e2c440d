package importer

// OpenClaw session transcripts. The format, as found with the search tool:
//
//   - openclaw/openclaw docs/reference/session-management-compaction.md
//     (commit bd64650fe327b392905e1caa727e049a5b5bd3a8): transcripts are
//     ~/.openclaw/agents/<agentId>/sessions/<sessionId>.jsonl, written by
//     @mariozechner/pi-coding-agent's SessionManager; beside them
//     sessions.json maps each sessionKey (agent:<agentId>:<mainKey>,
//     cron:<job.id>, ...) to its entry, whose sessionId names the current
//     transcript. The first line is the session header (type "session",
//     id, cwd, timestamp, optional parentSession); then entries with id
//     and parentId (a tree): message (user/assistant/toolResult),
//     custom_message, custom, compaction, branch_summary.
//   - badlogic/pi-mono packages/coding-agent/src/core/session-manager.ts
//     (commit 0507789f7e12ebe347d56ddbecb16b124927e45d): SessionHeader
//     {type:"session", version?, id, timestamp, cwd, parentSession?};
//     every entry {type, id, parentId, timestamp (ISO 8601)}; entry types
//     message {message}, thinking_level_change, model_change, compaction
//     {summary, firstKeptEntryId, tokensBefore}, branch_summary, custom,
//     custom_message {content, display}, label, session_info. Version 1
//     files have no ids; version 3 renamed the role hookMessage to custom.
//   - badlogic/pi-mono packages/ai/src/types.ts (commit
//     3344adda99d1df62ae726c84c935847fb01e16c8): UserMessage {role:"user",
//     content: string | (text|image)[], timestamp ms}; AssistantMessage
//     {role:"assistant", content: (text|thinking|toolCall)[], provider,
//     model, stopReason, errorMessage?, timestamp ms}; ToolResultMessage
//     {role:"toolResult", toolCallId, toolName, content: (text|image)[],
//     isError, timestamp ms}. Parts: {type:"text",text},
//     {type:"thinking",thinking}, {type:"image",data,mimeType},
//     {type:"toolCall",id,name,arguments}.
//   - OpenClaw archives a reset or deleted session's transcript as
//     <sessionId>.jsonl.reset.<time> / .jsonl.deleted.<time> (seen in
//     OpenClaw's session tests and tools that read them, through
//     find_string ".jsonl.reset."); they are history too.
//
// What becomes a message: a message entry of role user or assistant with
// text (its text parts joined with a newline; thinking, tool calls and
// images are not text), and of role toolResult with Config.ToolResults (as
// role "tool", speaker the tool's name). Skipped and counted: an assistant
// turn that only calls tools ("message:tool-calls"), a message without text
// ("message:no-text"), tool results ("message:toolResult"), other roles
// (bashExecution, custom: "message:<role>"), and every entry that is not a
// message, by its type (compaction and branch_summary summarize messages
// already imported; custom_message is injected by extensions). The whole
// file is imported in file order, every branch of the tree included.
//
// A message's id is its entry id, its timestamp the entry's (else the
// message's own, in ms), its seq its position among the session's imported
// messages: the same file (or the file with more appended, as a live
// session grows) gives the same seqs, so importing again stores nothing new.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"memindex"
)

// openClawHeader returns the session id of an OpenClaw session header line.
func openClawHeader(line []byte) (string, bool) {
	var h struct {
		Type string `json:"type"`
		ID   any    `json:"id"`
	}
	if json.Unmarshal(line, &h) != nil || h.Type != "session" {
		return "", false
	}
	id, ok := h.ID.(string)
	return id, ok && id != ""
}

// openClaw reads a transcript whose first line, number n, is first.
func (p *parser) openClaw(in Input, lr *lineReader, first []byte, n int) error {
	sid, ok := openClawHeader(first)
	if !ok {
		p.problem(in.Name, 0, `line %d is not an OpenClaw session header ({"type":"session","id":...}); is this file --format jsonl?`, n)
		return nil
	}
	key := p.sessionKey(in, sid)
	if s := p.sessions[sessionRef{key, sid}]; s != nil {
		p.problem(in.Name, 0, "session %s/%s was already imported from %s", key, sid, s.file)
		return nil
	}
	for {
		line, n, err := nextLine(lr, p)
		switch {
		case err == io.EOF:
			return nil
		case errors.Is(err, errLineTooLong):
			p.problem(in.Name, n, "%v", err)
			continue
		case err != nil:
			return fmt.Errorf("read %s line %d: %w", in.Name, n+1, err)
		}
		obj, err := decodeObject(line)
		if err != nil {
			p.problem(in.Name, n, "%v", err)
			continue
		}
		typ, _ := obj["type"].(string)
		switch typ {
		case "":
			p.problem(in.Name, n, "entry has no type")
			continue
		case "message":
		default:
			p.skip(typ)
			continue
		}
		msg, _ := obj["message"].(map[string]any)
		if msg == nil {
			p.problem(in.Name, n, "message entry has no message object")
			continue
		}
		ev, reason := p.openClawMessage(msg)
		if reason != "" {
			p.skip(reason)
			continue
		}
		ev.SessionKey, ev.SessionID = key, sid
		ev.ID, _ = obj["id"].(string)
		ev.Timestamp = openClawTime(obj["timestamp"], msg["timestamp"])
		if err := p.add(Message{Event: ev, File: in.Name, Line: n}); err != nil {
			return err
		}
	}
}

// openClawMessage maps a message object to an event (no session fields),
// or says why it is skipped.
func (p *parser) openClawMessage(msg map[string]any) (memindex.Event, string) {
	role, _ := msg["role"].(string)
	var ev memindex.Event
	switch role {
	case "user", "assistant":
		ev.Role = role
	case "toolResult":
		if !p.cfg.ToolResults {
			return ev, "message:toolResult"
		}
		ev.Role = "tool"
		ev.Speaker, _ = msg["toolName"].(string)
	case "":
		return ev, "message:no-role"
	default:
		return ev, "message:" + role
	}
	text, calls := contentText(msg["content"])
	if strings.TrimSpace(text) == "" {
		if calls {
			return ev, "message:tool-calls"
		}
		return ev, "message:no-text"
	}
	ev.Text = text
	return ev, ""
}

// contentText joins the text of a content (a string, or an array of parts
// of which those of type text count), and says whether it held tool calls.
func contentText(c any) (text string, toolCalls bool) {
	switch c := c.(type) {
	case string:
		return c, false
	case []any:
		var parts []string
		for _, x := range c {
			part, _ := x.(map[string]any)
			switch part["type"] {
			case "text":
				if s, ok := part["text"].(string); ok && strings.TrimSpace(s) != "" {
					parts = append(parts, s)
				}
			case "toolCall", "tool_use":
				toolCalls = true
			}
		}
		return strings.Join(parts, "\n"), toolCalls
	}
	return "", false
}

// openClawTime is an entry's ISO 8601 timestamp as RFC 3339 in UTC, else
// the message's timestamp in Unix milliseconds, else "" (the stream's
// time).
func openClawTime(entry, msg any) string {
	if s, ok := entry.(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t.UTC().Format(time.RFC3339Nano)
		}
	}
	if n, ok := msg.(json.Number); ok {
		if ms, err := n.Int64(); err == nil && ms > 0 {
			return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
		}
	}
	return ""
}

// sessionKey is the key sessions.json in the transcript's directory gives
// session sid, else Config.SessionKey.
func (p *parser) sessionKey(in Input, sid string) string {
	if in.dir == "" {
		return p.cfg.SessionKey
	}
	keys, ok := p.keys[in.dir]
	if !ok {
		keys = p.loadSessionsJSON(in.dir)
		p.keys[in.dir] = keys
	}
	if k, ok := keys[sid]; ok {
		return k
	}
	return p.cfg.SessionKey
}

// loadSessionsJSON reads dir/sessions.json: sessionKey → {sessionId, ...}.
// One that is there but unreadable is a problem of that file (the
// sessions then take the default key), one that is not there is none.
func (p *parser) loadSessionsJSON(dir string) map[string]string {
	path := filepath.Join(dir, "sessions.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		p.problem(path, 0, "%v (its sessions take the session key %q)", err, p.cfg.SessionKey)
		return nil
	}
	var store map[string]struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(data, &store); err != nil {
		p.problem(path, 0, "not a JSON object of sessionKey → {sessionId}: %v (its sessions take the session key %q)", err, p.cfg.SessionKey)
		return nil
	}
	keys := make(map[string]string, len(store))
	for k, e := range store {
		if e.SessionID != "" {
			keys[e.SessionID] = k
		}
	}
	return keys
}
