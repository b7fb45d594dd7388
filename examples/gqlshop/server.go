package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator"
)

// schemaSDL is the API. The directive is declared, as Shopify's schema
// declares it, and not required by the schema: the runtime requires it
// on chargeCreate. paymentCreate takes its key as an input field instead
// (payment.go), required by the schema.
const schemaSDL = `
directive @idempotent(key: String!) on FIELD
type Query { charge(id: ID!): Charge }
type Mutation {
  chargeCreate(input: ChargeInput!): ChargeCreatePayload
  paymentCreate(input: PaymentInput!): PaymentCreatePayload
}
input ChargeInput { amount: Int!, currency: String!, description: String, delayMs: Int, fail: String }
input PaymentInput { idempotencyKey: String!, amount: Int!, currency: String!, description: String, delayMs: Int, fail: String }
type Charge { id: ID!, amount: Int!, currency: String!, description: String }
type UserError { code: String!, message: String!, field: [String!] }
type ChargeCreatePayload { charge: Charge, userErrors: [UserError!]! }
type PaymentCreatePayload { payment: Charge, userErrors: [UserError!]! }
`

// The codes of the errors gqlshop answers with (extensions.code).
const (
	codeMissingKey   = "MISSING_IDEMPOTENCY_KEY"
	codeMismatch     = "IDEMPOTENCY_KEY_PARAMETER_MISMATCH"
	codeInFlight     = "IDEMPOTENCY_CONCURRENT_REQUEST"
	codeBadInput     = "BAD_USER_INPUT"
	codeInvalidQuery = "GRAPHQL_VALIDATION_FAILED"
	codeInternal     = "INTERNAL_SERVER_ERROR"
	codeUnauth       = "UNAUTHENTICATED"
	codeDeclined     = "CARD_DECLINED"
)

// maxKey is the longest key accepted.
const maxKey = 255

// server is the API and its idempotency records.
type server struct {
	schema *ast.Schema
	ttl    time.Duration
	defect defect
	users  map[string]string // bearer token -> customer

	mu      sync.Mutex
	records map[string]*record // customer \x00 field \x00 key
	effects map[string]int     // key -> charges executed under it
	ids     atomic.Int64
}

// record is one key's state: in flight until answer is set.
type record struct {
	digest  string
	answer  []byte
	expires time.Time
}

func newServer(ttl time.Duration, d defect) (*server, error) {
	schema, err := gqlparser.LoadSchema(&ast.Source{Name: "schema.graphql", Input: schemaSDL})
	if err != nil {
		return nil, err
	}
	return &server{schema: schema, ttl: ttl, defect: d, users: map[string]string{"Bearer alice": "alice", "Bearer bob": "bob"},
		records: map[string]*record{}, effects: map[string]int{}}, nil
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /graphql", s.graphql)
	mux.HandleFunc("POST /v1/charges", s.restCharge)
	mux.HandleFunc("GET /effects", s.effectsOf)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("gqlshop\n")) })
	return mux
}

func (s *server) effectsOf(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]int{"executions": s.executions(r)})
}

// executions are the charges executed under the request's ?key=, or
// under every key when it names none.
func (s *server) executions(r *http.Request) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if key, ok := r.URL.Query()["key"]; ok {
		return s.effects[key[0]]
	}
	n := 0
	for _, c := range s.effects {
		n += c
	}
	return n
}

// gqlError is one entry of a response's errors.
type gqlError struct {
	Message    string            `json:"message"`
	Extensions map[string]string `json:"extensions,omitempty"`
}

