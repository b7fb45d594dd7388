package main

import (
	"bufio"
	"context"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
)

// moduleRoot is where the Dockerfile, go.mod and .git live.
const moduleRoot = "../.."

// TestVersionLine: the ldflags version wins, then the module version go
// install records; the VCS settings come after it, each only when present.
func TestVersionLine(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-24T00:57:33Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	for _, tc := range []struct {
		name, why, ldflags string
		bi                 *debug.BuildInfo
		want               string
	}{
		{"no-build-info", "a binary without build info still names itself", "", nil, "idemcheck dev"},
		{"ldflags-only", "a release build without build info", "v1.2.3", nil, "idemcheck v1.2.3"},
		{"go-install", "go install module@v1.2.3 records the module version",
			"", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}}, "idemcheck v1.2.3 (go1.26.8)"},
		{"checkout-devel", "go build in a checkout without VCS stamping records (devel)",
			"", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "idemcheck dev (go1.26.8)"},
		{"ldflags-wins", "the release version set by -ldflags wins over the module version",
			"v2.0.0", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261124005733-0123456789ab+dirty"}, Settings: vcs},
			"idemcheck v2.0.0 (revision 0123456789ab+dirty, committed 2026-11-24T00:57:33Z, go1.26.8)"},
		{"vcs-dirty", "a checkout with uncommitted changes says +dirty",
			"", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261124005733-0123456789ab+dirty"}, Settings: vcs},
			"idemcheck v0.0.0-20261124005733-0123456789ab+dirty (revision 0123456789ab+dirty, committed 2026-11-24T00:57:33Z, go1.26.8)"},
		{"vcs-clean", "vcs.modified=false prints no +dirty",
			"", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{vcs[1], {Key: "vcs.modified", Value: "false"}}},
			"idemcheck v1.2.3 (revision 0123456789ab)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionLine(tc.ldflags, tc.bi); got != tc.want {
				t.Fatalf("%s:\n got %q\nwant %q", tc.why, got, tc.want)
			}
		})
	}
}

// dockerfileBuild returns the Dockerfile's `go build` line with its output
// path replaced by out.
func dockerfileBuild(t *testing.T, out string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(moduleRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const prefix, output = "RUN CGO_ENABLED=0 go build ", "-o /out/idemcheck "
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, prefix) && strings.Contains(line, output) {
			return strings.Replace(strings.TrimPrefix(line, "RUN "), output, "-o "+out+" ", 1)
		}
	}
	t.Fatalf("Dockerfile has no %q line with %q", prefix, output)
	return ""
}

// runIn runs a command in dir with extra environment, bounded in time.
func runIn(t *testing.T, timeout time.Duration, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestStaticBinaryAsInDockerfile builds the binary with the Dockerfile's own
// build line (no Docker daemon needed), checks that it is static (the
// runtime image has no libc) and that the VERSION build argument is what
// `idemcheck version` prints.
func TestStaticBinaryAsInDockerfile(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "idemcheck")
	runIn(t, 5*time.Minute, moduleRoot, []string{"VERSION=v9.8.7-test"}, "sh", "-c", dockerfileBuild(t, bin))

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatalf("not an ELF binary: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the binary has a program interpreter: it is dynamically linked")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Fatalf("the binary needs shared libraries %v (%v)", libs, err)
	}

	out := runIn(t, 30*time.Second, "", nil, bin, "version")
	if !strings.HasPrefix(out, "idemcheck v9.8.7-test (") || !strings.Contains(out, runtime.Version()) {
		t.Fatalf("version output %q: want the VERSION build argument and %s", out, runtime.Version())
	}
}

// TestVersionFromVCS builds the working tree (committed into a throwaway
// repository, then changed) with VCS stamping on, and expects `idemcheck
// version` to print the module pseudo-version, the revision with +dirty and
// the commit time. A throwaway repository because the go command stamps
// nothing in a git worktree (.git is a file there) and GOFLAGS may say
// -buildvcs=false.
func TestVersionFromVCS(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed:", err)
	}
	if err := exec.Command("git", "-C", moduleRoot, "rev-parse", "--is-inside-work-tree").Run(); err != nil {
		t.Skip("the source tree is not a git checkout:", err)
	}
	repo := t.TempDir()
	files := runIn(t, 30*time.Second, moduleRoot, nil, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	for name := range strings.SplitSeq(strings.TrimSuffix(files, "\x00"), "\x00") {
		copyFile(t, filepath.Join(moduleRoot, name), filepath.Join(repo, name))
	}
	git := func(args ...string) string {
		return runIn(t, 30*time.Second, repo, nil, "git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "snapshot")
	rev := strings.TrimSpace(git("rev-parse", "HEAD"))[:12]
	readme, err := os.OpenFile(filepath.Join(repo, "README.md"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	readme.WriteString("\nan uncommitted change\n")
	readme.Close()

	bin := filepath.Join(t.TempDir(), "idemcheck")
	runIn(t, 5*time.Minute, repo, []string{"GOFLAGS="}, "go", "build", "-buildvcs=true", "-o", bin, "./cmd/idemcheck")
	out := strings.TrimSpace(runIn(t, 30*time.Second, "", nil, bin, "version"))
	want := regexp.MustCompile(`^idemcheck v0\.0\.0-\d{14}-` + rev + `\+dirty \(revision ` + rev +
		`\+dirty, committed \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, ` + regexp.QuoteMeta(runtime.Version()) + `\)$`)
	if !want.MatchString(out) {
		t.Fatalf("version output %q does not match %s", out, want)
	}
}

// copyFile copies a regular file (a listed file deleted in the working tree
// is skipped, as git would not commit it).
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	info, err := src.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDockerImage builds the image and runs `idemcheck version` in it,
// where a Docker daemon answers `docker info`; elsewhere it skips saying why.
func TestDockerImage(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "info").CombinedOutput(); err != nil {
		t.Skipf("no Docker daemon: docker info: %v: %s", err, lastLine(string(out)))
	}
	tag := "idemcheck-test:" + strconv.Itoa(os.Getpid())
	runIn(t, 15*time.Minute, moduleRoot, nil, "docker", "build", "--build-arg", "VERSION=v9.8.7-image", "-t", tag, ".")
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", tag).Run() })
	out := runIn(t, time.Minute, "", nil, "docker", "run", "--rm", tag, "version")
	if !strings.HasPrefix(out, "idemcheck v9.8.7-image (") {
		t.Fatalf("version in the image: %q", out)
	}
}

// lastLine is where docker info says why the daemon did not answer.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}
