package doctor

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/consumer"
	"memindex/embedder"
	"memindex/store"
)

// Check outcomes. skip: not checked, because a check it depends on
// failed or there is nothing to check.
const (
	OK   = "ok"
	Warn = "warn"
	Fail = "fail"
	Skip = "skip"
)

// Check is one finding.
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	// Fix says what to do about a warning or failure.
	Fix string `json:"fix,omitempty"`
}

// Report is what Run found, as `memindex doctor --json` prints it.
type Report struct {
	Type   string  `json:"type"` // "doctor"
	OK     bool    `json:"ok"`   // no check failed
	Checks []Check `json:"checks"`
}

// Failed returns how many checks failed.
func (r Report) Failed() int {
	n := 0
	for _, c := range r.Checks {
		if c.Status == Fail {
			n++
		}
	}
	return n
}

// Config is what the checks need; cmd/memindex builds it from flags.
type Config struct {
	// Connect opens the connection to NATS.
	Connect func() (*nats.Conn, error)
	// OpTimeout bounds each request to the server; 0 means 5 s.
	OpTimeout time.Duration
	// Provider names the configured provider (the check is "embedder
	// <Provider>"); NewEmbedder builds it, without retries.
	Provider    string
	NewEmbedder func() (embedder.Embedder, embedder.Info, error)
	// EmbedTimeout bounds the one embedding; 0 or more than 15 s means 15 s.
	EmbedTimeout time.Duration
	// Data is the data directory whose shard files to check.
	Data string
	// Partitions is the partition count the event stream should have; 0:
	// the stream's own.
	Partitions int
	// Replicas is the replica count the streams should have; 0: not checked.
	Replicas int
	// LockData takes the data directory's lock (as a worker does); when it
	// fails, a live worker holds it and shards are checked read-only. Nil:
	// always read-only.
	LockData func(dir string) (release func(), err error)
	// RedactURL removes credentials from a server or provider URL;
	// RedactSecrets removes provider keys and NATS secrets from an error
	// message. Nil leaves the text as it is.
	RedactURL, RedactSecrets func(string) string
}

// Run runs every check in order; a check whose prerequisite failed is
// reported as skipped.
func Run(ctx context.Context, cfg Config) Report {
	if cfg.RedactURL == nil {
		cfg.RedactURL = func(s string) string { return s }
	}
	if cfg.LockData == nil {
		cfg.LockData = func(string) (func(), error) { return nil, errors.New("no lock") }
	}
	if cfg.RedactSecrets == nil {
		cfg.RedactSecrets = func(s string) string { return s }
	}
	d := &doctor{cfg: cfg}
	d.run(ctx)
	rep := Report{Type: "doctor", Checks: d.checks}
	rep.OK = rep.Failed() == 0
	return rep
}

// doctor gathers the checks of one run.
type doctor struct {
	cfg    Config
	checks []Check
}

func (d *doctor) add(name, status, detail, fix string) {
	d.checks = append(d.checks, Check{Name: name, Status: status, Detail: detail, Fix: fix})
}

func (d *doctor) run(ctx context.Context) {
	nc := d.checkNATS()
	var js jetstream.JetStream
	if nc != nil {
		defer nc.Close()
		js = d.checkJetStream(ctx, nc)
	}
	if js != nil {
		if p := d.checkStreams(ctx, js); p > 0 {
			d.checkConsumers(ctx, js, p)
		} else {
			d.add("consumers", Skip, "not checked: the event stream is missing or unreadable", "")
		}
	} else {
		if nc == nil {
			d.add("jetstream", Skip, "not checked: no NATS connection", "")
		}
		for _, n := range []string{"stream " + memindex.StreamEvents, "stream " + memindex.StreamDLQ, "consumers"} {
			d.add(n, Skip, "not checked: no JetStream connection", "")
		}
	}
	if nc != nil {
		d.checkSyncInterval(nc)
	} else {
		d.add("sync_interval", Skip, "not checked: no NATS connection", "")
	}
	d.checkShards(ctx)
	d.checkProvider(ctx)
}

func (d *doctor) opTimeout() time.Duration {
	if d.cfg.OpTimeout > 0 {
		return d.cfg.OpTimeout
	}
	return 5 * time.Second
}

