package scenarios

import (
	"context"
	"fmt"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// keyFieldProfile is p as the annotations of t's key field make it where
// the config is silent (issue 37): a key field every operation's request
// marks google.api.field_info.format = UUID4 gets UUIDs in every key case
// (key_format uuid), and one marked google.api.field_behavior = REQUIRED
// is required (key_required true), as init --grpc writes them. A config
// naming key_format or key_required in profile.overrides keeps its own;
// a carrier that cannot read descriptors (or fails to) changes nothing.
// notes say what was taken.
func keyFieldProfile(ctx context.Context, t *apispec.Target, p *apispec.Profile, c wire.Carrier) (*apispec.Profile, []string) {
	kr, ok := c.(wire.KeyRuler)
	if !ok || t.Key == nil || t.Key.Field == "" || len(t.Operations) == 0 {
		return p, nil
	}
	all := wire.KeyRules{UUID: true, Required: true}
	for i := range t.Operations {
		r, err := kr.KeyRules(ctx, &t.Operations[i])
		if err != nil {
			return p, nil // every call fails alike, and says why
		}
		all.UUID, all.Required = all.UUID && r.UUID, all.Required && r.Required
	}
	out := *p
	var notes []string
	if all.UUID && p.KeyFormat == "" && !p.Overridden("key_format") {
		out.KeyFormat = apispec.KeyFormatUUID
		notes = append(notes, fmt.Sprintf("the key field %s is google.api.field_info.format = UUID4 in every operation's request (its descriptor): every key case sends a UUID (key_format: uuid; set key_format in profile.overrides to say otherwise)", t.Key.Field))
	}
	if all.Required && p.KeyRequired != apispec.Yes && !p.Overridden("key_required") {
		out.KeyRequired = apispec.Yes
		notes = append(notes, fmt.Sprintf("the key field %s is google.api.field_behavior = REQUIRED in every operation's request (its descriptor): a call without it is judged as refused (key_required: true; set key_required in profile.overrides to say otherwise)", t.Key.Field))
	}
	if notes == nil {
		return p, nil
	}
	return &out, notes
}
