package deployments

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
)

// clusterConfs are the nats-server configs of the 3-node cluster, node i at
// index i-1.
var clusterConfs = []string{"nats/cluster-1.conf", "nats/cluster-2.conf", "nats/cluster-3.conf"}

// minPayload is the max_payload a server needs for the largest event the
// worker accepts, with room for headers (the embedded server's setting).
const minPayload = memindex.MaxEventBytes + 64<<10

// TestNATSConfigsParse parses every nats-server config under deployments/
// with the server's own parser, and checks what every memindex server needs.
func TestNATSConfigsParse(t *testing.T) {
	confs := filesUnder(t, ".", "*.conf")
	for _, want := range append([]string{"nats-server.conf"}, clusterConfs...) {
		if !slices.Contains(confs, filepath.FromSlash(want)) {
			t.Errorf("%s is missing (found %v)", want, confs)
		}
	}
	for _, path := range confs {
		t.Run(path, func(t *testing.T) {
			setConfVariables(t, path)
			opts, err := server.ProcessConfigFile(path)
			if err != nil {
				t.Fatalf("nats-server rejects %s: %v", path, err)
			}
			if !opts.JetStream {
				t.Errorf("%s: JetStream is off; memindex's streams need a jetstream { } block", path)
			}
			if opts.MaxPayload < minPayload {
				t.Errorf("%s: max_payload %d, want at least %d (a 1 MiB event plus headers)", path, opts.MaxPayload, minPayload)
			}
		})
	}
}

// TestClusterConfigs checks the 3-node cluster configs: JetStream with
// fsync on every write, one cluster name, distinct server names, and routes
// to all three nodes; apart from server_name the three are the same.
func TestClusterConfigs(t *testing.T) {
	var first *server.Options
	for i, path := range clusterConfs {
		opts, err := server.ProcessConfigFile(path)
		if err != nil {
			t.Fatalf("nats-server rejects %s: %v", path, err)
		}
		node := "nats-" + strconv.Itoa(i+1)
		if opts.ServerName != node {
			t.Errorf("%s: server_name %q, want %q", path, opts.ServerName, node)
		}
		if !opts.JetStream || !opts.SyncAlways {
			t.Errorf("%s: jetstream %v, sync_interval always %v; want both", path, opts.JetStream, opts.SyncAlways)
		}
		if opts.StoreDir == "" || opts.JetStreamMaxStore <= 0 {
			t.Errorf("%s: store_dir %q, max_file_store %d; want both set", path, opts.StoreDir, opts.JetStreamMaxStore)
		}
		if opts.HTTPPort <= 0 {
			t.Errorf("%s: no monitoring port (http:); health checks need /healthz", path)
		}
		if opts.Cluster.Name == "" || opts.Cluster.Port <= 0 {
			t.Errorf("%s: cluster name %q port %d; want both", path, opts.Cluster.Name, opts.Cluster.Port)
		}
		var hosts []string
		for _, r := range opts.Routes {
			if r.Port() != strconv.Itoa(opts.Cluster.Port) {
				t.Errorf("%s: route %s: port %s, want the cluster port %d", path, r, r.Port(), opts.Cluster.Port)
			}
			hosts = append(hosts, r.Hostname())
		}
		if want := []string{"nats-1", "nats-2", "nats-3"}; !slices.Equal(hosts, want) {
			t.Errorf("%s: routes to %v, want %v", path, hosts, want)
		}
		if first == nil {
			first = opts
			continue
		}
		for _, c := range []struct {
			name      string
			got, want any
		}{
			{"cluster name", opts.Cluster.Name, first.Cluster.Name},
			{"store_dir", opts.StoreDir, first.StoreDir},
			{"max_file_store", opts.JetStreamMaxStore, first.JetStreamMaxStore},
			{"max_memory_store", opts.JetStreamMaxMemory, first.JetStreamMaxMemory},
			{"max_payload", opts.MaxPayload, first.MaxPayload},
			{"client port", opts.Port, first.Port},
			{"monitoring port", opts.HTTPPort, first.HTTPPort},
		} {
			if c.got != c.want {
				t.Errorf("%s: %s %v, but %s has %v", path, c.name, c.got, clusterConfs[0], c.want)
			}
		}
	}
}

