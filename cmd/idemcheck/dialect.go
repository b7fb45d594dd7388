package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// formatValue is --format on every command that prints a report on stdout:
// one vocabulary, text or json. Old words keep working with a one-line
// note on stderr, so CI scripts written against them do not break.
type formatValue struct {
	cmd *cobra.Command
	p   *string
}

// formatAliases maps deprecated --format words to the current ones.
var formatAliases = map[string]string{"console": "text"}

// addFormatFlag registers --format on cmd, storing text or json in p.
func addFormatFlag(cmd *cobra.Command, p *string, usage string) {
	*p = "text"
	cmd.Flags().Var(&formatValue{cmd: cmd, p: p}, "format", usage+": text or json (console: deprecated, means text)")
}

func (v *formatValue) String() string { return *v.p }
func (v *formatValue) Type() string   { return "text|json" }

func (v *formatValue) Set(s string) error {
	if to, ok := formatAliases[s]; ok {
		fmt.Fprintf(v.cmd.ErrOrStderr(), "idemcheck: --format %s is deprecated, use --format %s\n", s, to)
		s = to
	}
	if s != "text" && s != "json" {
		return fmt.Errorf("want text or json")
	}
	*v.p = s
	return nil
}

// flagError words a bad flag value like the commands' own errors,
// `--flag "value": reason`; number and switch parse errors, which read as
// Go ("strconv.ParseUint: parsing ..."), say what the flag wants.
func flagError(err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return err
	}
	reason := errors.Unwrap(ive).Error()
	if ne := (*strconv.NumError)(nil); errors.As(err, &ne) {
		t := ive.GetFlag().Value.Type()
		reason = "want a number"
		switch {
		case t == "bool":
			reason = "want true or false"
		case strings.HasPrefix(t, "uint"):
			reason = "want a whole number, 0 or more"
		case strings.HasPrefix(t, "int"):
			reason = "want a whole number"
		}
		if errors.Is(ne.Err, strconv.ErrRange) {
			reason += " that fits in " + t
		}
	}
	return fmt.Errorf("--%s %q: %s", ive.GetFlag().Name, ive.GetValue(), reason)
}
