package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sourcegraph/conc/pool"

	"memindex"
	"memindex/internal/harness"
)

// Systems of the hot suite's transport floor: the same events through the
// same NATS server, stream and consumers, with nothing indexed.
const (
	HotNATS            = "NATS alone, one namespace"
	HotNATSMany        = "NATS alone, 100 namespaces"
	HotNATSBatched     = "NATS alone, one namespace, 10 messages an event"
	HotNATSManyBatched = "NATS alone, 100 namespaces, 10 messages an event"
)

// runHotNATS times the transport a worker cannot do without, on the
// events lines: a NATS server of its own under dir with memindex's event
// stream, one pull consumer a partition configured as a worker's
// (filtered to the partition, AckAll, the same pull buffer), and the
// events turned into messages and published as the memindex cases do, while the
// consumers take them in. Each consumer acknowledges every batch
// events, as a worker acknowledges a batch, and nothing else: no
// decoding, no planning, no SQLite. Seconds run from the first publish to
// the last message's arrival, and the CPU a message is the process's
// (publisher, server and consumers) over that time.
func runHotNATS(ctx context.Context, h harness.Hooks, dir, system string, lines [][]byte, sessions, batch int) (HotFigure, error) {
	var hf HotFigure
	messages := countMessages(lines)
	err := withBenchCluster(ctx, h, dir, func(c *benchCluster) error {
		its := map[int]jetstream.MessagesContext{}
		defer func() {
			for _, it := range its {
				it.Stop()
			}
		}()
		for p := range memindex.DefaultPartitions {
			cons, err := c.js.CreateOrUpdateConsumer(ctx, memindex.StreamEvents, jetstream.ConsumerConfig{
				Durable: fmt.Sprintf("bench-nats-%d", p), FilterSubject: memindex.PartitionFilter(p),
				AckPolicy: jetstream.AckAllPolicy, MaxAckPending: -1, DeliverPolicy: jetstream.DeliverAllPolicy,
				MemoryStorage: true, // as the worker's consumers (consumer.positionConsumer)
			})
			if err != nil {
				return fmt.Errorf("consumer of partition %d: %w", p, err)
			}
			if its[p], err = cons.Messages(jetstream.PullMaxMessages(2 * batch)); err != nil {
				return fmt.Errorf("pull of partition %d: %w", p, err)
			}
		}
		u0, start := processUsage(), time.Now()
		msgs, parts, err := c.corpusMsgs(lines) // timed, as Hooks.Ingest times it
		if err != nil {
			return err
		}
		want := map[int]int{}
		for _, p := range parts {
			want[p]++
		}
		pl := pool.New().WithErrors().WithContext(ctx)
		for p, n := range want {
			it := its[p]
			pl.Go(func(ctx context.Context) error {
				for got := 1; got <= n; got++ {
					m, err := it.Next(jetstream.NextContext(ctx))
					if err != nil {
						return fmt.Errorf("partition %d, message %d of %d: %w", p, got, n, err)
					}
					if got%batch == 0 || got == n {
						if err := m.Ack(); err != nil {
							return fmt.Errorf("partition %d: ack: %w", p, err)
						}
					}
				}
				return nil
			})
		}
		if _, err := c.publish(ctx, msgs, parts); err != nil {
			return err
		}
		if err := pl.Wait(); err != nil {
			return err
		}
		el, u := time.Since(start).Seconds(), processUsage().since(u0)
		hf = HotFigure{System: system, Messages: messages, Sessions: sessions, Seconds: el, PerSecond: float64(messages) / el,
			CPUMicrosPerMessage: u.cpu.Seconds() * 1e6 / float64(messages), CoresBusy: u.cpu.Seconds() / el,
			FaultsPerMessage: float64(u.faults) / float64(messages)}
		return nil
	})
	return hf, err
}
