package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigWithoutBaseURL: a config may leave base_url out when another
// source gives it (--base-url, idemchecktest.Handler's server); without
// one the error still names the field.
func TestConfigWithoutBaseURL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(`key_header: Idempotency-Key
timeout: 5s
principals: [{name: a, headers: {Authorization: Bearer a}}]
operations: [{name: p, method: POST, path: /p, body: {amount: 1}}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tg, _, err := Selection{Config: path, BaseURL: "http://127.0.0.1:9/"}.Load()
	if err != nil || tg.BaseURL != "http://127.0.0.1:9" {
		t.Fatalf("with a base URL given: %v, base %q", err, tg.BaseURL)
	}
	if _, _, err := (Selection{Config: path}).Load(); err == nil || !strings.Contains(err.Error(), "base_url") {
		t.Errorf("with none: %v, want an error naming base_url", err)
	}
}
