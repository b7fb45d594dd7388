package initconfig

import (
	"fmt"
	"net/http"
	"strings"
)

// setupProposal is a setup: init proposes for an operation acting on an
// existing resource: the POST that creates it, and the operation's path
// with the resource's id parameter bound to its answer ({setup.id}).
type setupProposal struct {
	creator operation
	path    string // o.path with {param} replaced by {setup.…}
	param   string
	pointer string // the id member of the creator's answer
	why     string
}

// proposeSetup finds, for o, an operation on /things/{id} or
// /things/{id}/action, the document's POST /things that creates the thing:
// every key of o then needs a fresh one (a capture, a cancel, a PATCH).
// ok is false when o takes no such id or nothing creates it.
func (a *analysis) proposeSetup(o operation) (s setupProposal, ok bool) {
	if o.method == http.MethodGet { // a read changes nothing: any existing resource will do
		return s, false
	}
	segs := strings.Split(strings.Trim(o.path, "/"), "/")
	for i, seg := range segs {
		if !strings.HasPrefix(seg, "{") || !strings.HasSuffix(seg, "}") || i == 0 {
			continue
		}
		collection := "/" + strings.Join(segs[:i], "/")
		item := a.doc.Paths.Value(collection)
		if item == nil || item.Post == nil || (collection == o.path && o.method == http.MethodPost) {
			return s, false
		}
		creator := operation{id: item.Post.OperationID, method: http.MethodPost, path: collection, item: item, op: item.Post}
		code, resp := success(creator)
		ptr, why := idMember(responseSchema(resp), resource(collection))
		if ptr == "" {
			return s, false
		}
		ref := "{setup." + strings.ReplaceAll(strings.TrimPrefix(ptr, "/"), "/", ".") + "}"
		s = setupProposal{creator: creator, param: seg, pointer: ptr,
			path: "/" + strings.Join(append(append(append([]string(nil), segs[:i]...), ref), segs[i+1:]...), "/"),
			why:  fmt.Sprintf("%s takes the id of a resource POST %s creates (%s in its %d response): each key acts on a fresh one", seg, collection, why, code)}
		return s, true
	}
	return s, false
}

// setupNode is the setup: mapping of p, with the creator's body.
func (a *analysis) setupNode(p setupProposal) mapping {
	m := flowMapping()
	m.set("method", str(http.MethodPost))
	m.set("path", str(p.creator.path))
	if b, _ := a.body(p.creator); b != nil {
		m.set("body", value(b.value))
	}
	guessed(m.n, p.why)
	return m
}

// updatesResource reports that o changes the resource p names (every
// answer names that one resource): a PATCH or PUT of it, or an action on it.
func updatesResource(o operation, p setupProposal) bool {
	return o.method == http.MethodPatch || o.method == http.MethodPut || !strings.HasSuffix(o.path, p.param)
}
