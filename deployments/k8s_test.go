package deployments

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"go.yaml.in/yaml/v3"
)

// The parts of Kubernetes objects the tests read.
type (
	k8sMeta struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	}
	k8sObject struct {
		APIVersion string  `yaml:"apiVersion"`
		Kind       string  `yaml:"kind"`
		Metadata   k8sMeta `yaml:"metadata"`
		node       yaml.Node
	}
	statefulSet struct {
		Spec struct {
			ServiceName string `yaml:"serviceName"`
			Replicas    int    `yaml:"replicas"`
			Selector    struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
			Template struct {
				Metadata k8sMeta `yaml:"metadata"`
				Spec     podSpec `yaml:"spec"`
			} `yaml:"template"`
			VolumeClaimTemplates []struct {
				Metadata k8sMeta `yaml:"metadata"`
				Spec     struct {
					AccessModes      []string `yaml:"accessModes"`
					StorageClassName string   `yaml:"storageClassName"`
					Resources        struct {
						Requests map[string]string `yaml:"requests"`
					} `yaml:"resources"`
				} `yaml:"spec"`
			} `yaml:"volumeClaimTemplates"`
		} `yaml:"spec"`
	}
	podSpec struct {
		TerminationGracePeriodSeconds *int        `yaml:"terminationGracePeriodSeconds"`
		EnableServiceLinks            *bool       `yaml:"enableServiceLinks"`
		Containers                    []container `yaml:"containers"`
	}
	container struct {
		Name    string   `yaml:"name"`
		Image   string   `yaml:"image"`
		Command []string `yaml:"command"`
		Args    []string `yaml:"args"`
		Env     []struct {
			Name      string `yaml:"name"`
			Value     string `yaml:"value"`
			ValueFrom any    `yaml:"valueFrom"`
		} `yaml:"env"`
		EnvFrom []struct {
			ConfigMapRef *envSource `yaml:"configMapRef"`
			SecretRef    *envSource `yaml:"secretRef"`
		} `yaml:"envFrom"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		StartupProbe   *probe `yaml:"startupProbe"`
		ReadinessProbe *probe `yaml:"readinessProbe"`
		LivenessProbe  *probe `yaml:"livenessProbe"`
		Resources      struct {
			Requests map[string]string `yaml:"requests"`
			Limits   map[string]string `yaml:"limits"`
		} `yaml:"resources"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	}
	envSource struct {
		Name     string `yaml:"name"`
		Optional bool   `yaml:"optional"`
	}
	probe struct {
		HTTPGet *struct {
			Path string `yaml:"path"`
			Port any    `yaml:"port"`
		} `yaml:"httpGet"`
	}
	k8sService struct {
		Spec struct {
			ClusterIP string            `yaml:"clusterIP"`
			Selector  map[string]string `yaml:"selector"`
			Ports     []struct {
				Name       string `yaml:"name"`
				Port       int    `yaml:"port"`
				TargetPort any    `yaml:"targetPort"`
			} `yaml:"ports"`
		} `yaml:"spec"`
	}
	configMap struct {
		Data map[string]string `yaml:"data"`
	}
	pdb struct {
		Spec struct {
			MaxUnavailable any `yaml:"maxUnavailable"`
			Selector       struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
		} `yaml:"spec"`
	}
)

// k8sObjects reads every object of the kustomization in dir.
func k8sObjects(t testing.TB, dir string) []k8sObject {
	t.Helper()
	k := yamlDoc[struct {
		Resources []string `yaml:"resources"`
	}](t, filepath.Join(dir, "kustomization.yaml"))
	if len(k.Resources) == 0 {
		t.Fatalf("%s/kustomization.yaml lists no resources", dir)
	}
	var objs []k8sObject
	for _, r := range k.Resources {
		p := filepath.Join(dir, r)
		for _, n := range yamlDocs[yaml.Node](t, p) {
			var o k8sObject
			if err := n.Decode(&o); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
				t.Fatalf("%s: object without apiVersion, kind or metadata.name: %+v", p, o)
			}
			o.node = n
			objs = append(objs, o)
		}
	}
	return objs
}

