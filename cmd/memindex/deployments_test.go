package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// plannedNames are settings the deployments in ../../deployments use before
// `memindex serve` registers them. Delete an entry when its flag lands; the
// test logs the entries that exist already.
var plannedNames = map[string]string{}

const deploymentsDir = "../../deployments"

// envName matches a worker setting's environment variable.
var envName = regexp.MustCompile(`\b(?:MEMINDEX|NATS)_[A-Z0-9_]*[A-Z0-9]\b`)

// usageFlag matches a flag line of flag.PrintDefaults.
var usageFlag = regexp.MustCompile(`(?m)^\s+-([A-Za-z0-9][A-Za-z0-9-]*)`)

// TestServeUsageHelperProcess prints `memindex serve -h` when run as the
// helper process of serveUsage; otherwise it does nothing.
func TestServeUsageHelperProcess(t *testing.T) {
	if os.Getenv("MEMINDEX_TEST_SERVE_USAGE") != "1" {
		t.Skip("helper process of TestDeploymentsUseRealSettings")
	}
	err := runServe(context.Background(), []string{"-h"})
	if !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "runServe -h: %v, want flag.ErrHelp\n", err)
		os.Exit(3)
	}
	os.Exit(0)
}

// serveUsage returns the flags `memindex serve` registers ("--name") and the
// environment variables its usage names, from `memindex serve -h` run in a
// child process (the flags are registered inside runServe, and usage goes to
// os.Stderr).
func serveUsage(t *testing.T) map[string]bool {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeUsageHelperProcess$")
	cmd.Env = append(os.Environ(), "MEMINDEX_TEST_SERVE_USAGE=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("memindex serve -h: %v\n%s", err, stderr.String())
	}
	usage := stderr.String()
	names := map[string]bool{}
	for _, m := range usageFlag.FindAllStringSubmatch(usage, -1) {
		names["--"+m[1]] = true
	}
	for _, n := range envName.FindAllString(usage, -1) {
		names[n] = true
	}
	// The parse must have found what serve surely has, or it found nothing.
	for _, n := range []string{"--data", "--server", "MEMINDEX_DATA", "NATS_URL"} {
		if !names[n] {
			t.Fatalf("serve usage has no %s; the usage parser is broken:\n%s", n, usage)
		}
	}
	return names
}

// deploymentSettings returns, per deployment file, the worker settings it
// names: every MEMINDEX_* and NATS_* variable in it, and the flags on the
// worker's command line (Dockerfile ENTRYPOINT/CMD, the compose worker
// services' command, the memindex containers' command and args, the unit's
// ExecStart). nats-server configs are left out: their variables are the
// server's.
func deploymentSettings(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	add := func(file string, names ...string) {
		for _, n := range names {
			if !slices.Contains(out[file], n) {
				out[file] = append(out[file], n)
			}
		}
	}
	flagsOf := func(args []string) []string {
		var fl []string
		for _, a := range args {
			if strings.HasPrefix(a, "-") {
				name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
				fl = append(fl, "--"+name)
			}
		}
		return fl
	}
	err := filepath.WalkDir(deploymentsDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(deploymentsDir, p)
		name := d.Name()
		isYAML := strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")
		if !isYAML && name != "Dockerfile" && !strings.HasSuffix(name, ".service") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = []string{}
		add(rel, envName.FindAllString(string(b), -1)...)
		switch {
		case name == "Dockerfile":
			stage := ""
			// Continuation lines joined: HEALTHCHECK ... \ CMD is not a CMD.
			joined := strings.ReplaceAll(string(b), "\\\n", " ")
			for _, l := range strings.Split(joined, "\n") {
				cmd, args, _ := strings.Cut(strings.TrimSpace(l), " ")
				switch strings.ToUpper(cmd) {
				case "FROM":
					stage = args
				case "ENTRYPOINT", "CMD":
					var exec []string
					if err := json.Unmarshal([]byte(args), &exec); err != nil {
						t.Errorf("%s: %s %s: want the exec form: %v", rel, cmd, args, err)
					}
					add(rel, flagsOf(exec)...)
				}
			}
			if stage == "" {
				t.Errorf("%s: no FROM", rel)
			}
		case strings.HasSuffix(name, ".service"):
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(l), "ExecStart="); ok {
					add(rel, flagsOf(strings.Fields(v))...)
				}
			}
		case isYAML:
			dec := yaml.NewDecoder(bytes.NewReader(b))
			for {
				var doc any
				err := dec.Decode(&doc)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("%s: %v", rel, err)
				}
				for _, args := range workerArgs(doc) {
					add(rel, flagsOf(args)...)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// workerArgs walks a YAML document for the command lines of memindex:
// containers (Kubernetes) and services (compose) whose image is memindex or
// that are built here, and returns their command, args and entrypoint.
func workerArgs(doc any) [][]string {
	var out [][]string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			img, _ := v["image"].(string)
			if _, built := v["build"]; built || strings.Contains(img, "memindex") {
				for _, k := range []string{"command", "args", "entrypoint"} {
					out = append(out, strings2(v[k]))
				}
			}
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(v[k])
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(doc)
	return out
}

// strings2 returns v as a list of strings: a YAML list, or a string split
// into words.
func strings2(v any) []string {
	switch v := v.(type) {
	case string:
		return strings.Fields(v)
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, fmt.Sprint(e))
		}
		return out
	}
	return nil
}

// TestDeploymentsUseRealSettings checks every flag and MEMINDEX_* / NATS_*
// variable the deployments (compose, Kubernetes, the unit, the Dockerfile)
// give a worker against what `memindex serve` registers, so that a renamed
// or mistyped setting fails here instead of being ignored in production.
// Names in plannedNames are allowed before they exist.
func TestDeploymentsUseRealSettings(t *testing.T) {
	real := serveUsage(t)
	files := deploymentSettings(t)
	for _, want := range []string{"Dockerfile", "docker-compose.yaml", "memindex.service", filepath.Join("k8s", "statefulset.yaml"), filepath.Join("k8s", "configmap.yaml")} {
		if len(files[want]) == 0 {
			t.Errorf("deployments/%s: no worker settings found; the extraction is broken or the file is missing", want)
		}
	}
	for _, file := range slices.Sorted(maps.Keys(files)) {
		t.Logf("deployments/%s: %v", file, files[file])
		for _, n := range files[file] {
			if real[n] {
				continue
			}
			if _, ok := plannedNames[n]; ok {
				continue
			}
			t.Errorf("deployments/%s uses %s, which `memindex serve` does not register (see memindex serve -h); fix the name, or add it to plannedNames if a flag is on its way", file, n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(plannedNames)) {
		if real[n] {
			t.Logf("%s is registered now; delete it from plannedNames", n)
		}
	}
}
