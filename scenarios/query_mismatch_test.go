package scenarios_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/scenarios"
)

// queryResource is a small API written here, not the reference: it takes
// another query for another resource. Its records are keyed by principal,
// key and raw query, so the same key with another query executes afresh;
// another body under one (key, query) is 422. Its effects endpoint counts
// a key's executions whatever the query.
type queryResource struct {
	mu      sync.Mutex
	records map[string]queryRecord
	effects map[string]int
	n       int
}

type queryRecord struct {
	body   string
	answer []byte
}

func (s *queryResource) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/effects":
		s.mu.Lock()
		n := s.effects[r.URL.Query().Get("key")]
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"executions":%d}`, n)
		return
	case r.Method != http.MethodPost || r.URL.Path != "/v1/charges":
		w.WriteHeader(http.StatusOK) // the preflight's GET /
		return
	}
	key := strings.Trim(r.Header.Get("Idempotency-Key"), `"`)
	body, _ := io.ReadAll(r.Body)
	if key == "" || !json.Valid(body) {
		http.Error(w, "a key and a JSON body are required", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	id := r.Header.Get("Authorization") + "\n" + key + "\n" + r.URL.RawQuery
	s.mu.Lock()
	defer s.mu.Unlock()
	if rec, ok := s.records[id]; ok {
		if rec.body != string(body) {
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = w.Write([]byte(`{"error":"the key was used with another body"}`))
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(rec.answer)
		return
	}
	s.n++
	s.effects[key]++
	answer := fmt.Appendf(nil, `{"id":"ch_%d"}`, s.n)
	s.records[id] = queryRecord{body: string(body), answer: answer}
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(answer)
}

// queryTarget is a target for a server at url with a body mutation and a
// query mutation.
func queryTarget(url string) *apispec.Target {
	return &apispec.Target{
		BaseURL: url, KeyHeader: "Idempotency-Key", KeySyntax: apispec.SFString, Timeout: 10 * time.Second,
		Principals: []apispec.Principal{
			{Name: "alice", Headers: map[string]string{"Authorization": "Bearer alice"}},
			{Name: "bob", Headers: map[string]string{"Authorization": "Bearer bob"}},
		},
		Operations: []apispec.Operation{{
			Name: "charges", Method: "POST", Path: "/v1/charges?capture=true",
			Body: json.RawMessage(`{"amount":1000}`), IDPointer: "/id",
			Mutations: []apispec.Mutation{
				{Name: "changed-amount", Patch: json.RawMessage(`{"amount":1001}`)},
				{Name: "authorise-only", Query: map[string]string{"capture": "false"}},
			},
		}},
		Oracle: &apispec.Oracle{URL: "/v1/effects?key={key}", Pointer: "/executions"},
	}
}

// TestQueryMismatch: another query under a used key is judged by the
// profile's query_mismatch. A server that takes it for another resource
// (a fresh execution) passes where the profile allows it (either, the
// ietf default, and fresh) and fails where it says reject; the reference,
// which rejects it, passes either and reject and warns under fresh; the
// reference's no-query-fingerprint defect, which replays the first
// query's answer, fails under every setting.
func TestQueryMismatch(t *testing.T) {
	fresh := &queryResource{records: map[string]queryRecord{}, effects: map[string]int{}}
	srv := httptest.NewServer(fresh)
	t.Cleanup(srv.Close)
	demoFor := func(defects ...string) *apispec.Target {
		tg := startDemo(t, defects...)
		tg.Operations = tg.Operations[:1]
		return tg
	}
	rows := []struct {
		name   string
		tg     *apispec.Target
		query  string
		want   scenarios.Status
		phrase string
	}{
		{"fresh server, either", queryTarget(srv.URL), apispec.QueryEither, scenarios.Pass, "executed afresh"},
		{"fresh server, fresh", queryTarget(srv.URL), apispec.QueryFresh, scenarios.Pass, "executed afresh"},
		{"fresh server, reject", queryTarget(srv.URL), apispec.QueryReject, scenarios.Fail, "authorise-only: 2 executions under one key"},
		{"reference, either", demoFor(), apispec.QueryEither, scenarios.Pass, "authorise-only: 422"},
		{"reference, reject", demoFor(), apispec.QueryReject, scenarios.Pass, "authorise-only: 422"},
		{"reference, fresh", demoFor(), apispec.QueryFresh, scenarios.Warn, "query_mismatch: fresh"},
		{"no-query-fingerprint, either", demoFor("no-query-fingerprint"), apispec.QueryEither, scenarios.Fail, "replayed the old response for a request with another query"},
		{"no-query-fingerprint, fresh", demoFor("no-query-fingerprint"), apispec.QueryFresh, scenarios.Fail, "replayed the old response for a request with another query"},
	}
	reps := make([]*scenarios.Report, len(rows))
	errs := make([]error, len(rows))
	concurrently(len(rows), 4, func(i int) {
		p := ietf(t)
		p.QueryMismatch = rows[i].query
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		reps[i], errs[i] = scenarios.Run(ctx, rows[i].tg, p, scenarios.RunOptions{Run: []string{"mismatch/changed-body"}})
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
			if r.Status != row.want || !strings.Contains(r.Observed, row.phrase) {
				t.Errorf("%s: %s, observed %q; want %s naming %q", r.Name(), r.Status, r.Observed, row.want, row.phrase)
			}
		})
	}
}
