package initconfig

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.yaml.in/yaml/v3"

	"github.com/idemcheck/idemcheck/internal/jsonx"
	"github.com/idemcheck/idemcheck/scenarios"
)

// ProbeOptions is the live endpoint init --probe learns from.
type ProbeOptions struct {
	URL    string // the operation's absolute URL
	Method string // default POST
	Body   string // a JSON object the endpoint accepts
	// Headers are "Name: value" lines sent with every request
	// (credentials become ${IDEMCHECK_TOKEN_n} in the file).
	Headers   []string
	KeyHeader string        // default Idempotency-Key
	Timeout   time.Duration // per request (0: 10s)
	TLS       scenarios.TLS
	Command   string
}

// probe is one run of exchanges against the endpoint.
type probe struct {
	env    *scenarios.Env
	target *scenarios.Target
	op     *scenarios.Operation
	// steps are the exchanges in order, numbered from 1 in the file.
	steps []step
}

type step struct {
	what string
	key  string // the key header as sent ("" : none)
	resp scenarios.Resp
}

// send makes one exchange: keyLine is the key header sent verbatim
// (empty: none), body nil for the operation's.
func (p *probe) send(ctx context.Context, what, keyLine string, body json.RawMessage) (int, scenarios.Resp) {
	r := scenarios.Req{Label: what, Body: body, NoKey: keyLine == ""}
	if keyLine != "" {
		r.KeyLines = []string{keyLine}
	}
	resp := p.env.Send(ctx, r)
	p.steps = append(p.steps, step{what: what, key: keyLine, resp: resp})
	return len(p.steps), resp
}

func (p *probe) describe(n int) string {
	s := p.steps[n-1]
	got := "no answer"
	if s.resp.Err == nil {
		got = fmt.Sprint(s.resp.Status)
	}
	return fmt.Sprintf("exchange %d (%s) got %s", n, s.what, got)
}

// Probe sends a few requests to a live endpoint and writes a config with
// what they showed, each learnt value commented with its exchange.
func Probe(ctx context.Context, o ProbeOptions) ([]byte, error) {
	t, op, err := probeTarget(o)
	if err != nil {
		return nil, err
	}
	client := t.Client(t.Timeout)
	defer client.CloseIdleConnections()
	if err := scenarios.Preflight(ctx, t, client); err != nil {
		return nil, err
	}
	p := &probe{env: scenarios.NewEnv(t, op, client), target: t, op: op}
	l, err := p.learn(ctx, o.URL)
	if err != nil {
		return nil, err
	}
	return p.write(o, l)
}

// probeTarget builds the one-operation target of the probe: the
// credentials are the first principal's, the other headers the
// operation's.
func probeTarget(o ProbeOptions) (*scenarios.Target, *scenarios.Operation, error) {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, nil, fmt.Errorf("--probe %q: want an absolute http(s) URL", o.URL)
	}
	method := strings.ToUpper(o.Method)
	if method == "" {
		method = http.MethodPost
	}
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return nil, nil, fmt.Errorf("--method %q: want POST, PUT, PATCH or DELETE", o.Method)
	}
	op := &scenarios.Operation{Name: probeName(u.Path), Method: method, Path: u.RequestURI(), Headers: map[string]string{}}
	if strings.TrimSpace(o.Body) != "" {
		var m map[string]any
		if err := json.Unmarshal([]byte(o.Body), &m); err != nil {
			return nil, nil, fmt.Errorf("--body: want a JSON object: %v", err)
		}
		op.Body = json.RawMessage(o.Body)
	}
	keyHeader := o.KeyHeader
	if keyHeader == "" {
		keyHeader = DefaultKeyHeader
	}
	creds := map[string]string{}
	for _, h := range o.Headers {
		name, v, ok := strings.Cut(h, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, nil, fmt.Errorf("--header %q: want \"Name: value\"", h)
		}
		if strings.EqualFold(name, keyHeader) {
			return nil, nil, fmt.Errorf("--header %q: the key header is sent by the probe", h)
		}
		if credentialHeader(name) {
			creds[name] = strings.TrimSpace(v)
		} else {
			op.Headers[name] = strings.TrimSpace(v)
		}
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	t := &scenarios.Target{
		BaseURL: u.Scheme + "://" + u.Host, KeyHeader: keyHeader, KeySyntax: scenarios.SFString, Timeout: timeout,
		Principals: []scenarios.Principal{{Name: "user1", Headers: creds}}, Operations: []scenarios.Operation{*op},
	}
	if err := t.SetTLS(o.TLS); err != nil {
		return nil, nil, fmt.Errorf("tls.%v", err)
	}
	return t, &t.Operations[0], nil
}

