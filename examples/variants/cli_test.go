package variants

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/testenv"
)

// TestCLIExitCodes runs the built binary, `idemcheck run --config`, the way
// a user or CI gate does, against a legal variant and the server that
// ignores the key, and checks the documented exit codes.
func TestCLIExitCodes(t *testing.T) {
	bin := testenv.BuildIdemcheck(t)
	for _, tc := range []struct {
		name, config string
		server       func(ttl time.Duration) http.Handler
		want         int
		why          string
		failing      string // the last line, when set: only these cases fail
	}{
		{name: "core", config: "core.yaml", server: func(ttl time.Duration) http.Handler { return New(Choices{TTL: ttl}) }, want: 0,
			why: "a correct server passes"},
		{name: "null-key-oracle", config: "core.yaml", server: func(time.Duration) http.Handler { return Null() }, want: 1,
			why: "the oracle sees the ignored key's retries execute: MUST failures"},
		{name: "null-no-oracle", config: "null.yaml", server: func(time.Duration) http.Handler { return Null() }, want: 1,
			why:     "no oracle, no id: nothing proves a replay, so the replay MUSTs lack evidence; the answers alone fail the MUSTs that the request be failed (a 201 to a keyless request, to a changed body under a used key)",
			failing: "idemcheck: 6 failing: mismatch/repeat-fails-again@charges: fail; mismatch/repeat-fails-again@refunds: fail; missing/rejected@charges: fail; missing/rejected@refunds: fail; missing/repeat-fails-again@charges: fail; missing/repeat-fails-again@refunds: fail\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tg, _, err := apispec.LoadConfig(filepath.Join("testdata", tc.config))
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(tc.server(tg.TTL))
			defer srv.Close()
			raw, err := os.ReadFile(filepath.Join("testdata", tc.config))
			if err != nil {
				t.Fatal(err)
			}
			const placeholder = "base_url: http://127.0.0.1:1\n"
			if !strings.Contains(string(raw), placeholder) {
				t.Fatalf("%s has no %q line to point at the test server", tc.config, placeholder)
			}
			cfg := filepath.Join(t.TempDir(), tc.config)
			if err := os.WriteFile(cfg, []byte(strings.Replace(string(raw), placeholder, "base_url: "+srv.URL+"\n", 1)), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, "run", "--config", cfg).CombinedOutput()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.want {
				t.Errorf("%s: exit %d, want %d (%s); output tail:\n%s", tc.name, code, tc.want, tc.why, tail(out, 15))
			}
			if tc.failing != "" && !strings.HasSuffix(string(out), tc.failing) {
				t.Errorf("%s: the failures are not only %q (%s); output tail:\n%s", tc.name, tc.failing, tc.why, tail(out, 5))
			}
			srv.CloseClientConnections()
		})
	}
}

// tail returns the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
