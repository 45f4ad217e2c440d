package embedder

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// observations records what a RequestObserver is told.
type observations struct {
	mu  sync.Mutex
	got []string // provider/code
}

func (o *observations) observe(provider, code string, took time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if took <= 0 {
		code += " (no duration)"
	}
	o.got = append(o.got, provider+"/"+code)
}

func (o *observations) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.got)
}

// TestObserveRequests checks that every HTTP request of a provider, retries
// included, is reported with the provider's name and the answer's status,
// and a request that got no answer in time as a timeout.
func TestObserveRequests(t *testing.T) {
	for _, a := range testAPIs {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, a, func(n int, _ []string, w http.ResponseWriter, r *http.Request) bool {
				switch n {
				case 0:
					a.fail(w, http.StatusTooManyRequests, "rate limit reached")
					return true
				case 1:
					<-r.Context().Done() // hang until the client gives up
					return true
				}
				return false
			})
			var o observations
			hc := fastHTTP()
			hc.Timeout = 200 * time.Millisecond
			hc.Observe = o.observe
			e := mustBuild(t, f, 0, hc)
			if _, err := e.Embed(context.Background(), Request{Texts: texts(2)}); err != nil {
				t.Fatalf("Embed: %v", err)
			}
			p := e.Info().Provider
			want := []string{p + "/429", p + "/" + CodeTimeout, p + "/200"}
			if got := o.list(); !slices.Equal(got, want) {
				t.Fatalf("observed %v, want %v", got, want)
			}
		})
	}
}

func TestObservedReportsCalls(t *testing.T) {
	b, err := NewBuiltin(BuiltinConfig{Dims: 32})
	if err != nil {
		t.Fatal(err)
	}
	failing := Func{EmbedFunc: func(context.Context, Request) ([][]float32, error) { return nil, errors.New("down") }, Desc: Info{Provider: "flaky"}}
	var o observations
	if _, err := NewObserved(b, o.observe).Embed(context.Background(), Request{Texts: []string{"hello"}}); err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if _, err := NewObserved(failing, o.observe).Embed(context.Background(), Request{Texts: []string{"hello"}}); err == nil {
		t.Fatal("Embed of a failing embedder returned no error")
	}
	if got, want := o.list(), []string{"builtin/" + CodeOK, "flaky/" + CodeError}; !slices.Equal(got, want) {
		t.Fatalf("observed %v, want %v", got, want)
	}
}
