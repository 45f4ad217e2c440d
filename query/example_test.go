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
		Namespace: "agent-7",
		Query:     "what did Ana say about the move?",
		K:         5,
		Explain:   true,
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
	for _, h := range resp.Hits {
		fmt.Printf("%.3f %s/%s #%d-%d %s\n", h.Score, h.SessionKey, h.SessionID, h.SeqStart, h.SeqEnd, h.Snippet)
	}
}