func errorsAnswer(code, msg string) map[string]any {
	return map[string]any{"errors": []gqlError{{Message: msg, Extensions: map[string]string{"code": code}}}, "data": map[string]any{"chargeCreate": nil}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func (s *server) graphql(w http.ResponseWriter, r *http.Request) {
	customer, ok := s.users[r.Header.Get("Authorization")]
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"errors": []gqlError{{Message: "invalid API token", Extensions: map[string]string{"code": codeUnauth}}}})
		return
	}
	var req struct {
		Query         string         `json:"query"`
		OperationName string         `json:"operationName"`
		Variables     map[string]any `json:"variables"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": []gqlError{{Message: "body is not a GraphQL request: " + err.Error(), Extensions: map[string]string{"code": codeBadInput}}}})
		return
	}
	doc, errs := gqlparser.LoadQuery(s.schema, req.Query)
	if len(errs) > 0 {
		writeJSON(w, http.StatusOK, map[string]any{"errors": []gqlError{{Message: errs.Error(), Extensions: map[string]string{"code": codeInvalidQuery}}}})
		return
	}
	op := doc.Operations.ForName(req.OperationName)
	if op == nil && len(doc.Operations) == 1 {
		op = doc.Operations[0]
	}
	if op == nil || op.Operation != ast.Mutation || len(op.SelectionSet) != 1 {
		writeJSON(w, http.StatusOK, errorsAnswer(codeBadInput, "send one mutation with one field"))
		return
	}
	vars, err := validator.VariableValues(s.schema, op, req.Variables)
	if err != nil {
		writeJSON(w, http.StatusOK, errorsAnswer(codeBadInput, err.Error()))
		return
	}
	field, ok := op.SelectionSet[0].(*ast.Field)
	if !ok || (field.Name != "chargeCreate" && field.Name != "paymentCreate") {
		writeJSON(w, http.StatusOK, errorsAnswer(codeBadInput, "unknown mutation"))
		return
	}
	input, _ := field.ArgumentMap(vars)["input"].(map[string]any)
	if field.Name == "paymentCreate" {
		s.payment(w, customer, field, input)
		return
	}
	dir := field.Directives.ForName("idempotent")
	if dir == nil {
		writeJSON(w, http.StatusOK, errorsAnswer(codeMissingKey, "chargeCreate requires the @idempotent directive"))
		return
	}
	key, _ := dir.ArgumentMap(vars)["key"].(string)
	if strings.TrimSpace(key) == "" || len(key) > maxKey {
		writeJSON(w, http.StatusOK, errorsAnswer(codeBadInput, fmt.Sprintf("idempotency key must be 1 to %d characters, not blank", maxKey)))
		return
	}
	s.charge(w, customer, key, field, input)
}

// digestOf fingerprints the mutation's arguments (json.Marshal writes a
// map's members sorted: one text per input).
func digestOf(field string, input map[string]any) string {
	b, _ := json.Marshal(input)
	sum := sha256.Sum256(append([]byte(field+"\x00"), b...))
	return hex.EncodeToString(sum[:])
}

// outcome is what once did with a request.
type outcome int

const (
	executed   outcome = iota // run, its answer kept unless it failed
	replayed                  // the stored answer
	mismatched                // the key was used with other arguments
	inFlight                  // the key's first request is still running
)

// once runs run at most once per id (customer, operation, key) while its
// answer is kept; answer is the kept one when the outcome is replayed or
// mismatched.
func (s *server) once(id, digest string, run func() (answer []byte, keep bool)) (answer []byte, o outcome) {
	s.mu.Lock()
	rec, found := s.records[id]
	if found && !rec.expires.IsZero() && time.Now().After(rec.expires) {
		delete(s.records, id)
		found = false
	}
	if found && s.defect != ignoresKey {
		switch {
		case rec.digest != digest && s.defect != noFingerprint:
			stored := rec.answer
			s.mu.Unlock()
			if s.defect == executesOnMismatch {
				run() // answered as a mismatch all the same
			}
			return stored, mismatched
		case rec.answer == nil:
			s.mu.Unlock()
			return nil, inFlight
		}
		answer := rec.answer
		s.mu.Unlock()
		return answer, replayed
	}
	rec = &record{digest: digest}
	s.records[id] = rec
	s.mu.Unlock()

	answer, keep := run()
	s.mu.Lock()
	if keep {
		rec.answer, rec.expires = answer, time.Now().Add(s.ttl)
	} else if s.records[id] == rec {
		delete(s.records, id) // a failure of ours: the retry executes
	}
	s.mu.Unlock()
	return answer, executed
}

// charge runs chargeCreate under key for customer, once per key; its
// idempotency errors are top-level errors.
func (s *server) charge(w http.ResponseWriter, customer, key string, field *ast.Field, input map[string]any) {
	s.answerOnce(w, customer+"\x00"+field.Name+"\x00"+key, digestOf(field.Name, input), func() ([]byte, bool) {
		c := s.execute(key, input)
		return c.answer(field, "charge"), !c.failed
	}, func(code, msg string) { writeJSON(w, http.StatusOK, errorsAnswer(code, msg)) })
}

// answerOnce runs run at most once per id (once) and answers w with its
// answer, kept or fresh, or with the idempotency error fail writes: a
// key used with other arguments, or one still in flight.
func (s *server) answerOnce(w http.ResponseWriter, id, digest string, run func() ([]byte, bool), fail func(code, msg string)) {
	answer, o := s.once(id, digest, run)
	switch o {
	case mismatched:
		msg := "the idempotency key was used with other arguments"
		if s.defect == leaksPayload && answer != nil {
			msg += ": stored " + string(answer)
		}
		fail(codeMismatch, msg)
	case inFlight:
		fail(codeInFlight, "a request with this idempotency key is in progress")
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}
}

// charged is what one execution of a charge did.
type charged struct {
	charge     map[string]any // nil when declined or failed
	userErrors []any          // a declined card: an outcome, kept
	failed     bool           // gqlshop's own failure: not kept, a retry executes
}

// answer is c as the GraphQL answer of field, whose payload holds the
// charge under member.
func (c charged) answer(field *ast.Field, member string) []byte {
	doc := map[string]any{"data": map[string]any{alias(field): project(field.SelectionSet, map[string]any{member: c.charge, "userErrors": c.userErrors})}}
	if c.failed {
		doc = map[string]any{"data": map[string]any{alias(field): nil},
			"errors": []gqlError{{Message: "the card provider is unavailable", Extensions: map[string]string{"code": codeInternal}}}}
	}
	b, _ := json.Marshal(doc)
	return b
}

// execute charges: the card provider is called (an execution).
func (s *server) execute(key string, input map[string]any) charged {
	if ms, ok := input["delayMs"].(json.Number); ok {
		if d, err := ms.Int64(); err == nil && d > 0 {
			time.Sleep(min(time.Duration(d)*time.Millisecond, 10*time.Second))
		}
	}
	s.mu.Lock()
	s.effects[key]++
	s.mu.Unlock()
	switch input["fail"] {
	case "transient":
		return charged{failed: true}
	case "decline":
		return charged{userErrors: []any{map[string]any{"code": codeDeclined, "message": "the card was declined", "field": []any{"input"}}}}
	}
	return charged{userErrors: []any{}, charge: map[string]any{"id": fmt.Sprintf("gid://gqlshop/Charge/%d", s.ids.Add(1)),
		"amount": input["amount"], "currency": input["currency"], "description": input["description"]}}
}

func alias(f *ast.Field) string {
	if f.Alias != "" {
		return f.Alias
	}
	return f.Name
}

// project is v with only the fields sel selects, under their aliases.
func project(sel ast.SelectionSet, v any) any {
	switch d := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for _, s := range sel {
			if f, ok := s.(*ast.Field); ok {
				if f.Name == "__typename" {
					continue
				}
				out[alias(f)] = project(f.SelectionSet, d[f.Name])
			}
		}
		return out
	case []any:
		out := make([]any, len(d))
		for i, e := range d {
			out[i] = project(sel, e)
		}
		return out
	}
	return v
}
