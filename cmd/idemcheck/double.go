package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/evidence/double"
)

type doubleFlags struct {
	config, listen string
}

func init() {
	var f doubleFlags
	cmd := &cobra.Command{
		Use:   "double --config FILE [--listen ADDR]",
		Short: "Run the downstream double of a config on its own (a stand-in for the API's provider)",
		Long: "Serve the routes of the config's downstream: section where the API under test sends a\n" +
			"dependency's calls (point its provider URL here). run, chaos and load start the same double\n" +
			"in-process when the config has downstream:; this command is for inspecting it by hand.\n" +
			"GET " + double.JournalPath + "[?token=T] serves the journal and the counts as JSON.\n" +
			"SIGINT or SIGTERM stops it gracefully. See docs/double.md.",
		Example: `  idemcheck double --config examples/downstream.yaml
  idemcheck double --config examples/downstream.yaml --listen 127.0.0.1:9091 &
  # then: curl -s http://127.0.0.1:9091` + double.JournalPath,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runDouble(ctx, cmd.OutOrStdout(), f)
		},
	}
	fl := cmd.Flags()
	addConfigFlag(fl, &f.config, "required: its downstream: section declares the routes")
	fl.StringVar(&f.listen, "listen", "", "listen address, instead of downstream.listen (port 0 picks a free port)")
	rootCmd.AddCommand(cmd)
}

func runDouble(ctx context.Context, stdout io.Writer, f doubleFlags) error {
	if f.config == "" {
		return usageErrorf("--config is required (its downstream: section declares the routes)")
	}
	file, err := apispec.ReadFile(f.config)
	if err != nil {
		return withCode(exitUsage, err)
	}
	cfg, err := file.Downstream()
	if err != nil {
		return withCode(exitUsage, err)
	}
	if f.listen != "" {
		if _, _, err := net.SplitHostPort(f.listen); err != nil {
			return usageErrorf("--listen %q: want host:port (e.g. 127.0.0.1:9090)", f.listen)
		}
		cfg.Listen = f.listen
	}
	srv, err := double.Start(ctx, *cfg)
	if err != nil {
		if f.listen != "" { // the address came from the flag
			return usageErrorf("--listen%s", strings.TrimPrefix(err.Error(), "downstream.listen"))
		}
		return withCode(exitUsage, err)
	}
	routes := make([]string, len(cfg.Routes))
	for i, r := range cfg.Routes {
		method := r.Method
		if method == "" {
			method = "*"
		}
		routes[i] = fmt.Sprintf("%s %s %s", r.Name, strings.ToUpper(method), r.Path)
	}
	fmt.Fprintf(stdout, "idemcheck double: listening on %s (routes: %s)\n", srv.URL(), strings.Join(routes, "; "))
	fmt.Fprintf(stdout, "idemcheck double: journal at %s%s\n", srv.URL(), double.JournalPath)
	<-ctx.Done()
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Close(shutdown)
	t := srv.Totals()
	fmt.Fprintf(stdout, "idemcheck double: stopped after %d calls (%d matched no route)\n", t.Calls, t.Unrouted)
	return err
}
