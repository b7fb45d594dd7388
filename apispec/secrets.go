package apispec

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// EnvRef is a ${NAME} reference in a config value.
var EnvRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// redactedMark replaces the value of a secret_headers header that was not
// given through ${NAME}.
const redactedMark = "<redacted>"

// expandEnv replaces every ${NAME} in s with the environment variable's
// value; an unset variable is an error naming at. With secret, each value
// is remembered so that reports show ${NAME} instead.
func (t *Target) expandEnv(s, at string, secret bool) (string, error) {
	var missing string
	out := EnvRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := ref[2 : len(ref)-1]
		v, ok := os.LookupEnv(name)
		if !ok && missing == "" {
			missing = name
		}
		if secret && v != "" {
			t.addSecret(v, ref)
		}
		return v
	})
	if missing != "" {
		return "", fmt.Errorf("%s: ${%s} is not set in the environment", at, missing)
	}
	return out, nil
}

// expandConfig expands ${NAME} in the URLs and header values of a target
// read from YAML. Header values that used a variable are secrets, and so
// are the values of the headers named in secretHeaders: every exchange in
// every report, and every curl reproduction, shows ${NAME} (or <redacted>)
// instead of them.
func (t *Target) expandConfig(secretHeaders []string) error {
	secretName := map[string]bool{}
	for _, h := range secretHeaders {
		secretName[http.CanonicalHeaderKey(h)] = true
	}
	// A gRPC config writes its principals' header fields as metadata:.
	field := ".headers."
	if t.IsGRPC() {
		field = ".metadata."
	}
	headers := func(h map[string]string, at string) error {
		for k, v := range h {
			x, err := t.expandEnv(v, at+field+k, true)
			if err != nil {
				return err
			}
			if secretName[http.CanonicalHeaderKey(k)] && x == v && x != "" {
				t.addSecret(x, redactedMark)
			}
			h[k] = x
		}
		return nil
	}
	var err error
	if t.BaseURL, err = t.expandEnv(t.BaseURL, "base_url", false); err != nil {
		return err
	}
	for i := range t.Principals {
		if err := headers(t.Principals[i].Headers, fmt.Sprintf("principals[%d]", i)); err != nil {
			return err
		}
	}
	oracle := func(o *Oracle, at string) error {
		if o == nil {
			return nil
		}
		if o.URL, err = t.expandEnv(o.URL, at+".url", false); err != nil || o.SQL == nil {
			return err
		}
		// A DSN given as ${NAME} is shown as ${NAME}; one written out is
		// shown without its password.
		dsn, err := t.expandEnv(o.SQL.DSN, at+".sql.dsn", true)
		if err != nil {
			return err
		}
		if dsn == o.SQL.DSN {
			if src, _ := o.SQL.Source(); src.Password != "" {
				t.addSecret(dsn, RedactPassword(dsn, src.Password))
			}
		}
		o.SQL.DSN = dsn
		return nil
	}
	if err := oracle(t.Oracle, "oracle"); err != nil {
		return err
	}
	for i := range t.Operations {
		op := &t.Operations[i]
		at := fmt.Sprintf("operations[%d]", i)
		if op.Path, err = t.expandEnv(op.Path, at+".path", false); err != nil {
			return err
		}
		if err := headers(op.Headers, at); err != nil {
			return err
		}
		for j := range op.Mutations {
			if err := headers(op.Mutations[j].Headers, fmt.Sprintf("%s.mutations[%d]", at, j)); err != nil {
				return err
			}
		}
		if err := oracle(op.Oracle, at+".oracle"); err != nil {
			return err
		}
	}
	if t.KeySource != nil {
		if t.KeySource.Path, err = t.expandEnv(t.KeySource.Path, "key_source.path", false); err != nil {
			return err
		}
	}
	return t.expandEvents()
}

