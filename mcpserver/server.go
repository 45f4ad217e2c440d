package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"memindex"
	"memindex/client"
)

// Defaults of Config.
const (
	// DefaultApplyWait is how long memory_add and memory_forget wait for
	// the workers to apply what they published.
	DefaultApplyWait = 5 * time.Second
	// DefaultStatusWait is how long memory_status gathers the workers'
	// answers.
	DefaultStatusWait = 500 * time.Millisecond
	// DefaultSessionTimeout closes a streamable HTTP session idle this long.
	DefaultSessionTimeout = 30 * time.Minute
	// applyPollWait is how long each poll of the apply wait gathers the
	// workers' statuses during its first quickSyncFor (Config.StatusWait
	// when shorter): a shorter poll makes memory_add return sooner (about
	// 0.2 s, against 1.1 s polling with the 500 ms status wait). A worker
	// busy ingesting can take longer than that to answer its status, so
	// the rest of the wait polls Config.StatusWait at a time.
	applyPollWait = 100 * time.Millisecond
	quickSyncFor  = time.Second
)

// AllNamespaces in Config.AllowNamespaces lets a call name any namespace.
const AllNamespaces = "*"

// Config is what a Server serves and how long it waits.
type Config struct {
	// Namespace is the namespace of every call that names none. Empty: a
	// call must name one of AllowNamespaces.
	Namespace string
	// AllowNamespaces are the namespaces a call may name in its namespace
	// argument besides Namespace; AllNamespaces ("*") allows any. Empty: a
	// call may name only Namespace (ParseNamespaces reads the flag's form).
	AllowNamespaces []string
	// ApplyWait bounds how long memory_add and memory_forget wait until the
	// workers have applied the event they published, so that the next
	// memory_search sees it (0: DefaultApplyWait; negative: do not wait).
	ApplyWait time.Duration
	// StatusWait is how long memory_status gathers the workers' answers
	// (0: DefaultStatusWait).
	StatusWait time.Duration
	// Timeout bounds one search, read or publish (0:
	// client.DefaultRequestTimeout).
	Timeout time.Duration
	// SessionTimeout closes a streamable HTTP session that has been idle
	// this long (0: DefaultSessionTimeout; negative: never).
	SessionTimeout time.Duration
	// Version is the version the server reports to clients.
	Version string
}

// ParseNamespaces reads a comma-separated list of namespaces, or "*" for
// any, as --allow-namespaces gives it; blanks around names are dropped.
func ParseNamespaces(s string) ([]string, error) {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		switch {
		case part == "":
			continue
		case part == AllNamespaces:
		case !memindex.ValidNamespace(part):
			return nil, fmt.Errorf("namespace %q is not 1-64 characters of [A-Za-z0-9_-] (give a comma-separated list, or * for any)", part)
		}
		out = append(out, part)
	}
	if slices.Contains(out, AllNamespaces) && len(out) > 1 {
		return nil, fmt.Errorf("%q: * allows every namespace; give it alone or list the namespaces", s)
	}
	return out, nil
}

// Validate reports a setting that is missing or wrong, naming it.
func (c Config) Validate() error {
	if c.Namespace == "" && len(c.AllowNamespaces) == 0 {
		return fmt.Errorf("mcp config: a namespace is required (--namespace or MEMINDEX_NAMESPACE), or the namespaces calls may name (--allow-namespaces)")
	}
	if c.Namespace != "" && !memindex.ValidNamespace(c.Namespace) {
		return fmt.Errorf("mcp config: namespace %q is not 1-64 characters of [A-Za-z0-9_-]", c.Namespace)
	}
	for _, ns := range c.AllowNamespaces {
		if ns != AllNamespaces && !memindex.ValidNamespace(ns) {
			return fmt.Errorf("mcp config: allowed namespace %q is not 1-64 characters of [A-Za-z0-9_-]", ns)
		}
	}
	if c.StatusWait < 0 || c.Timeout < 0 {
		return fmt.Errorf("mcp config: status wait %s and timeout %s must not be negative", c.StatusWait, c.Timeout)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.ApplyWait == 0 {
		c.ApplyWait = DefaultApplyWait
	}
	if c.StatusWait == 0 {
		c.StatusWait = DefaultStatusWait
	}
	if c.Timeout == 0 {
		c.Timeout = client.DefaultRequestTimeout
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	return c
}

// Server is memindex's MCP server: five tools over one NATS connection.
// It is safe for concurrent use by any number of MCP sessions.
type Server struct {
	cfg Config
	nc  *nats.Conn
	c   *client.Client
	// quickSync and sync are the remote backend, for Sync after a publish:
	// quickSync polls the statuses applyPollWait at a time, sync
	// Config.StatusWait at a time, for workers too busy to answer sooner.
	quickSync, sync client.Manager
	srv             *mcp.Server
}

// New returns a Server whose tools send their requests on nc, which the
// caller keeps and closes after the server's last call. nc may still be
// connecting: until it is up, every tool answers with a tool error saying
// so.
func New(nc *nats.Conn, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	open := func(wait time.Duration) (client.Manager, error) {
		m, err := client.Open(context.Background(), client.Config{Backend: client.BackendRemote,
			Remote: client.RemoteConfig{Conn: nc, StatusWait: wait, SyncPoll: 10 * time.Millisecond}})
		if err != nil {
			return nil, fmt.Errorf("mcp server: %w", err)
		}
		return m, nil
	}
	quick, err := open(min(cfg.StatusWait, applyPollWait))
	if err != nil {
		return nil, err
	}
	patient, err := open(cfg.StatusWait)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, nc: nc, c: client.NewClient(nc), quickSync: quick, sync: patient}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "memindex", Title: "memindex memory", Version: cfg.Version},
		&mcp.ServerOptions{Instructions: s.instructions(), Capabilities: &mcp.ServerCapabilities{}})
	s.addSearch()
	s.addGet()
	s.addAdd()
	s.addForget()
	s.addStatus()
	return s, nil
}