// checkNATS connects; the failure says why in words a user can act on.
func (d *doctor) checkNATS() *nats.Conn {
	nc, err := d.cfg.Connect()
	if err != nil {
		fix := "check that the server is up and --server / NATS_URL names it"
		var unknownCA x509.UnknownAuthorityError
		var badHost x509.HostnameError
		switch {
		case errors.Is(err, nats.ErrNoServers):
			fix = "start the NATS server (or `memindex serve`, which embeds one), or set --server / NATS_URL to where it runs"
		case errors.Is(err, nats.ErrAuthorization):
			fix = "the server refused the credentials: check --creds / NATS_CREDS, --nkey, --user with NATS_PASSWORD, NATS_TOKEN or --context"
		case errors.Is(err, nats.ErrSecureConnWanted):
			fix = "the server does not offer TLS: enable TLS on the server, or drop --tlsca/--tlscert and tls:// if it is meant to run without"
		case errors.As(err, &unknownCA):
			fix = "set --tlsca / NATS_CA to the CA certificate that signed the server's certificate"
		case errors.As(err, &badHost):
			fix = "connect with the host name the server's certificate names, or reissue the certificate with this name"
		case errors.Is(err, fs.ErrNotExist):
			fix = "a credentials or TLS file does not exist: check the --creds, --nkey and --tls* paths"
		}
		d.add("nats", Fail, err.Error(), fix)
		return nil
	}
	tls := "plaintext"
	if _, err := nc.TLSConnectionState(); err == nil {
		tls = "TLS"
	}
	d.add("nats", OK, fmt.Sprintf("connected to %s (%s), server %s %s", d.cfg.RedactURL(nc.ConnectedUrlRedacted()), tls, nc.ConnectedServerName(), nc.ConnectedServerVersion()), "")
	return nc
}

func (d *doctor) checkJetStream(ctx context.Context, nc *nats.Conn) jetstream.JetStream {
	js, err := jetstream.New(nc)
	if err != nil {
		d.add("jetstream", Fail, err.Error(), "")
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, d.opTimeout())
	defer cancel()
	ai, err := js.AccountInfo(cctx)
	switch {
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		d.add("jetstream", Fail, err.Error(), "enable JetStream: `jetstream { store_dir: ... }` in the server config (and `jetstream: enabled` for the account); see deployments/")
		return nil
	case err != nil:
		d.add("jetstream", Fail, err.Error(), "check that this user may use the JetStream API ($JS.API.>)")
		return nil
	}
	d.add("jetstream", OK, fmt.Sprintf("enabled; account has %d streams, %d consumers, %s stored", ai.Streams, ai.Consumers, fmt.Sprintf("%.1f MiB", float64(ai.Store)/(1<<20))), "")
	return js
}

// checkStreams checks the event and dead-letter streams against what serve
// creates; it returns the event stream's partition count (0 when it is
// missing or unreadable).
func (d *doctor) checkStreams(ctx context.Context, js jetstream.JetStream) int {
	cctx, cancel := context.WithTimeout(ctx, d.opTimeout())
	defer cancel()
	name := "stream " + memindex.StreamEvents
	partitions := 0
	s, err := js.Stream(cctx, memindex.StreamEvents)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		d.add(name, Fail, "the event stream does not exist", "start `memindex serve` once: it creates the streams (or check that you are in the right account)")
	case err != nil:
		d.add(name, Fail, err.Error(), "check that this user may read stream info ($JS.API.STREAM.INFO.*)")
	default:
		info := s.CachedInfo()
		got, perr := consumer.StreamPartitions(info.Config)
		want := d.cfg.Partitions
		if want == 0 && perr == nil {
			want = got
		}
		switch {
		case perr != nil && want == 0:
			d.add(name, Fail, "cannot tell its partition count: "+perr.Error(), "the subject transform was changed by hand; set it back with `nats stream edit "+memindex.StreamEvents+"` or name --partition-count")
		case perr == nil && got != want:
			d.add(name, Fail, fmt.Sprintf("has %d partitions, --partition-count says %d", got, want), "partitions are fixed for the life of a stream: run serve and doctor with --partition-count "+strconv.Itoa(got))
			partitions = got
		default:
			partitions = want
			drift, derr := consumer.EventStreamDrift(info.Config, consumer.StreamConfig{Partitions: want, Replicas: d.wantReplicas(info)})
			d.streamResult(name, info, drift, derr, fmt.Sprintf("%d partitions, %d events", want, info.State.Msgs))
		}
	}
	name = "stream " + memindex.StreamDLQ
	s, err = js.Stream(cctx, memindex.StreamDLQ)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		d.add(name, Fail, "the dead-letter stream does not exist", "start `memindex serve` once: it creates the streams")
	case err != nil:
		d.add(name, Fail, err.Error(), "")
	default:
		info := s.CachedInfo()
		drift, derr := consumer.DLQStreamDrift(info.Config, consumer.StreamConfig{Partitions: max(partitions, 1), Replicas: d.wantReplicas(info)})
		detail := fmt.Sprintf("%d dead letters", info.State.Msgs)
		d.streamResult(name, info, drift, derr, detail)
	}
	return partitions
}

