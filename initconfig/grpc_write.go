package initconfig

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// write is the config of the selected methods.
func (d *description) write(o GRPCOptions, t *apispec.Target, s *selection, meta map[string]string) ([]byte, error) {
	src := "server reflection of " + t.BaseURL
	if o.Protoset != "" {
		src = "protoset " + o.Protoset
	}
	headLines := []string{
		fmt.Sprintf("idemcheck config written by `%s` from %s on %s: %s.", o.Command, src, time.Now().UTC().Format("2006-01-02"), d.summary()),
		`Every value says where it came from; check each "guessed:" and fill each "TODO:" (docs/grpc.md).`,
		"Then: idemcheck list --config FILE (what would run), idemcheck run --config FILE.",
	}
	for _, m := range s.others {
		headLines = append(headLines, fmt.Sprintf("TODO: %s carries its key as %s: one config holds one key; write another with --rpc %s.", m.rpc(), m.key, m.rpc()))
	}
	for _, m := range s.noKey {
		headLines = append(headLines, fmt.Sprintf("TODO: %s: its request %s has no key field (request_id, or AEP-155's {key, first_sent}): left out; --key-metadata if its key is metadata.", m.rpc(), m.md.Input().FullName()))
	}

	root := newMapping()
	root.set("base_url", from(str(t.BaseURL), "from --grpc"))
	if o.TLS != (apispec.TLS{}) {
		root.set("tls", from(tlsNode(o.TLS), "from the TLS flags"))
	}
	if o.Protoset != "" {
		root.set("protoset", from(str(o.Protoset), "from --protoset: the methods' descriptors (the server's reflection is not asked)"))
	}
	key := flowMapping()
	var keyWhy string
	if s.key.metadata != "" {
		key.set("metadata", str(s.key.metadata))
		keyWhy = "from --key-metadata"
	} else {
		key.set("field", str(s.key.field))
		if s.key.firstSent {
			key.set("first_sent", value(true))
		}
		keyWhy = fmt.Sprintf("%s in the request of %s", s.key, rpcList(s.methods))
	}
	kk := root.set("key", from(key.n, keyWhy))
	switch s.key.preset() {
	case "aep-155":
		root.set("ttl", guessed(str("1h"), `AEP-155: keys are honoured "for at least an hour"; TODO: the API's own retention if longer`))
	case "aip-155":
		foot(kk, "ttl: 24h  # TODO: how long the API keeps a request_id (AIP-155 says only \"any reasonable timeframe\"); enables the expiry cases")
	default:
		foot(kk, "ttl: 24h  # TODO: how long the API keeps a key (no document says); enables the expiry cases")
	}

	pk := root.set("principals", grpcPrincipals(meta))
	if !hasCredential(meta) {
		head(pk, "TODO: no credential metadata was given (--metadata 'authorization: Bearer ...'): add the metadata that",
			"authenticates a user, and a second principal for the scope cases.")
	}
	foot(pk, grpcEvidence(s.key)...)

	ops := sequence()
	seen := map[string]bool{}
	for _, m := range s.methods {
		ops.Content = append(ops.Content, d.operation(m, s.key, seen))
	}
	root.set("operations", ops)
	root.set("profile", grpcProfile(s.key, s.rules()))
	return render(root, headLines)
}

// tlsNode is the tls: section of the TLS flags given.
func tlsNode(o apispec.TLS) *yaml.Node {
	m := flowMapping()
	for _, f := range [][2]string{{"ca_cert", o.CACert}, {"client_cert", o.ClientCert}, {"client_key", o.ClientKey}} {
		if f[1] != "" {
			m.set(f[0], str(f[1]))
		}
	}
	if o.InsecureSkipVerify {
		m.set("insecure_skip_verify", value(true))
	}
	return m.n
}

func rpcList(ms []method) string {
	names := make([]string, 0, len(ms))
	for _, m := range ms {
		names = append(names, string(m.md.Name()))
	}
	if len(names) > 3 {
		names = append(names[:3], fmt.Sprintf("%d more", len(names)-3))
	}
	return strings.Join(names, ", ")
}

// grpcPrincipals are two users whose credential metadata come from the
// environment (the second a TODO), the other metadata as given; without
// credentials, one anonymous principal.
func grpcPrincipals(meta map[string]string) *yaml.Node {
	seq := sequence()
	if !hasCredential(meta) {
		pr := newMapping()
		pr.set("name", str("anonymous"))
		if len(meta) > 0 {
			pr.set("metadata", metadataNode(meta, 0))
		}
		seq.Content = append(seq.Content, pr.n)
		return seq
	}
	for n := 1; n <= 2; n++ {
		pr := newMapping()
		pr.set("name", str(fmt.Sprintf("user%d", n)))
		md := metadataNode(meta, n)
		what := "the value given to --metadata"
		if n == 2 {
			what = "another user's, for the scope cases"
		}
		todo(md, fmt.Sprintf("export %s: %s", tokenVar(n), what))
		pr.set("metadata", md)
		seq.Content = append(seq.Content, pr.n)
	}
	return seq
}

