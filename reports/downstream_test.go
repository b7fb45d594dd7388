package reports

import (
	"bytes"
	"encoding/json"
	"html"
	"strings"
	"testing"
)

// TestDownstreamEvidence: a result's downstream double calls show beside
// its verdict in every report that shows evidence.
func TestDownstreamEvidence(t *testing.T) {
	rep := sample(false)
	const line = "downstream payments: 2 calls for key …d97a9b5b, at +4 ms (200) and +1,212 ms (200)"
	rep.Results[2].Downstream = []string{line}
	for name, out := range map[string]string{
		"console":  render(t, func(b *bytes.Buffer) error { return Console(b, rep, ConsoleOptions{}) }),
		"markdown": render(t, func(b *bytes.Buffer) error { return Markdown(b, rep) }),
		"junit":    render(t, func(b *bytes.Buffer) error { return JUnit(b, rep) }),
		"html":     html.UnescapeString(render(t, func(b *bytes.Buffer) error { return HTML(b, rep) })),
	} {
		if !strings.Contains(out, line) {
			t.Errorf("%s report lacks the downstream line", name)
		}
	}
	var doc struct {
		Results []struct {
			Name       string   `json:"name"`
			Downstream []string `json:"downstream"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(render(t, func(b *bytes.Buffer) error { return JSON(b, rep) })), &doc); err != nil {
		t.Fatal(err)
	}
	for _, r := range doc.Results {
		if want := r.Name == rep.Results[2].Name(); want != (len(r.Downstream) == 1 && r.Downstream[0] == line) {
			t.Errorf("JSON %s: downstream %q", r.Name, r.Downstream)
		}
	}
}
