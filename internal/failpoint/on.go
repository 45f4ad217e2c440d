//go:build failpoints

package failpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Enabled is true: this build has failpoints (build tag failpoints).
const Enabled = true

// spec is one armed point.
type spec struct {
	at    int           // the hit that fires, 1-based
	sleep time.Duration // 0: kill
	hits  int
}

var (
	once  sync.Once
	mu    sync.Mutex
	armed map[string]*spec
)

// Inject counts a hit of point and, when the point is armed for this hit,
// kills the process or stalls it (see the package comment).
func Inject(point string) {
	once.Do(func() {
		var err error
		if armed, err = parse(os.Getenv(EnvVar)); err != nil {
			panic(err)
		}
	})
	mu.Lock()
	s := armed[point]
	if s == nil {
		mu.Unlock()
		return
	}
	s.hits++
	hit := s.hits
	mu.Unlock()
	if hit < s.at {
		return
	}
	if s.sleep > 0 {
		fmt.Fprintf(os.Stderr, "failpoint: %s hit %d: sleep %s\n", point, hit, s.sleep)
		time.Sleep(s.sleep)
		return
	}
	if hit > s.at {
		return
	}
	fmt.Fprintf(os.Stderr, "failpoint: %s hit %d: SIGKILL\n", point, hit)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal ends the process; nothing after the point runs
}

// parse reads a MEMINDEX_FAILPOINT value into the armed points; "" arms
// none.
func parse(v string) (map[string]*spec, error) {
	out := map[string]*spec{}
	if strings.TrimSpace(v) == "" {
		return out, nil
	}
	for _, item := range strings.Split(v, ",") {
		parts := strings.Split(strings.TrimSpace(item), ":")
		if len(parts) < 2 || len(parts) > 3 {
			return nil, fmt.Errorf("%s=%q: item %q: want point:n or point:n:action", EnvVar, v, item)
		}
		switch parts[0] {
		case AfterEmbed, MidTx, AfterCommit:
		default:
			return nil, fmt.Errorf("%s=%q: unknown point %q: want %s, %s or %s", EnvVar, v, parts[0], AfterEmbed, MidTx, AfterCommit)
		}
		n, err := strconv.Atoi(parts[1])
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s=%q: point %s: hit %q: want a number from 1", EnvVar, v, parts[0], parts[1])
		}
		s := &spec{at: n}
		if len(parts) == 3 {
			switch a := parts[2]; {
			case a == "kill":
			case strings.HasPrefix(a, "sleep="):
				d, err := time.ParseDuration(strings.TrimPrefix(a, "sleep="))
				if err != nil || d <= 0 {
					return nil, fmt.Errorf("%s=%q: point %s: action %q: want sleep=DURATION like sleep=2s", EnvVar, v, parts[0], a)
				}
				s.sleep = d
			default:
				return nil, fmt.Errorf("%s=%q: point %s: action %q: want kill or sleep=DURATION", EnvVar, v, parts[0], a)
			}
		}
		out[parts[0]] = s
	}
	return out, nil
}
