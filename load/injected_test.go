package load

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
)

// TestInjected: what a run merges into its bodies is recorded, and the
// delay it asks of an execution only where the config says what the
// patched member means (the slow variant's one numeric knob, or a
// variant's declared duration), never guessed.
func TestInjected(t *testing.T) {
	ref, err := apispec.FromURL("http://127.0.0.1:9", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	op := ref.Operations[0]
	noSlow := op
	noSlow.Variants = nil
	for _, tc := range []struct {
		rule    string
		op      apispec.Operation
		variant string
		patch   string
		want    time.Duration
	}{
		{"a body patch setting the slow variant's knob asks its share of the declared duration", op, "", `{"delay_ms":20}`, 20 * time.Millisecond},
		{"a variant asks its declared duration", op, apispec.VariantSlow, "", apispec.ReferenceSlow},
		{"a patch of another member asks nothing known", op, "", `{"amount":5}`, 0},
		{"a knob that is not a number asks nothing known", op, "", `{"delay_ms":"20"}`, 0},
		{"without a slow variant the knob is unknown", noSlow, "", `{"delay_ms":20}`, 0},
	} {
		var patch json.RawMessage
		if tc.patch != "" {
			patch = json.RawMessage(tc.patch)
		}
		in := injected(&tc.op, tc.variant, tc.op.Variants[tc.variant], patch)
		if in == nil || in.Operation != "charges" || string(in.BodyPatch) != tc.patch || in.Variant != tc.variant {
			t.Errorf("rule: %s: recorded %+v", tc.rule, in)
			continue
		}
		if got := time.Duration(in.ExecutionDelayMs * float64(time.Millisecond)); got != tc.want || (got > 0) != (in.DelayBasis != "") {
			t.Errorf("rule: %s: delay %s (basis %q), want %s", tc.rule, got, in.DelayBasis, tc.want)
		}
	}
	if in := injected(&op, "", apispec.Variant{}, nil); in != nil {
		t.Errorf("rule: a run sending the declared body injects nothing, got %+v", in)
	}
}
