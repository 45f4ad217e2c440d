package evalrun

import (
	"flag"
	"fmt"

	"memindex/internal/eval"
)

// TuneFlag collects --tune specs (FLAG=v1,v2,...), one axis each: it is
// the flag.Value of --tune.
type TuneFlag []eval.Axis

// String returns the axes collected.
func (t *TuneFlag) String() string { return fmt.Sprint(*t) }

// Set parses one spec (eval.ParseAxis) and adds it.
func (t *TuneFlag) Set(s string) error {
	a, err := eval.ParseAxis(s)
	if err != nil {
		return err
	}
	*t = append(*t, a)
	return nil
}

// Tunable is the flag set of `memindex eval` as --tune varies it: every
// flag but Fixed (those that choose what is measured, not how memindex
// searches) and --config. It sets the flags' values and always sets them
// back; it never parses or registers flags.
type Tunable struct {
	Flags *flag.FlagSet
	Fixed map[string]bool
}

func (t Tunable) fixed(name string) bool { return t.Fixed[name] || name == "config" }

// Check refuses a --tune of an unknown or untunable flag, or a value the
// flag does not take, leaving every flag as it was.
func (t Tunable) Check(axes []eval.Axis) error {
	for _, a := range axes {
		f := t.Flags.Lookup(a.Flag)
		if f == nil || t.fixed(a.Flag) {
			return fmt.Errorf("eval: --tune %s: not a tunable eval flag", a.Flag)
		}
		was := f.Value.String()
		for _, v := range a.Values {
			if err := t.Flags.Set(a.Flag, v); err != nil {
				_ = t.Flags.Set(a.Flag, was) // a refused value may have changed it (flag's ints become 0)
				return fmt.Errorf("eval: --tune %s=%s: %w", a.Flag, v, err)
			}
		}
		if err := t.Flags.Set(a.Flag, was); err != nil {
			return err
		}
	}
	return nil
}

// Settings returns the tunable flags as set now, in the flag set's order:
// Config.Settings.
func (t Tunable) Settings() []eval.Setting {
	var out []eval.Setting
	t.Flags.VisitAll(func(f *flag.Flag) {
		if !t.fixed(f.Name) {
			out = append(out, eval.Setting{Flag: f.Name, Value: f.Value.String()})
		}
	})
	return out
}

// Configure returns a Config.Configure that sets the flags of a
// combination, returns read's Pass (read looks at the flags' values), and
// sets the flags back as they were.
func (t Tunable) Configure(read func() Pass) func(combo []eval.Setting) (Pass, error) {
	return func(combo []eval.Setting) (Pass, error) {
		was := map[string]string{}
		for _, s := range combo {
			f := t.Flags.Lookup(s.Flag)
			if f == nil || t.fixed(s.Flag) {
				return Pass{}, fmt.Errorf("eval: --tune %s: not a tunable eval flag", s.Flag)
			}
			was[s.Flag] = f.Value.String()
		}
		defer func() {
			for name, v := range was {
				_ = t.Flags.Set(name, v) // it held v before
			}
		}()
		for _, s := range combo {
			if err := t.Flags.Set(s.Flag, s.Value); err != nil {
				return Pass{}, fmt.Errorf("eval: --tune %s=%s: %w", s.Flag, s.Value, err)
			}
		}
		return read(), nil
	}
}
