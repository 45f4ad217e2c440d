package memindex

import (
	"slices"
	"testing"
)

func TestHeaderCarrier(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, key := range []string{"traceparent", "Traceparent", "TRACEPARENT", "TraceParent"} {
		c := HeaderCarrier{key: {tp}, "Nats-Msg-Id": {"x"}}
		if got := c.Get("traceparent"); got != tp {
			t.Errorf("Get(traceparent) with key %q = %q, want %q", key, got, tp)
		}
		c.Set("traceparent", "new")
		if got := c["traceparent"]; !slices.Equal(got, []string{"new"}) {
			t.Errorf("after Set, header[traceparent] = %v, want [new]", got)
		}
		keys := c.Keys()
		slices.Sort(keys)
		if want := []string{"Nats-Msg-Id", "traceparent"}; !slices.Equal(keys, want) {
			t.Errorf("key %q: Keys() after Set = %v, want %v (one spelling only)", key, keys, want)
		}
	}
	if got := (HeaderCarrier(nil)).Get("traceparent"); got != "" {
		t.Errorf("Get on no headers = %q, want empty", got)
	}
	c := HeaderCarrier{"traceparent": {tp}, "TRACEPARENT": {"other"}}
	if got := c.Get("traceparent"); got != tp {
		t.Errorf("Get prefers the exact spelling: got %q, want %q", got, tp)
	}
}
