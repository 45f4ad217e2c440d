package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"memindex/internal/cliconfig"
	"os"
	"os/signal"
	"strconv"
	"syscall"
)

const usage = `memindex — a memory indexer for AI agents, on NATS JetStream and SQLite.

Usage:
  memindex serve   [flags]                 run a worker (embedded NATS unless --server is set)
  memindex publish --namespace NS FILE     publish JSONL events (FILE or - for stdin)
  memindex publish --namespace NS --files DIR --watch
                                           keep a memory folder's .md files in sync as they change
  memindex import  --namespace NS FILE|DIR|-
                                           import history: OpenClaw transcripts, or JSONL through --map (--dry-run)
  memindex search  --namespace NS "text"   hybrid search over NATS
  memindex read    --namespace NS --session KEY --session-id ID [--from N]
                                           a session's messages by seq range
  memindex mcp     --namespace NS [--http ADDR]
                                           MCP server for agents (memory_search, _get, _add, _forget, _status) over stdio or HTTP
  memindex status                          ask the running workers how they are
  memindex health                          probe: ok, degraded or down per worker (exit 1 when down)
  memindex dlq list|show SEQ|replay SEQ    see and re-publish dead-lettered events
  memindex rebuild --partition N [--from-snapshot]
                                           rebuild a stopped worker's shard from the stream (or its newest snapshot, then the stream)
  memindex rebuild --all                   drop every shard of a stopped worker; the next serve rebuilds them from the stream
  memindex snapshot --partition N | --all  snapshot shards to the MEMINDEX_SNAPSHOTS object store now
  memindex bench   [flags]                 measure ingest rate and search latency
  memindex eval    [flags]                 retrieval quality, strict budget, beside plain BM25 (LoCoMo, synthetic-en/zh, --data DIR, --split)
  memindex doctor  [--data DIR] [flags]    check NATS, streams, consumers, shards and the provider; say what to fix (exit 1 on a failure)
  memindex config show [--config FILE] [serve flags] [--json]
                                           the effective serve configuration, where each value comes from, secrets redacted
  memindex schema  [--bundle] [NAME]       list the JSON Schemas of the wire messages, or print one
  memindex version

Run 'memindex COMMAND -h' for a command's flags. Connection settings take the
names NATS users know: --server / NATS_URL, --creds / NATS_CREDS, --context.
Settings: command-line flag > environment variable > --config FILE (YAML,
MEMINDEX_CONFIG; keys are flag names, e.g. chunk-tokens: 64) > default.
`

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd, args := os.Args[1], os.Args[2:]
	var err error
	switch cmd {
	case "serve":
		err = runServe(ctx, args)
	case "publish":
		err = runPublish(ctx, args, os.Stdin, os.Stdout, os.Stderr)
	case "import":
		err = runImport(ctx, args, os.Stdin, os.Stdout, os.Stderr)
	case "search":
		err = runSearch(ctx, args, os.Stdout)
	case "read":
		err = runRead(ctx, args, os.Stdout)
	case "mcp":
		err = runMCP(ctx, args, os.Stdin, os.Stdout)
	case "health":
		err = runHealth(ctx, args, os.Stdout)
	case "status":
		err = runStatus(ctx, args, os.Stdout)
	case "dlq":
		err = runDLQ(ctx, args, os.Stdin, os.Stdout)
	case "rebuild":
		err = runRebuild(ctx, args, os.Stdout)
	case "snapshot":
		err = runSnapshot(ctx, args, os.Stdout)
	case "bench":
		err = runBench(ctx, args, os.Stdout, os.Stderr)
	case "eval":
		err = runEval(ctx, args, os.Stdout, os.Stderr)
	case "config":
		err = runConfig(args, os.Stdout)
	case "doctor":
		err = runDoctor(ctx, args, os.Stdout)
	case "schema":
		err = runSchema(args, os.Stdout)
	case "version", "--version", "-v":
		fmt.Println("memindex", version)
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "memindex: unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "memindex %s: %v\n", cmd, err)
		os.Exit(1)
	}
}

// newFlagSet returns a flag set for a subcommand that reports errors
// instead of exiting.
func newFlagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("memindex "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: memindex %s %s\n\nFlags (each also read from the environment variable shown):\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// env returns the environment variable name's value, or def when unset.
func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func envInt(name string, def int) int {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// parseArgs parses flags that may stand before, between or after the
// positional arguments, and leaves the positional ones in positional.
// It then applies the --config file (internal/cliconfig) to the flags that neither
// the command line nor the environment set; keys of serve that fs does not
// have are left alone, so one file serves every command.
func parseArgs(fs *flag.FlagSet, args []string) (positional []string, err error) {
	skip := configSkip[fs.Name()]
	if !skip {
		addConfigFlag(fs)
	}
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if rest[0] == "--" {
			positional = append(positional, rest[1:]...)
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	if skip {
		return positional, nil
	}
	if _, err := cliconfig.Apply(fs, serveKnows()); err != nil {
		return nil, err
	}
	return positional, nil
}
