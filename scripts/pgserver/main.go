package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

func main() {
	fsync := flag.String("fsync", "", "on or off: switch a running server (-dsn) and exit")
	dsn := flag.String("dsn", "", "server to switch (with -fsync)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if *fsync != "" {
		if err := setFsync(ctx, *dsn, *fsync); err != nil {
			fmt.Fprintln(os.Stderr, "pgserver:", err)
			os.Exit(1)
		}
		return
	}
	url, stop, _, err := testenv.Postgres(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgserver:", err)
		os.Exit(1)
	}
	defer stop()
	fmt.Println(url, postmasterPID(ctx, url))
	_, _ = io.Copy(io.Discard, os.Stdin)
}

func setFsync(ctx context.Context, dsn, v string) error {
	if v != "on" && v != "off" {
		return fmt.Errorf("-fsync %q: want on or off", v)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, q := range []string{"ALTER SYSTEM SET fsync = " + v, "ALTER SYSTEM SET synchronous_commit = " + v, "SELECT pg_reload_conf()"} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// postmasterPID reads the first line of the data directory's
// postmaster.pid; 0 when the server is elsewhere (Docker, a DSN).
func postmasterPID(ctx context.Context, dsn string) string {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "0"
	}
	defer conn.Close(ctx)
	var dir string
	if conn.QueryRow(ctx, "SHOW data_directory").Scan(&dir) != nil {
		return "0"
	}
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return "0"
	}
	pid, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(pid)
}
