package archtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const module = "github.com/idemcheck/idemcheck"

// A rule is one sentence of the dependency direction. Packages are named
// relative to the module; a pattern is a package ("scenarios"), a package
// and everything below it ("load/..."), or every package ("...").
type rule struct {
	says  string   // the sentence it checks, quoted by every failure
	of    []string // the packages it is about
	but   []string // packages of `of` it leaves out
	deep  bool     // judge every package reached (go list's Deps), not only direct imports
	only  []string // when set, nothing of idemcheck's outside these
	never []string // none of these
	own   bool     // a package may still import the packages below it (an example's generated code)
	// thirdOut are module paths outside idemcheck none of whose packages
	// may be reached (a database driver, a broker client).
	thirdOut []string
}

// frontEnds are the faces above the engine (docs/architecture.md: cmd ->
// suite, idemchecktest, initconfig, chaos/drive, load, reference, the
// report writers under reports -> scenarios).
var frontEnds = []string{"suite", "idemchecktest", "initconfig", "load/...", "chaos/drive", "reports/..."}

var rules = []rule{
	{
		says:  "load and chaos, with their subpackages, never depend on the engine (scenarios)",
		of:    []string{"load/...", "chaos/..."},
		deep:  true,
		never: []string{"scenarios"},
	},
	{
		says: "apispec, the config model, imports nothing of idemcheck's but internal/* (not internal/managed, the process control built on it), " +
			"evidence/double and evidence/eventspec (the config types of the double and of the events: section)",
		of:    []string{"apispec"},
		only:  []string{"internal/...", "evidence/double", "evidence/eventspec"},
		never: []string{"internal/managed"},
	},
	{
		says: "apispec is a leaf: no package it reaches is a database driver or a broker client " +
			"(connectors live in evidence, process control in internal/managed)",
		of:       []string{"apispec"},
		deep:     true,
		thirdOut: []string{"github.com/jackc/pgx", "github.com/go-sql-driver/mysql", "modernc.org/sqlite", "github.com/mattn/go-sqlite3", "github.com/twmb/franz-go", "github.com/redis/go-redis", "github.com/nats-io"},
	},
	{
		says: "wire, the carrier, imports only apispec and internal/*",
		of:   []string{"wire"},
		only: []string{"apispec", "internal/..."},
	},
	{
		says: "evidence (not its subpackages) imports only apispec, wire, its subpackages evidence/double, evidence/events and evidence/eventspec, and internal/*",
		of:   []string{"evidence"},
		only: []string{"apispec", "wire", "evidence/double", "evidence/events", "evidence/eventspec", "internal/..."},
	},
	{
		says: "chaos/front, the fault-proxy front of every carrier, imports only apispec, wire, chaos and internal/*",
		of:   []string{"chaos/front"},
		only: []string{"apispec", "wire", "chaos", "internal/..."},
	},
	{
		says: "chaos, evidence/double and evidence/eventspec are leaves: they import nothing of idemcheck's but internal/*",
		of:   []string{"chaos", "evidence/double", "evidence/eventspec"},
		only: []string{"internal/..."},
	},
	{
		says: "evidence/events, the events reader, imports nothing of idemcheck's but evidence/eventspec (its config) and internal/*",
		of:   []string{"evidence/events"},
		only: []string{"evidence/eventspec", "internal/..."},
	},
	{
		says: "internal/managed, process control, imports nothing of idemcheck's but apispec (what to start) and internal/freeport",
		of:   []string{"internal/managed"},
		only: []string{"apispec", "internal/freeport"},
	},
	{
		says: "the layers under the engine (apispec, wire, evidence, chaos) never reach the engine, a front end, " +
			"the CLI or the reference server, not even through an internal test fixture",
		of:    []string{"apispec", "wire", "evidence/...", "chaos", "chaos/front"},
		deep:  true,
		never: append([]string{"scenarios", "cmd/...", "reference/..."}, frontEnds...),
	},
	{
		says:  "the engine (scenarios) depends on none of its front ends, the CLI or the reference server",
		of:    []string{"scenarios"},
		deep:  true,
		never: append([]string{"cmd/...", "reference/..."}, frontEnds...),
	},
	{
		says:  "initconfig, load and chaos/drive depend on no other front end",
		of:    []string{"initconfig", "load", "chaos/drive"},
		deep:  true,
		never: frontEnds,
	},
	{
		says:  "the conformance writers (reports) depend on no other front end, nor on the chaos and load writers",
		of:    []string{"reports"},
		deep:  true,
		never: []string{"suite", "idemchecktest", "initconfig", "load/...", "chaos/drive", "reports/chaosreport", "reports/loadreport"},
	},
	{
		says:  "the chaos and load writers reach no front end but the run they render (chaos/drive's, load's)",
		of:    []string{"reports/chaosreport", "reports/loadreport"},
		deep:  true,
		never: []string{"suite", "idemchecktest", "initconfig", "reports"},
	},
	{
		says:  "the engines never import their writers: chaos and load, with their subpackages, never reach reports (the CLI wires them)",
		of:    []string{"chaos/...", "load/..."},
		deep:  true,
		never: []string{"reports/..."},
	},
	{
		says: "reports/chaosreport imports only chaos and chaos/drive (the findings, the run), the words and page shell of reports/internal and internal/*",
		of:   []string{"reports/chaosreport"},
		only: []string{"chaos", "chaos/drive", "reports/internal/...", "internal/..."},
	},
	{
		says: "reports/loadreport imports only load, the words and page shell of reports/internal and internal/*",
		of:   []string{"reports/loadreport"},
		only: []string{"load", "reports/internal/...", "internal/..."},
	},
	{
		says:  "the words and page shell the writers share (reports/internal/...) import nothing of idemcheck's",
		of:    []string{"reports/internal/..."},
		never: []string{"..."},
	},
	{
		says: "report rendering lives under reports: no package outside it imports html/template (a page) or text/tabwriter (a console table), " +
			"so a writer cannot drift back into an engine or the CLI",
		of:       []string{"..."},
		but:      []string{"reports/..."},
		thirdOut: []string{"html/template", "text/tabwriter"},
	},
	{
		says:  "the go test faces (idemchecktest, suite) depend on no front end but each other and reports",
		of:    []string{"idemchecktest", "suite"},
		deep:  true,
		never: []string{"initconfig", "load/...", "chaos/drive"},
	},
	{
		says:  "load and chaos/drive never reach the reference server: they measure APIs, they do not embed one",
		of:    []string{"load", "chaos/drive"},
		deep:  true,
		never: []string{"reference/..."},
	},
	{
		says: "reference and its subpackages import nothing of idemcheck's outside reference/: " +
			"it is an independent implementation",
		of:   []string{"reference/..."},
		deep: true,
		only: []string{"reference/..."},
	},
	{
		says: "the internal helpers (but testenv and the reference's fixtures demotest and knobless) " +
			"and the example APIs import nothing of idemcheck's (an example but its own generated code)",
		of:    []string{"internal/...", "examples/..."},
		but:   []string{"internal/testenv", "internal/demotest", "internal/knobless/...", "internal/managed"},
		never: []string{"..."},
		own:   true,
	},
	{
		says: "the replay floor imports nothing of idemcheck's but reference/minheap (serve's collector policy, which it mirrors), " +
			"and reference/minheap nothing at all",
		of:   []string{"reference/internal/replayfloor", "reference/minheap"},
		only: []string{"reference/minheap"},
	},
	{
		says: "internal/testenv reaches nothing of idemcheck's but internal/*, so reference's tests can use it",
		of:   []string{"internal/testenv"},
		deep: true,
		only: []string{"internal/..."},
	},
	{
		says: "clientcheck, the client face's stand-in and catalog, imports only apispec, wire, scenarios (the verdict vocabulary), " +
			"the reference middleware, its memory store and gRPC service (the stand-in honours keys with them), and internal/*",
		of:   []string{"clientcheck"},
		only: []string{"apispec", "wire", "scenarios", "reference", "reference/memstore", "reference/grpcref/...", "internal/..."},
	},
	{
		says:  "only the CLI imports initconfig",
		of:    []string{"..."},
		but:   []string{"cmd/...", "initconfig"},
		never: []string{"initconfig"},
	},
	{
		says:  "no package imports the CLI (cmd/...)",
		of:    []string{"..."},
		but:   []string{"cmd/..."},
		never: []string{"cmd/..."},
	},
}

