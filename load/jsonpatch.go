package load

import (
	"encoding/json"
	"fmt"
)

// mergePatch applies an RFC 7386 JSON merge patch to doc.
func mergePatch(doc, patch []byte) ([]byte, error) {
	var d, p any
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("body is not JSON: %w", err)
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, fmt.Errorf("patch is not JSON: %w", err)
	}
	return json.Marshal(applyMerge(d, p))
}

func applyMerge(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
		} else {
			tm[k] = applyMerge(tm[k], v)
		}
	}
	return tm
}
