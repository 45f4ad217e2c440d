package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
)

const usage = `memindex — a memory indexer for AI agents, on NATS JetStream and SQLite.

Usage:
  memindex serve   [flags]                 run a worker (embedded NATS unless --server is set)
  memindex publish --namespace NS FILE     publish JSONL events (FILE or - for stdin)
  memindex search  --namespace NS "text"   hybrid search over NATS
  memindex read    --namespace NS --session KEY --session-id ID [--from N]
                                           a session's messages by seq range
  memindex status                          ask the running workers how they are
  memindex health                          probe: ok, degraded or down per worker (exit 1 when down)
  memindex dlq list|show SEQ|replay SEQ    see and re-publish dead-lettered events
  memindex rebuild --partition N | --all   drop shards of a stopped worker; the next serve rebuilds them from the stream
  memindex bench   [flags]                 measure ingest rate and search latency
  memindex eval    [flags]                 measure retrieval quality on LoCoMo (rec@k, hit@k, MRR)
  memindex version

Run 'memindex COMMAND -h' for a command's flags. Connection settings take the
names NATS users know: --server / NATS_URL, --creds / NATS_CREDS, --context.
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
	case "search":
		err = runSearch(ctx, args, os.Stdout)
	case "read":
		err = runRead(ctx, args, os.Stdout)
	case "health":
		err = runHealth(ctx, args, os.Stdout)
	case "status":
		err = runStatus(ctx, args, os.Stdout)
	case "dlq":
		err = runDLQ(ctx, args, os.Stdin, os.Stdout)
	case "rebuild":
		err = runRebuild(ctx, args, os.Stdout)
	case "bench":
		err = runBench(ctx, args, os.Stdout, os.Stderr)
	case "eval":
		err = runEval(ctx, args, os.Stdout, os.Stderr)
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
func parseArgs(fs *flag.FlagSet, args []string) (positional []string, err error) {
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if rest[0] == "--" {
			return append(positional, rest[1:]...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}
