package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/scenarios"
)

// wedgedHTTP serves the reference behind a wrapper that answers 500 to
// every POST of a key it has seen answered 2xx: a server that loses its
// records after the commit.
func wedgedHTTP(t *testing.T) string {
	var mu sync.Mutex
	done := map[string]bool{}
	app := demotest.App(t, demo.Options{})
	wedged := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		mu.Lock()
		seen := done[key]
		mu.Unlock()
		if r.Method == http.MethodPost && key != "" && seen {
			http.Error(w, "record unreadable", http.StatusInternalServerError)
			return
		}
		rec := httptest.NewRecorder()
		app.ServeHTTP(rec, r)
		if r.Method == http.MethodPost && rec.Code >= 200 && rec.Code < 300 {
			mu.Lock()
			done[key] = true
			mu.Unlock()
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
	return demotest.ServeOn(t, wedged, "127.0.0.1:0")
}

// wedgedGRPC is wedgedHTTP for the reference gRPC service: an interceptor
// answers INTERNAL to every call whose request_id it has seen answered
// OK. It returns the config of CreatePayment on it.
func wedgedGRPC(t *testing.T) string {
	var mu sync.Mutex
	done := map[string]bool{}
	keyOf := func(req any) string {
		m, ok := req.(proto.Message)
		if !ok {
			return ""
		}
		r := m.ProtoReflect()
		if fd := r.Descriptor().Fields().ByName("request_id"); fd != nil {
			return r.Get(fd).String()
		}
		return ""
	}
	wedge := grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		key := keyOf(req)
		mu.Lock()
		seen := done[key]
		mu.Unlock()
		if key != "" && seen {
			return nil, status.Error(codes.Internal, "record unreadable")
		}
		resp, err := h(ctx, req)
		if err == nil && key != "" {
			mu.Lock()
			done[key] = true
			mu.Unlock()
		}
		return resp, err
	})
	httpBase, g := demotest.GRPCServer(t, demo.Options{}, nil, wedge)
	return writeTemp(t, "grpc-wedged.yaml", demotest.GRPCConfig(httpBase, demotest.ServeGRPCServer(t, g)))
}

// TestChaosWording: a server that answers its retries after the commit
// with a server error loses the key (rule lost, exit 1), and every face
// of the chaos report names that answer as the target's protocol does:
// over HTTP the status ("with status 500", "upstream statuses="), over
// gRPC the code with the status it maps to ("with INTERNAL (500)",
// "upstream codes=", JSON upstream_codes, the page's attempts), never
// the bare HTTP status.
func TestChaosWording(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sel       func(t *testing.T) scenarios.Selection
		want      []string // in the console, the JSON and the page
		wantJSON  string
		wantPage  string
		forbidden []string
	}{
		{"HTTP", func(t *testing.T) scenarios.Selection { return scenarios.Selection{Target: wedgedHTTP(t)} },
			[]string{"answered a retry sent after the commit with status 500", "upstream statuses=", "(a final non-2xx answer"}, `"upstream_statuses"`, "client unknown", []string{"upstream codes=", "INTERNAL"}},
		{"gRPC", func(t *testing.T) scenarios.Selection { return scenarios.Selection{Config: wedgedGRPC(t)} },
			[]string{"answered a retry sent after the commit with INTERNAL (500)", "upstream codes=", "(a final answer other than OK"}, `"upstream_codes": [`, "INTERNAL (500)", []string{"upstream statuses=", "with status 500", "2xx"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			jsonPath, htmlPath := filepath.Join(dir, "c.json"), filepath.Join(dir, "c.html")
			var out bytes.Buffer
			f := chaosFlags{sel: tc.sel(t), faults: []string{"drop-response:attempt=1", "drop-response:0.3"}, jsonPath: jsonPath, htmlPath: htmlPath,
				run: chaosRun{ops: 40, concurrency: 8, seed: 3, maxAttempts: 3, deadline: time.Minute}}
			err := runChaos(t.Context(), &out, f)
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != exitFail {
				t.Fatalf("%v: want exit 1 (lost by the server's errors)\n%s", err, out.String())
			}
			console := out.String()
			for _, w := range tc.want {
				if !strings.Contains(console, w) {
					t.Errorf("console lacks %q:\n%s", w, console)
				}
			}
			for _, w := range tc.forbidden {
				if strings.Contains(console, w) {
					t.Errorf("console says %q over %s:\n%s", w, tc.name, console)
				}
			}
			js, err := os.ReadFile(jsonPath)
			if err != nil || !bytes.Contains(js, []byte(tc.wantJSON)) || !bytes.Contains(js, []byte(tc.want[0])) {
				t.Errorf("--json (%v) lacks %s or %q", err, tc.wantJSON, tc.want[0])
			}
			page, err := os.ReadFile(htmlPath)
			if err != nil || !bytes.Contains(page, []byte(tc.wantPage)) || !bytes.Contains(page, []byte(tc.want[0])) {
				t.Errorf("--html (%v) lacks %q or %q", err, tc.wantPage, tc.want[0])
			}
		})
	}
}