// credentialHeader: a header that authenticates (its value is a secret).
func credentialHeader(name string) bool {
	l := strings.ToLower(name)
	if l == "authorization" || l == "cookie" || l == "proxy-authorization" {
		return true
	}
	for _, w := range []string{"key", "token", "auth", "secret", "session"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

func probeName(path string) string {
	if r := slug(resource(path)); r != "" {
		return r
	}
	return "operation"
}

// learnt is what the exchanges showed, each with the sentence that says
// which exchange showed it.
type learnt struct {
	syntax, syntaxWhy string
	idPointer, idWhy  string
	replayHeader      string
	replayValue       string
	replayWhy         string
	replayGap         string
	missingStatus     int
	missingWhy        string
	mismatchStatus    int
	mismatchWhy       string
	mutation          map[string]any
	// uuidOnly says why the API takes only UUID keys ("": it does not).
	uuidOnly string
}

// accepted is an exchange the API answered with a 2xx: its number, the
// response and the key header as sent.
type accepted struct {
	n    int
	resp scenarios.Resp
	key  string
}

// learn runs the exchanges: a quoted key, a bare key, (the bare form of
// the quoted key when both were accepted, or one more key when only one
// was), a replay, a key that is not a UUID, no key, a changed body.
func (p *probe) learn(ctx context.Context, target string) (*learnt, error) {
	l := &learnt{}
	first, second, err := p.learnSyntax(ctx, target, l)
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
	return l, nil
}

// sfKey writes key as an sf-string when the API parses them.
func (l *learnt) sfKey(key string) string {
	if l.syntax == string(scenarios.SFString) {
		return `"` + key + `"`
	}
	return key
}

// learnSyntax sends a quoted and a bare key (UUIDs: the one form every
// API accepts, some nothing else). first is the accepted exchange the
// replay and the mismatch reuse; second another accepted key's, if any.
func (p *probe) learnSyntax(ctx context.Context, target string, l *learnt) (first, second *accepted, err error) {
	k1, k2 := uuid.NewString(), uuid.NewString()
	nq, q := p.send(ctx, "a quoted key", `"`+k1+`"`, nil)
	nr, r := p.send(ctx, "a bare key", k2, nil)
	quoted, bare := &accepted{nq, q, `"` + k1 + `"`}, &accepted{nr, r, k2}
	switch {
	case q.Err != nil && r.Err != nil:
		return nil, nil, fmt.Errorf("%w: %s: %v", scenarios.ErrUnreachable, target, q.Err)
	case !q.OK() && !r.OK():
		return nil, nil, fmt.Errorf("--probe %s: no request succeeded (%s: %s; %s: %s): check --body, --header and --key-header",
			target, p.describe(nq), clip(q.Body), p.describe(nr), clip(r.Body))
	case q.OK() && !r.OK():
		l.syntax, l.syntaxWhy = string(scenarios.SFString), p.describe(nq)+", "+p.describe(nr)
		return quoted, nil, nil
	case r.OK() && !q.OK():
		l.syntax, l.syntaxWhy = string(scenarios.Raw), p.describe(nr)+", "+p.describe(nq)
		return bare, nil, nil
	}
	// Both accepted: the bare form of the quoted key tells a server that
	// parses the sf-string (the same key: a replay) from one that keeps
	// the quotes (another key: a new execution).
	nb, b := p.send(ctx, fmt.Sprintf("exchange %d's key, bare", nq), k1, nil)
	ptr := findID(q.Body)
	if b.OK() && ((ptr != "" && idAt(b.Body, ptr) == idAt(q.Body, ptr)) || (ptr == "" && string(b.Body) == string(q.Body))) {
		l.syntax = string(scenarios.SFString)
		l.syntaxWhy = fmt.Sprintf("exchanges %d and %d accepted a quoted and a bare key; exchange %d, exchange %d's key bare, replayed it: the quotes are parsed", nq, nr, nb, nq)
		return quoted, bare, nil
	}
	l.syntax = string(scenarios.Raw)
	l.syntaxWhy = fmt.Sprintf("exchanges %d and %d accepted a quoted and a bare key; exchange %d, exchange %d's key bare, did not replay it: the quotes are part of the key", nq, nr, nb, nq)
	return bare, quoted, nil
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
		l.idWhy = fmt.Sprintf("%s is %s for two keys (exchanges %d and %d): not a created id", ptr, a, first.n, second.n)
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
	if n, r := p.send(ctx, "a key that is not a UUID", k, nil); r.Is4xx() {
		l.uuidOnly = fmt.Sprintf("%s, exchange %d (a UUID) got %d", p.describe(n), first.n, first.resp.Status)
	}
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

// write is the config the exchanges showed.
func (p *probe) write(o ProbeOptions, l *learnt) ([]byte, error) {
	headLines := []string{
		fmt.Sprintf("idemcheck config learnt by `%s` from %d exchanges with %s on %s:", o.Command, len(p.steps),
			p.target.Redact(o.URL), time.Now().UTC().Format("2006-01-02")),
	}
	for i, s := range p.steps {
		key := "no key"
		if s.key != "" {
			key = p.target.KeyHeader + ": " + s.key
		}
		got := "no answer: " + oneLine(fmt.Sprint(s.resp.Err))
		if s.resp.Err == nil {
			got = fmt.Sprintf("%d %s", s.resp.Status, clip(s.resp.Body))
		}
		headLines = append(headLines, fmt.Sprintf("  %d. %s (%s) -> %s", i+1, s.what, key, got))
	}
	headLines = append(headLines, `Every learnt value names its exchange; check each "guessed:" and fill each "TODO:".`)

	root := newMapping()
	root.set("base_url", from(str(p.target.BaseURL), "from --probe"))
	kh := from(str(p.target.KeyHeader), "from --key-header")
	if o.KeyHeader == "" {
		kh = guessed(str(p.target.KeyHeader), "the draft's header, which every exchange sent (--key-header names another)")
	}
	root.set("key_header", kh)
	root.set("key_syntax", from(str(l.syntax), l.syntaxWhy))
	tk := root.set("timeout", str(shortDuration(p.target.Timeout)))
	foot(tk, "ttl: 24h  # TODO: how long the API keeps a key (a probe cannot see it); enables the expiry cases")

	seq := sequence()
	creds := p.target.Principals[0].Headers
	var secHead []string
	if len(creds) == 0 {
		pr := newMapping()
		pr.set("name", str("anonymous"))
		seq.Content = append(seq.Content, pr.n)
		secHead = []string{"TODO: no credential header was given (--header): add the headers that authenticate a user,",
			"and a second principal for the scope cases."}
	} else {
		for n := 1; n <= 2; n++ {
			pr := newMapping()
			pr.set("name", str(fmt.Sprintf("user%d", n)))
			hs := flowMapping()
			for i, name := range sortedKeys(creds) {
				v := tokenVar(n)
				if i > 0 {
					v = fmt.Sprintf("%s_%d", v, i+1)
				}
				hs.set(name, quoted(secretTemplate(creds[name], v)))
			}
			what := "the value given to --header"
			if n == 2 {
				what = "another user's, for the scope cases"
			}
			todo(hs.n, fmt.Sprintf("export %s: %s", tokenVar(n), what))
			pr.set("headers", hs.n)
			seq.Content = append(seq.Content, pr.n)
		}
	}
	pk := root.set("principals", seq)
	head(pk, secHead...)
	foot(pk,
		"TODO: evidence: how idemcheck counts executions (docs/evidence.md): an oracle (a list endpoint, the API's",
		"database, a downstream double) sees what id_pointer cannot: an execution that answered an error.")

	op := newMapping()
	op.set("name", str(p.op.Name))
	op.set("method", str(p.op.Method))
	op.set("path", from(str(p.op.Path), "from --probe"))
	if len(p.op.Headers) > 0 || len(p.op.Body) > 0 {
		hs := flowMapping()
		for _, k := range sortedKeys(p.op.Headers) {
			hs.set(k, str(p.op.Headers[k]))
		}
		if len(p.op.Body) > 0 && p.op.Headers["Content-Type"] == "" {
			hs.set("Content-Type", str("application/json"))
		}
		op.set("headers", hs.n)
	}
	if len(p.op.Body) > 0 {
		var body any
		_ = json.Unmarshal(p.op.Body, &body) // checked in probeTarget
		op.set("body", from(value(body), "from --body"))
	}
	var idGap string
	if l.idPointer != "" {
		op.set("id_pointer", from(str(l.idPointer), l.idWhy))
	} else {
		idGap = "no id member in the answer: set id_pointer to the created resource's id"
		if l.idWhy != "" {
			idGap += " (" + l.idWhy + ")"
		}
	}
	if l.mutation != nil {
		mm := flowMapping()
		mm.set("name", str("changed-"+slug(sortedKeys(l.mutation)[0])))
		mm.set("patch", value(l.mutation))
		guessed(mm.n, "a changed member; "+l.mismatchWhy)
		op.set("mutations", sequence(mm.n))
	}
	last := op.n.Content[len(op.n.Content)-2]
	lines := []string{}
	if idGap != "" {
		lines = append(lines, "id_pointer: /id  # TODO: "+idGap)
	}
	lines = append(lines, "variants:  # TODO: slow and error variants, see docs/evidence.md (a downstream double can play them)")
	foot(last, lines...)
	root.set("operations", sequence(op.n))

	prof := newMapping()
	prof.set("preset", str(scenarios.DefaultProfile))
	ov := newMapping()
	if l.syntax == string(scenarios.Raw) {
		ov.set("key_syntax", from(str(l.syntax), "as key_syntax above"))
	}
	switch {
	case l.missingStatus >= 200 && l.missingStatus < 300:
		ov.set("key_required", from(str("no"), l.missingWhy+": the key is optional"))
	case l.missingStatus >= 400 && l.missingStatus < 500:
		ov.set("missing_status", from(statusList(l.missingStatus), l.missingWhy))
	}
	switch {
	case l.mismatchStatus >= 400 && l.mismatchStatus < 500:
		ov.set("mismatch_status", from(statusList(l.mismatchStatus), l.mismatchWhy))
	case l.mismatchStatus != 0:
		todo(prof.n.Content[1], l.mismatchWhy+": a changed body under a used key should be refused; the catalog will say")
	}
	if l.uuidOnly != "" {
		ov.set("key_format", from(str("uuid"), l.uuidOnly))
	}
	if l.replayHeader != "" {
		ov.set("replay_header", from(str(l.replayHeader), l.replayWhy))
		ov.set("replay_header_value", str(l.replayValue))
	} else if l.replayWhy != "" {
		ov.set("replay_header", from(quoted(""), l.replayWhy))
	}
	if len(ov.n.Content) > 0 {
		prof.set("overrides", ov.n)
	}
	pfk := root.set("profile", prof.n)
	if l.replayGap != "" {
		head(pfk, "TODO: the replay was not a replay: "+l.replayGap+".")
	}
	return render(root, headLines)
}

func statusList(code int) *yaml.Node { return value([]int{code}) }

// secretTemplate keeps an auth scheme and puts the variable in place of
// the secret: "Bearer abc" becomes "Bearer ${VAR}".
func secretTemplate(v, name string) string {
	if scheme, _, ok := strings.Cut(v, " "); ok && len(scheme) > 0 && !strings.ContainsAny(scheme, "=:") {
		return scheme + " ${" + name + "}"
	}
	return "${" + name + "}"
}
