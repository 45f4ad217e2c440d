package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/consumer"
	"memindex/embedder"
	"memindex/internal/natsconn"
	"memindex/internal/secret"
	"memindex/node"
	"memindex/store"
)

// Doctor check outcomes. skip: not checked, because a check it depends on
// failed or there is nothing to check.
const (
	checkOK   = "ok"
	checkWarn = "warn"
	checkFail = "fail"
	checkSkip = "skip"
)

// check is one finding of `memindex doctor`.
type check struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	// Fix says what to do about a warning or failure.
	Fix string `json:"fix,omitempty"`
}

// doctorReport is the --json output of doctor.
type doctorReport struct {
	Type   string  `json:"type"`
	OK     bool    `json:"ok"`
	Checks []check `json:"checks"`
}

type doctorConfig struct {
	conn       connFlags
	provider   providerFlags
	data       string
	partitions int
	replicas   int
}

// doctor gathers the checks of one run.
type doctor struct {
	cfg    doctorConfig
	checks []check
}

func (d *doctor) add(name, status, detail, fix string) {
	d.checks = append(d.checks, check{Name: name, Status: status, Detail: detail, Fix: fix})
}

func runDoctor(ctx context.Context, args []string, stdout io.Writer) error {
	var c doctorConfig
	fl := newFlagSet("doctor", "[--data DIR] [connection and embedder flags] [--json]")
	c.conn.register(fl, nats.DefaultURL)
	c.provider.register(fl, node.DefaultConfig().Embedder)
	fl.StringVar(&c.data, "data", env("MEMINDEX_DATA", "./data"), "data directory whose shard files to check (MEMINDEX_DATA)")
	fl.IntVar(&c.partitions, "partition-count", envInt("MEMINDEX_PARTITION_COUNT", 0), "partitions the stream should have; 0: the stream's own (MEMINDEX_PARTITION_COUNT)")
	fl.IntVar(&c.replicas, "stream-replicas", envInt("MEMINDEX_STREAM_REPLICAS", 0), "replicas the streams should have, as serve's --stream-replicas; 0: do not check (MEMINDEX_STREAM_REPLICAS)")
	asJSON := fl.Bool("json", false, "print the checks as JSON")
	if _, err := parseArgs(fl, args); err != nil {
		return err
	}
	d := &doctor{cfg: c}
	d.run(ctx)
	rep := doctorReport{Type: "doctor", OK: true, Checks: d.checks}
	failed := 0
	for _, ch := range d.checks {
		if ch.Status == checkFail {
			failed++
		}
	}
	rep.OK = failed == 0
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printChecks(stdout, d.checks)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d checks failed", failed, len(d.checks))
	}
	return nil
}

func printChecks(w io.Writer, checks []check) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, ch := range checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", strings.ToUpper(ch.Status), ch.Name, ch.Detail)
		if ch.Fix != "" {
			fmt.Fprintf(tw, "\t\t→ %s\n", ch.Fix)
		}
	}
	tw.Flush()
}

// run runs every check in order; a check whose prerequisite failed is
// reported as skipped.
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
			d.add("consumers", checkSkip, "not checked: the event stream is missing or unreadable", "")
		}
	} else {
		if nc == nil {
			d.add("jetstream", checkSkip, "not checked: no NATS connection", "")
		}
		for _, n := range []string{"stream " + memindex.StreamEvents, "stream " + memindex.StreamDLQ, "consumers"} {
			d.add(n, checkSkip, "not checked: no JetStream connection", "")
		}
	}
	if nc != nil {
		d.checkSyncInterval(nc)
	} else {
		d.add("sync_interval", checkSkip, "not checked: no NATS connection", "")
	}
	d.checkShards(ctx)
	d.checkProvider(ctx)
}

func (d *doctor) opTimeout() time.Duration {
	if d.cfg.conn.Timeout > 0 {
		return d.cfg.conn.Timeout
	}
	return 5 * time.Second
}

// checkNATS connects; the failure says why in words a user can act on.
func (d *doctor) checkNATS() *nats.Conn {
	conn := d.cfg.conn
	nc, err := conn.Connect("memindex doctor")
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
		d.add("nats", checkFail, err.Error(), fix)
		return nil
	}
	tls := "plaintext"
	if _, err := nc.TLSConnectionState(); err == nil {
		tls = "TLS"
	}
	d.add("nats", checkOK, fmt.Sprintf("connected to %s (%s), server %s %s", natsconn.RedactURL(nc.ConnectedUrlRedacted()), tls, nc.ConnectedServerName(), nc.ConnectedServerVersion()), "")
	return nc
}

