package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/nats-io/nats.go"

	"memindex/embedder"
	"memindex/internal/cliconfig"
	"memindex/internal/doctor"
	"memindex/internal/natsconn"
	"memindex/internal/secret"
	"memindex/node"
)

// runDoctor is `memindex doctor`: the checks are package doctor's.
func runDoctor(ctx context.Context, args []string, stdout io.Writer) error {
	var (
		conn     connFlags
		provider providerFlags
		c        doctor.Config
	)
	fl := newFlagSet("doctor", "[--data DIR] [connection and embedder flags] [--json]")
	conn.register(fl, nats.DefaultURL)
	provider.register(fl, node.DefaultConfig().Embedder)
	fl.StringVar(&c.Data, "data", env("MEMINDEX_DATA", "./data"), "data directory whose shard files to check (MEMINDEX_DATA)")
	fl.IntVar(&c.Partitions, "partition-count", envInt("MEMINDEX_PARTITION_COUNT", 0), "partitions the stream should have; 0: the stream's own (MEMINDEX_PARTITION_COUNT)")
	fl.IntVar(&c.Replicas, "stream-replicas", envInt("MEMINDEX_STREAM_REPLICAS", 0), "replicas the streams should have, as serve's --stream-replicas; 0: do not check (MEMINDEX_STREAM_REPLICAS)")
	asJSON := fl.Bool("json", false, "print the checks as JSON")
	if _, err := parseArgs(fl, args); err != nil {
		return err
	}
	c.Connect = func() (*nats.Conn, error) { return conn.Connect("memindex doctor") }
	c.OpTimeout = conn.Timeout
	pc := provider.config()
	pc.Retries = -1 // one embedding, no retries
	c.Provider = pc.Name
	c.NewEmbedder = func() (embedder.Embedder, embedder.Info, error) {
		e, err := embedder.NewProvider(pc)
		if err != nil {
			return nil, embedder.Info{}, err
		}
		return e, e.Info(), nil
	}
	c.EmbedTimeout = pc.Timeout
	c.LockData = node.LockData
	c.RedactURL, c.RedactSecrets = natsconn.RedactURL, redactKeys
	rep := doctor.Run(ctx, c)
	failed := rep.Failed()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printChecks(stdout, rep.Checks)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d checks failed", failed, len(rep.Checks))
	}
	return nil
}

func printChecks(w io.Writer, checks []doctor.Check) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, ch := range checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", strings.ToUpper(ch.Status), ch.Name, ch.Detail)
		if ch.Fix != "" {
			fmt.Fprintf(tw, "\t\t→ %s\n", ch.Fix)
		}
	}
	tw.Flush()
}

// redactKeys removes every provider key and NATS secret of the environment
// from s.
func redactKeys(s string) string {
	names := []string{"NATS_PASSWORD", "NATS_TOKEN"}
	for _, ns := range embedder.KeyEnv {
		names = append(names, ns...)
	}
	return secret.Redact(s, cliconfig.Redacted, names...)
}
