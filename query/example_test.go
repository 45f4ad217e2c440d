package query_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"memindex"
	"memindex/query"
)

// ExampleClient_Search asks the workers behind a NATS server for the memories
// of namespace agent-7. It needs a running `memindex serve`, so it is
// compiled but not run.
func ExampleClient_Search() {
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		fmt.Println("connect:", err)
		return
	}
	defer nc.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := query.NewClient(nc).Search(ctx, memindex.SearchRequest{
		Namespace:  "agent-7",
		Query:      "what did Ana say about the move?",
		SessionKey: "whatsapp:+4912345",
		Budget:     5, // at most five messages: the best hits that fit, in rank order
		Around:     1, // each hit with the message before and after it, as context
	})
	var remote *query.RemoteError
	switch {
	case errors.Is(err, memindex.ErrInvalid):
		fmt.Println("fix the request:", err) // the message names the field
		return
	case errors.Is(err, query.ErrNoWorker), errors.Is(err, query.ErrOverloaded):
		fmt.Println("try later:", err)
		return
	case errors.As(err, &remote):
		fmt.Println("worker said", remote.Code, remote.Message)
		return
	case err != nil:
		fmt.Println("search:", err)
		return
	}
	for _, d := range resp.Degraded {
		fmt.Println("degraded:", d)
	}
	fmt.Printf("%d messages, about %d tokens, %d of context\n", resp.Used.Messages, resp.Used.Tokens, resp.Used.ContextMessages)
	for _, h := range resp.Hits { // one message a hit, never twice
		fmt.Printf("%.3f %s/%s #%d %s: %s\n", h.Score, h.SessionKey, h.SessionID, h.Seq, h.Speaker, h.Text)
		for _, c := range h.Context {
			fmt.Printf("    (context #%d) %s: %s\n", c.Seq, c.Speaker, c.Text)
		}
	}
}