func (d *doctor) checkJetStream(ctx context.Context, nc *nats.Conn) jetstream.JetStream {
	js, err := jetstream.New(nc)
	if err != nil {
		d.add("jetstream", checkFail, err.Error(), "")
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, d.opTimeout())
	defer cancel()
	ai, err := js.AccountInfo(cctx)
	switch {
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		d.add("jetstream", checkFail, err.Error(), "enable JetStream: `jetstream { store_dir: ... }` in the server config (and `jetstream: enabled` for the account); see deployments/")
		return nil
	case err != nil:
		d.add("jetstream", checkFail, err.Error(), "check that this user may use the JetStream API ($JS.API.>)")
		return nil
	}
	d.add("jetstream", checkOK, fmt.Sprintf("enabled; account has %d streams, %d consumers, %s stored", ai.Streams, ai.Consumers, byteSize(int64(ai.Store))), "")
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
		d.add(name, checkFail, "the event stream does not exist", "start `memindex serve` once: it creates the streams (or check that you are in the right account)")
	case err != nil:
		d.add(name, checkFail, err.Error(), "check that this user may read stream info ($JS.API.STREAM.INFO.*)")
	default:
		info := s.CachedInfo()
		got, perr := consumer.StreamPartitions(info.Config)
		want := d.cfg.partitions
		if want == 0 && perr == nil {
			want = got
		}
		switch {
		case perr != nil && want == 0:
			d.add(name, checkFail, "cannot tell its partition count: "+perr.Error(), "the subject transform was changed by hand; set it back with `nats stream edit "+memindex.StreamEvents+"` or name --partition-count")
		case perr == nil && got != want:
			d.add(name, checkFail, fmt.Sprintf("has %d partitions, --partition-count says %d", got, want), "partitions are fixed for the life of a stream: run serve and doctor with --partition-count "+strconv.Itoa(got))
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
		d.add(name, checkFail, "the dead-letter stream does not exist", "start `memindex serve` once: it creates the streams")
	case err != nil:
		d.add(name, checkFail, err.Error(), "")
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
	if d.cfg.replicas > 0 {
		return d.cfg.replicas
	}
	return max(info.Config.Replicas, 1)
}

func (d *doctor) streamResult(name string, info *jetstream.StreamInfo, drift []consumer.Drift, err error, okDetail string) {
	if err != nil {
		d.add(name, checkFail, err.Error(), "")
		return
	}
	if len(drift) == 0 {
		d.add(name, checkOK, okDetail+"; configuration as memindex sets it", "")
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
	d.add(name, checkFail, "configuration drifted: "+strings.Join(parts, "; "), fix)
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
		d.add("consumers", checkFail, err.Error(), "check that this user may read stream info ($JS.API.STREAM.INFO.>)")
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
		d.add("consumers", checkFail, err.Error(), "check that this user may list consumers ($JS.API.CONSUMER.LIST.>)")
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
		d.add(name, checkFail, "configuration drifted: "+strings.Join(drifted, "; "), "a worker recreates its consumers when it starts: restart the worker that owns them (or delete them with `nats consumer rm`)")
	}
	switch {
	case len(missing) == partitions:
		d.add(name, checkWarn, fmt.Sprintf("none of the %d partitions has a consumer", partitions), "a worker creates its partitions' consumers when it starts: start `memindex serve` (with the same --data, whose generation names the consumers)")
	case len(missing) > 0:
		d.add(name, checkWarn, "no consumer for partitions "+strings.Join(missing, ","), "the worker that owns these partitions is not running, or has not started yet: start it")
	case len(drifted) == 0:
		d.add(name, checkOK, fmt.Sprintf("%d partitions; %d events waiting (most on partition %d: %d)", partitions, lag, maxP, maxLag), "")
	}
}

// checkSyncInterval reads the server's JetStream sync_interval from its
// varz, which only a system-account user may request.
func (d *doctor) checkSyncInterval(nc *nats.Conn) {
	const how = "check the server config: `jetstream { sync_interval: always }` (deployments/ use it); or run doctor with system-account credentials, or `nats server request variables` as a system user"
	msg, err := nc.Request("$SYS.REQ.SERVER.PING.VARZ", nil, min(d.opTimeout(), 2*time.Second))
	if err != nil {
		d.add("sync_interval", checkWarn, "unknown: the server's configuration is visible only to a system-account user", how)
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
		d.add("sync_interval", checkWarn, "unknown: the server's varz has no JetStream configuration", how)
		return
	}
	jc := resp.Data.JetStream.Config
	switch {
	case jc.SyncAlways:
		d.add("sync_interval", checkOK, "always (server "+resp.Server.Name+"): every write is flushed to disk before it is acknowledged", "")
	default:
		every := jc.SyncInterval
		if every == 0 {
			every = 2 * time.Minute // nats-server's default
		}
		d.add("sync_interval", checkWarn, fmt.Sprintf("%s (server %s): acknowledged events written in the last %s can be lost if every replica's machine loses power", every, resp.Server.Name, every),
			"set `jetstream { sync_interval: always }` on a single server; a 3-replica cluster may keep the default if its nodes do not fail together")
	}
}

// checkShards checks every shard file under the data directory. With the
// directory's lock (no worker running) it runs SQLite's integrity_check and
// FTS5's integrity-check; beside a live worker, which holds the lock, only
// integrity_check, read-only, so doctor never writes to a live shard.
func (d *doctor) checkShards(ctx context.Context) {
	data := d.cfg.data
	if st, err := os.Stat(data); err != nil || !st.IsDir() {
		d.add("shards", checkSkip, "no data directory "+data, "name the worker's data directory with --data or MEMINDEX_DATA to check its shard files")
		return
	}
	root := filepath.Join(data, "shards")
	files, _ := filepath.Glob(filepath.Join(root, "p*.db"))
	more, _ := filepath.Glob(filepath.Join(root, "*", "p*.db"))
	files = append(files, more...)
	sort.Strings(files)
	if len(files) == 0 {
		d.add("shards", checkSkip, "no shard files under "+root, "")
		return
	}
	cfg := store.CheckFileConfig{}
	mode := "integrity_check and FTS5 integrity-check"
	if release, err := node.LockData(data); err != nil {
		cfg.ReadOnly = true
		mode = "integrity_check only, read-only: a live worker holds the directory; stop it and run doctor again for the FTS5 check"
	} else {
		defer release()
	}
	bad := 0
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			d.add("shards", checkFail, err.Error(), "")
			return
		}
		if err := store.CheckFile(ctx, f, cfg); err != nil {
			bad++
			rel, _ := filepath.Rel(data, f)
			p := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "p"), ".db")
			d.add("shard "+rel, checkFail, err.Error(),
				"the stream is the source of truth: stop the worker, run `memindex rebuild --data "+data+" --partition "+p+"`, and start it again to rebuild the shard")
		}
	}
	if bad == 0 {
		d.add("shards", checkOK, fmt.Sprintf("%d shard files pass (%s)", len(files), mode), "")
	}
}