func (r rule) forbids(rel string) bool {
	return r.only != nil && !matchAny(r.only, rel) || matchAny(r.never, rel)
}

func TestDependencyDirection(t *testing.T) {
	pkgs := list(t)
	for _, p := range pkgs {
		if p.Error != nil {
			// An import cycle or a program imported as a package: the
			// direction is broken before any rule is asked.
			t.Errorf("go list %s: %s", p.rel, p.Error.Err)
		}
	}
	for _, r := range rules {
		t.Run(r.says, func(t *testing.T) {
			for _, p := range slices.Concat(r.of, r.but, r.only, r.never) {
				if !slices.ContainsFunc(pkgs, func(q *pkg) bool { return match(p, q.rel) }) {
					t.Errorf("the rule names %q, which is no package of the module: a rule about nothing cannot fail", p)
				}
			}
			for _, p := range pkgs {
				if !matchAny(r.of, p.rel) || matchAny(r.but, p.rel) {
					continue
				}
				reached := p.Imports
				if r.deep {
					reached = p.Deps
				}
				for _, imp := range reached {
					to, ours := strings.CutPrefix(imp, module+"/")
					if !ours {
						if slices.ContainsFunc(r.thirdOut, func(m string) bool { return imp == m || strings.HasPrefix(imp, m+"/") }) {
							t.Errorf("%s reaches %s and breaks it", p.rel, imp)
						}
						continue
					}
					if !r.forbids(to) || (r.own && strings.HasPrefix(to, p.rel+"/")) {
						continue
					}
					path := chain(pkgs, p.rel, to)
					if slices.ContainsFunc(path[1:len(path)-1], r.forbids) {
						continue // reported at the first forbidden package on the way
					}
					t.Errorf("%s breaks it", strings.Join(path, " -> "))
				}
			}
		})
	}
}

