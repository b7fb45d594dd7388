package loadreport

import (
	"encoding/json"
	"testing"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/load"
)

// A variant that patches nothing (a duration alone, patch: {}) says so,
// never "(patch )".
func TestInjectedLineNoPatch(t *testing.T) {
	for _, patch := range []string{"", "{}"} {
		r := &load.Summary{Injected: &load.Injected{Operation: "charges", Variant: apispec.VariantSlow, Patch: json.RawMessage(patch)}}
		if got := injectedLine(r); got != "injected: every request is operation charges's variant slow, its body as declared (the variant patches nothing)" {
			t.Errorf("patch %q: %s", patch, got)
		}
	}
}
