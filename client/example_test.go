package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"memindex"
	"memindex/client"
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
	resp, err := client.NewClient(nc).Search(ctx, memindex.SearchRequest{
		Namespace:  "agent-7",
		Query:      "what did Ana say about the move?",
		SessionKey: "whatsapp:+4912345",
		Budget:     5, // at most five messages: the best hits that fit, in rank order
		Around:     1, // each hit with the message before and after it, as context
	})
	var remote *client.RemoteError
	switch {
	case errors.Is(err, memindex.ErrInvalid):
		fmt.Println("fix the request:", err) // the message names the field
		return
	case errors.As(err, &remote) && remote.RetryAfter > 0: // 429: the namespace is over its rate
		fmt.Println("try again in", remote.RetryAfter, remote.Message)
		return
	case errors.Is(err, client.ErrNoWorker), errors.Is(err, memindex.ErrOverloaded), errors.Is(err, memindex.ErrUnavailable):
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

// ExampleClient_Publish sends a message event and waits until the workers
// have applied it, then searches. Publishing the same session position
// again stores nothing. It needs a running `memindex serve`, so it is
// compiled but not run.
func ExampleClient_Publish() {
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		fmt.Println("connect:", err)
		return
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	c := client.NewClient(nc)
	ack, err := c.Publish(ctx, memindex.Event{Namespace: "agent-7", SessionKey: "whatsapp:+4912345",
		SessionID: "2026-03-01", Seq: 1, Role: "user", Speaker: "Ana", Text: "We move to Lisbon in May."})
	if err != nil {
		fmt.Println("publish:", err)
		return
	}
	m, err := client.Open(ctx, client.Config{Backend: client.BackendRemote, Remote: client.RemoteConfig{Conn: nc}})
	if err != nil {
		fmt.Println("open:", err)
		return
	}
	defer m.Close(ctx)
	if err := m.Sync(ctx, client.SyncRequest{Seq: ack.Seq}); err != nil {
		fmt.Println("sync:", err)
		return
	}
	resp, err := m.Search(ctx, memindex.SearchRequest{Namespace: "agent-7", Query: "when does Ana move?"})
	if err != nil {
		fmt.Println("search:", err)
		return
	}
	fmt.Println(len(resp.Hits), "hits from", resp.Backend)
}

// ExampleMsgID shows the de-duplication id a message gets: its session
// position, whatever its text.
func ExampleMsgID() {
	ev := memindex.Event{Type: memindex.TypeMessage, Namespace: "agent-7", SessionKey: "whatsapp:+4912345", SessionID: "2026-03-01", Seq: 3, Text: "See you in Lisbon."}
	fmt.Println(client.MsgID(ev, nil))
	// Output: agent-7/whatsapp:+4912345/2026-03-01/3
}
