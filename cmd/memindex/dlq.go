package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex/consumer"
)

const dlqSynopsis = `list|show SEQ|replay SEQ [flags]

  list          list dead-lettered events with their reasons
  show SEQ      print one dead letter and its payload
  replay SEQ    re-publish it (or, with --data FILE|-, a fixed event) and remove it`

func runDLQ(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	var conn connFlags
	fs := newFlagSet("dlq", dlqSynopsis)
	conn.register(fs, nats.DefaultURL)
	asJSON := fs.Bool("json", false, "print JSON")
	limit := fs.Int("limit", 100, "list at most this many")
	from := fs.Uint64("from", 1, "list from this DLQ sequence on")
	data := fs.String("data", "", "replay: publish this file's content (- for stdin) instead of the stored payload")
	keep := fs.Bool("keep", false, "replay: keep the dead letter after re-publishing")
	if len(args) == 0 {
		fs.Usage()
		return errors.New("name a subcommand: list, show or replay")
	}
	sub := args[0]
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	nc, err := conn.Connect("memindex dlq")
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 4*conn.Timeout)
	defer cancel()
	seqArg := func() (uint64, error) {
		if len(pos) != 1 {
			return 0, fmt.Errorf("dlq %s needs the DLQ sequence (see `memindex dlq list`)", sub)
		}
		return strconv.ParseUint(pos[0], 10, 64)
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	switch sub {
	case "list":
		ds, err := consumer.ListDLQ(ctx, js, *from, *limit)
		if err != nil {
			return err
		}
		if *asJSON {
			if ds == nil {
				ds = []consumer.DeadLetter{}
			}
			return enc.Encode(ds)
		}
		if len(ds) == 0 {
			fmt.Fprintln(stdout, "the dead-letter stream is empty")
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SEQ\tTIME\tNAMESPACE\tEVENT SEQ\tREASON")
		for _, d := range ds {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\n", d.Seq, d.Time.Format("2006-01-02 15:04:05"), d.Namespace, d.StreamSeq, d.Reason)
		}
		return tw.Flush()
	case "show":
		seq, err := seqArg()
		if err != nil {
			return err
		}
		d, err := consumer.GetDLQ(ctx, js, seq)
		if err != nil {
			return err
		}
		if *asJSON {
			return enc.Encode(d)
		}
		fmt.Fprintf(stdout, "seq:        %d\nnamespace:  %s\npartition:  %d\nreason:     %s\nsubject:    %s\nevent seq:  %d\ntime:       %s\npayload:\n%s\n",
			d.Seq, d.Namespace, d.Partition, d.Reason, d.Subject, d.StreamSeq, d.Time.Format("2006-01-02T15:04:05Z07:00"), d.Payload)
		return nil
	case "replay":
		seq, err := seqArg()
		if err != nil {
			return err
		}
		var payload []byte
		switch *data {
		case "":
		case "-":
			if payload, err = io.ReadAll(stdin); err != nil {
				return err
			}
		default:
			if payload, err = os.ReadFile(*data); err != nil {
				return err
			}
		}
		newSeq, err := consumer.ReplayDLQ(ctx, js, seq, payload, *keep)
		if err != nil {
			return err
		}
		if *asJSON {
			return enc.Encode(map[string]any{"replayed": seq, "streamSeq": newSeq, "kept": *keep})
		}
		fmt.Fprintf(stdout, "re-published dead letter %d as event seq %d\n", seq, newSeq)
		return nil
	}
	return fmt.Errorf("unknown dlq subcommand %q: use list, show or replay", sub)
}
