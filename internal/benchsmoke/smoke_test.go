package benchsmoke

import (
	"bufio"
	"bytes"
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// smoke is, per benchmark script, the environment that cuts it to about
// one round of about a second, and how many ratios it records. A new
// scripts/bench-*.sh fails the test until it has an entry here.
var smoke = map[string]struct {
	env    []string
	ratios int
}{
	// Third-party baselines are installed from the network by the real
	// run only: their rows are recorded as not run.
	"bench-carriers": {[]string{"CARRIER_BENCH_RATE=200", "CARRIER_BENCH_DURATION=1s", "CARRIER_BENCH_ROUNDS=1"}, 2},
	"bench-chaos": {[]string{"CHAOS_BENCH_RATE=300", "CHAOS_BENCH_DURATION=1s", "CHAOS_BENCH_ROUNDS=1",
		"CHAOS_BENCH_MAX=1s", "TOXIPROXY_VERSION=none"}, 1},
	"bench-double": {[]string{"DOUBLE_BENCHTIME=200x", "DOUBLE_BENCH_ROUNDS=1", "DOUBLE_BENCH_RUN=replay/*"}, 2},
	"bench-load": {[]string{"BENCH_LOAD_DURATION=1s", "BENCH_LOAD_ROUNDS=1", "BENCH_LOAD_WORKERS=8",
		"BENCH_GRPC_DURATION=1s", "BENCH_GRPC_ROUNDS=1"}, 6},
	"bench-faces-client": {[]string{"CLIENT_BENCH_ROUNDS=1", "CLIENT_BENCH_RUN=key/*"}, 1},
	"bench-grpc":         {[]string{"GRPC_BENCH_DURATION=1s", "GRPC_BENCH_ROUNDS=1", "GRPC_BENCH_WORKERS=8", "GHZ_VERSION=none"}, 1},
	"bench-reference": {[]string{"BENCH_COUNT=1", "REF_BENCHTIME=200x", "REF_BENCH_RATE=300",
		"REF_BENCH_DURATION=1s", "REF_BENCH_ROUNDS=1", "REF_BENCH_MAX_ROUNDS=1", "REF_BENCH_AA_ROUNDS=1",
		"REF_BENCH_GC_ROUNDS=1"}, 8},
	"bench-shards": {[]string{"SHARDS_N=2", "SHARDS_RATE=200", "SHARDS_DURATION=1s", "SHARDS_ROUNDS=1"}, 6},
	"bench-stores": {[]string{"BENCHTIME=20x", "STORES_BENCH_RATE=200", "STORES_BENCH_DURATION=1s",
		"STORES_BENCH_ROUNDS=1"}, 6},
}

// TestBenchScripts runs `scripts/bench.sh` as `make bench` does, every
// script in smoke form, and checks: it exits 0, no script failed, each
// recorded at least its ratios, each ratio is a finite number (or says
// its baseline was not run), and the last table lists them all with goal
// and met/MISSED/n/a.
func TestBenchScripts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every benchmark script once (about two minutes)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	scripts, err := filepath.Glob(filepath.Join(root, "scripts", "bench-*.sh"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts/bench-*.sh (%v)", err)
	}
	env := os.Environ()
	for _, s := range scripts {
		name := strings.TrimSuffix(filepath.Base(s), ".sh")
		sm, ok := smoke[name]
		if !ok {
			t.Fatalf("%s has no smoke settings: add them to smoke in %s", name, "internal/benchsmoke/smoke_test.go")
		}
		env = append(env, sm.env...)
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "bench.sh"), out)
	cmd.Dir, cmd.Env = root, env
	// The scripts start servers: on a timeout the whole group goes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	began := time.Now()
	err = cmd.Run()
	t.Logf("bench.sh smoke: %s", time.Since(began).Round(time.Second))
	failed := false
	for _, s := range scripts {
		name := strings.TrimSuffix(filepath.Base(s), ".sh")
		if strings.Contains(log.String(), "!! "+name+" failed") {
			own, _ := os.ReadFile(filepath.Join(out, name+".txt"))
			t.Errorf("%s failed; its last lines:\n%s", name, tail(string(own), 30))
			failed = true
		}
	}
	if err != nil || failed {
		t.Fatalf("scripts/bench.sh: %v (exit 0 wanted; every script must run)", err)
	}

	got := map[string]int{}
	rows := 0
	f, err := os.ReadFile(filepath.Join(out, "ratios.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(f))
	for sc.Scan() {
		col := strings.Split(sc.Text(), "\t")
		if len(col) != 6 {
			t.Errorf("ratios.tsv line %q: want 6 tab-separated columns (name, value, goal, met, note, script)", sc.Text())
			continue
		}
		rows++
		got[col[5]]++
		v, err := strconv.ParseFloat(col[1], 64)
		if notRun := strings.Contains(col[4], "not run"); !notRun && (err != nil || math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Errorf("%s: ratio %q of %s is no number", col[5], col[1], col[0])
		}
		if m := col[3]; m != "met" && m != "MISSED" && m != "n/a" {
			t.Errorf("%s: %s is %q, want met, MISSED or n/a", col[5], col[0], m)
		}
	}
	for _, s := range scripts {
		name := strings.TrimSuffix(filepath.Base(s), ".sh")
		if got[name] < smoke[name].ratios {
			t.Errorf("%s recorded %d ratios, want at least %d", name, got[name], smoke[name].ratios)
		}
	}
	table, err := os.ReadFile(filepath.Join(out, "ratios.txt"))
	if err != nil || len(strings.Split(strings.TrimSpace(string(table)), "\n")) != rows {
		t.Errorf("bench.sh's last table (ratios.txt) does not list the %d ratios with their goals (%v):\n%s", rows, err, table)
	}
	if t.Failed() {
		t.Logf("bench.sh output:\n%s", tail(log.String(), 60))
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