func TestPackageCommentInDocGo(t *testing.T) {
	pkgs := list(t)
	for _, p := range pkgs {
		var with []string
		fset := token.NewFileSet()
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if f.Doc != nil {
				with = append(with, name)
			}
		}
		if !slices.Equal(with, []string{"doc.go"}) {
			t.Errorf("%s: every package keeps its package comment (what it is, what it may import and what it must not) in doc.go and in no other file; found it in %v", p.rel, with)
		}
	}
}

// pkg is what go list says of one package of the module.
type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	// TestGoFiles and XTestGoFiles are the package's test files.
	TestGoFiles, XTestGoFiles []string
	Imports                   []string
	Deps                      []string
	Error                     *struct{ Err string }

	rel string // ImportPath relative to the module
}

func list(t *testing.T) []*pkg {
	t.Helper()
	pkgs, err := listOnce()
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// listOnce runs go list over the module once per test binary, bounded in
// time: it reads the build files, compiling nothing.
var listOnce = sync.OnceValues(func() ([]*pkg, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "list", "-e", "-json=ImportPath,Dir,GoFiles,TestGoFiles,XTestGoFiles,Imports,Deps,Error", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v: %s", err, stderr.Bytes())
	}
	var pkgs []*pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		p := new(pkg)
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %v", err)
		}
		p.rel = strings.TrimPrefix(p.ImportPath, module+"/")
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		return nil, fmt.Errorf("go list found %d packages in %s: not the module this test was written for", len(pkgs), module)
	}
	return pkgs, nil
})

