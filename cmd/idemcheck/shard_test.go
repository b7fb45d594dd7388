package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/evidence"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/load"
	"github.com/idemcheck/idemcheck/wire"
)

// shardKeys reads a results file and returns its request count and the
// keys it sent (warm-up included).
func shardKeys(t *testing.T, path string) (requests uint64, keys map[string]bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := vegeta.NewDecoder(f)
	keys = map[string]bool{}
	for range 1_000_000 { // bounded: a 2 s shard sends a few hundred
		var r vegeta.Result
		if err := dec.Decode(&r); err != nil {
			if errors.Is(err, io.EOF) {
				return requests, keys
			}
			t.Fatalf("%s: %v", path, err)
		}
		p, k, ok := load.Classify(&r)
		if !ok {
			t.Fatalf("%s: untagged result %s", path, r.URL)
		}
		if p != "warmup" {
			requests++
		}
		if k != "" {
			keys[k] = true
		}
	}
	t.Fatalf("%s: more results than expected", path)
	return requests, keys
}

// TestLoadShards runs three `idemcheck load --shard i/3` processes at once
// with the same hash-key seed against two replicas on one PostgreSQL,
// merges their results with `idemcheck load report`, and checks that the
// merged report counts every shard's requests, that the shards' key
// spaces are disjoint, and that the replicas executed each key once.
func TestLoadShards(t *testing.T) {
	bin := testenv.BuildIdemcheck(t)
	urls := testenv.URLs(testenv.StartReplicas(t, bin, 2, "--store", "postgres", "--dsn", testenv.RequirePostgres(t)))
	dir := t.TempDir()
	const shards = 3
	runs := make([]cliRun, shards)
	var wg sync.WaitGroup
	for i := range shards {
		wg.Go(func() {
			runs[i] = runCLI(t, "load", "--target", urls[0], "--replica", urls[1], "--shard", fmt.Sprintf("%d/%d", i, shards),
				"--hash-keys", "--key-seed", "shard-test", "--mode", "mix", "--hit-ratio", "0.5", "--pool", "20",
				"--rate", "100", "--duration", "2s", "--workers", "4",
				"--results", filepath.Join(dir, fmt.Sprintf("r%d.gob", i)), "--json", filepath.Join(dir, fmt.Sprintf("r%d.json", i)))
		})
	}
	wg.Wait()
	var files []string
	var sum uint64
	owner := map[string]int{}
	for i, r := range runs {
		if r.code != exitOK {
			t.Fatalf("shard %d: exit %d\n%s\n%s", i, r.code, r.stdout, r.stderr)
		}
		if doc := readJSON(t, filepath.Join(dir, fmt.Sprintf("r%d.json", i))); doc["shard"] != fmt.Sprintf("%d/%d", i, shards) {
			t.Errorf("shard %d: report says shard %v", i, doc["shard"])
		}
		f := filepath.Join(dir, fmt.Sprintf("r%d.gob", i))
		files = append(files, f)
		n, keys := shardKeys(t, f)
		sum += n
		for k := range keys {
			if j, dup := owner[k]; dup {
				t.Fatalf("key %s sent by shards %d and %d", k, j, i)
			}
			owner[k] = i
		}
	}
	merged := filepath.Join(dir, "merged.json")
	if r := runCLI(t, append(append([]string{"load", "report"}, files...), "--json", merged)...); r.code != exitOK {
		t.Fatalf("load report: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var total uint64
	for _, ps := range readJSON(t, merged)["paths"].(map[string]any) {
		total += uint64(ps.(map[string]any)["requests"].(float64))
	}
	if total != sum || sum == 0 {
		t.Errorf("merged report counts %d requests, the shards sent %d", total, sum)
	}
	// Each key executed once over both replicas (each counts its own).
	tg, err := apispec.FromURL(urls[0], 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.AddReplicas(urls[1:], true); err != nil {
		t.Fatal(err)
	}
	client := wire.NewClient(5 * time.Second)
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ev, err := evidence.Open(context.Background(), tg, client, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	for k := range owner {
		n, err := ev.Count(ctx, k, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("key %s (shard %d) executed %d times over the replicas", k, owner[k], n)
		}
	}
	t.Logf("3 shards, %d keys, %d measured requests merged", len(owner), total)
}
