package chaos_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/wire"
)

func TestControlAPI(t *testing.T) {
	up := &counter{}
	front, p, _ := startProxy(t, up)
	ctl := httptest.NewServer(chaos.Control(p))
	defer ctl.Close()
	c := wire.NewClient(5 * time.Second)
	defer c.CloseIdleConnections()
	call := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, ctl.URL+path, strings.NewReader(body))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	steps := []struct {
		method, path, body string
		status             int
		has                string
	}{
		{"POST", "/faults", `{"spec":"status:code=503"}`, 201, `"kind":"status"`},
		{"POST", "/faults", "drop-response:attempt=9", 201, `"id":"2"`},
		{"POST", "/faults", "drop-response:p=2", 400, "want 0..1"},
		{"POST", "/faults", `{"spec":"status","extra":1}`, 400, "unknown field"},
		{"GET", "/faults", "", 200, `"spec":"drop-response:attempt=9"`},
		{"DELETE", "/faults/42", "", 404, "no fault with id 42"},
	}
	for _, s := range steps {
		code, body := call(s.method, s.path, s.body)
		if code != s.status || !strings.Contains(body, s.has) {
			t.Errorf("%s %s %s: %d %s, want %d containing %s", s.method, s.path, s.body, code, body, s.status, s.has)
		}
	}
	// The status rule is live: the next request gets the injected 503.
	resp, _, err := post(t, c, front.URL, "k", "{}")
	if err != nil || resp.StatusCode != 503 {
		t.Fatalf("with status rule: %v %v, want 503", resp, err)
	}
	if code, _ := call("DELETE", "/faults/1", ""); code != 204 {
		t.Errorf("DELETE /faults/1: %d, want 204", code)
	}
	if resp, _, err := post(t, c, front.URL, "k2", "{}"); err != nil || resp.StatusCode != 201 {
		t.Fatalf("after removal: %v %v, want 201", resp, err)
	}
	_, body := call("GET", "/counters", "")
	var counters chaos.Counters
	if err := json.Unmarshal([]byte(body), &counters); err != nil || counters.Requests != 2 || counters.Faults["status"] != 1 {
		t.Errorf("counters %s: want 2 requests, 1 status fault", body)
	}
	if code, _ := call("POST", "/reset", ""); code != 204 || len(p.Rules()) != 0 || p.Counters().Requests != 0 {
		t.Errorf("reset: %d, rules %v, counters %+v", code, p.Rules(), p.Counters())
	}
}
