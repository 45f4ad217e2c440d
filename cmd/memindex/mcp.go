package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"memindex/internal/cliconfig"
	"memindex/internal/secret"
	"memindex/mcpserver"
)

// runMCP runs `memindex mcp`: the MCP server (package mcpserver) over stdio,
// or over streamable HTTP with --http. Its log goes to stderr: on stdio,
// stdout carries the protocol only.
func runMCP(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	var conn connFlags
	fs := newFlagSet("mcp", "--namespace NS [--http ADDR] [flags]")
	conn.register(fs, nats.DefaultURL)
	var cfg mcpserver.Config
	fs.StringVar(&cfg.Namespace, "namespace", env("MEMINDEX_NAMESPACE", ""), "namespace of every tool call that names none (MEMINDEX_NAMESPACE)")
	allow := fs.String("allow-namespaces", env("MEMINDEX_ALLOW_NAMESPACES", ""), "namespaces a tool call may name in its namespace argument besides --namespace: a comma-separated list, or * for any (MEMINDEX_ALLOW_NAMESPACES; default none)")
	httpAddr := fs.String("http", env("MEMINDEX_MCP_HTTP", ""), "serve MCP over streamable HTTP on this address, e.g. 127.0.0.1:8765, instead of stdio; when the environment sets MEMINDEX_MCP_TOKEN or MEMINDEX_MCP_TOKEN_FILE, every request needs that bearer token (MEMINDEX_MCP_HTTP)")
	httpPath := fs.String("http-path", env("MEMINDEX_MCP_HTTP_PATH", mcpserver.DefaultHTTPPath), "URL path of the MCP endpoint with --http (MEMINDEX_MCP_HTTP_PATH)")
	fs.DurationVar(&cfg.ApplyWait, "apply-wait", envDuration("MEMINDEX_MCP_APPLY_WAIT", mcpserver.DefaultApplyWait), "how long memory_add and memory_forget wait for the workers to apply what they publish, so the next memory_search sees it; negative: do not wait (MEMINDEX_MCP_APPLY_WAIT)")
	fs.DurationVar(&cfg.StatusWait, "status-wait", envDuration("MEMINDEX_MCP_STATUS_WAIT", mcpserver.DefaultStatusWait), "how long memory_status gathers the workers' answers (MEMINDEX_MCP_STATUS_WAIT)")
	logLevel := fs.String("log-level", env("MEMINDEX_LOG_LEVEL", "info"), "debug, info, warn or error; the log goes to stderr (MEMINDEX_LOG_LEVEL)")
	logFormat := fs.String("log-format", env("MEMINDEX_LOG_FORMAT", "text"), "text or json (MEMINDEX_LOG_FORMAT)")
	if err := parseMCPArgs(fs, args); err != nil {
		return err
	}
	var err error
	if cfg.AllowNamespaces, err = mcpserver.ParseNamespaces(*allow); err != nil {
		return fmt.Errorf("--allow-namespaces: %w", err)
	}
	cfg.Timeout, cfg.Version = conn.Timeout, version
	if err := cfg.Validate(); err != nil {
		return err
	}
	token, err := secret.Get("MEMINDEX_MCP_TOKEN")
	if err != nil {
		return err
	}
	log, err := newLogger(*logLevel, *logFormat)
	if err != nil {
		return err
	}
	conn.Log = log
	nc, err := connectOrRetry(&conn, "memindex mcp", log)
	if err != nil {
		return err
	}
	defer nc.Close()
	srv, err := mcpserver.New(nc, cfg)
	if err != nil {
		return err
	}
	defer srv.Close(context.Background()) //nolint:errcheck // nothing left to do about it
	if *httpAddr == "" {
		log.Info("serving MCP over stdio", "namespace", cfg.Namespace, "allow_namespaces", *allow)
		err := srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
		if ctx.Err() != nil { // a signal, not a failure
			return nil
		}
		return err
	}
	return srv.ListenAndServe(ctx, mcpserver.HTTPConfig{Addr: *httpAddr, Path: *httpPath, Token: token, Log: log}, func(addr string) {
		log.Info("serving MCP over streamable HTTP", "url", "http://"+addr+*httpPath, "namespace", cfg.Namespace, "allow_namespaces", *allow, "token", token != "")
	})
}

// parseMCPArgs is parseArgs for mcp (configSkip leaves the --config file
// to it), but a file's "http" key is not applied to --http: in a file that
// serve shares, that key is serve's (the address of /metrics), and taking
// it would turn an MCP client's stdio server into an HTTP one. The file
// sets mcp's --http only as MEMINDEX_MCP_HTTP.
func parseMCPArgs(fs *flag.FlagSet, args []string) error {
	addConfigFlag(fs)
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	onCmdLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCmdLine[f.Name] = true })
	set, err := cliconfig.Apply(fs, serveKnows())
	if err != nil {
		return err
	}
	if onCmdLine["http"] || set["http"].Source != cliconfig.SourceFile {
		return nil
	}
	entries, err := cliconfig.ReadFile(fs.Lookup("config").Value.String())
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Key == "http" {
			return fs.Set("http", "")
		}
	}
	return nil
}

// connectOrRetry connects as conn says; when no server is reachable yet it
// returns a connection that keeps trying in the background, so an MCP
// client that starts the server before NATS is up gets tool errors saying
// so rather than a server that exited. Any other failure (credentials,
// TLS) is a mistake to fix and returned.
func connectOrRetry(conn *connFlags, name string, log *slog.Logger) (*nats.Conn, error) {
	nc, err := conn.Connect(name)
	if err == nil || !errors.Is(err, nats.ErrNoServers) {
		return nc, err
	}
	log.Warn("NATS is not reachable; serving anyway: every tool answers that memory is unreachable until it is", "err", err)
	url, rerr := conn.Resolve()
	if rerr != nil {
		return nil, rerr
	}
	opts, oerr := conn.Options(name)
	if oerr != nil {
		return nil, oerr
	}
	opts = append(opts, nats.RetryOnFailedConnect(true), nats.ReconnectWait(time.Second))
	return nats.Connect(url, opts...)
}

// nopWriteCloser is a writer whose Close does nothing: the MCP transport
// closes its writer at the end, and stdout is not its to close.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