func hasCredential(meta map[string]string) bool {
	for name := range meta {
		if credentialHeader(name) {
			return true
		}
	}
	return false
}

// metadataNode is principal n's metadata: credentials as
// ${IDEMCHECK_TOKEN_n} (n 0: none), the rest as given.
func metadataNode(meta map[string]string, n int) *yaml.Node {
	m := flowMapping()
	i := 0
	for _, name := range sortedKeys(meta) {
		v := meta[name]
		if n > 0 && credentialHeader(name) {
			vn := tokenVar(n)
			if i > 0 {
				vn = fmt.Sprintf("%s_%d", vn, i+1)
			}
			i++
			v = secretTemplate(v, vn)
		}
		m.set(name, quoted(v))
	}
	return m.n
}

// column is the key's likely column in the API's table.
func (k keyKind) column() string {
	if k.metadata != "" || k.firstSent {
		return "idempotency_key"
	}
	return "request_id"
}

// grpcEvidence are the evidence sources a gRPC target can use, as
// commented config.
func grpcEvidence(k keyKind) []string {
	column := k.column()
	return []string{
		"TODO: evidence: how idemcheck counts executions (" + evidenceDoc + "). With only id_pointer, a call that executed",
		"but answered an error is invisible and those cases say unverifiable. Pick one source:",
		"- the service's database: one row per execution",
		"oracle:",
		fmt.Sprintf(`  sql: {dsn: "${DATABASE_URL}", query: "select count(*) from TODO where %s = $1"}`, column),
		"- a dependency the service calls over HTTP per execution (a payment provider): point its URL at listen",
		"downstream:",
		"  listen: 127.0.0.1:9090",
		"  routes:",
		`    - {name: provider, method: POST, path: /TODO, response: {status: 200, body: {id: "pay_{seq}"}}}  # TODO: answer as the provider does (` + doubleDoc + ")",
		"oracle:",
		"  downstream: provider",
		"- an HTTP endpoint counting a key's executions (an absolute URL: a gRPC target has no HTTP base)",
		"oracle:",
		"  url: http://127.0.0.1:8080/TODO?key={key}",
		"  pointer: /executions",
	}
}

// operation writes one method: its name, rpc, a request skeleton, the id
// pointer and a mutation; the variants as a TODO.
func (d *description) operation(m method, k keyKind, seen map[string]bool) *yaml.Node {
	op := newMapping()
	name := kebab(string(m.md.Name()))
	if seen[name] {
		name = kebab(string(m.md.Parent().Name())) + "-" + name
	}
	seen[name] = true
	op.set("name", str(name))
	rpc := str(m.rpc())
	if m.guessed != "" {
		guessed(rpc, m.guessed)
	}
	op.set("rpc", rpc)

	body := messageSkeleton(m.md.Input(), k.field)
	bn := body.node
	if len(body.json) == 0 {
		bn = flowMapping().n
	}
	setup, hasSetup := proposeGRPCSetup(m.md)
	if hasSetup && bn.Kind == yaml.MappingNode {
		setup.bind(bn)
	}
	todo(bn, fmt.Sprintf("a request the server accepts (%s in protojson, placeholders by type; idemcheck sets the key)", m.md.Input().Name()))
	bk := op.set("body", bn)
	if len(body.leftOut) > 0 {
		head(bk, "TODO: left out of the body: "+strings.Join(body.leftOut, ", ")+"; add what a request needs.")
	}

	if hasSetup {
		op.set("setup", setup.node(k.field))
		if setup.update {
			op.set("kind", guessed(str("update"), fmt.Sprintf("%s answers the %s it acts on: every answer names that one resource", m.md.Name(), m.md.Output().Name())))
		}
	}
	ptr, why := responseID(m.md.Output())
	var lines []string
	switch {
	case ptr != "" && (updates(m.md) || hasSetup && setup.update):
		lines = append(lines, sharedIDLines(ptr, fmt.Sprintf("(%s) names the resource %s updates, the same in every answer", why, m.md.Name()), k.column())...)
	case ptr != "":
		op.set("id_pointer", guessed(str(ptr), why))
	default:
		lines = append(lines, fmt.Sprintf("id_pointer: /name  # TODO: %s has no name, id or *_id field: the created resource's id in the answer's protojson (camelCase)", m.md.Output().FullName()))
	}
	muts := sequence()
	if patch, field, ok := body.mutation(); ok {
		mm := flowMapping()
		mm.set("name", str("changed-"+kebab(field)))
		mm.set("patch", value(patch))
		guessed(mm.n, "a changed field: a materially different request under the same key")
		muts.Content = append(muts.Content, mm.n)
	}
	patches, fields := body.listMutations()
	for i, patch := range patches {
		mm := flowMapping()
		mm.set("name", str("added-"+kebab(fields[i])))
		mm.set("patch", value(patch))
		guessed(mm.n, "an element in the repeated "+fields[i]+": a request whose list differs is another request")
		muts.Content = append(muts.Content, mm.n)
	}
	if len(muts.Content) > 0 {
		op.set("mutations", muts)
	} else {
		lines = append(lines, "mutations: [{name: changed, patch: {TODO: 2}}]  # TODO: a request under a used key that differs materially (the mismatch cases)")
	}
	lines = append(lines,
		"variants:  # TODO: what the catalog's other cases send (docs/grpc.md); with downstream:, the double plays them:",
		"  slow: {downstream: {route: provider, delay: 1500ms}, duration: 1500ms}  # a call in flight: the in-flight and concurrent cases",
		"  business_error: {downstream: {route: provider, status: 402}, status: FAILED_PRECONDITION}  # an outcome kept for the key",
		"  transient_error: {downstream: {route: provider, status: 503}, status: UNAVAILABLE}  # a failure a retry executes again",
		"  invalid: {patch: {TODO: -1}, status: INVALID_ARGUMENT}  # a request the API refuses")
	foot(op.n.Content[len(op.n.Content)-2], lines...)
	return op.n
}