// decode decodes the object o as a T.
func decode[T any](t testing.TB, o k8sObject) T {
	t.Helper()
	var v T
	if err := o.node.Decode(&v); err != nil {
		t.Fatalf("%s %s: %v", o.Kind, o.Metadata.Name, err)
	}
	return v
}

// only returns the one object of kind, failing unless there is exactly one.
func only(t testing.TB, objs []k8sObject, kind string) k8sObject {
	t.Helper()
	var found []k8sObject
	for _, o := range objs {
		if o.Kind == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d objects of kind %s, want 1", len(found), kind)
	}
	return found[0]
}

// selects reports whether selector matches labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// probePort resolves a probe's port (a number or a container port name).
func probePort(c container, p any) string {
	if name, ok := p.(string); ok {
		for _, cp := range c.Ports {
			if cp.Name == name {
				return strconv.Itoa(cp.ContainerPort)
			}
		}
		return "no container port named " + name
	}
	return fmt.Sprint(p)
}

// TestKubernetesWorkers checks the worker StatefulSet against what the
// worker reads: its command, settings (flags > the ConfigMap and env >
// the image's ENV), a block-storage volume at its data directory, probes on
// /readyz and /livez of its --http port, and a grace period longer than a
// drain; and that the headless Service, ConfigMap and PodDisruptionBudget
// fit it.
func TestKubernetesWorkers(t *testing.T) {
	objs := k8sObjects(t, "k8s")
	ssObj := only(t, objs, "StatefulSet")
	ss := decode[statefulSet](t, ssObj)
	pod := ss.Spec.Template
	if ss.Spec.Replicas != 2 {
		t.Errorf("replicas %d, want 2 workers", ss.Spec.Replicas)
	}
	if !selects(ss.Spec.Selector.MatchLabels, pod.Metadata.Labels) {
		t.Errorf("selector %v does not match the pod labels %v", ss.Spec.Selector.MatchLabels, pod.Metadata.Labels)
	}
	if len(pod.Spec.Containers) != 1 || !strings.Contains(pod.Spec.Containers[0].Image, "memindex") {
		t.Fatalf("containers %+v, want one memindex container", pod.Spec.Containers)
	}
	c := pod.Spec.Containers[0]
	if !slices.Equal(c.Command, []string{"memindex", "serve"}) {
		t.Errorf("command %q, want [memindex serve]", c.Command)
	}

	configMaps := map[string]configMap{}
	for _, o := range objs {
		if o.Kind == "ConfigMap" {
			configMaps[o.Metadata.Name] = decode[configMap](t, o)
		}
	}
	w := workerSettings{flags: flagValues(c.Args), env: parseDockerfile(t, dockerfilePath).runtimeEnv()}
	for _, ef := range c.EnvFrom {
		switch {
		case ef.ConfigMapRef != nil:
			cm, ok := configMaps[ef.ConfigMapRef.Name]
			if !ok && !ef.ConfigMapRef.Optional {
				t.Errorf("envFrom ConfigMap %q is not among the resources", ef.ConfigMapRef.Name)
			}
			maps.Copy(w.env, cm.Data)
		case ef.SecretRef != nil && !ef.SecretRef.Optional:
			t.Errorf("envFrom Secret %q is required; make it optional: the built-in embedder needs no key", ef.SecretRef.Name)
		}
	}
	for _, e := range c.Env {
		w.env[e.Name] = e.Value
		if e.ValueFrom != nil {
			w.env[e.Name] = "(from " + fmt.Sprint(e.ValueFrom) + ")"
		}
	}
	if g := w.setting("group", "MEMINDEX_GROUP", ""); g != "memindex" {
		t.Errorf("group %q, want memindex", g)
	}
	if url := w.setting("server", "NATS_URL", ""); !strings.HasPrefix(url, "nats://") {
		t.Errorf("NATS URL %q; want the NATS cluster's Service (without it the worker starts an embedded server)", url)
	}
	if pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks {
		t.Error("enableServiceLinks is not false: Services named nats or memindex would add NATS_* and MEMINDEX_* variables")
	}

	data := w.dataDir()
	var dataVolume string
	for _, m := range c.VolumeMounts {
		if m.MountPath == data {
			dataVolume = m.Name
		}
	}
	var claimed bool
	for _, vct := range ss.Spec.VolumeClaimTemplates {
		if vct.Metadata.Name != dataVolume {
			continue
		}
		claimed = true
		if !slices.Equal(vct.Spec.AccessModes, []string{"ReadWriteOnce"}) || vct.Spec.StorageClassName == "" ||
			vct.Spec.Resources.Requests["storage"] == "" {
			t.Errorf("volume claim %s: access %v, storage class %q, size %q; want ReadWriteOnce block storage with a size",
				dataVolume, vct.Spec.AccessModes, vct.Spec.StorageClassName, vct.Spec.Resources.Requests["storage"])
		}
	}
	if !claimed {
		t.Errorf("the data directory %s (mount %q) is not on a volumeClaimTemplate", data, dataVolume)
	}

	port := w.httpPort(t)
	for _, p := range []struct {
		name, path string
		probe      *probe
	}{
		{"readinessProbe", "/readyz", c.ReadinessProbe},
		{"livenessProbe", "/livez", c.LivenessProbe},
		{"startupProbe", "/livez", c.StartupProbe},
	} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s: none, want GET %s on port %s", p.name, p.path, port)
			continue
		}
		got := p.probe.HTTPGet
		if got.Path != p.path || probePort(c, got.Port) != port || port == "" {
			t.Errorf("%s: GET %s on port %s, want %s on the --http port %q", p.name, got.Path, probePort(c, got.Port), p.path, port)
		}
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || *g <= int(drain.Seconds()) {
		got := "unset (30 s)"
		if g != nil {
			got = strconv.Itoa(*g)
		}
		t.Errorf("terminationGracePeriodSeconds %s, want more than a drain (%v)", got, drain)
	}
	if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" || c.Resources.Limits["memory"] == "" {
		t.Errorf("resources %+v; want cpu and memory requests and a memory limit", c.Resources)
	}

	svcObj := only(t, objs, "Service")
	svc := decode[k8sService](t, svcObj)
	if svcObj.Metadata.Name != ss.Spec.ServiceName || svc.Spec.ClusterIP != "None" {
		t.Errorf("Service %s clusterIP %q; want the headless Service %q the StatefulSet names", svcObj.Metadata.Name, svc.Spec.ClusterIP, ss.Spec.ServiceName)
	}
	if !selects(svc.Spec.Selector, pod.Metadata.Labels) {
		t.Errorf("Service selector %v does not match the pod labels %v", svc.Spec.Selector, pod.Metadata.Labels)
	}
	if len(svc.Spec.Ports) == 0 || probePort(c, svc.Spec.Ports[0].TargetPort) != port {
		t.Errorf("Service ports %+v; want the --http port %s (/metrics)", svc.Spec.Ports, port)
	}
	budget := decode[pdb](t, only(t, objs, "PodDisruptionBudget"))
	if !selects(budget.Spec.Selector.MatchLabels, pod.Metadata.Labels) || budget.Spec.MaxUnavailable == nil {
		t.Errorf("PodDisruptionBudget %+v; want maxUnavailable for the worker pods", budget.Spec)
	}
}

