package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium names, Debian's first (apt-get install chromium).
var binaries = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Find returns the path of a Chromium binary, or "" when none is on PATH.
func Find() string {
	for _, name := range binaries {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// New starts a headless Chromium for t and returns a chromedp context on
// a blank tab; everything is stopped when t ends. Without Chromium the
// test is skipped saying why, except under CI (CI=true), where .ci/run
// installs it and its absence is a failure.
func New(t testing.TB) context.Context {
	t.Helper()
	bin := Find()
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no Chromium on PATH under CI: .ci/run installs it (apt-get install -y chromium)")
		}
		t.Skip("no Chromium on PATH (apt-get install -y chromium): the HTML reports are not checked in a browser")
	}
	// A fresh profile per test; Chromium may still write to it while it
	// exits, so it is removed after the browser is gone.
	profile, err := os.MkdirTemp("", "idemcheck-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(profile) })
	// On these machines Chromium refuses connections unless its
	// background networking is off.
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 1600),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	// Bounded: a hung browser fails the test instead of stalling it.
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting %s: %v", bin, err)
	}
	return ctx
}

// FileURL is the file:// URL of path.
func FileURL(t testing.TB, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return "file://" + filepath.ToSlash(abs)
}

// Screenshot saves a full-page PNG of the current page to path, creating
// its directory.
func Screenshot(t testing.TB, ctx context.Context, path string) {
	t.Helper()
	save(t, ctx, path, chromedp.FullScreenshot(100)) // quality 100 is PNG
}

// ScreenshotOf saves a PNG of the first element matching the CSS selector.
func ScreenshotOf(t testing.TB, ctx context.Context, path, css string) {
	t.Helper()
	save(t, ctx, path, chromedp.Screenshot(chromedp.CSS(css)))
}

func save(t testing.TB, ctx context.Context, path string, shot chromedp.Action[[]byte]) {
	t.Helper()
	png, err := chromedp.Run(ctx, shot)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}
