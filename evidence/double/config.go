package double

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/idemcheck/idemcheck/internal/jsonx"
	"go.yaml.in/yaml/v3"
)

// DefaultJournalCap is how many calls the journal keeps when Config says 0.
const DefaultJournalCap = 10000

// Config is the config's downstream: section.
type Config struct {
	// Listen is the address to listen on (the API's provider URL points
	// here); empty: 127.0.0.1 and a free port.
	Listen string  `yaml:"listen" json:"listen"`
	Routes []Route `yaml:"routes" json:"routes"`
	// JournalCap bounds the journal (oldest calls dropped first; counts
	// are kept); 0: DefaultJournalCap.
	JournalCap int `yaml:"journal_cap" json:"journal_cap,omitempty"`
}

// Route is one answered endpoint of the dependency.
type Route struct {
	Name string `yaml:"name" json:"name"`
	// Method is matched exactly; empty matches any method.
	Method string `yaml:"method" json:"method,omitempty"`
	// Path is a doublestar glob over the URL path ("/v1/payments/*",
	// "/v1/**").
	Path     string   `yaml:"path" json:"path"`
	Response Response `yaml:"response" json:"response"`
}

// Response is a route's canned answer.
type Response struct {
	// Status defaults to 200.
	Status  int               `yaml:"status" json:"status,omitempty"`
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// Body is any JSON value; "{seq}" in it is replaced by the route's
	// call number (1, 2, ...), so created ids differ ("pay_{seq}").
	Body  json.RawMessage `yaml:"-" json:"body,omitempty"`
	Delay time.Duration   `yaml:"delay" json:"delay,omitempty"`
}

// UnmarshalYAML reads a response whose body is any YAML value (a mapping
// becomes a JSON object).
func (r *Response) UnmarshalYAML(n *yaml.Node) error {
	var raw struct {
		Status  int               `yaml:"status"`
		Headers map[string]string `yaml:"headers"`
		Body    any               `yaml:"body"`
		Delay   time.Duration     `yaml:"delay"`
	}
	if err := n.Decode(&raw); err != nil {
		return err
	}
	body, err := jsonx.Encode(raw.Body)
	if err != nil {
		return fmt.Errorf("line %d: body: %v", n.Line, err)
	}
	*r = Response{Status: raw.Status, Headers: raw.Headers, Body: body, Delay: raw.Delay}
	return nil
}

// Validate checks the config; errors are one line naming the field
// (downstream.routes[1].path: ...).
func (c *Config) Validate() error {
	if c.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			return fmt.Errorf("downstream.listen %q: want host:port (e.g. 127.0.0.1:9090)", c.Listen)
		}
	}
	if c.JournalCap < 0 {
		return fmt.Errorf("downstream.journal_cap %d: must not be negative", c.JournalCap)
	}
	if len(c.Routes) == 0 {
		return fmt.Errorf("downstream.routes: at least one route is required")
	}
	seen := map[string]bool{}
	for i, r := range c.Routes {
		at := fmt.Sprintf("downstream.routes[%d]", i)
		if r.Name == "" || seen[r.Name] {
			return fmt.Errorf("%s.name %q: want a unique non-empty name", at, r.Name)
		}
		seen[r.Name] = true
		if r.Method != "" && !validMethod(r.Method) {
			return fmt.Errorf("%s.method %q: want an HTTP method (GET, POST, ...) or nothing for any", at, r.Method)
		}
		if !strings.HasPrefix(r.Path, "/") || !doublestar.ValidatePattern(r.Path) {
			return fmt.Errorf("%s.path %q: want a path glob starting with / (e.g. /v1/payments/*)", at, r.Path)
		}
		if err := r.Response.validate(at + ".response"); err != nil {
			return err
		}
	}
	return nil
}

func (r Response) validate(at string) error {
	if r.Status != 0 && (r.Status < 100 || r.Status > 599) {
		return fmt.Errorf("%s.status %d: not an HTTP status", at, r.Status)
	}
	if r.Delay < 0 {
		return fmt.Errorf("%s.delay %s: must not be negative", at, r.Delay)
	}
	if len(r.Body) > 0 && !json.Valid(r.Body) {
		return fmt.Errorf("%s.body: not JSON", at)
	}
	for k := range r.Headers {
		if k == "" || strings.ContainsAny(k, " \t:\r\n") {
			return fmt.Errorf("%s.headers %q: not a header name", at, k)
		}
	}
	return nil
}

// RouteIndex is the index of the route named name, -1 when none.
func (c *Config) RouteIndex(name string) int {
	for i, r := range c.Routes {
		if r.Name == name {
			return i
		}
	}
	return -1
}

// RouteNames lists the routes' names, for errors.
func (c *Config) RouteNames() string {
	names := make([]string, len(c.Routes))
	for i, r := range c.Routes {
		names[i] = r.Name
	}
	return strings.Join(names, ", ")
}

func validMethod(m string) bool {
	switch strings.ToUpper(m) {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return true
	}
	return false
}
