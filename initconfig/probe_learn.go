package initconfig

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/jsonx"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/wire"
)

// learnt is what the exchanges showed, each with the sentence that says
// which exchange showed it.
type learnt struct {
	syntax, syntaxWhy string
	idPointer, idWhy  string
	idShared          string // a pointer two keys' answers share: no id
	replayHeader      string
	replayValue       string
	replayWhy         string
	replayGap         string
	missingStatus     int
	missingWhy        string
	mismatchStatus    int
	mismatchWhy       string
	mutation          map[string]any
	// query is --query's another query, queryWhy what it got under a used
	// key.
	query    map[string]string
	queryWhy string
	// uuidOnly says why the API takes only UUID keys ("": it does not).
	uuidOnly string
}

// accepted is an exchange the API answered with a 2xx: its number, the
// response and the key header as sent.
type accepted struct {
	n    int
	resp wire.Resp
	key  string
}

// learn runs the exchanges: a quoted key, a bare key, (the bare form of
// the quoted key when both were accepted, or one more key when only one
// was), a replay, a key that is not a UUID, no key, a changed body,
// another query (--query).
func (p *probe) learn(ctx context.Context, base string, query map[string]string) (*learnt, error) {
	l := &learnt{query: query}
	first, second, err := p.learnSyntax(ctx, base, l)
	if err != nil {
		return nil, err
	}
	p.learnID(ctx, l, first, second)
	p.learnReplay(ctx, l, first)
	p.learnKeyForm(ctx, l, first)
	if n, missing := p.send(ctx, "no key", "", nil); missing.Err == nil {
		l.missingStatus, l.missingWhy = missing.Status, p.describe(n)
	}
	p.learnMismatch(ctx, l, first)
	p.learnQuery(ctx, l, first)
	return l, nil
}

// learnQuery sends first's key and body with --query's other query.
func (p *probe) learnQuery(ctx context.Context, l *learnt, first *accepted) {
	if l.query == nil {
		return
	}
	n, _ := p.sendReq(ctx, fmt.Sprintf("exchange %d's key and body, another query", first.n), first.key, scenarios.Req{Query: l.query})
	l.queryWhy = p.describe(n)
}

// sfKey writes key as an sf-string when the API parses them.
func (l *learnt) sfKey(key string) string {
	if l.syntax == string(apispec.SFString) {
		return `"` + key + `"`
	}
	return key
}

// learnSyntax sends a quoted and a bare key (UUIDs: the one form every
// API accepts, some nothing else). first is the accepted exchange the
// replay and the mismatch reuse; second another accepted key's, if any.
func (p *probe) learnSyntax(ctx context.Context, base string, l *learnt) (first, second *accepted, err error) {
	k1, k2 := uuid.NewString(), uuid.NewString()
	nq, q := p.send(ctx, "a quoted key", `"`+k1+`"`, nil)
	nr, r := p.send(ctx, "a bare key", k2, nil)
	quoted, bare := &accepted{nq, q, `"` + k1 + `"`}, &accepted{nr, r, k2}
	switch {
	case q.Err != nil && r.Err != nil:
		return nil, nil, fmt.Errorf("%w: %s: %v", apispec.ErrUnreachable, base, q.Err)
	case !q.OK() && !r.OK():
		return nil, nil, fmt.Errorf("--probe %s: no request succeeded (%s: %s; %s: %s): check --body, --header and --key-header",
			base, p.describe(nq), clip(q.Body), p.describe(nr), clip(r.Body))
	case q.OK() && !r.OK():
		return p.oneFormAccepted(ctx, l, quoted, nr, apispec.SFString, `"`+uuid.NewString()+`"`, k1)
	case r.OK() && !q.OK():
		return p.oneFormAccepted(ctx, l, bare, nq, apispec.Raw, uuid.NewString(), `"`+k2+`"`)
	}
	// Both accepted: the bare form of the quoted key tells a server that
	// parses the sf-string (the same key: a replay) from one that keeps
	// the quotes (another key: a new execution).
	nb, b := p.send(ctx, fmt.Sprintf("exchange %d's key, bare", nq), k1, nil)
	ptr := findID(q.Body)
	if ptr != "" && idAt(r.Body, ptr) == idAt(q.Body, ptr) {
		// Two keys answered one id (a PATCH names the resource it
		// changed): the id tells no replay; only the whole answer can.
		ptr = ""
	}
	if b.OK() && ((ptr != "" && idAt(b.Body, ptr) == idAt(q.Body, ptr)) || (ptr == "" && string(b.Body) == string(q.Body))) {
		l.syntax = string(apispec.SFString)
		l.syntaxWhy = fmt.Sprintf("exchanges %d and %d accepted a quoted and a bare key; exchange %d, exchange %d's key bare, replayed it: the quotes are parsed", nq, nr, nb, nq)
		return quoted, bare, nil
	}
	l.syntax = string(apispec.Raw)
	l.syntaxWhy = fmt.Sprintf("exchanges %d and %d accepted a quoted and a bare key; exchange %d, exchange %d's key bare, did not replay it: the quotes are part of the key", nq, nr, nb, nq)
	return bare, quoted, nil
}

