package reports

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	trv0 "github.com/in-toto/attestation/go/predicates/test_result/v0"
	ita1 "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/scenarios"
)

// TestResultPredicate is the in-toto test-result predicate type an
// attestation carries (spec/predicates/test-result.md of in-toto/attestation).
const TestResultPredicate = "https://in-toto.io/attestation/test-result/v0.1"

// Test-result predicate results.
const (
	ResultPassed = "PASSED"
	ResultWarned = "WARNED"
	ResultFailed = "FAILED"
)

// Roles of the attestation's configuration descriptors, in the "role"
// annotation of each: what verify looks each one up by.
const (
	RoleTool    = "tool"
	RoleCatalog = "catalog"
	RoleConfig  = "config"
	RoleProfile = "profile"
	RoleRun     = "run"
	RoleReport  = "report"
)

// Tool is the idemcheck build that ran: version (a release tag or "dev"),
// VCS revision (empty when the build has none) and Go version.
type Tool struct {
	Version, Revision, GoVersion string
}

// Subject is what was tested: a name and the SHA-256 of its content (an
// image digest, a release artifact).
type Subject struct {
	Name   string
	SHA256 string
}

// AttestOptions say what an attestation cites beyond the report.
type AttestOptions struct {
	Tool Tool
	// Subjects, when empty, become the target's base URL with the
	// config's digest.
	Subjects []Subject
	// Profile is the profile the run judged by, overrides included.
	Profile *apispec.Profile
	// Report is the JSON report written beside the attestation, if any.
	Report *scenarios.Resource
	// URL links the CI run (the predicate's url), if any.
	URL string
	// ClientCatalog is the client catalog's metadata, for a client run
	// (Report.Client): the catalog the attestation cites instead of the
	// server catalog. The CLI passes clientcheck's.
	ClientCatalog []scenarios.Meta
}

// Attest writes an in-toto Statement v1 whose predicate is a test result:
// PASSED (the run passes, nothing warned), WARNED (passes with warnings or
// expected failures) or FAILED; the instances that passed, warned and
// failed; and as configuration the tool, the catalog, the config (its
// secrets redacted), the profile, the run (seed, times, command, level)
// and the JSON report, each with its digest. Signing is the CI's signer's
// job (docs/certify.md).
func Attest(w io.Writer, rep *scenarios.Report, o AttestOptions) error {
	st, err := Statement(rep, o)
	if err != nil {
		return err
	}
	raw, err := protojson.Marshal(st)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err = w.Write(out.Bytes())
	return err
}

