package bench

import (
	"strings"
	"testing"
)

// TestHotTableShowsCPU: the hot table gives memindex's rows their CPU a
// message, cores busy, page faults a message (a dash when not measured),
// commits and mean batch, and the floors (timed
// without them) a dash; the backlog row's publishing is said below it, and
// memindex's rate over NATS alone's on each load that has both, and a
// spread case's namespaces when its sessions are fewer than 100.
func TestHotTableShowsCPU(t *testing.T) {
	var b strings.Builder
	writeHotTable(&b, []HotFigure{
		{System: HotMemindex, Messages: 100000, Sessions: 1000, Seconds: 10, PerSecond: 10000, CPUMicrosPerMessage: 171.4, CoresBusy: 1.714, Commits: 45, FaultsPerMessage: 1.456},
		{System: HotBacklog, Messages: 100000, Sessions: 1000, Seconds: 8, PerSecond: 12500, CPUMicrosPerMessage: 120.4, CoresBusy: 1.505, Commits: 25,
			PublishSeconds: 3.25, PublishCPUMicrosPerMessage: 31.6},
		{System: HotFTSBatch, Messages: 100000, Sessions: 1000, Seconds: 2, PerSecond: 50000},
		{System: HotNATS, Messages: 100000, Sessions: 1000, Seconds: 2, PerSecond: 50000, CPUMicrosPerMessage: 25, CoresBusy: 1.4},
		{System: HotNATSMany, Messages: 2000, Sessions: 20, Namespaces: 20, Seconds: 0.1, PerSecond: 20000},
		{System: HotMemindexMany, Messages: 100000, Sessions: 1000, Namespaces: 100, Seconds: 10, PerSecond: 10000},
		{System: HotMemindexManyBatched, Messages: 100000, Sessions: 1000, Namespaces: 100, MessagesPerEvent: 10, Seconds: 4, PerSecond: 25000},
		{System: HotNATSManyBatched, Messages: 100000, Sessions: 1000, Namespaces: 100, MessagesPerEvent: 10, Seconds: 0.5, PerSecond: 200000},
	})
	for _, want := range []string{
		"| memindex over NATS, one namespace, from a backlog | 100,000 | 1,000 | 8.00 | 12,500 | 0.80× | 120 | 1.50 | — | 25 | 4000 |",
		"From a backlog (100,000 messages): published first, alone, in 3.25 s (32 µs of CPU a message: publisher and NATS server)",
		"| CPU µs a message | cores busy | page faults a message | commits | messages a batch |",
		"| memindex over NATS, one namespace | 100,000 | 1,000 | 10.00 | 10,000 | 1.00× | 171 | 1.71 | 1.46 | 45 | 2222 |",
		"| plain FTS5, one tx per batch | 100,000 | 1,000 | 2.00 | 50,000 | 0.20× | — | — | — | — | — |",
		// 10,000 msg/s over NATS alone's 50,000; NATS alone's 100-namespace
		// row is of another size: no pair.
		"memindex's rate over NATS alone's on the same load (100,000 messages): one namespace 0.20, 100 namespaces in events of 10 0.12 (the box's speed",
		"NATS alone, 100 namespaces (2,000 messages): its 20 sessions spread over 20 namespaces, one a session",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("hot table lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "memindex over NATS, 100 namespaces (100,000 messages): its") {
		t.Errorf("hot table notes the spread of a case over all 100 namespaces:\n%s", b.String())
	}
}
