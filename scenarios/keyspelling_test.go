package scenarios_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/rawspelling"
	"github.com/idemcheck/idemcheck/scenarios"
)

// TestKeyFieldSpelling: replay/key-field-spelling against a server that
// reads field names as they were sent (internal/rawspelling, a raw TCP
// server, not net/http, which canonicalises them): its correct build
// passes, its build that honours only the exact spelling Idempotency-Key
// fails, naming the cause; so does the reference's exact-key-spelling
// defect, and the correct reference passes.
func TestKeyFieldSpelling(t *testing.T) {
	raw := func(exact bool) *apispec.Target {
		srv, err := rawspelling.Start(exact)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Close() })
		return &apispec.Target{
			BaseURL: srv.URL, KeyHeader: "Idempotency-Key", KeySyntax: apispec.SFString, Timeout: 10 * time.Second,
			Principals: []apispec.Principal{
				{Name: "alice", Headers: map[string]string{"Authorization": "Bearer alice"}},
				{Name: "bob", Headers: map[string]string{"Authorization": "Bearer bob"}},
			},
			Operations: []apispec.Operation{{Name: "charges", Method: "POST", Path: "/v1/charges", Body: json.RawMessage(`{"delay_ms":0}`), IDPointer: "/id"}},
			Oracle:     &apispec.Oracle{URL: "/v1/effects?key={key}", Pointer: "/executions"},
		}
	}
	refDemo := func(defects ...string) *apispec.Target {
		tg := startDemo(t, defects...)
		tg.Operations = tg.Operations[:1]
		return tg
	}
	rows := []struct {
		name string
		tg   *apispec.Target
		want scenarios.Status
	}{
		{"rawspelling correct", raw(false), scenarios.Pass},
		{"rawspelling exact spelling", raw(true), scenarios.Fail},
		{"reference", refDemo(), scenarios.Pass},
		{"reference exact-key-spelling", refDemo("exact-key-spelling"), scenarios.Fail},
	}
	reps := make([]*scenarios.Report, len(rows))
	errs := make([]error, len(rows))
	concurrently(len(rows), len(rows), func(i int) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		reps[i], errs[i] = scenarios.Run(ctx, rows[i].tg, referenceProfile(t), scenarios.RunOptions{Run: []string{"replay/key-field-spelling"}})
	})
	for i, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if len(reps[i].Results) != 1 {
				t.Fatalf("%d results, want 1", len(reps[i].Results))
			}
			r := reps[i].Results[0]
			t.Logf("%s: %s", r.Status, r.Observed)
			if r.Status != row.want {
				t.Errorf("%s: %s, observed %q; want %s", r.Name(), r.Status, r.Observed, row.want)
			}
			if row.want == scenarios.Fail && !strings.Contains(r.Observed, "the key field is read by its exact spelling") {
				t.Errorf("the failure does not name its cause: %q", r.Observed)
			}
			// The names went on the wire as spelled (over HTTP/1.1).
			var names []string
			for _, x := range r.Exchanges {
				for k := range x.Request.Header {
					if strings.EqualFold(k, "Idempotency-Key") {
						names = append(names, k)
					}
				}
			}
			if len(names) < 2 || names[0] != "idempotency-key" || names[1] != "IDEMPOTENCY-KEY" {
				t.Errorf("key field names sent %v, want idempotency-key then IDEMPOTENCY-KEY", names)
			}
		})
	}
}