// updates reports a method that changes an existing resource (AIP-134's
// Update…): its answers all name that resource. (A request carrying the
// resource it answers is no sign: AIP-133's Create carries it too.)
func updates(md protoreflect.MethodDescriptor) bool {
	return strings.HasPrefix(string(md.Name()), "Update")
}

// responseID is the pointer to the created resource's id in the answer's
// protojson: a google.longrunning.Operation's name, a resource name
// (AIP-122), an id, else the first *_id field. Pointers use the JSON
// names protojson writes (lowerCamelCase).
func responseID(msg protoreflect.MessageDescriptor) (ptr, why string) {
	if msg.FullName() == "google.longrunning.Operation" {
		return "/name", "the google.longrunning.Operation's name"
	}
	fields := msg.Fields()
	scalar := func(f protoreflect.FieldDescriptor) bool {
		return f != nil && !f.IsList() && !f.IsMap() && f.Message() == nil
	}
	if f := fields.ByName("name"); scalar(f) && f.Kind() == protoreflect.StringKind {
		return "/" + f.JSONName(), fmt.Sprintf("%s.name, an AIP-122 resource name", msg.Name())
	}
	if f := fields.ByName("id"); scalar(f) {
		return "/" + f.JSONName(), fmt.Sprintf("%s.id", msg.Name())
	}
	for i := 0; i < fields.Len(); i++ {
		if f := fields.Get(i); scalar(f) && strings.HasSuffix(string(f.Name()), "_id") {
			return "/" + f.JSONName(), fmt.Sprintf("%s.%s, the first *_id field: check it is the created resource's, not another's", msg.Name(), f.Name())
		}
	}
	return "", ""
}

// grpcProfile is the preset of the key's document with what the key
// field's annotations say (rules) as overrides, and the overrides a gRPC
// API documents, commented: no gRPC document names their codes.
func grpcProfile(k keyKind, rules wire.KeyRules) *yaml.Node {
	prof := newMapping()
	why := map[string]string{
		"aip-155":       "AIP-155: a string request_id",
		"aep-155":       "AEP-155: an IdempotencyKey {key, first_sent}",
		"grpc-metadata": "a metadata key (the Nebius and Yandex Cloud SDKs' convention)",
	}[k.preset()]
	pk := prof.set("preset", from(str(k.preset()), why))
	ov := newMapping()
	if rules.UUID {
		ov.set("key_format", from(str("uuid"), "the key field's google.api.field_info.format = UUID4: every case sends a UUID"))
	}
	if rules.Required {
		ov.set("key_required", from(value(true), "the key field's google.api.field_behavior = REQUIRED"))
	}
	prose := []string{
		"TODO: the codes the API documents (gRPC code names, judged by the exact code; docs/grpc.md). The preset",
		"names none for these: any error that executed nothing meets them until they are set; the fields it",
		"leaves open skip their cases (a finding, no verdict) until they are set.",
	}
	list := []string{
		"mismatch_status: INVALID_ARGUMENT   # TODO: a used key with another request",
		"stale_replay_on_mismatch: false     # TODO: if that request is refused, never answered with the first one's response",
		"in_flight_status: ABORTED           # TODO: a duplicate while the first call runs (the preset takes ABORTED or ALREADY_EXISTS)",
		"missing_status: INVALID_ARGUMENT    # TODO: no key, where the API requires one (with key_required: true)",
	}
	written := map[string]bool{"mismatch_status": true, "stale_replay_on_mismatch": true, "in_flight_status": true, "missing_status": true, "key_format": rules.UUID, "key_required": true}
	if !rules.Required {
		list = append(list, "key_required: true                  # TODO: if a call without a key is refused")
	}
	list = append(list, openLines(k.preset(), true, func(f string) bool { return written[f] })...)
	if len(ov.n.Content) > 0 {
		prof.set("overrides", ov.n)
		foot(ov.n.Content[len(ov.n.Content)-2], append(prose, list...)...)
		return prof.n
	}
	lines := append(prose, "overrides:")
	for _, l := range list {
		lines = append(lines, "  "+l)
	}
	foot(pk, lines...)
	return prof.n
}

// kebab writes a CamelCase or camelCase name in lower case with hyphens
// (CreatePayment: create-payment).
func kebab(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('-')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return slug(b.String())
}
