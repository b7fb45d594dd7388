package load_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/load"
)

// TestReplayOneByteDiffers: the replay check compares body sums, and
// vegeta keeps only a short prefix of each body; a replay that differs
// from its original in a single byte, wherever it is, is still a
// replay-differs, live and when `load report` re-checks the results file;
// also when answers carry more header fields than the sums fit beside
// without growing the map (withSums copies them into a recycled one).
func TestReplayOneByteDiffers(t *testing.T) {
	const size = 4096
	cases := []struct {
		name   string
		at     int // offset of the byte replays change; -1: faithful replays
		fields int // extra header fields on every answer
	}{
		{"faithful replays are clean", -1, 0},
		{"first byte: inside the quoted evidence", 0, 0},
		{"middle byte: past the prefix vegeta keeps", size / 2, 0},
		{"last byte", size - 1, 0},
		{"faithful replays, many header fields", -1, 12},
		{"middle byte, many header fields", size / 2, 12},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg := oneByteServer(t, size, tc.at, tc.fields)
			file := filepath.Join(t.TempDir(), "results.gob")
			for _, withFile := range []bool{false, true} {
				opts := []load.Option{load.WithMode(load.ModeHit), load.WithPool(4),
					load.WithPlan(plan(t, "100@500ms")), load.WithWorkers(2, 8)}
				if withFile { // whole bodies kept: the other branch of the check
					f, err := os.Create(file)
					if err != nil {
						t.Fatal(err)
					}
					defer f.Close()
					opts = append(opts, load.WithResults(f))
				}
				rep, err := load.Run(t.Context(), tg, opts...)
				if err != nil {
					t.Fatal(err)
				}
				checkOneByte(t, "live", rep, tc.at)
				if hit := rep.Paths[load.Hit]; hit == nil || hit.Requests == 0 {
					t.Fatalf("no hits measured: %+v", rep.Paths)
				}
			}
			rep, err := load.ReadResults([]string{file}, 0, 0, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			checkOneByte(t, "load report", rep, tc.at)
		})
	}
}

func checkOneByte(t *testing.T, how string, rep *load.Summary, at int) {
	t.Helper()
	switch {
	case at < 0 && rep.Violations != 0:
		t.Errorf("%s: faithful replays flagged: %d, e.g. %+v", how, rep.Violations, rep.ViolationList[0])
	case at >= 0 && (rep.Violations == 0 || rep.ViolationList[0].Kind != load.ReplayDiffers):
		t.Errorf("%s: a replay differing in byte %d was not caught: %d violations", how, at, rep.Violations)
	case at >= 0 && !strings.Contains(rep.ViolationList[0].Detail, "replay got 201"):
		t.Errorf("%s: detail quotes no evidence: %s", how, rep.ViolationList[0].Detail)
	}
}

// oneByteServer answers the first request of each key with size bytes
// and every later one with the same bytes but the one at offset at
// changed (at < 0: none), each with fields extra header fields; keyless
// requests (the preflight) get 200.
func oneByteServer(t *testing.T, size, at, fields int) *apispec.Target {
	body := bytes.Repeat([]byte("a"), size)
	changed := bytes.Clone(body)
	if at >= 0 {
		changed[at] = 'b'
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if key == "" {
			return
		}
		mu.Lock()
		replay := seen[key]
		seen[key] = true
		mu.Unlock()
		for i := range fields {
			w.Header().Set(fmt.Sprintf("X-Field-%d", i), "v")
		}
		w.WriteHeader(http.StatusCreated)
		if replay {
			_, _ = w.Write(changed)
		} else {
			_, _ = w.Write(body)
		}
	}))
	t.Cleanup(srv.Close)
	tg, err := apispec.FromURL(srv.URL, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	tg.Oracle = nil // the test server keeps no execution count
	return tg
}

// TestReplayCompareJSON: load judges replays and executions by the rule
// `run` uses. Under replay_compare json, replays that are the same JSON
// document re-serialised (member order, whitespace) are replays, in hit
// and contention mode alike (before: 300 replay-differs, and "second
// execution: the handler ran at least 2 times"); a server that really
// re-executes (a new created id each time) is still caught; under bytes
// the respelt replays differ, but their one created id is one execution.
func TestReplayCompareJSON(t *testing.T) {
	ietf, err := apispec.ProfileByName("ietf")
	if err != nil {
		t.Fatal(err)
	}
	byBytes := *ietf
	byBytes.ReplayCompare = apispec.CompareBytes
	cases := []struct {
		name      string
		reexecute bool
		profile   *apispec.Profile
		mode      load.Mode
		want      string // the violation kind expected; "" none
	}{
		{"json, respelt replays of hits", false, ietf, load.ModeHit, ""},
		{"json, respelt replays under contention", false, ietf, load.ModeContention, ""},
		{"json, hits re-executed", true, ietf, load.ModeHit, load.SecondExecution},
		{"json, contention re-executed", true, ietf, load.ModeContention, load.SecondExecution},
		{"bytes, respelt replays of hits differ", false, &byBytes, load.ModeHit, load.ReplayDiffers},
		{"bytes, respelt under contention: one id, one execution", false, &byBytes, load.ModeContention, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg := respeltServer(t, tc.reexecute)
			rep, err := load.Run(t.Context(), tg, load.WithMode(tc.mode), load.WithPool(4), load.WithHotKeys(2),
				load.WithPlan(plan(t, "100@500ms")), load.WithWorkers(2, 8), load.WithProfile(tc.profile))
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[string]int{}
			for _, v := range rep.ViolationList {
				kinds[v.Kind]++
			}
			switch {
			case rep.Judged == 0:
				t.Fatalf("no answer judged: %d not judged (%v)", rep.NotJudgedCount(), rep.NotJudged)
			case tc.want == "" && rep.Violations != 0:
				t.Fatalf("%d violations of %d judged, want none: %+v", rep.Violations, rep.Judged, rep.ViolationList)
			case tc.want != "" && kinds[tc.want] == 0:
				t.Fatalf("violations %v (%d of %d judged), want %s: %+v", kinds, rep.Violations, rep.Judged, tc.want, rep.ViolationList)
			}
		})
	}
}

// respeltServer creates a resource per key and answers every later
// request of the key with the same JSON document spelt another way
// (members reversed, whitespace); with reexecute, every request creates
// a new resource instead. Keyless requests (the preflight) get 200.
func respeltServer(t *testing.T, reexecute bool) *apispec.Target {
	var mu sync.Mutex
	ids := map[string]string{}
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if key == "" {
			return
		}
		mu.Lock()
		id, replay := ids[key]
		if !replay || reexecute {
			n++
			id = fmt.Sprintf("ch_%d", n)
			ids[key] = id
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		if replay {
			fmt.Fprintf(w, "{\n  \"status\" : \"succeeded\",\n  \"amount\" : 1000 , \"id\" : %q\n}\n", id)
		} else {
			fmt.Fprintf(w, `{"id":%q,"amount":1000,"status":"succeeded"}`, id)
		}
	}))
	t.Cleanup(srv.Close)
	tg, err := apispec.FromURL(srv.URL, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	tg.Oracle = nil // the test server keeps no execution count
	return tg
}