// oneFormAccepted decides the syntax when only ok's form was accepted and
// exchange refused's other form was not. A fresh key in ok's form is the
// control: accepted, or refused otherwise, the refusal was of the form
// (syntax). Refused alike,
// the API refuses any second execution (an action a resource takes once,
// a capture): the refusal says nothing of the form, so ok's key in the
// other form (other) decides instead: a replay of ok means the API reads
// both forms as one key (sf-string), the control's refusal means it is
// another key (raw). Anything else leaves key_syntax to the user.
func (p *probe) oneFormAccepted(ctx context.Context, l *learnt, ok *accepted, refused int, syntax apispec.KeySyntax, fresh, other string) (first, second *accepted, err error) {
	no := p.steps[refused-1].resp
	nc, c := p.send(ctx, "another key, in the accepted form", fresh, nil)
	shown := p.describe(ok.n) + ", " + p.describe(refused) + ", " + p.describe(nc)
	switch {
	case c.Err != nil:
		l.syntaxWhy = "undecided: " + shown
		return ok, nil, nil
	case c.OK():
		l.syntax, l.syntaxWhy = string(syntax), shown
		return ok, &accepted{nc, c, fresh}, nil
	case c.Status != no.Status:
		// A second execution is refused otherwise: the form was.
		l.syntax, l.syntaxWhy = string(syntax), shown+": the other form's refusal is not a second execution's"
		return ok, nil, nil
	}
	no2, o := p.send(ctx, fmt.Sprintf("exchange %d's key in the other form", ok.n), other, nil)
	refusedAll := fmt.Sprintf("%s, then refused every other key alike (%s, %s: not the form's refusal, a second execution's)", p.describe(ok.n), p.describe(refused), p.describe(nc))
	switch {
	case o.OK() && sameAnswer(o, ok.resp):
		l.syntax, l.syntaxWhy = string(apispec.SFString), refusedAll+"; "+p.describe(no2)+", its replay: the quotes are parsed"
	case o.Status == no.Status:
		l.syntax, l.syntaxWhy = string(apispec.Raw), refusedAll+"; "+p.describe(no2)+", another key's refusal: the quotes are part of the key"
	default:
		l.syntaxWhy = "undecided: " + refusedAll + "; " + p.describe(no2)
	}
	return ok, nil, nil
}

// sameAnswer: b repeats a (its id, where a has one two keys do not share,
// else its whole body).
func sameAnswer(b, a wire.Resp) bool {
	if ptr := findID(a.Body); ptr != "" {
		return idAt(b.Body, ptr) == idAt(a.Body, ptr)
	}
	return string(b.Body) == string(a.Body)
}

// learnID finds the created id in first's answer and checks that two keys
// give two values (one more key when no second was accepted).
func (p *probe) learnID(ctx context.Context, l *learnt, first, second *accepted) {
	ptr := findID(first.resp.Body)
	if ptr == "" {
		return
	}
	if second == nil {
		k := l.sfKey(uuid.NewString())
		n, r := p.send(ctx, "another key", k, nil)
		second = &accepted{n, r, k}
	}
	a, b := idAt(first.resp.Body, ptr), idAt(second.resp.Body, ptr)
	switch {
	case second.resp.OK() && a != b:
		l.idPointer, l.idWhy = ptr, fmt.Sprintf("exchanges %d and %d (two keys) created %s and %s", min(first.n, second.n), max(first.n, second.n), a, b)
	case second.resp.OK():
		l.idShared, l.idWhy = ptr, fmt.Sprintf("%s for two keys (exchanges %d and %d): not a created id", a, first.n, second.n)
	default:
		l.idPointer, l.idWhy = ptr, fmt.Sprintf("exchange %d created %s (%s: check it differs per execution)", first.n, a, p.describe(second.n))
	}
}

// learnReplay repeats first: the same answer is a replay, and a header
// only the replay carries is its marker.
func (p *probe) learnReplay(ctx context.Context, l *learnt, first *accepted) {
	n, re := p.send(ctx, fmt.Sprintf("the replay of exchange %d", first.n), first.key, nil)
	orig := first.resp
	switch {
	case re.Err != nil:
		l.replayGap = p.describe(n)
	case l.idPointer != "" && re.OK() && idAt(re.Body, l.idPointer) != idAt(orig.Body, l.idPointer):
		l.replayGap = fmt.Sprintf("%s with another id (%s, not %s): the key did not prevent a second execution", p.describe(n),
			idAt(re.Body, l.idPointer), idAt(orig.Body, l.idPointer))
	case re.Status != orig.Status:
		l.replayGap = fmt.Sprintf("%s, not %d as exchange %d", p.describe(n), orig.Status, first.n)
	}
	if h, v := replayMarker(orig.Header, re.Header); h != "" {
		l.replayHeader, l.replayValue = h, v
		l.replayWhy = fmt.Sprintf("exchange %d (the replay) carried %s: %s, exchange %d did not", n, h, v, first.n)
	} else if l.replayGap == "" {
		l.replayWhy = fmt.Sprintf("exchange %d (the replay) carried no header that exchange %d lacked", n, first.n)
	}
}