// TestKustomizeBuilds renders the kustomization with kubectl, when it is
// installed, and checks every resource comes out in the namespace.
func TestKustomizeBuilds(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	out, err := exec.Command(kubectl, "kustomize", "k8s").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize k8s: %v\n%s", err, out)
	}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	var kinds []string
	for {
		var o struct {
			Kind     string `yaml:"kind"`
			Metadata struct {
				Namespace string `yaml:"namespace"`
			} `yaml:"metadata"`
		}
		if err := dec.Decode(&o); err != nil {
			break
		}
		if o.Metadata.Namespace != "memindex" {
			t.Errorf("%s in namespace %q, want memindex", o.Kind, o.Metadata.Namespace)
		}
		kinds = append(kinds, o.Kind)
	}
	slices.Sort(kinds)
	if want := []string{"ConfigMap", "PodDisruptionBudget", "Service", "StatefulSet"}; !slices.Equal(kinds, want) {
		t.Errorf("kustomize renders %v, want %v", kinds, want)
	}
}

// helmValues is the part of the nats chart's values the tests read.
type helmValues struct {
	Config struct {
		Cluster struct {
			Enabled  bool `yaml:"enabled"`
			Replicas int  `yaml:"replicas"`
		} `yaml:"cluster"`
		JetStream struct {
			Enabled   bool `yaml:"enabled"`
			FileStore struct {
				Enabled bool   `yaml:"enabled"`
				Dir     string `yaml:"dir"`
				PVC     struct {
					Enabled          bool   `yaml:"enabled"`
					Size             string `yaml:"size"`
					StorageClassName string `yaml:"storageClassName"`
				} `yaml:"pvc"`
			} `yaml:"fileStore"`
			Merge map[string]any `yaml:"merge"`
		} `yaml:"jetstream"`
		Merge map[string]any `yaml:"merge"`
	} `yaml:"config"`
	Container struct {
		Image struct {
			Tag string `yaml:"tag"`
		} `yaml:"image"`
	} `yaml:"container"`
}