// wantReplicas is the replica count a stream should have: --stream-replicas,
// or with 0 the stream's own (not checked).
func (d *doctor) wantReplicas(info *jetstream.StreamInfo) int {
	if d.cfg.Replicas > 0 {
		return d.cfg.Replicas
	}
	return max(info.Config.Replicas, 1)
}

func (d *doctor) streamResult(name string, info *jetstream.StreamInfo, drift []consumer.Drift, err error, okDetail string) {
	if err != nil {
		d.add(name, Fail, err.Error(), "")
		return
	}
	if len(drift) == 0 {
		d.add(name, OK, okDetail+"; configuration as memindex sets it", "")
		return
	}
	parts := make([]string, len(drift))
	fixed := true // fields JetStream can change in place
	for i, dr := range drift {
		parts[i] = dr.String()
		if dr.Field == "retention" || dr.Field == "storage" {
			fixed = false
		}
	}
	fix := "`memindex serve` sets these back when it starts; or `nats stream edit " + info.Config.Name + "`"
	if !fixed {
		fix = "retention and storage cannot change in place: back the stream up (`nats stream backup`), delete it and let `memindex serve` create it, then republish"
	}
	d.add(name, Fail, "configuration drifted: "+strings.Join(parts, "; "), fix)
}

// checkConsumers checks the durable consumers of every partition: each
// holder of a partition (one per worker and shard generation, named
// <prefix>-p<N>) has its own, so they are found by listing the stream's
// consumers, not by one expected name.
func (d *doctor) checkConsumers(ctx context.Context, js jetstream.JetStream, partitions int) {
	const prefix = consumer.DefaultConsumerPrefix
	var missing []string
	var drifted []string
	var lag uint64
	maxLag, maxP := uint64(0), -1
	byPartition := map[int][]*jetstream.ConsumerInfo{}
	lctx, cancel := context.WithTimeout(ctx, d.opTimeout())
	defer cancel()
	s, err := js.Stream(lctx, memindex.StreamEvents)
	if err != nil {
		d.add("consumers", Fail, err.Error(), "check that this user may read stream info ($JS.API.STREAM.INFO.>)")
		return
	}
	list := s.ListConsumers(lctx)
	for info := range list.Info() {
		name := info.Name
		i := strings.LastIndex(name, "-p")
		if !strings.HasPrefix(name, prefix+"-") || i < 0 {
			continue
		}
		p, err := strconv.Atoi(name[i+2:])
		if err != nil || p < 0 || p >= partitions {
			continue
		}
		byPartition[p] = append(byPartition[p], info)
	}
	if err := list.Err(); err != nil {
		d.add("consumers", Fail, err.Error(), "check that this user may list consumers ($JS.API.CONSUMER.LIST.>)")
		return
	}
	for p := range partitions {
		infos := byPartition[p]
		if len(infos) == 0 {
			missing = append(missing, strconv.Itoa(p))
			continue
		}
		for _, info := range infos {
			for _, dr := range consumer.ConsumerDrift(info.Config, p) {
				drifted = append(drifted, fmt.Sprintf("%s %s", info.Name, dr))
			}
			lag += info.NumPending
			if info.NumPending > maxLag || maxP < 0 {
				maxLag, maxP = info.NumPending, p
			}
		}
	}
	name := "consumers " + prefix + "-p*"
	if len(drifted) > 0 {
		d.add(name, Fail, "configuration drifted: "+strings.Join(drifted, "; "), "a worker recreates its consumers when it starts: restart the worker that owns them (or delete them with `nats consumer rm`)")
	}
	switch {
	case len(missing) == partitions:
		d.add(name, Warn, fmt.Sprintf("none of the %d partitions has a consumer", partitions), "a worker creates its partitions' consumers when it starts: start `memindex serve` (with the same --data, whose generation names the consumers)")
	case len(missing) > 0:
		d.add(name, Warn, "no consumer for partitions "+strings.Join(missing, ","), "the worker that owns these partitions is not running, or has not started yet: start it")
	case len(drifted) == 0:
		d.add(name, OK, fmt.Sprintf("%d partitions; %d events waiting (most on partition %d: %d)", partitions, lag, maxP, maxLag), "")
	}
}

