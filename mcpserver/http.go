package mcpserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultHTTPPath is where HTTPConfig serves MCP when it names no path.
const DefaultHTTPPath = "/mcp"

// HTTPConfig configures MCP over streamable HTTP.
type HTTPConfig struct {
	// Addr is the address to listen on, e.g. 127.0.0.1:8765 (ListenAndServe).
	Addr string
	// Path is the URL path of the MCP endpoint (default DefaultHTTPPath).
	Path string
	// Token, when set, is the bearer token every request must carry
	// (Authorization: Bearer <token>); others get 401.
	Token string
	// Log receives the listener's errors and warnings (nil: discarded).
	Log *slog.Logger
}

// Handler returns the streamable HTTP handler of the server at cfg.Path:
// MCP over POST and GET, one session per client (idle sessions end after
// Config.SessionTimeout), behind the bearer token when cfg.Token is set.
// Requests through a loopback address with a foreign Host are refused
// (DNS rebinding protection, the SDK's default).
func (s *Server) Handler(cfg HTTPConfig) http.Handler {
	timeout := max(s.cfg.SessionTimeout, 0)
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv },
		&mcp.StreamableHTTPOptions{SessionTimeout: timeout})
	if cfg.Token != "" {
		want := []byte(cfg.Token)
		h = auth.RequireBearerToken(func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
			if subtle.ConstantTimeCompare([]byte(token), want) != 1 {
				return nil, fmt.Errorf("wrong bearer token: %w", auth.ErrInvalidToken)
			}
			return &auth.TokenInfo{}, nil
		}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	}
	path := cfg.Path
	if path == "" {
		path = DefaultHTTPPath
	}
	mux := http.NewServeMux()
	mux.Handle(path, h)
	return mux
}

// ListenAndServe serves Handler(cfg) on cfg.Addr until ctx ends, then
// shuts the listener down: requests (their contexts are ctx's) end, and
// Shutdown gives them 5 s. listening, when not
// nil, is called with the address once the listener is up. A listener on a
// non-loopback address without a token is served, with a warning: anyone
// who reaches it can read and change the memory.
func (s *Server) ListenAndServe(ctx context.Context, cfg HTTPConfig, listening func(addr string)) error {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("mcp http: %w", err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() && cfg.Token == "" {
		log.Warn("MCP over HTTP on a non-loopback address without a bearer token: anyone who reaches it can read and change this memory; set MEMINDEX_MCP_TOKEN", "addr", ln.Addr().String())
	}
	// Requests live in ctx: when it ends, the open event streams (GET) end
	// too, so Shutdown does not wait for them.
	srv := &http.Server{Handler: s.Handler(cfg), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }() // ended by the Shutdown below, waited for
	if listening != nil {
		listening(ln.Addr().String())
	}
	select {
	case err := <-done:
		return fmt.Errorf("mcp http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("mcp http: shut down: %w", err)
	}
	return nil
}
