package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

// TestChaosKills runs `idemcheck chaos` over two grpcshop processes on one
// database that idemcheck starts (target_cmd, --replicas 2) and SIGKILLs
// and restarts, one at random, every second, with lost answers and
// duplicated calls (the copy goes to the other replica). The card
// provider is the double, whose count of each key's charges outlives the
// kills. The correct build charges each key once (its claim is the
// database's); check-then-insert's racing claim lets both copies of a
// duplicated call charge.
func TestChaosKills(t *testing.T) {
	for _, tc := range []struct {
		defect defect
		code   int
		want   string
	}{
		{"", 0, "exactly-once: OK"},
		{checkThenInsert, 1, "double-execution key="},
	} {
		t.Run("build="+string(tc.defect), func(t *testing.T) {
			dsn := testenv.RequirePostgres(t)
			cfg := writeConfig(t, "idemcheck.yaml", func(c map[string]any) {
				c["base_url"] = "grpc://127.0.0.1:{port}"
				c["target_cmd"] = binary(t) + " -addr 127.0.0.1:{port} -provider-url {downstream} -ttl 60s"
				c["ttl"] = "60s"
				c["downstream"].(map[string]any)["listen"] = testenv.FreeAddr(t)
			})
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, testenv.BuildIdemcheck(t), "chaos", "--config", cfg, "--replicas", "2", "--kill-every", "1s",
				"--ops", "300", "--concurrency", "4", "--fault", "drop-response:0.3", "--fault", "duplicate:0.1", "--seed", "3", "--deadline", "3m")
			// The started processes inherit idemcheck's environment.
			cmd.Env = append(os.Environ(), "DATABASE_URL="+dsn, "GRPCSHOP_DEFECT="+string(tc.defect), "GRPCSHOP_API_KEYS=sk_test_alice=alice,sk_test_bob=bob")
			for k, v := range apiKeys {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			raw, err := cmd.CombinedOutput()
			out := string(raw)
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			// No note: the double's count of each key's charges is used.
			if code != tc.code || !strings.Contains(out, tc.want) || !strings.Contains(out, "against --target-cmd over gRPC") ||
				strings.Contains(out, "\nnote: ") || strings.Contains(out, "; 0 killed") {
				t.Fatalf("exit %d, want %d with %q, replicas killed and no note:\n%s", code, tc.code, tc.want, out)
			}
			t.Logf("%s", strings.Join(strings.SplitN(out, "\n", 8)[:7], "\n"))
		})
	}
}