// checkProvider embeds one short text with the configured provider, once
// (no retries). Errors never carry the provider's key.
func (d *doctor) checkProvider(ctx context.Context) {
	p := d.cfg.provider.config()
	p.Retries = -1
	name := "embedder " + p.Name
	e, err := embedder.NewProvider(p)
	if err != nil {
		d.add(name, checkFail, redactKeys(err.Error()), "see `memindex doctor -h` for --embedder, --base-url and the provider's API key variable")
		return
	}
	info := e.Info()
	timeout := p.Timeout
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
		d.add(name, checkFail, redactKeys(err.Error()), fix)
		return
	}
	where := info.BaseURL
	if where == "" {
		where = "in-process"
	}
	d.add(name, checkOK, fmt.Sprintf("%s answered one embedding of %d dimensions in %s (model %s, %s)", info.Provider, len(vecs[0]), time.Since(start).Round(time.Millisecond), info.Model, natsconn.RedactURL(where)), "")
}

// redactKeys removes every provider key and NATS secret of the environment
// from s.
func redactKeys(s string) string {
	for _, names := range embedder.KeyEnv {
		for _, n := range names {
			if v, _ := secret.Get(n); len(v) >= 4 {
				s = strings.ReplaceAll(s, v, redacted)
			}
		}
	}
	for _, n := range []string{"NATS_PASSWORD", "NATS_TOKEN"} {
		if v, _ := secret.Get(n); len(v) >= 4 {
			s = strings.ReplaceAll(s, v, redacted)
		}
	}
	return s
}