// instructions is what the server tells a client about itself at
// initialization: which namespace it serves and how the tools fit.
func (s *Server) instructions() string {
	var b strings.Builder
	b.WriteString("memindex is this agent's long-term memory: past conversations (sessions), memory files and memory records. ")
	b.WriteString("Call memory_search before answering about anything said or decided earlier; memory_get reads more of a session or file around a hit; ")
	b.WriteString("memory_add keeps a fact for later, memory_forget removes one; memory_status says whether memory is up to date. ")
	if s.cfg.Namespace != "" {
		fmt.Fprintf(&b, "Memory lives in namespace %q", s.cfg.Namespace)
	} else {
		b.WriteString("Every call must name its namespace")
	}
	switch {
	case slices.Contains(s.cfg.AllowNamespaces, AllNamespaces):
		b.WriteString("; a call may name any other namespace in its namespace argument.")
	case len(s.cfg.AllowNamespaces) > 0:
		fmt.Fprintf(&b, "; a call may name one of %s in its namespace argument.", strings.Join(s.cfg.AllowNamespaces, ", "))
	default:
		b.WriteString(".")
	}
	return b.String()
}

// MCP returns the SDK server, for a transport New does not offer.
func (s *Server) MCP() *mcp.Server { return s.srv }

// Run serves one MCP session over t (&mcp.StdioTransport{} for stdio)
// until the client disconnects or ctx ends.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error { return s.srv.Run(ctx, t) }

// Close releases what New acquired (not the connection, which is the
// caller's).
func (s *Server) Close(ctx context.Context) error {
	return errors.Join(s.quickSync.Close(ctx), s.sync.Close(ctx))
}

// namespace returns the namespace a call with the namespace argument arg
// works on: arg when Config allows it, Config.Namespace when arg is empty.
func (s *Server) namespace(arg string) (string, error) {
	switch {
	case arg == "" && s.cfg.Namespace == "":
		return "", fmt.Errorf("%w: this server has no default namespace; name one of %s in the namespace argument", ErrNamespaceRequired, s.allowedWords())
	case arg == "" || arg == s.cfg.Namespace:
		return s.cfg.Namespace, nil
	case slices.Contains(s.cfg.AllowNamespaces, AllNamespaces), slices.Contains(s.cfg.AllowNamespaces, arg):
		return arg, nil
	}
	return "", fmt.Errorf("%w: %q; this server answers for %s (the operator allows more with --allow-namespaces)", ErrNamespaceNotAllowed, arg, s.allowedWords())
}

// allowedWords names the namespaces a call may use.
func (s *Server) allowedWords() string {
	names := slices.Clone(s.cfg.AllowNamespaces)
	if s.cfg.Namespace != "" && !slices.Contains(names, s.cfg.Namespace) {
		names = append([]string{s.cfg.Namespace}, names...)
	}
	if slices.Contains(names, AllNamespaces) {
		return "any namespace"
	}
	return "namespace " + strings.Join(names, ", ")
}

// begin checks that the connection is up and returns ctx bounded by
// Config.Timeout.
func (s *Server) begin(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if !s.nc.IsConnected() {
		return nil, nil, fmt.Errorf("%w (connection %s): the memindex workers cannot be reached; check that the NATS server is up (memindex mcp --server / NATS_URL) and retry", ErrNotConnected, strings.ToLower(s.nc.Status().String()))
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	return ctx, cancel, nil
}
