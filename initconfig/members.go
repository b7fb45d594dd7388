package initconfig

import (
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// idMember finds the created resource's id in a response schema: a
// member marked x-idemcheck-id: true, else one named id, else the
// resource's own *_id or *Id (order_id for /orders), else uuid, else any
// *_id; shallowest first, through objects only.
func idMember(s *openapi3.Schema, resource string) (pointer, why string) {
	type found struct {
		ptr  string
		rank int
	}
	best := found{rank: 99}
	singular := strings.TrimSuffix(strings.ToLower(resource), "s")
	var walk func(s *openapi3.Schema, at string, depth int)
	walk = func(s *openapi3.Schema, at string, depth int) {
		if s == nil || depth > 3 {
			return
		}
		f := flatten(s)
		names := make([]string, 0, len(f.properties))
		for n := range f.properties {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, name := range names {
			p := f.properties[name]
			ptr := at + "/" + escapePointer(name)
			lower := strings.ToLower(name)
			rank := 99
			switch {
			case p.Extensions["x-idemcheck-id"] == true:
				rank = 0
			case lower == "id":
				rank = 1
			case singular != "" && (lower == singular+"_id" || lower == singular+"id"):
				rank = 2
			case lower == "uuid":
				rank = 3
			case strings.HasSuffix(lower, "_id") || strings.HasSuffix(name, "Id"):
				rank = 4
			}
			if rank < best.rank || (rank == best.rank && len(ptr) < len(best.ptr)) {
				if typeOf(p) != openapi3.TypeObject && typeOf(p) != openapi3.TypeArray {
					best = found{ptr, rank}
				}
			}
			if typeOf(p) == openapi3.TypeObject {
				walk(p, ptr, depth+1)
			}
		}
	}
	walk(s, "", 0)
	switch best.rank {
	case 0:
		return best.ptr, "marked x-idemcheck-id: true"
	case 1:
		return best.ptr, "the member named id"
	case 2:
		return best.ptr, "the resource's own id member"
	case 3:
		return best.ptr, "the member named uuid"
	case 4:
		return best.ptr, "a member named *_id: check it is the created resource's"
	}
	return "", ""
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// arrayMember is the pointer to the array a list response holds: the
// response itself ("") or its first array member (/data).
func arrayMember(s *openapi3.Schema) (string, *openapi3.Schema, bool) {
	if s == nil {
		return "", nil, false
	}
	if typeOf(s) == openapi3.TypeArray {
		return "", itemSchema(s), true
	}
	f := flatten(s)
	names := make([]string, 0, len(f.properties))
	for n := range f.properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if p := f.properties[n]; typeOf(p) == openapi3.TypeArray {
			return "/" + escapePointer(n), itemSchema(p), true
		}
	}
	return "", nil, false
}

func itemSchema(s *openapi3.Schema) *openapi3.Schema {
	if s.Items != nil {
		return s.Items.Value
	}
	return nil
}

// keyMember is the member of a listed element that holds the
// idempotency key, for a list oracle's where.
func keyMember(s *openapi3.Schema) string {
	if s == nil {
		return ""
	}
	f := flatten(s)
	for _, n := range sortedKeys(f.properties) {
		if l := strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(n)); l == "idempotencykey" || l == "requestkey" {
			return "/" + escapePointer(n)
		}
	}
	return ""
}

// markerMember is a body member fit to carry a per-key token: a client
// reference the API stores as given (a reference, an external id, else a
// description or note).
func markerMember(s *openapi3.Schema) string {
	if s == nil {
		return ""
	}
	f := flatten(s)
	best, rank := "", 9
	for _, n := range sortedKeys(f.properties) {
		if typeOf(f.properties[n]) != openapi3.TypeString || f.properties[n].ReadOnly || len(f.properties[n].Enum) > 0 {
			continue
		}
		l := strings.ToLower(n)
		r := 9
		switch {
		case strings.Contains(l, "reference") || strings.Contains(l, "client_ref"):
			r = 0
		case strings.Contains(l, "external_id") || strings.Contains(l, "externalid"):
			r = 1
		case l == "description" || l == "note" || l == "memo":
			r = 2
		}
		if r < rank {
			best, rank = "/"+escapePointer(n), r
		}
	}
	return best
}