// confValue writes a merge value as the chart does: "<< X >>" unquoted,
// other strings quoted, numbers and booleans as they are.
func confValue(v any) string {
	if s, ok := v.(string); ok {
		if raw, ok := strings.CutPrefix(s, "<<"); ok && strings.HasSuffix(raw, ">>") {
			return strings.TrimSpace(strings.TrimSuffix(raw, ">>"))
		}
		b, _ := json.Marshal(s)
		return string(b)
	}
	return fmt.Sprint(v)
}

// TestHelmValues checks the nats chart values: a 3-node cluster with
// JetStream on block-storage file storage, the nats-server version go.mod
// tests with, and merge blocks that nats-server accepts and that set
// sync_interval always and a max_payload the worker needs. The chart itself
// is not rendered here (no helm, no chart download); the merge blocks are
// written into a config the way the chart writes them and parsed.
func TestHelmValues(t *testing.T) {
	v := yamlDoc[helmValues](t, "k8s/nats-values.yaml")
	cfg := v.Config
	if !cfg.Cluster.Enabled || cfg.Cluster.Replicas != 3 {
		t.Errorf("cluster enabled %v replicas %d, want a 3-node cluster", cfg.Cluster.Enabled, cfg.Cluster.Replicas)
	}
	fs := cfg.JetStream.FileStore
	if !cfg.JetStream.Enabled || !fs.Enabled || !fs.PVC.Enabled || fs.PVC.Size == "" || fs.PVC.StorageClassName == "" || fs.Dir == "" {
		t.Errorf("jetstream %+v; want file storage on a persistent volume of a block-storage class", cfg.JetStream)
	}
	natsVersion := strings.TrimPrefix(depVersion(t, "github.com/nats-io/nats-server/v2"), "v")
	if want := natsVersion + "-alpine"; v.Container.Image.Tag != want {
		t.Errorf("container.image.tag %q, want %q: the server version go.mod tests the configs with", v.Container.Image.Tag, want)
	}

	var conf strings.Builder
	fmt.Fprintf(&conf, "server_name: nats-0\nlisten: 0.0.0.0:4222\n")
	for _, k := range slices.Sorted(maps.Keys(cfg.Merge)) {
		fmt.Fprintf(&conf, "%s: %s\n", k, confValue(cfg.Merge[k]))
	}
	fmt.Fprintf(&conf, "jetstream {\n  store_dir: %q\n", filepath.Join(t.TempDir(), fs.Dir))
	for _, k := range slices.Sorted(maps.Keys(cfg.JetStream.Merge)) {
		fmt.Fprintf(&conf, "  %s: %s\n", k, confValue(cfg.JetStream.Merge[k]))
	}
	fmt.Fprintf(&conf, "}\n")
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte(conf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("nats-server rejects the merge blocks: %v\n%s", err, conf.String())
	}
	if !opts.SyncAlways {
		t.Errorf("config.jetstream.merge does not set sync_interval: always\n%s", conf.String())
	}
	if opts.MaxPayload < minPayload {
		t.Errorf("max_payload %d, want at least %d (config.merge.max_payload)", opts.MaxPayload, minPayload)
	}
}
