package double_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.yaml.in/yaml/v3"

	"github.com/idemcheck/idemcheck/evidence/double"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// payments is the config of most tests: a payment provider.
func payments() double.Config {
	return double.Config{Routes: []double.Route{
		{Name: "payments", Method: "POST", Path: "/v1/payments", Response: double.Response{
			Status: 201, Headers: map[string]string{"X-Provider": "double"}, Body: json.RawMessage(`{"id":"pay_{seq}","status":"succeeded"}`)}},
		{Name: "refunds", Path: "/v1/payments/*/refunds"},
	}}
}

func start(t *testing.T, cfg double.Config) *double.Server {
	t.Helper()
	s, err := double.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

type answer struct {
	status int
	header http.Header
	body   string
	err    error
}

func call(c *http.Client, method, url string, header map[string]string, body string) answer {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return answer{err: err}
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b), err: err}
}

func client(t *testing.T) *http.Client {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func TestRoutes(t *testing.T) {
	s := start(t, payments())
	c := client(t)
	for i, tc := range []struct {
		method, path string
		status       int
		body         string
	}{
		{"POST", "/v1/payments", 201, `{"id":"pay_1","status":"succeeded"}`},
		{"POST", "/v1/payments", 201, `{"id":"pay_2","status":"succeeded"}`}, // {seq} counts per route
		{"GET", "/v1/payments", 404, `{"error":"no route of the double matches this call"}`},
		{"DELETE", "/v1/payments/pay_1/refunds", 200, ``},                                                 // any method, a glob, status defaults to 200
		{"POST", "/v1/payments/a/b/refunds", 404, `{"error":"no route of the double matches this call"}`}, // * stays in a segment
	} {
		a := call(c, tc.method, s.URL()+tc.path, nil, "{}")
		if a.err != nil || a.status != tc.status || a.body != tc.body {
			t.Errorf("%d: %s %s = %d %q %v, want %d %q", i, tc.method, tc.path, a.status, a.body, a.err, tc.status, tc.body)
		}
		if tc.status == 201 && (a.header.Get("X-Provider") != "double" || a.header.Get("Content-Type") != "application/json") {
			t.Errorf("%d: headers %v, want the route's and a JSON Content-Type", i, a.header)
		}
	}
	tot := s.Totals()
	if tot != (double.Totals{Calls: 5, Untokened: 3, Unrouted: 2}) {
		t.Errorf("totals %+v, want 5 calls, 3 untokened, 2 unrouted", tot)
	}
	if n := s.RouteCalls("payments"); n != 2 {
		t.Errorf("RouteCalls(payments) = %d, want 2", n)
	}
	if n := s.Untokened("refunds"); n != 1 {
		t.Errorf("Untokened(refunds) = %d, want 1", n)
	}
}

// TestTokenPlaces: a call belongs to a tracked token wherever it holds
// it, and to an arbitrary tracked string (a forwarded idempotency key).
func TestTokenPlaces(t *testing.T) {
	s := start(t, payments())
	c := client(t)
	tokens := make([]string, 6)
	for i := range tokens {
		tokens[i] = double.NewToken()
	}
	key := "8d6c0b3e-6a8f-4c8e-9e5d-0f1c2a3b4c5d"
	short := "k-42"
	s.Track(append(tokens, key, short)...)
	untracked := double.NewToken()
	cases := []struct {
		name, path string
		header     map[string]string
		body       string
		want       string
	}{
		{"query", "/v1/payments?ref=" + tokens[0], nil, "{}", tokens[0]},
		{"escaped query", "/v1/payments?ref=%69" + tokens[1][1:], nil, "{}", tokens[1]},
		{"header", "/v1/payments", map[string]string{"X-Ref": "order " + tokens[2]}, "{}", tokens[2]},
		{"body", "/v1/payments", nil, `{"amount":1,"metadata":{"ref":"` + tokens[3] + `"}}`, tokens[3]},
		{"forwarded key", "/v1/payments", map[string]string{"Idempotency-Key": key}, "{}", key},
		{"key in body", "/v1/payments", nil, `{"idempotency":"` + key + `"}`, key},
		{"short string", "/v1/payments", nil, `{"k":"` + short + `"}`, short},
		{"untracked token", "/v1/payments", nil, `{"ref":"` + untracked + `"}`, ""},
		{"token in a refund path", "/v1/payments/" + tokens[4] + "/refunds", nil, "", tokens[4]},
	}
	for _, tc := range cases {
		if a := call(c, "POST", s.URL()+tc.path, tc.header, tc.body); a.err != nil || a.status >= 300 {
			t.Fatalf("%s: %d %v", tc.name, a.status, a.err)
		}
		j := s.Journal("")
		if got := j[len(j)-1].Token; got != tc.want {
			t.Errorf("%s: token %q, want %q", tc.name, got, tc.want)
		}
	}
	if n := s.Calls(key, "payments"); n != 2 {
		t.Errorf("Calls(key, payments) = %d, want 2", n)
	}
	if n := s.Calls(tokens[4], "refunds"); n != 1 || s.Calls(tokens[4], "payments") != 0 || s.Calls(tokens[4], "") != 1 {
		t.Errorf("Calls(token 4) refunds %d payments %d, want 1 and 0", n, s.Calls(tokens[4], "payments"))
	}
	if n := s.Calls(tokens[5], ""); n != 0 {
		t.Errorf("Calls(a token never sent) = %d, want 0", n)
	}
	if n := s.Untokened("payments"); n != 1 {
		t.Errorf("Untokened(payments) = %d, want 1 (the untracked token)", n)
	}
	// Untracked: later calls are untokened.
	s.Untrack(key)
	call(c, "POST", s.URL()+"/v1/payments", map[string]string{"Idempotency-Key": key}, "{}")
	if n := s.Untokened("payments"); n != 2 {
		t.Errorf("after Untrack: Untokened = %d, want 2", n)
	}
}

// TestBodyScanBound: a token past MaxScan bytes of body is not looked for.
func TestBodyScanBound(t *testing.T) {
	s := start(t, payments())
	c := client(t)
	tok, late := double.NewToken(), double.NewToken()
	s.Track(tok, late)
	pad := strings.Repeat(" ", double.MaxScan-len(tok)-20)
	call(c, "POST", s.URL()+"/v1/payments", nil, `{"a":`+pad+`"`+tok+`"}`)
	call(c, "POST", s.URL()+"/v1/payments", nil, `{"a":`+pad+strings.Repeat(" ", 100)+`"`+late+`"}`)
	if s.Calls(tok, "payments") != 1 || s.Calls(late, "payments") != 0 {
		t.Errorf("within the bound %d (want 1), past it %d (want 0)", s.Calls(tok, "payments"), s.Calls(late, "payments"))
	}
}

func TestBehave(t *testing.T) {
	s := start(t, payments())
	c := client(t)
	slow, declined, other := double.NewToken(), double.NewToken(), double.NewToken()
	s.Track(other)
	if err := s.Behave(slow, "payments", double.Behaviour{Delay: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := s.Behave(declined, "payments", double.Behaviour{Status: 402, Body: []byte(`{"error":"card_declined"}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Behave(slow, "nope", double.Behaviour{}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("Behave on an unknown route: %v, want an error naming it", err)
	}
	begin := time.Now()
	a := call(c, "POST", s.URL()+"/v1/payments", map[string]string{"X-Ref": slow}, "{}")
	if took := time.Since(begin); a.status != 201 || took < 300*time.Millisecond {
		t.Errorf("slow token: %d after %s, want 201 after at least 300ms", a.status, took)
	}
	a = call(c, "POST", s.URL()+"/v1/payments", map[string]string{"X-Ref": declined}, "{}")
	if a.status != 402 || a.body != `{"error":"card_declined"}` {
		t.Errorf("declined token: %d %s", a.status, a.body)
	}
	a = call(c, "POST", s.URL()+"/v1/payments", map[string]string{"X-Ref": other}, "{}")
	if j := s.Journal(other); a.status != 201 || len(j) != 1 || j[0].Delay != 0 {
		t.Errorf("another token: %d, journal %+v, want the route's answer without delay", a.status, j)
	}
	// Another route of a token with a per-route behaviour answers normally.
	if a = call(c, "POST", s.URL()+"/v1/payments/x/refunds", map[string]string{"X-Ref": declined}, ""); a.status != 200 {
		t.Errorf("declined token on refunds: %d, want 200", a.status)
	}
	j := s.Journal(slow)
	if len(j) != 1 || j[0].Delay != 300*time.Millisecond || j[0].Status != 201 || j[0].Route != "payments" {
		t.Errorf("journal of the slow token: %+v", j)
	}
}

// TestHang: a hung call ends when its client gives up, and Close cuts
// the ones still waiting at once.
func TestHang(t *testing.T) {
	s, err := double.Start(context.Background(), payments())
	if err != nil {
		t.Fatal(err)
	}
	tok := double.NewToken()
	if err := s.Behave(tok, "", double.Behaviour{Hang: true}); err != nil {
		t.Fatal(err)
	}
	impatient := &http.Client{Timeout: 200 * time.Millisecond, Transport: &http.Transport{}}
	defer impatient.CloseIdleConnections()
	if a := call(impatient, "POST", s.URL()+"/v1/payments", map[string]string{"X-Ref": tok}, "{}"); a.err == nil {
		t.Errorf("hung call answered %d", a.status)
	}
	patient := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{}}
	defer patient.CloseIdleConnections()
	done := make(chan answer)
	go func() { done <- call(patient, "POST", s.URL()+"/v1/payments", map[string]string{"X-Ref": tok}, "{}") }()
	deadline := time.Now().Add(5 * time.Second)
	for s.Calls(tok, "payments") < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	a := <-done
	if took := time.Since(begin); a.err == nil || took > 2*time.Second {
		t.Errorf("Close with a hung call: the call ended with %d %v after %s, want a cut connection at once", a.status, a.err, took)
	}
	if j := s.Journal(tok); len(j) != 2 || !j[0].Hung || j[0].Status != 0 {
		t.Errorf("journal: %+v, want two hung calls", j)
	}
}

func TestJournalCap(t *testing.T) {
	cfg := payments()
	cfg.JournalCap = 5
	s := start(t, cfg)
	c := client(t)
	tok := double.NewToken()
	s.Track(tok)
	for i := range 12 {
		h := map[string]string{}
		if i%2 == 0 {
			h["X-Ref"] = tok
		}
		if a := call(c, "POST", s.URL()+"/v1/payments", h, "{}"); a.err != nil {
			t.Fatal(a.err)
		}
	}
	if n := s.Calls(tok, "payments"); n != 6 {
		t.Errorf("Calls = %d, want 6 (counts outlive the cap)", n)
	}
	if j := s.Journal(""); len(j) != 5 {
		t.Errorf("journal keeps %d calls, want 5", len(j))
	}
	if j := s.Journal(tok); len(j) != 2 || !j[0].Time.Before(j[1].Time) {
		t.Errorf("the token's kept calls: %+v, want the last two, oldest first", j)
	}
	if tot := s.Totals(); tot.Calls != 12 || tot.Dropped != 7 || tot.Untokened != 6 {
		t.Errorf("totals %+v", tot)
	}
}

// TestConcurrent: many clients at once, counts exact (run under -race).
func TestConcurrent(t *testing.T) {
	s := start(t, payments())
	const tokens, per = 40, 25
	toks := make([]string, tokens)
	for i := range toks {
		toks[i] = double.NewToken()
		if i%2 == 1 {
			toks[i] = fmt.Sprintf("key-%d-%s", i, toks[i][len(double.Prefix):]) // not token-shaped
		}
	}
	s.Track(toks...)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer c.CloseIdleConnections()
	var wg sync.WaitGroup
	errs := make(chan error, tokens*per)
	for i := range tokens {
		wg.Go(func() {
			for j := range per {
				body := fmt.Sprintf(`{"ref":%q}`, toks[i])
				if j%5 == 0 {
					body = "{}" // untokened
				}
				if a := call(c, "POST", s.URL()+"/v1/payments", nil, body); a.err != nil || a.status != 201 {
					errs <- fmt.Errorf("%d %v", a.status, a.err)
				}
			}
		})
		wg.Go(func() { _ = s.Journal(toks[i]) }) // readers beside writers
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, tok := range toks {
		if n := s.Calls(tok, "payments"); n != per-per/5 {
			t.Fatalf("Calls(%s) = %d, want %d", tok, n, per-per/5)
		}
	}
	if n := s.Untokened("payments"); n != tokens*per/5 {
		t.Errorf("Untokened = %d, want %d", n, tokens*per/5)
	}
	if n := s.RouteCalls("payments"); n != tokens*per {
		t.Errorf("RouteCalls = %d, want %d", n, tokens*per)
	}
}

func TestPortInUse(t *testing.T) {
	s := start(t, payments())
	cfg := payments()
	cfg.Listen = s.Addr()
	_, err := double.Start(context.Background(), cfg)
	if err == nil {
		t.Fatal("a second double on the same address started")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "downstream.listen "+s.Addr()+": ") || !strings.Contains(msg, "in use") || strings.Contains(msg, "\n") {
		t.Errorf("error %q: want one line naming downstream.listen and the address", msg)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		yaml, want string
	}{
		{`routes: []`, "downstream.routes: at least one route"},
		{`routes: [{name: a, path: /x}, {name: a, path: /y}]`, `downstream.routes[1].name "a"`},
		{`routes: [{name: a, path: x}]`, `downstream.routes[0].path "x"`},
		{`routes: [{name: a, path: "/[x"}]`, `downstream.routes[0].path "/[x"`},
		{`routes: [{name: a, path: /x, method: FETCH}]`, `downstream.routes[0].method "FETCH"`},
		{`routes: [{name: a, path: /x, response: {status: 99}}]`, `downstream.routes[0].response.status 99`},
		{`routes: [{name: a, path: /x, response: {delay: -1s}}]`, `downstream.routes[0].response.delay -1s`},
		{`{listen: nope, routes: [{name: a, path: /x}]}`, `downstream.listen "nope"`},
		{`{journal_cap: -1, routes: [{name: a, path: /x}]}`, `downstream.journal_cap -1`},
		{`routes: [{name: a, path: /x, response: {status: 201, body: {id: "p_{seq}", n: [1, 2]}, delay: 20ms}}]`, ""},
	} {
		var cfg double.Config
		if err := yaml.Unmarshal([]byte(tc.yaml), &cfg); err != nil {
			t.Fatalf("%s: %v", tc.yaml, err)
		}
		err := cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.yaml, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q...", tc.yaml, err, tc.want)
		}
		if tc.want == "" && (string(cfg.Routes[0].Response.Body) != `{"id":"p_{seq}","n":[1,2]}` || cfg.Routes[0].Response.Delay != 20*time.Millisecond) {
			t.Errorf("decoded %+v", cfg.Routes[0].Response)
		}
	}
}

func TestJournalEndpoint(t *testing.T) {
	s := start(t, payments())
	c := client(t)
	tok := double.NewToken()
	s.Track(tok)
	call(c, "POST", s.URL()+"/v1/payments", nil, `{"ref":"`+tok+`"}`)
	call(c, "POST", s.URL()+"/v1/payments", nil, `{}`)
	a := call(c, "GET", s.URL()+double.JournalPath+"?token="+tok, nil, "")
	var snap double.Snapshot
	if err := json.Unmarshal([]byte(a.body), &snap); err != nil || a.status != 200 {
		t.Fatalf("%d %s %v", a.status, a.body, err)
	}
	if snap.Totals.Calls != 2 || len(snap.Calls) != 1 || snap.Calls[0].Token != tok || snap.Tokens[tok]["payments"] != 1 ||
		len(snap.Routes) != 2 || snap.Routes[0] != (double.RouteCount{Name: "payments", Calls: 2, Untokened: 1}) {
		t.Errorf("snapshot %+v", snap)
	}
	if a := call(c, "POST", s.URL()+double.JournalPath, nil, ""); a.status != 405 {
		t.Errorf("POST journal: %d, want 405", a.status)
	}
	if s.Totals().Calls != 2 {
		t.Errorf("admin calls were journaled: %+v", s.Totals())
	}
}

func TestNewToken(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		tok := double.NewToken()
		if len(tok) != double.TokenLen || !strings.HasPrefix(tok, double.Prefix) || seen[tok] {
			t.Fatalf("token %q: want unique, %d long, starting with %s", tok, double.TokenLen, double.Prefix)
		}
		seen[tok] = true
	}
}