// learnKeyForm sends a key that is not a UUID: refused, the API takes
// UUIDs only.
func (p *probe) learnKeyForm(ctx context.Context, l *learnt, first *accepted) {
	k := l.sfKey("idemcheck-" + strings.ReplaceAll(uuid.NewString(), "-", ""))
	n, r := p.send(ctx, "a key that is not a UUID", k, nil)
	if !r.Is4xx() {
		return
	}
	// The control: a fresh UUID refused alike is a second execution's
	// refusal (a once-only action), not the format's.
	nc, c := p.send(ctx, "another UUID key", l.sfKey(uuid.NewString()), nil)
	if c.Status == r.Status {
		return
	}
	l.uuidOnly = fmt.Sprintf("%s, exchange %d (a UUID) got %d, %s", p.describe(n), first.n, first.resp.Status, p.describe(nc))
}

// learnMismatch sends first's key with a changed body.
func (p *probe) learnMismatch(ctx context.Context, l *learnt, first *accepted) {
	patch, ok := probeMutation(p.op.Body)
	if !ok {
		return
	}
	changedBody, err := jsonx.MergePatch(p.op.Body, mustJSON(patch))
	if err != nil {
		return
	}
	n, c := p.send(ctx, fmt.Sprintf("exchange %d's key, a changed body", first.n), first.key, changedBody)
	l.mutation = patch
	if c.Err == nil {
		l.mismatchStatus, l.mismatchWhy = c.Status, p.describe(n)
	}
}

func clip(b []byte) string {
	s := oneLine(string(b))
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	if s == "" {
		return "empty body"
	}
	return s
}

func decodeObject(b []byte) (map[string]any, bool) {
	var m map[string]any
	if json.Unmarshal(b, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v) // JSON-decoded values always encode
	return b
}

// findID is the pointer to the created id in a JSON body: a member named
// id, else *_id, else uuid, shallowest first, through objects.
func findID(body []byte) string {
	m, ok := decodeObject(body)
	if !ok {
		return ""
	}
	best, rank := "", 9
	var walk func(m map[string]any, at string, depth int)
	walk = func(m map[string]any, at string, depth int) {
		for _, k := range sortedKeys(m) {
			ptr := at + "/" + escapePointer(k)
			l := strings.ToLower(k)
			r := 9
			switch {
			case l == "id":
				r = 0
			case strings.HasSuffix(l, "_id") || strings.HasSuffix(k, "Id"):
				r = 1
			case l == "uuid":
				r = 2
			}
			switch v := m[k].(type) {
			case map[string]any:
				if depth < 3 {
					walk(v, ptr, depth+1)
				}
			case string, float64:
				if r < rank || (r == rank && len(ptr) < len(best)) {
					best, rank = ptr, r
				}
			}
		}
	}
	walk(m, "", 0)
	return best
}

func idAt(body []byte, ptr string) string {
	var doc any
	if json.Unmarshal(body, &doc) != nil {
		return ""
	}
	v, ok := jsonx.Pointer(doc, ptr)
	if !ok || v == nil {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// volatileHeaders differ between any two responses.
var volatileHeaders = map[string]bool{"Date": true, "Content-Length": true, "Set-Cookie": true, "X-Request-Id": true, "Age": true}

// replayMarker is a header the replay carries and the original does not,
// preferring one named like a replay marker.
func replayMarker(orig, replay http.Header) (string, string) {
	var names []string
	for k := range replay {
		if _, ok := orig[k]; !ok && !volatileHeaders[k] {
			names = append(names, k)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		ri, rj := markerRank(names[i]), markerRank(names[j])
		if ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	if len(names) == 0 {
		return "", ""
	}
	return names[0], replay.Get(names[0])
}

func markerRank(h string) int {
	l := strings.ToLower(h)
	switch {
	case strings.Contains(l, "replay"):
		return 0
	case strings.Contains(l, "idempot"):
		return 1
	}
	return 2
}

// probeMutation changes the body's first scalar member (in name order).
func probeMutation(body json.RawMessage) (map[string]any, bool) {
	m, ok := decodeObject(body)
	if !ok {
		return nil, false
	}
	for _, k := range sortedKeys(m) {
		if v, ok := changed(nil, m[k]); ok {
			return map[string]any{k: v}, true
		}
	}
	return map[string]any{"idemcheck_changed": true}, len(body) > 0
}
