package testenv

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// leakEnv makes TestLeakHelper leave a server running, so the
// subprocess's Main must fail the binary.
const leakEnv = "IDEMCHECK_TESTENV_LEAK_HELPER"

// TestLeakHelper passes while leaving an HTTP server running; alone it is
// a no-op (run only by TestMainFailsOnLeakedServer in a child process).
func TestLeakHelper(t *testing.T) {
	if os.Getenv(leakEnv) != "1" {
		t.Skip("helper for TestMainFailsOnLeakedServer")
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	if _, err := http.Get(srv.URL); err != nil { // a live connection too
		t.Fatal(err)
	}
	// Deliberately no srv.Close(): the process exits right after Main.
}

// TestMainFailsOnLeakedServer runs this test binary again with only the
// helper selected: every test passes, yet Main's goleak check must turn
// the exit code to 1 and name the server's goroutine.
func TestMainFailsOnLeakedServer(t *testing.T) {
	if os.Getenv(leakEnv) == "1" {
		t.Skip("inside the child")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLeakHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), leakEnv+"=1")
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatal("child test binary did not exit within 2m")
	}
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("child exit: %v, want exit status 1 from the leak check; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "goleak") || !strings.Contains(string(out), "net/http") {
		t.Fatalf("child output does not name the leaked server's goroutines:\n%s", out)
	}
	if !strings.Contains(string(out), "PASS") {
		t.Fatalf("the child's tests should all pass, the leak alone failing it:\n%s", out)
	}
}
