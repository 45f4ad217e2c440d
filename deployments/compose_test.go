package deployments

import (
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// composeFile is the part of a compose file the tests read.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Build       *composeBuild     `yaml:"build"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Healthcheck struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	StopGracePeriod string         `yaml:"stop_grace_period"`
	DependsOn       map[string]any `yaml:"depends_on"`
}

type composeBuild struct {
	Context    string `yaml:"context"`
	Dockerfile string `yaml:"dockerfile"`
}

// mounts maps each container path of s's volumes to its source.
func (s composeService) mounts() map[string]string {
	out := map[string]string{}
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 {
			out[parts[1]] = parts[0]
		}
	}
	return out
}

const composePath = "docker-compose.yaml"

// TestComposeNATSCluster checks the three nats services: each mounts its
// node's cluster config (the file a route names it in), keeps its store on
// a named volume at the config's store_dir, and is health-checked with
// JetStream on.
func TestComposeNATSCluster(t *testing.T) {
	c := yamlDoc[composeFile](t, composePath)
	natsVersion := strings.TrimPrefix(depVersion(t, "github.com/nats-io/nats-server/v2"), "v")
	for i, conf := range clusterConfs {
		name := "nats-" + strconv.Itoa(i+1)
		s, ok := c.Services[name]
		if !ok {
			t.Fatalf("%s: no service %s (the routes of %s name it)", composePath, name, conf)
		}
		if want := "nats:" + natsVersion + "-alpine"; s.Image != want {
			t.Errorf("%s: image %q, want %q: the server version go.mod tests the configs with", name, s.Image, want)
		}
		if len(s.Command) < 3 || s.Command[1] != "--config" {
			t.Fatalf("%s: command %q, want nats-server --config FILE", name, s.Command)
		}
		m := s.mounts()
		if src := m[s.Command[2]]; path.Clean(src) != path.Clean("./"+conf) {
			t.Errorf("%s: %s is mounted from %q, want ./%s", name, s.Command[2], src, conf)
		}
		if src := m["/data"]; src != name || !slices.Contains(slices.Collect(maps.Keys(c.Volumes)), src) {
			t.Errorf("%s: /data (store_dir) is mounted from %q, want the named volume %q", name, src, name)
		}
		if hc := strings.Join(s.Healthcheck.Test, " "); !strings.Contains(hc, ":8222/healthz?js-enabled-only=true") {
			t.Errorf("%s: healthcheck %q, want /healthz?js-enabled-only=true on the monitoring port", name, hc)
		}
	}
}

// TestComposeWorkers checks the worker services: two, built from the
// Dockerfile, in one group, on the cluster, each with its own data volume at
// the data directory, health-checked on /readyz, and given longer than a
// drain to stop.
func TestComposeWorkers(t *testing.T) {
	c := yamlDoc[composeFile](t, composePath)
	df := parseDockerfile(t, dockerfilePath)
	var workers []string
	for _, name := range slices.Sorted(maps.Keys(c.Services)) {
		if s := c.Services[name]; s.Build != nil || strings.HasPrefix(s.Image, "memindex") {
			workers = append(workers, name)
		}
	}
	if len(workers) != 2 {
		t.Fatalf("%s: worker services %v, want 2", composePath, workers)
	}
	volumes := map[string]string{}
	for _, name := range workers {
		s := c.Services[name]
		if s.Build == nil || path.Join("deployments", path.Base(s.Build.Dockerfile)) != path.Clean(s.Build.Dockerfile) ||
			path.Clean(s.Build.Context) != ".." {
			t.Errorf("%s: build %+v, want context .. and dockerfile deployments/Dockerfile", name, s.Build)
		}
		w := workerSettings{flags: flagValues(s.Command), env: df.runtimeEnv()}
		maps.Copy(w.env, s.Environment)
		if g := w.setting("group", "MEMINDEX_GROUP", ""); g != "memindex" {
			t.Errorf("%s: group %q, want memindex", name, g)
		}
		for _, node := range []string{"nats-1", "nats-2", "nats-3"} {
			if url := w.setting("server", "NATS_URL", ""); !strings.Contains(url, "nats://"+node+":4222") {
				t.Errorf("%s: NATS URL %q does not name %s", name, url, node)
			}
			if _, ok := s.DependsOn[node]; !ok {
				t.Errorf("%s: does not depend on %s", name, node)
			}
		}
		data := w.dataDir()
		src, ok := s.mounts()[data]
		if !ok || c.Volumes == nil || !slices.Contains(slices.Collect(maps.Keys(c.Volumes)), src) {
			t.Errorf("%s: data directory %s is not a named volume (mounts %v)", name, data, s.mounts())
		}
		if other, dup := volumes[src]; dup {
			t.Errorf("%s and %s share the data volume %q; a worker locks its data directory", name, other, src)
		}
		volumes[src] = name
		port := w.httpPort(t)
		if hc := strings.Join(s.Healthcheck.Test, " "); port == "" || !strings.Contains(hc, ":"+port+"/readyz") {
			t.Errorf("%s: healthcheck %q, want /readyz on the --http port %q", name, hc, port)
		}
		if d := duration(t, name+" stop_grace_period", s.StopGracePeriod); d <= drain {
			t.Errorf("%s: stop_grace_period %v, want longer than a drain (%v)", name, d, drain)
		}
	}
}
