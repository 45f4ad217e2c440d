package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// probeTimeout bounds one readiness check (it asks the server for each
// consumer's lag).
const probeTimeout = 3 * time.Second

// httpOff reports whether addr turns the HTTP endpoints off.
func httpOff(addr string) bool { return addr == "" || addr == "off" }

// startHTTP starts the metrics registry and, unless Config.HTTP is off, the HTTP
// server of /metrics, /livez and /readyz. It starts before the rest of the
// node so that /livez answers during a long start and /readyz says
// "starting"; the server stops last, so /readyz says "draining" during
// shutdown. A default address that is taken is logged and skipped; one
// that was asked for (Config.HTTPRequired) is an error.
func (n *Node) startHTTP() error {
	n.metrics = newNodeMetrics(newStatusCollector(n))
	if httpOff(n.cfg.HTTP) {
		return nil
	}
	ln, err := net.Listen("tcp", n.cfg.HTTP)
	if err != nil {
		if !n.cfg.HTTPRequired {
			n.log.Warn("HTTP endpoints (/metrics, /livez, /readyz) not started: the default address is taken; set --http", "addr", n.cfg.HTTP, "err", err)
			return nil
		}
		return fmt.Errorf("--http %q: %w (set another address, or --http off)", n.cfg.HTTP, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(n.metrics.reg, promhttp.HandlerOpts{
		ErrorLog:          slog.NewLogLogger(n.log.Handler(), slog.LevelWarn),
		Registry:          n.metrics.reg,
		EnableOpenMetrics: true,
		Timeout:           10 * time.Second,
	}))
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", n.handleReadyz)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	n.httpAddr = ln.Addr().String()
	done := make(chan struct{})
	go func() { // owned by the closer below, which waits for it
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("HTTP endpoints", "addr", n.httpAddr, "err", err)
		}
	}()
	n.closers = append(n.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	n.log.Info("HTTP endpoints", "addr", n.httpAddr, "paths", "/metrics /livez /readyz")
	return nil
}

// readyBody is the JSON answer of /readyz.
type readyBody struct {
	Ready   bool     `json:"ready"`
	Worker  string   `json:"worker"`
	Reasons []string `json:"reasons,omitempty"`
}

// handleReadyz answers 200 when the node is ready to serve and ingest, or
// 503 with the reasons it is not.
func (n *Node) handleReadyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), probeTimeout)
	defer cancel()
	reasons := n.notReady(ctx)
	body := readyBody{Ready: len(reasons) == 0, Worker: n.cfg.Worker, Reasons: reasons}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !body.Ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(body)
}

// notReady returns, in words, why the node is not ready; none when it is:
// started, not draining, connected to NATS, consuming, and every partition
// bound, not rebuilding, within the lag budget (--ready-lag), committing
// its batches and without a stream gap (consumer/gap.go).
func (n *Node) notReady(ctx context.Context) []string {
	if !n.started.Load() {
		return []string{"starting"}
	}
	var reasons []string
	if n.draining.Load() {
		reasons = append(reasons, "draining: the worker is shutting down")
	}
	if st := n.nc.Status(); st != nats.CONNECTED {
		return append(reasons, "NATS connection is "+st.String())
	}
	n.genMu.RLock()
	serving := n.serving
	n.genMu.RUnlock()
	consuming := serving.worker.Ready()
	if !consuming {
		reasons = append(reasons, "the worker is not consuming")
	}
	for _, p := range serving.worker.Readiness(ctx) {
		var problems []string
		if p.Err != nil {
			problems = append(problems, p.Err.Error())
		}
		if consuming && !p.Bound {
			problems = append(problems, "consumer not bound (retrying after an error)")
		}
		if p.Gap != "" {
			problems = append(problems, "stream gap: "+p.Gap)
		}
		if p.ApplyErr != "" {
			problems = append(problems, "batches fail to commit (retried, not acknowledged): "+p.ApplyErr)
		}
		if p.Rebuilding() {
			problems = append(problems, fmt.Sprintf("rebuilding from the stream (applied sequence %d of %d)", p.Applied, p.RebuildTarget))
		}
		if p.Pending > uint64(n.cfg.ReadyLag) {
			problems = append(problems, fmt.Sprintf("%d events pending, over the --ready-lag budget of %d", p.Pending, n.cfg.ReadyLag))
		}
		if len(problems) > 0 {
			reasons = append(reasons, fmt.Sprintf("partition %d: %s", p.Partition, strings.Join(problems, "; ")))
		}
	}
	return reasons
}
