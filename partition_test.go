package memindex_test

import (
	"context"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/consumer"
	"memindex/internal/natstest"
)

// namespaceAlphabet is every character a namespace may hold.
const namespaceAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"

// generatedNamespaces returns n distinct valid namespaces: the edge cases
// (one character, 64 characters, only '-' or '_', digits) and random ones of
// random length 1..64 from the whole alphabet, the same for every run.
func generatedNamespaces(t *testing.T, n int) []string {
	t.Helper()
	names := []string{"a", "Z", "0", "-", "_", "agent-7", "Tenant_42", "--", "__init__", "123456789",
		strings.Repeat("n", 64), strings.Repeat("-", 64), strings.Repeat("Z9_", 21)}
	seen := make(map[string]bool)
	for _, ns := range names {
		seen[ns] = true
	}
	r := rand.New(rand.NewPCG(5, 11))
	for len(names) < n {
		b := make([]byte, 1+r.IntN(64))
		for i := range b {
			b[i] = namespaceAlphabet[r.IntN(len(namespaceAlphabet))]
		}
		if ns := string(b); !seen[ns] {
			seen[ns] = true
			names = append(names, ns)
		}
	}
	for _, ns := range names {
		if !memindex.ValidNamespace(ns) {
			t.Fatalf("generated namespace %q is not valid", ns)
		}
	}
	return names
}

// TestPartitionEqualsTheStreamTransform publishes thousands of generated
// namespaces on a real MEMINDEX_EVENTS stream (made by consumer.EnsureStreams,
// so with the production subject transform partition(P,1)) for several P,
// reads back the subject nats-server stored each message under, and
// compares its partition token with memindex.Partition computed in Go.
func TestPartitionEqualsTheStreamTransform(t *testing.T) {
	const perP = 3000
	names := generatedNamespaces(t, perP)
	for _, p := range []int{1, 2, 3, 7, 16, 64, 1024} {
		t.Run("P="+strconv.Itoa(p), func(t *testing.T) {
			checkPartitions(t, p, names)
		})
	}
}

func checkPartitions(t *testing.T, p int, names []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nc := natstest.Connect(t, natstest.Server(t))
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(2*len(names)))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := consumer.EnsureStreams(ctx, js, consumer.StreamConfig{Partitions: p}); err != nil || got != p {
		t.Fatalf("EnsureStreams(P=%d) = %d, %v", p, got, err)
	}
	for _, ns := range names {
		if _, err := js.PublishAsync(memindex.EventSubject(ns), []byte(`{"type":"partition-probe"}`)); err != nil {
			t.Fatalf("publish %q: %v", ns, err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatalf("publishes not acknowledged: %v", ctx.Err())
	}
	if n := js.PublishAsyncPending(); n != 0 {
		t.Fatalf("%d publishes pending after completion", n)
	}

	// Read every stored message in stream order: message i is names[i].
	cons, err := js.OrderedConsumer(ctx, memindex.StreamEvents, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	perPartition := make([]int, p)
	for i := 0; i < len(names); {
		batch, err := cons.Fetch(500, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		got := 0
		for m := range batch.Messages() {
			if i >= len(names) {
				t.Fatalf("more stored messages than the %d published", len(names))
			}
			ns := names[i]
			want := memindex.StoredEventSubject(memindex.Partition(ns, p), ns)
			if m.Subject() != want {
				t.Fatalf("P=%d: namespace %q stored under %q, want %q (memindex.Partition=%d)",
					p, ns, m.Subject(), want, memindex.Partition(ns, p))
			}
			perPartition[memindex.Partition(ns, p)]++
			i++
			got++
		}
		if batch.Error() != nil {
			t.Fatalf("fetch: %v", batch.Error())
		}
		if got == 0 {
			t.Fatalf("stream ended after %d of %d messages", i, len(names))
		}
	}

	// Each partition's filter subject (what a partition's consumer reads)
	// holds exactly the namespaces Go assigns to it.
	s, err := js.Stream(ctx, memindex.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	for q := range p {
		if p > 16 && q%(p/16) != 0 { // a sample of the partitions for large P
			continue
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(memindex.PartitionFilter(q)))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range info.State.Subjects {
			n += int(c)
		}
		if n != perPartition[q] {
			t.Fatalf("P=%d: partition %d's filter %s holds %d messages, Go assigns it %d namespaces",
				p, q, memindex.PartitionFilter(q), n, perPartition[q])
		}
	}
	// With thousands of namespaces every partition of a small P gets some:
	// a constant Partition would not pass unnoticed.
	if p <= 64 {
		for q, n := range perPartition {
			if n == 0 {
				t.Fatalf("P=%d: partition %d got none of %d namespaces", p, q, len(names))
			}
		}
	}
}

// TestValidNamespaceIsItsPattern checks ValidNamespace against the pattern
// its documentation gives, on the edge cases and on random strings over an
// alphabet of valid bytes, invalid ASCII, multi-byte runes and bytes that
// are not UTF-8.
func TestValidNamespaceIsItsPattern(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	cases := []string{"", "a", "A", "0", "_", "-", strings.Repeat("z", 64), strings.Repeat("z", 65), "a.b", "a b", "a*", "a>", "é",
		"a\x00", "\xff", "Z9_-", "@", "[", "`", "{", "/", ":"}
	r := rand.New(rand.NewPCG(7, 7))
	alphabet := []string{"a", "Z", "0", "9", "_", "-", ".", " ", "*", "é", "中", "\xff", "@", "[", "`", "{", "/", ":"}
	for range 20000 {
		var b strings.Builder
		for range r.IntN(70) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		cases = append(cases, b.String())
	}
	for _, ns := range cases {
		if got, want := memindex.ValidNamespace(ns), re.MatchString(ns); got != want {
			t.Fatalf("ValidNamespace(%q) = %v, the pattern says %v", ns, got, want)
		}
	}
}
