package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// Exit codes, documented in README.
const (
	exitOK          = 0
	exitFail        = 1 // conformance or exactly-once failure
	exitUsage       = 2 // usage or config error
	exitThreshold   = 3 // load threshold breached
	exitUnreachable = 4 // target unreachable
	// exitIncomplete: no failure, but a MUST-level case ended unverifiable
	// or inconclusive (--allow-incomplete accepts it).
	exitIncomplete = 5
	// exitInterrupted: SIGINT/SIGTERM stopped the run (128+SIGINT, as a
	// shell reports it); the reports say interrupted.
	exitInterrupted = 130
)

// exitError carries a documented exit code out of a subcommand.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withCode tags err with an exit code; a nil err stays nil.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// usageErrorf is a one-line usage/config error (exit 2).
func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

var rootCmd = &cobra.Command{
	Use:           "idemcheck",
	Short:         "Prove an API's Idempotency-Key support: conformance, chaos, load, reference",
	SilenceUsage:  true,
	SilenceErrors: true,
	// TestRootHelpExamples runs each command below as printed and checks
	// the exit code its comment names.
	Example: `  # a config for your API, from its OpenAPI document (docs/getting-started.md): exit 0
  idemcheck init --openapi examples/payments.openapi.yaml -o idemcheck.yaml
  # the reference implementation with 3s keys (the ttl examples/reference.yaml declares; 2.5s
  # is the least with which every case runs), certified by the conformance catalog: exit 0
  idemcheck serve --addr 127.0.0.1:8080 --ttl 3s &
  idemcheck run --config examples/reference.yaml --html report.html
  # the same API under faults, then under load for less than its TTL, so that every answer
  # is judged (a longer run leaves late answers unjudged, exit 5 when they are most): exit 0
  idemcheck chaos --config examples/reference.yaml --ops 500 --fault drop-response:0.3
  idemcheck load --config examples/reference.yaml --mode mix --duration 2s --threshold 'violations==0'`,
}

// usageTemplate is cobra's, with the examples moved to the end: the last
// lines a --help leaves on the screen are commands to copy.
const usageTemplate = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasAvailableSubCommands}}

Available Commands:{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableInheritedFlags}}

Global Flags:
{{.InheritedFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableSubCommands}}

Use "{{.CommandPath}} [command] --help" for more information about a command.{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}
`

func init() { rootCmd.SetUsageTemplate(usageTemplate) }

func main() {
	os.Exit(run(os.Args[1:]))
}

// run executes the CLI and maps errors to exit codes: flag errors and
// unknown commands are usage errors (2).
func run(args []string) int {
	invocation = args
	rootCmd.SetArgs(args)
	rootCmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: flagError(err)}
	})
	err := rootCmd.Execute()
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(os.Stderr, "idemcheck:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitUsage // cobra's own errors: unknown command, bad args
}
