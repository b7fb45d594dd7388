package apispec

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// bodyVariants are the variants whose point is another body: a duration
// or status alone cannot make one.
var bodyVariants = map[string]bool{VariantInvalid: true, VariantLarge: true, VariantBinary: true}

var validMethods = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true, "GET": true}

// Validate checks a Target; the error names the field.
func (t *Target) Validate() error {
	if t.Command != "" {
		if _, err := SplitCommand(t.Command); err != nil {
			return fmt.Errorf("target_cmd %q: %v", t.Command, err)
		}
	}
	// A managed target's base URL may be left out or name the picked {port}.
	base := t.BaseURL
	if t.Command != "" {
		base = strings.ReplaceAll(base, PortPlaceholder, "1")
	}
	u, err := url.Parse(base)
	if (t.BaseURL != "" || t.Command == "") && !t.IsGRPC() && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		return fmt.Errorf("base_url %q: want an absolute http(s) URL (grpc:// or grpcs:// for a gRPC target)", t.BaseURL)
	}
	if err := t.validateGRPC(); err != nil {
		return err
	}
	if err := t.validateCarrier(); err != nil {
		return err
	}
	if err := t.validateReplicas(); err != nil {
		return err
	}
	if !validFieldName(t.KeyHeader) {
		return fmt.Errorf("key_header %q: want an HTTP header name", t.KeyHeader)
	}
	if t.KeySyntax != SFString && t.KeySyntax != Raw {
		return fmt.Errorf("key_syntax %q: want sf-string or raw", t.KeySyntax)
	}
	if t.Timeout <= 0 {
		return fmt.Errorf("timeout %s: must be positive", t.Timeout)
	}
	if t.TTL < 0 {
		return fmt.Errorf("ttl %s: must not be negative", t.TTL)
	}
	if t.Lease < 0 {
		return fmt.Errorf("lease %s: must not be negative", t.Lease)
	}
	if len(t.Principals) == 0 {
		return errors.New("principals: at least one principal is required (add a second one for the scope cases)")
	}
	seen := map[string]bool{}
	for i, pr := range t.Principals {
		if pr.Name == "" || seen[pr.Name] {
			return fmt.Errorf("principals[%d].name %q: want a unique non-empty name", i, pr.Name)
		}
		seen[pr.Name] = true
	}
	if err := t.Oracle.validate("oracle", len(t.Principals)); err != nil {
		return err
	}
	if err := t.KeySource.validate("key_source", len(t.Principals)); err != nil {
		return err
	}
	if err := t.TTLFrom.validate("ttl_from", len(t.Principals)); err != nil {
		return err
	}
	if t.tls == nil && t.TLS != (TLS{}) { // a Target built in Go, not by LoadConfig
		if err := t.SetTLS(t.TLS); err != nil {
			return fmt.Errorf("tls.%v", err)
		}
	}
	if len(t.Operations) == 0 {
		return errors.New("operations: at least one operation is required")
	}
	seen = map[string]bool{}
	for i := range t.Operations {
		op := &t.Operations[i]
		at := fmt.Sprintf("operations[%d]", i)
		if op.Name == "" || seen[op.Name] {
			return fmt.Errorf("%s.name %q: want a unique non-empty name", at, op.Name)
		}
		seen[op.Name] = true
		if err := t.validateOperation(at, op); err != nil {
			return err
		}
	}
	if err := t.validateDownstream(); err != nil {
		return err
	}
	if t.Events != nil {
		// One validation, evidence/events': its errors name the field
		// (events.kafka.topic: required).
		if err := t.Events.Validate(); err != nil {
			return err
		}
	}
	// Per-key and global counts cannot be added up: one kind for the run.
	if os := t.Oracles(); len(os) > 1 {
		for _, o := range os[1:] {
			if o.PerKey() != os[0].PerKey() {
				return fmt.Errorf("oracle %s and %s: one counts per key, the other globally; use one kind for every operation", os[0], o)
			}
		}
	}
	return nil
}