// expandEvents expands ${NAME} in the events broker's addresses. A URL
// given as ${NAME} is shown as ${NAME}; one written out is shown without
// its password.
func (t *Target) expandEvents() error {
	ev := t.Events
	if ev == nil {
		return nil
	}
	var err error
	brokerURL := func(raw *string, at string) error {
		x, err := t.expandEnv(*raw, at, true)
		if err != nil {
			return err
		}
		if u, perr := url.Parse(x); x == *raw && perr == nil {
			if pw, ok := u.User.Password(); ok && pw != "" {
				t.addSecret(pw, redactedMark)
			}
		}
		*raw = x
		return nil
	}
	switch {
	case ev.Kafka != nil:
		for i := range ev.Kafka.Brokers {
			if ev.Kafka.Brokers[i], err = t.expandEnv(ev.Kafka.Brokers[i], fmt.Sprintf("events.kafka.brokers[%d]", i), false); err != nil {
				return err
			}
		}
	case ev.Redis != nil:
		return brokerURL(&ev.Redis.URL, "events.redis.url")
	case ev.NATS != nil:
		return brokerURL(&ev.NATS.URL, "events.nats.url")
	}
	return nil
}

// addSecret makes Redact replace value with placeholder.
func (t *Target) addSecret(value, placeholder string) {
	for _, s := range t.secrets {
		if s[0] == value {
			return
		}
	}
	t.secrets = append(t.secrets, [2]string{value, placeholder})
	// Longest first, so a secret containing another is replaced whole.
	sort.Slice(t.secrets, func(i, j int) bool { return len(t.secrets[i][0]) > len(t.secrets[j][0]) })
	pairs := make([]string, 0, 2*len(t.secrets))
	for _, s := range t.secrets {
		pairs = append(pairs, s[0], s[1])
	}
	t.redactor = strings.NewReplacer(pairs...)
}

// Redact replaces every secret value in s with its placeholder.
func (t *Target) Redact(s string) string {
	if t.redactor == nil {
		return s
	}
	return t.redactor.Replace(s)
}

func (t *Target) RedactBytes(b []byte) []byte {
	if t.redactor == nil || len(b) == 0 {
		return b
	}
	for _, s := range t.secrets {
		if bytes.Contains(b, []byte(s[0])) {
			return []byte(t.redactor.Replace(string(b)))
		}
	}
	return b
}

func (t *Target) RedactHeader(h http.Header) http.Header {
	if t.redactor == nil || h == nil {
		return h
	}
	out := make(http.Header, len(h))
	for k, vs := range h {
		rv := make([]string, len(vs))
		for i, v := range vs {
			rv[i] = t.redactor.Replace(v)
		}
		out[k] = rv
	}
	return out
}

// RedactedConfig is a YAML config as an attestation cites it: the
// literal values of its secret_headers headers replaced by <redacted>
// (values given as ${NAME} are placeholders already). It reads no
// environment, so a third party holding the redacted file gets the same
// bytes back, and so the same digest.
func RedactedConfig(raw []byte) ([]byte, error) {
	var cf struct {
		SecretHeaders []string `yaml:"secret_headers"`
		Principals    []struct {
			Headers map[string]string `yaml:"headers"`
		} `yaml:"principals"`
		Operations []struct {
			Headers map[string]string `yaml:"headers"`
		} `yaml:"operations"`
	}
	if err := yaml.Unmarshal(raw, &cf); err != nil {
		return nil, yamlError(err)
	}
	secret := map[string]bool{}
	for _, h := range cf.SecretHeaders {
		secret[http.CanonicalHeaderKey(h)] = true
	}
	var t Target
	redact := func(h map[string]string) {
		for k, v := range h {
			if secret[http.CanonicalHeaderKey(k)] && v != "" && !EnvRef.MatchString(v) {
				t.addSecret(v, redactedMark)
			}
		}
	}
	for _, p := range cf.Principals {
		redact(p.Headers)
	}
	for _, op := range cf.Operations {
		redact(op.Headers)
	}
	return []byte(t.Redact(string(raw))), nil
}

// HasSecrets reports whether the config holds secrets that Redact replaces.
func (t *Target) HasSecrets() bool { return t.redactor != nil }