func match(pattern, rel string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == base || strings.HasPrefix(rel, base+"/")
	}
	return rel == pattern
}

func matchAny(patterns []string, rel string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, rel) })
}

// chain is the shortest import path from one package of the module to
// another (from first, to last), so a failure shows which import to remove.
// to is among from's Deps, so a path exists.
func chain(pkgs []*pkg, from, to string) []string {
	imports := map[string][]string{}
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
				imports[p.rel] = append(imports[p.rel], rel)
			}
		}
	}
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == to {
			path := []string{to}
			for p := prev[to]; p != ""; p = prev[p] {
				path = append([]string{p}, path...)
			}
			return path
		}
		for _, next := range imports[cur] {
			if _, ok := prev[next]; !ok {
				prev[next] = cur
				queue = append(queue, next)
			}
		}
	}
	return []string{from, to} // unreached: to is among from's Deps
}

// carrierName is a question of a target's or a URL's carrier by its name
// ("Is" and the carrier's name: the gRPC URL test, and the like of the
// carriers after it).
var carrierName = regexp.MustCompile(`\bIs(GRPC|GraphQL|JSONRPC|MCP)\w*\(`)

// carriersAndModel are where a carrier may be asked by name: the carriers
// themselves (wire) and the config model (apispec). Everyone else asks
// what a carrier can do (wire's capability interfaces).
var carriersAndModel = []string{"wire", "apispec"}

// namePending are packages still asking by name, each with who removes
// it; the list only shrinks.
var namePending = map[string]string{}

// TestNoCarrierNameOutsideCarriers: no package but the carriers and the
// config model branches on a carrier's name, not in its tests either.
func TestNoCarrierNameOutsideCarriers(t *testing.T) {
	for _, p := range list(t) {
		if matchAny(carriersAndModel, p.rel) || namePending[p.rel] != "" {
			continue
		}
		for _, name := range slices.Concat(p.GoFiles, p.TestGoFiles, p.XTestGoFiles) {
			b, err := os.ReadFile(filepath.Join(p.Dir, name))
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(string(b), "\n") {
				if m := carrierName.FindString(line); m != "" {
					t.Errorf("%s/%s:%d: %s asks a carrier by name; ask for a capability (wire.Methods, wire.Messages, ...) instead", p.rel, name, i+1, m)
				}
			}
		}
	}
}

// requestLayer are the faces that send requests carrying a key and must
// build them with the engine's builder (wire.Build, or a carrier's Build).
var requestLayer = []string{"chaos/drive", "load"}

// TestOneRequestLayer: one function builds every HTTP request that
// carries a key (wire.Build). The faces of requestLayer reach it (they
// import wire) and write no key of their own: their shipped code neither
// spells the key (Target.KeyValue, KeyHeader, KeyField) nor makes a
// request with net/http's constructors but a GET, which carries no key
// (load's connection warm-up).
func TestOneRequestLayer(t *testing.T) {
	own := regexp.MustCompile(`\.(KeyValue|KeyHeader|KeyField)\b|http\.NewRequest`)
	for _, p := range list(t) {
		if !slices.Contains(requestLayer, p.rel) {
			continue
		}
		if !slices.Contains(p.Imports, module+"/wire") {
			t.Errorf("%s does not import wire: it cannot build its requests with wire.Build", p.rel)
		}
		for _, name := range p.GoFiles {
			b, err := os.ReadFile(filepath.Join(p.Dir, name))
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(string(b), "\n") {
				m := own.FindString(line)
				if m == "http.NewRequest" && strings.Contains(line, "http.MethodGet") {
					continue // a GET carries no key
				}
				if m != "" && !strings.HasPrefix(strings.TrimSpace(line), "//") {
					t.Errorf("%s/%s:%d: %s: a request carrying a key is built by wire.Build (a carrier's Build), not by hand", p.rel, name, i+1, m)
				}
			}
		}
	}
}