// validateOperation checks op, the operation at at, beyond its name.
func (t *Target) validateOperation(at string, op *Operation) error {
	if !validMethods[op.Method] {
		return fmt.Errorf("%s.method %q: want POST, PUT, PATCH, DELETE or GET", at, op.Method)
	}
	if !strings.HasPrefix(op.Path, "/") {
		return fmt.Errorf("%s.path %q: want a path starting with /", at, op.Path)
	}
	u, err := url.ParseRequestURI(op.Path)
	if err == nil {
		_, err = url.ParseQuery(u.RawQuery)
	} else {
		err = errors.Unwrap(err)
	}
	if err != nil {
		return fmt.Errorf("%s.path %q: want a path, optionally with a query (/v1/charges?capture=true): %v", at, op.Path, err)
	}
	if len(op.Body) > 0 && !jsonx.IsObject(op.Body) {
		return fmt.Errorf("%s.body: want a JSON object (mutations and variants are merge patches on it)", at)
	}
	if _, err := jsonx.ParsePointer(op.IDPointer); err != nil {
		return fmt.Errorf("%s.id_pointer %q: %v", at, op.IDPointer, err)
	}
	if err := t.validateKind(at, op); err != nil {
		return err
	}
	if err := t.validateResponse(at, op); err != nil {
		return err
	}
	names := map[string]bool{}
	for j, m := range op.Mutations {
		if m.Name == "" || names[m.Name] {
			return fmt.Errorf("%s.mutations[%d].name %q: want a unique non-empty name", at, j, m.Name)
		}
		names[m.Name] = true
		if err := t.validateMutation(fmt.Sprintf("%s.mutations[%d]", at, j), m); err != nil {
			return err
		}
	}
	for name, v := range op.Variants {
		if !knownVariants[name] {
			return fmt.Errorf("%s.variants.%s: unknown variant (valid: binary, business_error, crash, invalid, large, slow, timeout, transient_error)", at, name)
		}
		if v.Raw == nil && v.Patch != nil && !jsonx.IsObject(v.Patch) {
			return fmt.Errorf("%s.variants.%s.patch: want a JSON object (RFC 7386 merge patch), raw: a whole body sent as is, or downstream: the double's answer", at, name)
		}
		if v.Raw == nil && v.Patch == nil && v.Downstream == nil && bodyVariants[name] {
			return fmt.Errorf("%s.variants.%s: want patch (RFC 7386 merge patch) or raw (a whole body): the %s variant is another body", at, name, name)
		}
		if v.Duration < 0 {
			return fmt.Errorf("%s.variants.%s.duration %s: must not be negative", at, name, v.Duration)
		}
		if name == VariantSlow && v.Duration <= 0 {
			return fmt.Errorf("%s.variants.slow.duration: want how long the slow call stays in flight (e.g. 1500ms)", at)
		}
		if h := HTTPStatusOf(v.Status); v.Status != 0 && (h < 100 || h > 599) {
			return fmt.Errorf("%s.variants.%s.status %d: not an HTTP status", at, name, v.Status)
		}
	}
	for k := range op.Headers {
		if http.CanonicalHeaderKey(k) == http.CanonicalHeaderKey(t.KeyHeader) {
			return fmt.Errorf("%s.headers.%s: the key header is set by the suite", at, k)
		}
	}
	if err := op.Oracle.validate(at+".oracle", len(t.Principals)); err != nil {
		return err
	}
	return nil
}

// validateMutation checks m, the mutation at at: it changes something, its
// patch is a merge patch, its query and header names are names.
func (t *Target) validateMutation(at string, m Mutation) error {
	if m.Patch == nil && len(m.Query) == 0 && len(m.Headers) == 0 {
		return fmt.Errorf("%s: want patch (the body), query or headers: what makes the request different", at)
	}
	if m.Patch != nil && !jsonx.IsObject(m.Patch) {
		return fmt.Errorf("%s.patch: want a JSON object (RFC 7386 merge patch)", at)
	}
	for name := range m.Query {
		if name == "" {
			return fmt.Errorf("%s.query: want parameter names, not an empty one", at)
		}
	}
	for name := range m.Headers {
		switch {
		case !validFieldName(name):
			return fmt.Errorf("%s.headers.%s: want an HTTP field name", at, name)
		case http.CanonicalHeaderKey(name) == http.CanonicalHeaderKey(t.KeyHeader):
			return fmt.Errorf("%s.headers.%s: the key header is set by the suite", at, name)
		}
	}
	return nil
}

// validFieldName reports an RFC 9110 field name (a token).
func validFieldName(name string) bool {
	return name != "" && !strings.ContainsAny(name, " \t:\"(),/;<=>?@[\\]{}\r\n")
}
