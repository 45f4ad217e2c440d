package query

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"memindex"
	"memindex/chunker"
	"memindex/store"
)

// neighbourReader is offered by a shard that can read a session's messages
// by seq, for Around; *store.Shard does.
type neighbourReader interface {
	SessionMessages(ctx context.Context, ref store.SessionRef, fromSeq int64, limit int) ([]store.Message, error)
}

// fit attaches each session hit's Around neighbours and keeps, in rank
// order, the hits that fit the request's budgets, filling used. A message
// is held once per response: a neighbour that is one of the hits, or
// already another hit's context, is left out.
func (e *Engine) fit(ctx context.Context, s Searcher, req memindex.SearchRequest, hits []memindex.Hit, used *memindex.Usage, xs *explainer) ([]memindex.Hit, error) {
	used.Budget, used.BudgetTokens = req.Budget, req.BudgetTokens
	held := make(map[string]bool, len(hits))
	for _, h := range hits {
		if h.Source == memindex.SourceSessions && h.Seq > 0 {
			held[msgKey(h.SessionKey, h.SessionID, h.Seq)] = true
		}
	}
	nr, canRead := s.(neighbourReader)
	out := hits[:0]
	for _, h := range hits {
		var ctxMsgs []memindex.ContextMessage
		if req.Around > 0 && canRead && h.Source == memindex.SourceSessions && h.Seq > 0 {
			var err error
			if ctxMsgs, err = neighbours(ctx, nr, req, h, held); err != nil {
				return nil, err
			}
		}
		msgs := hitMessages(h)
		tokens := hitTokens(h)
		for _, c := range ctxMsgs {
			tokens += chunker.EstimateTokens(c.Speaker + ": " + c.Text)
		}
		if req.Budget > 0 && used.Messages+msgs > req.Budget {
			used.Stopped = "budget"
			break // every later hit costs at least one message too
		}
		if req.BudgetTokens > 0 && used.Tokens+tokens > req.BudgetTokens {
			used.Stopped = "budgetTokens"
			continue // a later, shorter hit may still fit
		}
		for _, c := range ctxMsgs {
			held[msgKey(h.SessionKey, h.SessionID, c.Seq)] = true
		}
		h.Context = ctxMsgs
		used.Hits++
		used.Messages += msgs
		used.Tokens += tokens
		used.ContextMessages += len(ctxMsgs)
		out = append(out, h)
	}
	if req.Budget > 0 || req.BudgetTokens > 0 || req.Around > 0 {
		xs.add("budget", len(hits), len(out), fmt.Sprintf("kept %d hits holding %d messages and about %d tokens (budget %d messages, %d tokens; around %d)",
			used.Hits, used.Messages, used.Tokens, req.Budget, req.BudgetTokens, req.Around))
	}
	return out, nil
}

// neighbours reads up to req.Around messages on each side of the session
// hit h, leaving out those held.
func neighbours(ctx context.Context, nr neighbourReader, req memindex.SearchRequest, h memindex.Hit, held map[string]bool) ([]memindex.ContextMessage, error) {
	from := max(h.Seq-int64(req.Around), 1)
	ms, err := nr.SessionMessages(ctx, store.SessionRef{Namespace: req.Namespace, SessionKey: h.SessionKey, SessionID: h.SessionID},
		from, int(h.Seq-from)+1+req.Around)
	if err != nil {
		return nil, fmt.Errorf("read neighbours: %w", err)
	}
	var out []memindex.ContextMessage
	for _, m := range ms {
		if m.Seq == h.Seq || m.Seq > h.Seq+int64(req.Around) || held[msgKey(h.SessionKey, h.SessionID, m.Seq)] {
			continue
		}
		c := memindex.ContextMessage{Seq: m.Seq, MessageID: m.ID, Speaker: m.Speaker, Role: m.Role, Text: m.Text, Context: true}
		if !m.Time.IsZero() {
			c.Timestamp = m.Time.UTC().Format(time.RFC3339)
		}
		out = append(out, c)
	}
	return out, nil
}

// msgKey names one message of a namespace.
func msgKey(sessionKey, sessionID string, seq int64) string {
	return sessionKey + "\x00" + sessionID + "\x00" + strconv.FormatInt(seq, 10)
}

// hitMessages is what a hit costs in messages: one for a message, a file
// section or a record; the messages it spans for an older multi-message
// chunk.
func hitMessages(h memindex.Hit) int {
	if h.Source == memindex.SourceSessions && h.Seq == 0 && h.SeqEnd > h.SeqStart {
		return int(h.SeqEnd-h.SeqStart) + 1
	}
	return 1
}

// hitTokens estimates the tokens of a hit's text as an agent pastes it
// (with its speaker).
func hitTokens(h memindex.Hit) int {
	if h.Speaker != "" {
		return chunker.EstimateTokens(h.Speaker + ": " + h.Text)
	}
	return chunker.EstimateTokens(h.Text)
}
