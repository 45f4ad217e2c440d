package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"

	"memindex"
	"memindex/client"
)

func runRead(ctx context.Context, args []string, stdout io.Writer) error {
	var conn connFlags
	fs := newFlagSet("read", "--namespace NS (--session KEY --session-id ID | --path FILE) [--from N] [--count N]")
	conn.register(fs, nats.DefaultURL)
	var req memindex.ReadRequest
	fs.StringVar(&req.Namespace, "namespace", env("MEMINDEX_NAMESPACE", ""), "namespace (MEMINDEX_NAMESPACE)")
	fs.StringVar(&req.SessionKey, "session", "", "sessionKey")
	fs.StringVar(&req.SessionID, "session-id", "", "sessionId")
	fs.StringVar(&req.Path, "path", "", "a memory file instead of a session: its lines from --from on")
	fs.Int64Var(&req.From, "from", 1, "first message seq")
	fs.IntVar(&req.Count, "count", memindex.DefaultReadCount, fmt.Sprintf("messages to return (at most %d)", memindex.MaxReadCount))
	asJSON := fs.Bool("json", false, "print the response as JSON")
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	if err := req.Normalize(); err != nil {
		return err
	}
	nc, err := conn.Connect("memindex read")
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(ctx, conn.Timeout)
	defer cancel()
	resp, err := client.NewClient(nc).Read(ctx, req)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(resp)
	}
	for i, l := range resp.Lines {
		fmt.Fprintf(stdout, "%5d  %s\n", req.From+int64(i), l)
	}
	for _, m := range resp.Messages {
		who := m.Speaker
		if who == "" {
			who = m.Role
		}
		fmt.Fprintf(stdout, "%4d  %s  %s: %s\n", m.Seq, m.Timestamp, who, m.Text)
	}
	if resp.More {
		last := req.From - 1 + int64(len(resp.Lines))
		if n := len(resp.Messages); n > 0 {
			last = resp.Messages[n-1].Seq
		}
		fmt.Fprintf(stdout, "… more from seq %d (--from %d)\n", last+1, last+1)
	}
	return nil
}

func runHealth(ctx context.Context, args []string, stdout io.Writer) error {
	var conn connFlags
	fs := newFlagSet("health", "[flags]")
	conn.register(fs, nats.DefaultURL)
	wait := fs.Duration("wait", 500*time.Millisecond, "how long to gather answers from workers")
	strict := fs.Bool("fail-on-degraded", false, "exit non-zero when a worker is degraded, not only when one is down")
	asJSON := fs.Bool("json", false, "print the answers as JSON")
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	nc, err := conn.Connect("memindex health")
	if err != nil {
		return err
	}
	defer nc.Close()
	hs, err := client.NewClient(nc).Health(ctx, *wait)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(hs); err != nil {
			return err
		}
	}
	bad := 0
	for _, h := range hs {
		if !*asJSON {
			fmt.Fprintf(stdout, "%s: %s (embeddings %s; vectors %s)\n", h.Worker, h.Status, h.Embeddings, h.Vectors)
			for _, p := range h.Problems {
				fmt.Fprintf(stdout, "  - %s\n", p)
			}
		}
		if h.Status == memindex.HealthDown || (*strict && h.Status != memindex.HealthOK) {
			bad++
		}
	}
	switch {
	case len(hs) == 0:
		return fmt.Errorf("no memindex worker answered; start one with `memindex serve`")
	case bad > 0:
		return fmt.Errorf("%d of %d workers are not healthy", bad, len(hs))
	}
	return nil
}