// TestClusterConfigsFormAJetStreamCluster starts the three cluster configs
// in this process, each on loopback ports (the routes of the files are
// rewritten from nats-N:6222 to node N's port), and checks that they elect a
// JetStream meta leader and store a 3-replica stream like memindex's.
func TestClusterConfigsFormAJetStreamCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nats-servers")
	}
	ports := make(map[string]int) // route host → local cluster port
	for i := range clusterConfs {
		ports["nats-"+strconv.Itoa(i+1)] = freePort(t)
	}
	var servers []*server.Server
	for _, path := range clusterConfs {
		opts, err := server.ProcessConfigFile(path)
		if err != nil {
			t.Fatalf("nats-server rejects %s: %v", path, err)
		}
		opts.Host, opts.Port = "127.0.0.1", -1
		opts.HTTPHost, opts.HTTPPort = "127.0.0.1", -1
		opts.StoreDir = t.TempDir()
		opts.Cluster.Host, opts.Cluster.Port = "127.0.0.1", ports[opts.ServerName]
		var routes []*url.URL
		for _, r := range opts.Routes {
			p, ok := ports[r.Hostname()]
			if !ok {
				t.Fatalf("%s: route %s names no node of the cluster", path, r)
			}
			routes = append(routes, &url.URL{Scheme: r.Scheme, Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(p))})
		}
		opts.Routes = routes
		opts.NoLog, opts.NoSigs = true, true
		s, err := server.NewServer(opts)
		if err != nil {
			t.Fatalf("%s: new server: %v", path, err)
		}
		go s.Start()
		t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
		if !s.ReadyForConnections(10 * time.Second) {
			t.Fatalf("%s: not ready for connections within 10s", path)
		}
		servers = append(servers, s)
	}

	urls := ""
	for _, s := range servers {
		urls += s.ClientURL() + ","
	}
	nc, err := nats.Connect(urls)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Poll until the meta group has a leader and accepts a 3-replica stream.
	var stream jetstream.Stream
	for {
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		stream, err = js.CreateStream(actx, jetstream.StreamConfig{
			Name: "DEPLOYTEST", Subjects: []string{"deploytest.>"},
			Storage: jetstream.FileStorage, Replicas: 3, MaxMsgSize: memindex.MaxEventBytes,
		})
		acancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no 3-replica stream within 30s: %v (servers: %s)", err, clusterState(servers))
		}
		time.Sleep(100 * time.Millisecond) // polling interval, not a wait for a condition
	}
	big := make([]byte, memindex.MaxEventBytes)
	if _, err := js.Publish(ctx, "deploytest.a", big); err != nil {
		t.Fatalf("publish a %d-byte event: %v", len(big), err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Cluster == nil || len(info.Cluster.Replicas) != 2 || info.State.Msgs != 1 {
		t.Fatalf("stream cluster %+v, msgs %d; want a leader, 2 replicas and 1 message", info.Cluster, info.State.Msgs)
	}
	for _, s := range servers {
		if !s.JetStreamIsClustered() {
			t.Errorf("%s: JetStream is not clustered", s.Name())
		}
	}
}

// confVariable matches a value taken from a variable: `key: $NAME`.
var confVariable = regexp.MustCompile(`(?m)^[^#\n]*[:=]\s*\$([A-Za-z_][A-Za-z0-9_]*)`)

// setConfVariables sets every environment variable the config at path
// reads (`key: $NAME`, e.g. a password) that is not set, to a placeholder,
// so that the config parses as it does where the variables are set.
func setConfVariables(t *testing.T, path string) {
	t.Helper()
	for _, m := range confVariable.FindAllStringSubmatch(string(readFile(t, path)), -1) {
		if _, ok := os.LookupEnv(m[1]); !ok {
			t.Setenv(m[1], "placeholder-"+m[1])
		}
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func clusterState(servers []*server.Server) string {
	s := ""
	for _, srv := range servers {
		s += fmt.Sprintf("%s routes=%d leader=%v; ", srv.Name(), srv.NumRoutes(), srv.JetStreamIsLeader())
	}
	return s
}
