//go:build failpoints

package failpoint

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]spec
		err      string
	}{
		{name: "empty", in: "", want: map[string]spec{}},
		{name: "kill", in: "after-embed:3", want: map[string]spec{AfterEmbed: {at: 3}}},
		{name: "kill explicit and sleep", in: "mid-tx:1:kill, after-commit:2:sleep=1s",
			want: map[string]spec{MidTx: {at: 1}, AfterCommit: {at: 2, sleep: time.Second}}},
		{name: "unknown point", in: "before-lunch:1", err: `unknown point "before-lunch"`},
		{name: "no count", in: "mid-tx", err: "want point:n"},
		{name: "zero count", in: "mid-tx:0", err: "want a number from 1"},
		{name: "bad action", in: "mid-tx:1:explode", err: "want kill or sleep=DURATION"},
		{name: "bad sleep", in: "mid-tx:1:sleep=soon", err: "want sleep=DURATION"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parse(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), EnvVar) {
					t.Fatalf("parse(%q) error = %v, want one naming %s and containing %q", tc.in, err, EnvVar, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse(%q): %v", tc.in, err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("parse(%q) = %d points, want %d", tc.in, len(got), len(tc.want))
			}
			for k, w := range tc.want {
				if g := got[k]; g == nil || g.at != w.at || g.sleep != w.sleep {
					t.Fatalf("parse(%q)[%s] = %+v, want %+v", tc.in, k, g, w)
				}
			}
		})
	}
}

// TestInjectKillsAtTheArmedHit runs this test binary as a child that hits
// mid-tx five times with the point armed for the third hit: the child must
// die of SIGKILL having passed two hits and not the third.
func TestInjectKillsAtTheArmedHit(t *testing.T) {
	if os.Getenv("FAILPOINT_CHILD") == "1" {
		for i := 1; i <= 5; i++ {
			Inject(AfterEmbed) // not armed: never fires
			Inject(MidTx)
			os.Stdout.WriteString("passed " + string(rune('0'+i)) + "\n")
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestInjectKillsAtTheArmedHit$")
	cmd.Env = append(os.Environ(), "FAILPOINT_CHILD=1", EnvVar+"=mid-tx:3")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child: err %v, want it killed\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child exit %v, want killed by SIGKILL\nstderr:\n%s", ws, errb.String())
	}
	if got := out.String(); !strings.Contains(got, "passed 2") || strings.Contains(got, "passed 3") {
		t.Fatalf("child stdout %q: want hits 1 and 2 passed and the 3rd killed", got)
	}
	if !strings.Contains(errb.String(), "failpoint: mid-tx hit 3: SIGKILL") {
		t.Fatalf("child stderr %q: want the failpoint line", errb.String())
	}
}

// TestInjectSleepsFromTheArmedHit checks the sleep action stalls every hit
// from the armed one on, and reports each.
func TestInjectSleepsFromTheArmedHit(t *testing.T) {
	if os.Getenv("FAILPOINT_CHILD") == "1" {
		for range 3 {
			Inject(AfterCommit)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestInjectSleepsFromTheArmedHit$")
	cmd.Env = append(os.Environ(), "FAILPOINT_CHILD=1", EnvVar+"=after-commit:2:sleep=1ms")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, want := range []string{"after-commit hit 2: sleep 1ms", "after-commit hit 3: sleep 1ms"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("child output %q: want %q", out, want)
		}
	}
	if strings.Contains(string(out), "hit 1") {
		t.Fatalf("child output %q: hit 1 fired, want it passed", out)
	}
}