// Statement builds the attestation Attest writes, validated by the
// in-toto library's own rules.
func Statement(rep *scenarios.Report, o AttestOptions) (*ita1.Statement, error) {
	tr := &trv0.TestResult{Result: TestResult(rep), Url: o.URL}
	tr.PassedTests, tr.WarnedTests, tr.FailedTests = testLists(rep)
	configDigest := ""
	if rep.Config != nil {
		configDigest = rep.Config.SHA256
	}
	tool := &ita1.ResourceDescriptor{Name: "idemcheck", Uri: "pkg:golang/github.com/idemcheck/idemcheck@" + o.Tool.Version}
	if len(o.Tool.Revision) == 40 {
		tool.Digest = map[string]string{"gitCommit": o.Tool.Revision}
	}
	descs := []descriptor{
		{tool, RoleTool, map[string]any{"version": o.Tool.Version, "revision": o.Tool.Revision, "go": o.Tool.GoVersion}},
		{&ita1.ResourceDescriptor{Name: "idemcheck catalog", Digest: sha(CatalogDigest())}, RoleCatalog,
			map[string]any{"cases": float64(len(scenarios.Catalog())), "spec": "draft-ietf-httpapi-idempotency-key-header-07"}},
	}
	if rep.Client {
		if len(o.ClientCatalog) == 0 {
			return nil, fmt.Errorf("attestation: a client run needs the client catalog (AttestOptions.ClientCatalog)")
		}
		descs[1] = descriptor{&ita1.ResourceDescriptor{Name: "idemcheck client catalog", Digest: sha(CatalogDigestOf(o.ClientCatalog))}, RoleCatalog,
			map[string]any{"cases": float64(len(o.ClientCatalog)), "spec": "draft-ietf-httpapi-idempotency-key-header-07", "client": true}}
	}
	if rep.Config != nil {
		descs = append(descs, descriptor{&ita1.ResourceDescriptor{Name: rep.Config.Path, Digest: sha(rep.Config.SHA256), MediaType: "application/yaml"}, RoleConfig,
			map[string]any{"redacted": "literal values of secret_headers replaced by <redacted>; ${NAME} kept"}})
	}
	if o.Profile != nil {
		raw, err := json.Marshal(o.Profile)
		if err != nil {
			return nil, err
		}
		var fields map[string]any
		if err := json.Unmarshal(raw, &fields); err != nil {
			return nil, err
		}
		sum := sha256.Sum256(raw)
		descs = append(descs, descriptor{&ita1.ResourceDescriptor{Name: "profile " + o.Profile.Name, Digest: sha(hex.EncodeToString(sum[:])), MediaType: "application/json"}, RoleProfile,
			map[string]any{"profile": fields}})
	}
	c := rep.Conformance()
	j := rep.Judge()
	runURI := rep.Target
	if runURI == "" {
		runURI = "urn:idemcheck:run" // a descriptor needs a uri or a digest
	}
	runName := "idemcheck run"
	if rep.Client {
		runName = heading(rep)
	}
	descs = append(descs, descriptor{&ita1.ResourceDescriptor{Name: runName, Uri: runURI}, RoleRun, map[string]any{
		"level": c.Level, "blocker": c.Blocker, "why": c.Why,
		"must": fmt.Sprintf("%d/%d", c.Must.Verified, c.Must.Total), "should": fmt.Sprintf("%d/%d", c.Should.Verified, c.Should.Total),
		"outcome": string(j.Outcome), "exitCode": float64(j.Outcome.ExitCode()),
		"seed": fmt.Sprint(rep.Seed), "command": rep.Command, "profile": rep.Profile, "protocol": rep.Protocol,
		"strict": rep.Strict, "allowIncomplete": rep.AllowIncomplete, "interrupted": rep.Interrupted, "client": rep.Client,
		"started":  rep.Started.UTC().Format(time.RFC3339Nano),
		"finished": rep.Started.Add(rep.Duration).UTC().Format(time.RFC3339Nano),
	}})
	if o.Report != nil {
		descs = append(descs, descriptor{&ita1.ResourceDescriptor{Name: o.Report.Path, Digest: sha(o.Report.SHA256), MediaType: "application/json"}, RoleReport,
			map[string]any{"schema": SchemaV1}})
	}
	for _, d := range descs {
		d.notes["role"] = d.role
		ann, err := structpb.NewStruct(d.notes)
		if err != nil {
			return nil, fmt.Errorf("attestation: %s: %v", d.role, err)
		}
		d.d.Annotations = ann
		tr.Configuration = append(tr.Configuration, d.d)
	}
	predicate, err := toStruct(tr)
	if err != nil {
		return nil, err
	}
	st := &ita1.Statement{Type: ita1.StatementTypeUri, PredicateType: TestResultPredicate, Predicate: predicate}
	for _, s := range o.Subjects {
		st.Subject = append(st.Subject, &ita1.ResourceDescriptor{Name: s.Name, Digest: sha(s.SHA256)})
	}
	if len(st.Subject) == 0 {
		if configDigest == "" {
			return nil, fmt.Errorf("attestation: no --subject and no config to digest: give --subject NAME=sha256:HEX")
		}
		st.Subject = []*ita1.ResourceDescriptor{{Name: rep.Target, Digest: sha(configDigest)}}
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("attestation: %v", err)
	}
	return st, nil
}

// descriptor is a configuration entry before its annotations are set:
// its role and what else it records.
type descriptor struct {
	d     *ita1.ResourceDescriptor
	role  string
	notes map[string]any
}

// TestResult is the predicate's result for the run: FAILED unless the run
// passes, WARNED when it passes with warnings or expected failures.
func TestResult(rep *scenarios.Report) string {
	if rep.Judge().Outcome != scenarios.OutcomePass {
		return ResultFailed
	}
	if _, warned, failed := testLists(rep); len(warned)+len(failed) > 0 {
		return ResultWarned
	}
	return ResultPassed
}

// testLists are the instances that passed, warned and failed (expected
// failures included: the server still fails them), by effective verdict.
func testLists(rep *scenarios.Report) (passed, warned, failed []string) {
	for _, r := range rep.Results {
		switch v := rep.Effective(r); v.Status {
		case scenarios.Pass:
			passed = append(passed, r.Name())
		case scenarios.Warn:
			warned = append(warned, r.Name())
		case scenarios.Fail:
			failed = append(failed, r.Name())
		}
	}
	return passed, warned, failed
}

// CatalogDigest is the SHA-256 of the catalog's metadata (every case's ID,
// level, requirements and sentences): the catalog version a run used.
func CatalogDigest() string {
	var metas []scenarios.Meta
	for _, c := range scenarios.Catalog() {
		metas = append(metas, c.Meta)
	}
	return CatalogDigestOf(metas)
}

// CatalogDigestOf is the SHA-256 of a catalog's metadata (the client
// catalog's for a client run).
func CatalogDigestOf(metas []scenarios.Meta) string {
	raw, _ := json.Marshal(metas) // plain structs: never an error
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// SHA256 is the hex SHA-256 of b.
func SHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func sha(hexDigest string) map[string]string {
	return map[string]string{"sha256": strings.ToLower(hexDigest)}
}

// toStruct turns the predicate message into the Statement's JSON object.
func toStruct(tr *trv0.TestResult) (*structpb.Struct, error) {
	raw, err := protojson.Marshal(tr)
	if err != nil {
		return nil, err
	}
	s := &structpb.Struct{}
	if err := protojson.Unmarshal(raw, s); err != nil {
		return nil, err
	}
	return s, nil
}
