package initconfig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// ErrDocument: the OpenAPI document cannot be read, parsed or used
// (exit 2). A URL that does not answer wraps apispec.ErrUnreachable
// instead (exit 4).
var ErrDocument = errors.New("openapi")

// DefaultKeyHeader is the header the draft names.
const DefaultKeyHeader = "Idempotency-Key"

// OpenAPIOptions says what FromOpenAPI reads and keeps.
type OpenAPIOptions struct {
	// Source is a file path or an http(s) URL of an OpenAPI 3.0 or 3.1
	// document, YAML or JSON.
	Source string
	// Operations are the operationIds to write (empty: those declaring
	// the key header, else every POST and PATCH).
	Operations []string
	// KeyHeader is the key header's name (empty: Idempotency-Key, or the
	// one header parameter whose name holds "idempotency").
	KeyHeader string
	// Timeout bounds fetching a URL and its external $refs (0: 10s); TLS
	// reaches an https one (a private CA, a client certificate).
	Timeout time.Duration
	TLS     apispec.TLS
	// Command is the command line that asked, quoted in the file's head.
	Command string
	// NoValidate reads a document that does not validate (a conflict
	// elsewhere in a large document) instead of refusing it.
	NoValidate bool
}

// FromOpenAPI reads an OpenAPI document and writes a commented idemcheck
// config: every value it took from the document says where from, every
// guess says "guessed:", every gap says "TODO:".
func FromOpenAPI(ctx context.Context, o OpenAPIOptions) ([]byte, error) {
	doc, err := loadDocument(ctx, o.Source, o.Timeout, o.TLS, !o.NoValidate)
	if err != nil {
		return nil, err
	}
	a := analysis{doc: doc, src: o.Source, keyHeader: o.KeyHeader}
	ops, err := a.selectOperations(o.Operations)
	if err != nil {
		return nil, err
	}
	return a.write(ops, o.Command)
}

// loadDocument loads and validates the document; errors are one line
// naming the source.
func loadDocument(ctx context.Context, src string, timeout time.Duration, tls apispec.TLS, validate bool) (*openapi3.T, error) {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	// The request layer's client, as every face builds it.
	var reach apispec.Target
	if err := reach.SetTLS(tls); err != nil {
		return nil, fmt.Errorf("tls.%v", err)
	}
	client := wire.Client(&reach, timeout)
	defer client.CloseIdleConnections()
	loc, remote := &url.URL{Path: filepath.ToSlash(src)}, false
	if u, err := url.Parse(src); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		loc, remote = u, true
	}
	loader := openapi3.NewLoader()
	loader.Context = ctx
	loader.IsExternalRefsAllowed = true
	loader.ReadFromURIFunc = func(_ *openapi3.Loader, u *url.URL) ([]byte, error) {
		if remote && u.Scheme != "http" && u.Scheme != "https" {
			// A document from the network does not get to read this
			// machine's files through its $refs.
			return nil, fmt.Errorf("$ref %s: a remote document's $refs must be http(s) URLs", u)
		}
		return readURI(ctx, client, u)
	}
	doc, err := loader.LoadFromURI(loc)
	if err != nil {
		if remote && errors.Is(err, apispec.ErrUnreachable) {
			return nil, fmt.Errorf("%w: %s: %v", apispec.ErrUnreachable, src, unwrapUnreachable(err))
		}
		return nil, fmt.Errorf("%w %s: %s", ErrDocument, src, singleLine(err.Error()))
	}
	if doc.OpenAPI == "" {
		return nil, fmt.Errorf("%w %s: no openapi field: want an OpenAPI 3.0 or 3.1 document (convert a Swagger 2.0 one first)", ErrDocument, src)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		return nil, fmt.Errorf("%w %s: openapi %q: want an OpenAPI 3.0 or 3.1 document", ErrDocument, src, doc.OpenAPI)
	}
	// Examples, defaults and patterns that a validator refuses (a pattern
	// Go's regexp cannot compile, a default outside its enum) do not stop
	// init: the bodies it writes are checked against the schema anyway.
	if !validate {
		return doc, nil
	}
	if err := doc.Validate(ctx, openapi3.DisableExamplesValidation(), openapi3.DisableSchemaDefaultsValidation(),
		openapi3.DisableSchemaPatternValidation()); err != nil {
		return nil, fmt.Errorf("%w %s: invalid (--no-validate reads it anyway): %s", ErrDocument, src, singleLine(err.Error()))
	}
	if doc.Paths == nil || doc.Paths.Len() == 0 {
		return nil, fmt.Errorf("%w %s: paths: the document describes no operation", ErrDocument, src)
	}
	return doc, nil
}

// readURI reads a file or an http(s) URL (the document and its external
// $refs); a URL that gives no HTTP answer is ErrUnreachable.
func readURI(ctx context.Context, c *http.Client, u *url.URL) ([]byte, error) {
	if u.Scheme != "http" && u.Scheme != "https" {
		if u.Scheme != "" && u.Scheme != "file" {
			return nil, fmt.Errorf("%s: only files and http(s) URLs are read", u)
		}
		return os.ReadFile(filepath.FromSlash(u.Path))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", apispec.ErrUnreachable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 16<<20))
}

// unwrapUnreachable is the transport error under the loader's wrapping.
func unwrapUnreachable(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, apispec.ErrUnreachable.Error()+": "); i >= 0 {
		return msg[i+len(apispec.ErrUnreachable.Error())+2:]
	}
	return msg
}

// analysis is one document being turned into a config.
type analysis struct {
	doc       *openapi3.T
	src       string
	keyHeader string
	// keyGuessed: the key header was found by its name, not given.
	keyGuessed bool
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
