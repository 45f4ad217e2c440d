package consumer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
)

// publishDead copies a never-applicable event to the DLQ with its reason.
// The message id makes a re-send after a crash a no-op.
func (w *Worker) publishDead(ctx context.Context, p int, d deadLetter) error {
	subj := d.msg.Subject()
	ns := subj[strings.LastIndexByte(subj, '.')+1:]
	out := nats.NewMsg(memindex.DLQSubject(p, ns))
	out.Data = d.msg.Data()
	out.Header.Set(memindex.HeaderDLQReason, truncateReason(d.reason))
	out.Header.Set(memindex.HeaderDLQSubject, subj)
	out.Header.Set(memindex.HeaderDLQStreamSeq, strconv.FormatUint(d.seq, 10))
	out.Header.Set(memindex.HeaderDLQTime, time.Now().UTC().Format(time.RFC3339))
	out.Header.Set(nats.MsgIdHdr, "dlq-"+strconv.FormatUint(d.seq, 10))
	if _, err := w.js.PublishMsg(ctx, out); err != nil {
		return err
	}
	w.log.WarnContext(ctx, "dead-lettered event", attrPartition, p, attrSeq, d.seq, attrNamespace, ns, attrReason, d.reason)
	return nil
}

// DeadLetter is one event in the dead-letter stream.
type DeadLetter struct {
	// Seq is the entry's sequence in MEMINDEX_DLQ, the handle for show and replay.
	Seq       uint64    `json:"seq"`
	Namespace string    `json:"namespace"`
	Partition int       `json:"partition"`
	Reason    string    `json:"reason"`
	Subject   string    `json:"subject"`   // the subject it was stored under
	StreamSeq uint64    `json:"streamSeq"` // its sequence in MEMINDEX_EVENTS
	Time      time.Time `json:"time"`
	Data      []byte    `json:"-"`
	Payload   string    `json:"payload"`
}

func deadLetterFrom(m *jetstream.RawStreamMsg) DeadLetter {
	d := DeadLetter{Seq: m.Sequence, Time: m.Time, Data: m.Data, Payload: string(m.Data)}
	toks := strings.Split(m.Subject, ".")
	if len(toks) == 4 {
		d.Partition, _ = strconv.Atoi(toks[2])
		d.Namespace = toks[3]
	}
	d.Reason = m.Header.Get(memindex.HeaderDLQReason)
	d.Subject = m.Header.Get(memindex.HeaderDLQSubject)
	d.StreamSeq, _ = strconv.ParseUint(m.Header.Get(memindex.HeaderDLQStreamSeq), 10, 64)
	return d
}

// ListDLQ returns up to limit dead letters from sequence from on, oldest first.
func ListDLQ(ctx context.Context, js jetstream.JetStream, from uint64, limit int) ([]DeadLetter, error) {
	s, err := js.Stream(ctx, memindex.StreamDLQ)
	if err != nil {
		return nil, fmt.Errorf("list dlq: %w", err)
	}
	var out []DeadLetter
	seq := max(from, 1)
	for len(out) < limit {
		m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(memindex.DLQSubjectPrefix+".>"))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return out, fmt.Errorf("list dlq: %w", err)
		}
		out = append(out, deadLetterFrom(m))
		seq = m.Sequence + 1
	}
	return out, nil
}

// GetDLQ returns the dead letter with DLQ sequence seq.
func GetDLQ(ctx context.Context, js jetstream.JetStream, seq uint64) (DeadLetter, error) {
	s, err := js.Stream(ctx, memindex.StreamDLQ)
	if err != nil {
		return DeadLetter{}, fmt.Errorf("get dlq: %w", err)
	}
	m, err := s.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return DeadLetter{}, fmt.Errorf("get dlq %d: %w", seq, ErrNotInDLQ)
	}
	if err != nil {
		return DeadLetter{}, fmt.Errorf("get dlq %d: %w", seq, err)
	}
	return deadLetterFrom(m), nil
}

// ReplayDLQ re-publishes dead letter seq to its namespace's event subject,
// with data in place of the stored payload when data is not nil (a fixed
// event). Unless keep is set, the dead letter is then deleted. It returns the
// new event's sequence in MEMINDEX_EVENTS.
func ReplayDLQ(ctx context.Context, js jetstream.JetStream, seq uint64, data []byte, keep bool) (uint64, error) {
	d, err := GetDLQ(ctx, js, seq)
	if err != nil {
		return 0, err
	}
	if data == nil {
		data = d.Data
	}
	if !memindex.ValidNamespace(d.Namespace) {
		return 0, fmt.Errorf("replay dlq %d: namespace %q is not valid; publish a fixed event yourself: %w", seq, d.Namespace, memindex.ErrInvalid)
	}
	ack, err := js.Publish(ctx, memindex.EventSubject(d.Namespace), data)
	if err != nil {
		return 0, fmt.Errorf("replay dlq %d: %w", seq, err)
	}
	if !keep {
		s, err := js.Stream(ctx, memindex.StreamDLQ)
		if err == nil {
			err = s.DeleteMsg(ctx, seq)
		}
		if err != nil {
			return ack.Sequence, fmt.Errorf("replay dlq %d: re-published as %d but not removed: %w", seq, ack.Sequence, err)
		}
	}
	return ack.Sequence, nil
}

// DLQCounts returns the number of dead letters per partition.
func DLQCounts(ctx context.Context, js jetstream.JetStream) (map[int]uint64, error) {
	s, err := js.Stream(ctx, memindex.StreamDLQ)
	if err != nil {
		return nil, fmt.Errorf("dlq counts: %w", err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(memindex.DLQSubjectPrefix+".>"))
	if err != nil {
		return nil, fmt.Errorf("dlq counts: %w", err)
	}
	out := make(map[int]uint64)
	for subj, n := range info.State.Subjects {
		toks := strings.Split(subj, ".")
		if len(toks) == 4 {
			p, _ := strconv.Atoi(toks[2])
			out[p] += n
		}
	}
	return out, nil
}
