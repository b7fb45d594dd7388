package scenarios

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/wire"
)

// FuzzProblemShape feeds arbitrary responses to the problem+json reader.
// Property: a response judged a problem document really is one: the
// problem media type, a body that is one JSON object with non-empty string
// type and title, and a status member (if any) equal to the HTTP status.
func FuzzProblemShape(f *testing.F) {
	for _, s := range []struct {
		ct, body string
		status   int
	}{
		{"application/problem+json", `{"type":"https://e/x","title":"T","status":409}`, 409},
		{"application/problem+json; charset=utf-8", `{"type":"about:blank","title":"T"}`, 400},
		{"application/problem+json", `{"type":"x","title":"T","status":"409"}`, 409},
		{"application/problem+json", `{"type":"x","title":"T","status":409.0}`, 409},
		{"application/problem+json", `{"type":"x","title":"T"}}`, 422},
		{"application/problem+json", `{"type":"x","title":""}`, 422},
		{"application/problem+json", `[{"type":"x","title":"T"}]`, 422},
		{"application/json", `{"type":"x","title":"T"}`, 422},
		{"APPLICATION/PROBLEM+JSON", `{"type":"x","title":"T"}`, 400},
		{"application/problem+json", ``, 400},
	} {
		f.Add(s.ct, []byte(s.body), s.status)
	}
	f.Fuzz(func(t *testing.T, ct string, body []byte, status int) {
		r := wire.Resp{Status: status, Header: http.Header{"Content-Type": {ct}}, Body: body}
		ok, how := problemShape(r)
		if !ok {
			return
		}
		if !strings.HasPrefix(strings.ToLower(ct), "application/problem+json") {
			t.Fatalf("Content-Type %q judged problem+json (%s)", ct, how)
		}
		if !json.Valid(body) {
			t.Fatalf("invalid JSON body %q judged a problem document", body)
		}
		var doc map[string]any
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("body %q judged a problem document is not an object: %v", body, err)
		}
		for _, m := range []string{"type", "title"} {
			if s, _ := doc[m].(string); s == "" {
				t.Fatalf("body %q judged a problem document lacks %s", body, m)
			}
		}
		if st, present := doc["status"]; present {
			if n, isNum := st.(float64); !isNum || int(n) != status || n != float64(int(n)) {
				t.Fatalf("body %q with status member %v judged equal to HTTP %d", body, st, status)
			}
		}
	})
}
