package idemchecktest_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/idemchecktest"
)

func init() {
	// Every request answers 404: the reference contract's operations at
	// the wrong place.
	inner["not-found"] = func(t *testing.T) {
		idemchecktest.Handler(t, http.NotFoundHandler(), idemchecktest.Config{})
	}
}

// TestHandlerRefusesBrokenSetup: a handler whose normal request fails
// fails the test once, naming each operation's status and body, and no
// case is judged on it (every case's subtest is skipped as not run).
func TestHandlerRefusesBrokenSetup(t *testing.T) {
	out, failed := runInner(t, "not-found", time.Minute)
	if !failed {
		t.Fatalf("the test passed on a handler that answers 404 to everything:\n%s", out)
	}
	line := regexp.MustCompile(`charges: POST http://127\.0\.0\.1:\d+/v1/charges answered 404 404 page not found`)
	if !line.MatchString(out) || strings.Count(out, "the normal request does not succeed") != 1 {
		t.Errorf("want the error once, naming charges' 404:\n%s", out)
	}
	if strings.Contains(out, "--- PASS: TestInner/") || strings.Contains(out, "--- FAIL: TestInner/") {
		t.Errorf("a case was judged on a broken setup:\n%s", out)
	}
}