// checkSyncInterval reads the server's JetStream sync_interval from its
// varz, which only a system-account user may request.
func (d *doctor) checkSyncInterval(nc *nats.Conn) {
	const how = "check the server config: `jetstream { sync_interval: always }` (deployments/ use it); or run doctor with system-account credentials, or `nats server request variables` as a system user"
	msg, err := nc.Request("$SYS.REQ.SERVER.PING.VARZ", nil, min(d.opTimeout(), 2*time.Second))
	if err != nil {
		d.add("sync_interval", Warn, "unknown: the server's configuration is visible only to a system-account user", how)
		return
	}
	var resp struct {
		Server struct {
			Name string `json:"name"`
		} `json:"server"`
		Data struct {
			JetStream struct {
				Config *struct {
					SyncInterval time.Duration `json:"sync_interval"`
					SyncAlways   bool          `json:"sync_always"`
				} `json:"config"`
			} `json:"jetstream"`
		} `json:"data"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil || resp.Data.JetStream.Config == nil {
		d.add("sync_interval", Warn, "unknown: the server's varz has no JetStream configuration", how)
		return
	}
	jc := resp.Data.JetStream.Config
	switch {
	case jc.SyncAlways:
		d.add("sync_interval", OK, "always (server "+resp.Server.Name+"): every write is flushed to disk before it is acknowledged", "")
	default:
		every := jc.SyncInterval
		if every == 0 {
			every = 2 * time.Minute // nats-server's default
		}
		d.add("sync_interval", Warn, fmt.Sprintf("%s (server %s): acknowledged events written in the last %s can be lost if every replica's machine loses power", every, resp.Server.Name, every),
			"set `jetstream { sync_interval: always }` on a single server; a 3-replica cluster may keep the default if its nodes do not fail together")
	}
}

// checkShards checks every shard file under the data directory. With the
// directory's lock (no worker running) it runs SQLite's integrity_check and
// FTS5's integrity-check; beside a live worker, which holds the lock, only
// integrity_check, read-only, so doctor never writes to a live shard.
func (d *doctor) checkShards(ctx context.Context) {
	data := d.cfg.Data
	if st, err := os.Stat(data); err != nil || !st.IsDir() {
		d.add("shards", Skip, "no data directory "+data, "name the worker's data directory with --data or MEMINDEX_DATA to check its shard files")
		return
	}
	root := filepath.Join(data, "shards")
	files, _ := filepath.Glob(filepath.Join(root, "p*.db"))
	more, _ := filepath.Glob(filepath.Join(root, "*", "p*.db"))
	files = append(files, more...)
	sort.Strings(files)
	if len(files) == 0 {
		d.add("shards", Skip, "no shard files under "+root, "")
		return
	}
	cfg := store.CheckFileConfig{}
	mode := "integrity_check and FTS5 integrity-check"
	if release, err := d.cfg.LockData(data); err != nil {
		cfg.ReadOnly = true
		mode = "integrity_check only, read-only: a live worker holds the directory; stop it and run doctor again for the FTS5 check"
	} else {
		defer release()
	}
	bad := 0
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			d.add("shards", Fail, err.Error(), "")
			return
		}
		if err := store.CheckFile(ctx, f, cfg); err != nil {
			bad++
			rel, _ := filepath.Rel(data, f)
			p := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "p"), ".db")
			d.add("shard "+rel, Fail, err.Error(),
				"the stream is the source of truth: stop the worker, run `memindex rebuild --data "+data+" --partition "+p+"`, and start it again to rebuild the shard")
		}
	}
	if bad == 0 {
		d.add("shards", OK, fmt.Sprintf("%d shard files pass (%s)", len(files), mode), "")
	}
}

// checkProvider embeds one short text with the configured provider, once
// (no retries). Errors never carry the provider's key.
func (d *doctor) checkProvider(ctx context.Context) {
	name := "embedder " + d.cfg.Provider
	e, info, err := d.cfg.NewEmbedder()
	if err != nil {
		d.add(name, Fail, d.cfg.RedactSecrets(err.Error()), "see `memindex doctor -h` for --embedder, --base-url and the provider's API key variable")
		return
	}
	timeout := d.cfg.EmbedTimeout
	if timeout <= 0 || timeout > 15*time.Second {
		timeout = 15 * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	vecs, err := e.Embed(cctx, embedder.Request{Texts: []string{"memindex doctor"}, Kind: embedder.KindQuery})
	if err != nil {
		fix := "check that the provider is reachable from here (--base-url, proxy, firewall) and that its API key is valid"
		if info.Provider == "ollama" {
			fix = "start ollama (`ollama serve`) and pull the model, or set --base-url / OLLAMA_HOST"
		}
		d.add(name, Fail, d.cfg.RedactSecrets(err.Error()), fix)
		return
	}
	where := info.BaseURL
	if where == "" {
		where = "in-process"
	}
	d.add(name, OK, fmt.Sprintf("%s answered one embedding of %d dimensions in %s (model %s, %s)", info.Provider, len(vecs[0]), time.Since(start).Round(time.Millisecond), info.Model, d.cfg.RedactURL(where)), "")
}
