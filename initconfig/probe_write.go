package initconfig

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"go.yaml.in/yaml/v3"
)

// write is the config the exchanges showed.
func (p *probe) write(o ProbeOptions, l *learnt) ([]byte, error) {
	root := newMapping()
	root.set("base_url", from(str(p.target.BaseURL), "from --probe"))
	kh := from(str(p.target.KeyHeader), "from --key-header")
	if o.KeyHeader == "" {
		kh = guessed(str(p.target.KeyHeader), "the draft's header, which every exchange sent (--key-header names another)")
	}
	root.set("key_header", kh)
	if l.syntax != "" {
		root.set("key_syntax", from(str(l.syntax), l.syntaxWhy))
	}
	if p.target.HTTP2 {
		root.set("http2", from(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"}, "from --http2: every exchange spoke HTTP/2"))
	}
	tk := root.set("timeout", str(shortDuration(p.target.Timeout)))
	if l.syntax == "" {
		head(tk, "TODO: key_syntax: sf-string or raw (the exchanges could not tell: "+l.syntaxWhy+")")
	}
	foot(tk, "ttl: 24h  # TODO: how long the API keeps a key (a probe cannot see it); enables the expiry cases")

	seq, secHead := p.principals()
	pk := root.set("principals", seq)
	head(pk, secHead...)
	foot(pk,
		"TODO: evidence: how idemcheck counts executions (docs/evidence.md): an oracle (a list endpoint, the API's",
		"database, a downstream double) sees what id_pointer cannot: an execution that answered an error.")

	root.set("operations", sequence(p.operation(l)))

	pfk := root.set("profile", learntProfile(l))
	if l.replayGap != "" {
		head(pfk, "TODO: the replay was not a replay: "+l.replayGap+".")
	}
	return render(root, p.headLines(o))
}

// headLines are the config's opening comment: where it was learnt, and
// each exchange with what it got.
func (p *probe) headLines(o ProbeOptions) []string {
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
	return append(headLines, `Every learnt value names its exchange; check each "guessed:" and fill each "TODO:".`)
}

// principals are two users whose credentials come from the environment,
// in the shape of the --header given, or one anonymous principal and
// what to add (the head comment) when none was.
func (p *probe) principals() (seq *yaml.Node, secHead []string) {
	seq = sequence()
	creds := p.target.Principals[0].Headers
	if len(creds) == 0 {
		pr := newMapping()
		pr.set("name", str("anonymous"))
		seq.Content = append(seq.Content, pr.n)
		secHead = []string{"TODO: no credential header was given (--header): add the headers that authenticate a user,",
			"and a second principal for the scope cases."}
		return seq, secHead
	}
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
	return seq, secHead
}

// operation is the probed operation with the id pointer and mutation
// learnt, and a TODO for what a probe cannot learn.
func (p *probe) operation(l *learnt) *yaml.Node {
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
	var shared []string
	switch {
	case l.idPointer != "":
		op.set("id_pointer", from(str(l.idPointer), l.idWhy))
	case l.idShared != "":
		shared = sharedIDLines(l.idShared, "is "+l.idWhy, "idempotency_key")
	default:
		idGap = "no id member in the answer: set id_pointer to the created resource's id"
		if l.idWhy != "" {
			idGap += " (" + l.idWhy + ")"
		}
	}
	muts := sequence()
	if l.mutation != nil {
		mm := flowMapping()
		mm.set("name", str("changed-"+slug(sortedKeys(l.mutation)[0])))
		mm.set("patch", value(l.mutation))
		guessed(mm.n, "a changed member; "+l.mismatchWhy)
		muts.Content = append(muts.Content, mm.n)
	}
	if l.query != nil {
		mm := flowMapping()
		mm.set("name", str("other-query"))
		q := flowMapping()
		for _, k := range sortedKeys(l.query) {
			q.set(k, quoted(l.query[k]))
		}
		mm.set("query", q.n)
		from(mm.n, "from --query; "+l.queryWhy)
		muts.Content = append(muts.Content, mm.n)
	}
	if len(muts.Content) > 0 {
		op.set("mutations", muts)
	}
	last := op.n.Content[len(op.n.Content)-2]
	lines := shared
	if idGap != "" {
		lines = append(lines, "id_pointer: /id  # TODO: "+idGap)
	}
	lines = append(lines, "variants:  # TODO: slow and error variants, see docs/evidence.md (a downstream double can play them)")
	foot(last, lines...)
	return op.n
}

// learntProfile is the default preset with the overrides the exchanges showed:
// key syntax and format, the missing-key and mismatch statuses, the
// replay header.
func learntProfile(l *learnt) *yaml.Node {
	prof := newMapping()
	prof.set("preset", str(apispec.DefaultProfile))
	ov := newMapping()
	if l.syntax == string(apispec.Raw) {
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
	footOpenFields(prof, apispec.DefaultProfile, ov)
	return prof.n
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
