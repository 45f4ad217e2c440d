package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"memindex"
)

// Choice is a search's choice of backends by name, as the flags of
// `memindex search` give it (--backend, --fallback, --local): its errors
// name those flags.
type Choice struct {
	// Backend is one of BackendRemote, BackendLocal, BackendQMD,
	// BackendNone.
	Backend string
	// Fallback answers when Backend fails: BackendLocal, BackendQMD, or
	// "" or BackendNone for none.
	Fallback string
	// LocalPath is the data directory or shard file of a local backend or
	// fallback.
	LocalPath string
	// Opener opens a local backend or fallback: query.Local{} (this
	// package does not compile the shards' cgo SQLite in).
	Opener LocalOpener
	// Connect connects to NATS for a remote backend; the connection is
	// closed when the search is done.
	Connect func() (*nats.Conn, error)
}

// Config returns the configuration c chooses, without the remote
// connection (Search makes it).
func (c Choice) Config() (Config, error) {
	cfgFor := func(name string) (Config, error) {
		cfg := Config{Backend: name}
		switch name {
		case BackendLocal:
			if c.LocalPath == "" {
				return cfg, errors.New("--local PATH is required with local (a data directory or a shard file)")
			}
			cfg.Local.Path, cfg.Local.Opener = c.LocalPath, c.Opener
		case BackendRemote, BackendQMD, BackendNone:
		default:
			return cfg, fmt.Errorf("%q is not one of remote, local, qmd, none", name)
		}
		return cfg, nil
	}
	cfg, err := cfgFor(c.Backend)
	if err != nil {
		return Config{}, fmt.Errorf("--backend: %w", err)
	}
	if c.Fallback != "" && c.Fallback != BackendNone {
		if c.Fallback == c.Backend {
			return Config{}, fmt.Errorf("--fallback %s is the --backend too: choose another or none", c.Fallback)
		}
		fc, err := cfgFor(c.Fallback)
		if err != nil {
			return Config{}, fmt.Errorf("--fallback: %w", err)
		}
		cfg.Fallback = &fc
	}
	return cfg, nil
}

// Search answers req through Open with the backends c chooses. A remote
// backend that cannot connect falls back at once when a fallback is set
// (the response's Fallback says why; an error of the fallback too is
// wrapped with the connection's), and is that connection error otherwise.
func (c Choice) Search(ctx context.Context, req memindex.SearchRequest) (memindex.SearchResponse, error) {
	cfg, err := c.Config()
	if err != nil {
		return memindex.SearchResponse{}, err
	}
	var connErr error
	if c.Backend == BackendRemote {
		nc, err := c.Connect()
		switch {
		case err == nil:
			defer nc.Close()
			cfg.Remote.Conn = nc
		case cfg.Fallback == nil:
			return memindex.SearchResponse{}, err
		default:
			connErr, cfg = err, *cfg.Fallback
		}
	}
	m, err := Open(ctx, cfg)
	if err != nil {
		return memindex.SearchResponse{}, err
	}
	defer m.Close(context.WithoutCancel(ctx))
	resp, err := m.Search(ctx, req)
	if err == nil && connErr != nil {
		resp.Fallback = &memindex.FallbackInfo{From: BackendRemote, Reason: connErr.Error()}
	}
	if err != nil && connErr != nil {
		return resp, fmt.Errorf("%w; fallback %s: %w", connErr, cfg.Backend, err)
	}
	return resp, err
}
