package load

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
)

// Injected is what a run changed in every request it sent: the variant
// and body patch merged into the operation's body, and the delay they ask
// of each execution. A latency read off the report is then not mistaken
// for the server's own (the demo's 20 ms misses are its --body-patch).
type Injected struct {
	Operation string          `json:"operation"`
	Variant   string          `json:"variant,omitempty"`
	Patch     json.RawMessage `json:"variant_patch,omitempty"` // the variant's merge patch
	BodyPatch json.RawMessage `json:"body_patch,omitempty"`    // --body-patch
	// ExecutionDelayMs is the delay the patches ask of each execution:
	// the variant's declared duration, or a body patch that sets the
	// slow variant's one numeric member, scaled by the slow variant's
	// declared duration (see injectedDelay). 0: none known.
	ExecutionDelayMs float64 `json:"execution_delay_ms,omitempty"`
	// DelayBasis says where ExecutionDelayMs comes from.
	DelayBasis string `json:"delay_basis,omitempty"`
}

// injected records what buildRequest merged into the body (nil when the
// run sends the operation's body as declared).
func injected(op *apispec.Operation, variant string, v apispec.Variant, patch json.RawMessage) *Injected {
	if variant == "" && patch == nil {
		return nil
	}
	in := &Injected{Operation: op.Name, Variant: variant, BodyPatch: patch}
	if variant != "" {
		in.Patch = v.Patch
		if v.Duration > 0 {
			in.ExecutionDelayMs = ms(v.Duration.Microseconds())
			in.DelayBasis = fmt.Sprintf("the duration variant %s declares", variant)
		}
	}
	if d, basis := injectedDelay(op, patch); d > 0 {
		in.ExecutionDelayMs, in.DelayBasis = ms(d.Microseconds()), basis
	}
	return in
}

// injectedDelay is the delay a body patch asks of each execution when it
// sets the member the slow variant uses as its knob: a slow variant whose
// patch is one number (the reference's {"delay_ms":1500}, duration 1.5s)
// takes patch/knob of its duration. Anything else: unknown (0).
func injectedDelay(op *apispec.Operation, patch json.RawMessage) (time.Duration, string) {
	slow, ok := op.Variants[apispec.VariantSlow]
	if !ok || slow.Duration <= 0 || patch == nil {
		return 0, ""
	}
	var knob, set map[string]json.RawMessage
	if json.Unmarshal(slow.Patch, &knob) != nil || len(knob) != 1 || json.Unmarshal(patch, &set) != nil {
		return 0, ""
	}
	for name, raw := range knob {
		var full, asked float64
		if json.Unmarshal(raw, &full) != nil || full <= 0 || json.Unmarshal(set[name], &asked) != nil || asked <= 0 {
			return 0, ""
		}
		d := time.Duration(float64(slow.Duration) * asked / full)
		return d, fmt.Sprintf("%s %g, scaled by the slow variant's %s %g = %s", name, asked, name, full, slow.Duration)
	}
	return 0, ""
}
