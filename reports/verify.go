package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	trv0 "github.com/in-toto/attestation/go/predicates/test_result/v0"
	ita1 "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/scenarios"
)

// VerifyInput is what idemcheck verify checks an attestation against.
type VerifyInput struct {
	Attestation []byte
	// Report is the JSON report the attestation cites (nil: not given).
	Report []byte
	// Config is the config file, as run or as redacted (nil: not given).
	Config []byte
	// Tool is the verifying build: an attestation made by the same build
	// must cite the same catalog.
	Tool Tool
	// ClientCatalog is this build's client catalog metadata: a client
	// run's attestation is checked against it (nil: client attestations
	// cannot be checked against a catalog).
	ClientCatalog []scenarios.Meta
}

// Attested is an attestation read back: the statement, its predicate and
// its configuration descriptors by role.
type Attested struct {
	Statement *ita1.Statement
	Result    *trv0.TestResult
	ByRole    map[string]*ita1.ResourceDescriptor
}

// ReadAttestation parses an in-toto Statement carrying a test result, as
// Attest writes it; anything else is an error.
func ReadAttestation(raw []byte) (*Attested, error) {
	// The JSON parser's error quotes the first bad byte, raw: say what
	// the file is instead, and point a report given in its place at
	// --report.
	if !json.Valid(raw) {
		return nil, errors.New("not JSON: an attestation is the JSON file run --attest writes")
	}
	var head struct {
		Schema string `json:"schema"`
	}
	if json.Unmarshal(raw, &head) == nil && head.Schema == SchemaV1 {
		return nil, errors.New("a JSON report (" + SchemaV1 + "), not an attestation: give the file run --attest wrote, and this one as --report")
	}
	st := &ita1.Statement{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, st); err != nil {
		return nil, fmt.Errorf("not an in-toto statement: %v", err)
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("in-toto statement: %v", err)
	}
	if st.GetPredicateType() != TestResultPredicate {
		return nil, fmt.Errorf("predicateType %q, want %q", st.GetPredicateType(), TestResultPredicate)
	}
	pred, err := protojson.Marshal(st.GetPredicate())
	if err != nil {
		return nil, err
	}
	tr := &trv0.TestResult{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(pred, tr); err != nil {
		return nil, fmt.Errorf("test-result predicate: %v", err)
	}
	a := &Attested{Statement: st, Result: tr, ByRole: map[string]*ita1.ResourceDescriptor{}}
	for _, d := range tr.GetConfiguration() {
		if role := d.GetAnnotations().GetFields()["role"].GetStringValue(); role != "" {
			a.ByRole[role] = d
		}
	}
	return a, nil
}

// ToolRevision is the git revision of the build that made the
// attestation: "" for a build without VCS stamping (a Docker image, go
// install, a source tarball), which only its version identifies.
func (a *Attested) ToolRevision() string { return a.annotation(RoleTool, "revision") }

// Claim is what the attestation claims, in one line: a client
// certification or a server's conformance run, and its level.
func (a *Attested) Claim() string {
	what := "a conformance run"
	if a.annotation(RoleRun, "client") == "true" {
		what = "a client certification"
	}
	return what + ", level " + a.annotation(RoleRun, "level")
}

// annotation is a descriptor's annotation as text ("" when absent).
func (a *Attested) annotation(role, key string) string {
	v := a.ByRole[role].GetAnnotations().GetFields()[key]
	if v == nil {
		return ""
	}
	return fmt.Sprint(v.AsInterface())
}

// releaseVersion is a tag a release build carries (or "dev": a build from
// source); revision a git commit, short or full.
var (
	releaseVersion = regexp.MustCompile(`^(dev|v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?)$`)
	gitRevision    = regexp.MustCompile(`^[0-9a-f]{7,40}(\+dirty)?$`)
)

// Verify checks an attestation: its shape, the tool version it names,
// that its level follows from its own results by the rule, and, when
// given, that the report and the config are the ones it cites (digests)
// and that the report's verdicts give its result, lists and level. It
// returns one line per mismatch; an error when the attestation cannot be
// read at all.
func Verify(in VerifyInput) ([]string, error) {
	a, err := ReadAttestation(in.Attestation)
	if err != nil {
		return nil, err
	}
	var bad []string
	mismatch := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	for _, role := range []string{RoleTool, RoleCatalog, RoleRun} {
		if a.ByRole[role] == nil {
			mismatch("the attestation has no %s descriptor", role)
		}
	}
	if len(bad) > 0 {
		return bad, nil
	}
	switch r := a.Result.GetResult(); r {
	case ResultPassed, ResultWarned, ResultFailed:
	default:
		mismatch("result %q: want PASSED, WARNED or FAILED", r)
	}
	version, revision := a.annotation(RoleTool, "version"), a.ToolRevision()
	if !releaseVersion.MatchString(version) {
		mismatch("tool version %q is no idemcheck version (a release tag vX.Y.Z or dev)", version)
	}
	if revision != "" && !gitRevision.MatchString(revision) {
		mismatch("tool revision %q is no git commit", revision)
	}
	if commit := a.ByRole[RoleTool].GetDigest()["gitCommit"]; commit != "" && commit != revision {
		mismatch("tool digest gitCommit %s differs from its revision %q", commit, revision)
	}
	if a.Result.GetResult() == ResultPassed && len(a.Result.GetWarnedTests())+len(a.Result.GetFailedTests()) > 0 {
		mismatch("result PASSED, but instances are listed as warned or failed")
	}
	var metas []scenarios.Meta
	for _, c := range scenarios.Catalog() {
		metas = append(metas, c.Meta)
	}
	if a.annotation(RoleRun, "client") == "true" {
		metas = in.ClientCatalog
		if len(metas) == 0 {
			mismatch("a client run's attestation, but this build was given no client catalog to check it by")
		}
	}
	catalog := a.ByRole[RoleCatalog].GetDigest()["sha256"]
	if own := CatalogDigestOf(metas); version == in.Tool.Version && revision != "" && revision == in.Tool.Revision && catalog != own {
		mismatch("catalog digest %s differs from this build's %s although the tool version and revision are the same", catalog, own)
	}
	level := a.annotation(RoleRun, "level")
	bad = append(bad, levelAgainstLists(a, level, metas)...)

	if in.Config != nil {
		d := a.ByRole[RoleConfig]
		red, err := apispec.RedactedConfig(in.Config)
		switch {
		case d == nil:
			mismatch("--config given, but the attestation cites no config (the run used --target)")
		case err != nil:
			mismatch("--config: %v", err)
		case SHA256(red) != d.GetDigest()["sha256"]:
			mismatch("config digest sha256:%s differs from the attested sha256:%s (%s)", SHA256(red), d.GetDigest()["sha256"], d.GetName())
		}
	}
	if in.Report != nil {
		bad = append(bad, reportAgainst(a, in.Report, level)...)
	}
	return bad, nil
}

// levelAgainstLists checks the claimed level against the attestation's
// own lists, by this build's catalog (the client catalog for a client
// run): a claimed level has no MUST among
// the failed or warned instances; "not conformant" has one.
func levelAgainstLists(a *Attested, level string, catalog []scenarios.Meta) []string {
	levels := map[string]scenarios.Level{}
	for _, c := range catalog {
		levels[c.ID] = c.Level
	}
	var mustBad []string
	for _, name := range slices.Concat(a.Result.GetFailedTests(), a.Result.GetWarnedTests()) {
		id, _, _ := strings.Cut(name, "@")
		if levels[id] == scenarios.Must {
			mustBad = append(mustBad, name)
		}
	}
	switch {
	case level == "":
		return []string{"the run descriptor names no level"}
	case level == scenarios.LevelNotConformant && len(mustBad) == 0:
		return []string{"level not conformant, but no MUST instance failed or warned"}
	case level != scenarios.LevelNotConformant && level != scenarios.LevelNone && len(mustBad) > 0:
		return []string{fmt.Sprintf("level %q claimed, but MUST instance %s failed or warned", level, mustBad[0])}
	case level != scenarios.LevelNotConformant && level != scenarios.LevelNone && a.Result.GetResult() == ResultFailed:
		return []string{fmt.Sprintf("level %q claimed by a run whose result is FAILED", level)}
	}
	return nil
}

// reportAgainst checks the report's digest, then decides its result, lists
// and level again from its verdicts and compares them with the attested.
func reportAgainst(a *Attested, raw []byte, level string) []string {
	var bad []string
	mismatch := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	if d := a.ByRole[RoleReport]; d == nil {
		mismatch("--report given, but the attestation cites no report (the run wrote no --json)")
	} else if got := SHA256(raw); got != d.GetDigest()["sha256"] {
		mismatch("report digest sha256:%s differs from the attested sha256:%s (%s)", got, d.GetDigest()["sha256"], d.GetName())
	}
	rep, err := ReadJSON(bytes.NewReader(raw))
	if err != nil {
		return append(bad, "--report: "+err.Error())
	}
	if got := TestResult(rep); got != a.Result.GetResult() {
		mismatch("result %s, but the report's verdicts give %s", a.Result.GetResult(), got)
	}
	passed, warned, failed := testLists(rep)
	for _, l := range []struct {
		name       string
		attested   []string
		fromReport []string
	}{{"passed", a.Result.GetPassedTests(), passed}, {"warned", a.Result.GetWarnedTests(), warned}, {"failed", a.Result.GetFailedTests(), failed}} {
		for _, n := range l.attested {
			if !slices.Contains(l.fromReport, n) {
				mismatch("%s %s is attested %s, but not in the report", l.name, n, l.name)
			}
		}
		for _, n := range l.fromReport {
			if !slices.Contains(l.attested, n) {
				mismatch("%s is %s in the report, but not attested %s", n, l.name, l.name)
			}
		}
	}
	if got := rep.Conformance().Level; got != level {
		mismatch("level %q, but the report's verdicts give %q", level, got)
	}
	if seed := a.annotation(RoleRun, "seed"); seed != fmt.Sprint(rep.Seed) {
		mismatch("seed %s, but the report's is %d", seed, rep.Seed)
	}
	if d := a.ByRole[RoleConfig]; d != nil && (rep.Config == nil || rep.Config.SHA256 != d.GetDigest()["sha256"]) {
		mismatch("the report cites another config than the attestation")
	}
	return bad
}
