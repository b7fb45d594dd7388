package scenarios

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestRunUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there any more
	tg, err := FromURL("http://"+addr, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := ProfileByName("")
	_, err = Run(context.Background(), tg, p, RunOptions{})
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Run against a closed port: %v, want ErrUnreachable", err)
	}
}

func TestCurl(t *testing.T) {
	x := Exchange{Request: ExchangeRequest{
		Method: "POST", URL: "http://127.0.0.1:8080/v1/charges",
		Header: http.Header{"Idempotency-Key": {`"it's"`}, "X-Empty": {""}},
		Body:   []byte(`{"a":"b'c"}`),
	}}
	want := `curl -i -X POST 'http://127.0.0.1:8080/v1/charges' -H 'Idempotency-Key: "it'\''s"' -H 'X-Empty;' --data-binary '{"a":"b'\''c"}'`
	if got := x.Curl(); got != want {
		t.Errorf("Curl() =\n%s\nwant\n%s", got, want)
	}
}

// TestRunNilProfile: a caller that gives no profile gets the default
// (ietf) instead of a panic.
func TestRunNilProfile(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	tg, err := FromURL(srv.URL, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(t.Context(), tg, nil, RunOptions{Run: []string{"missing/rejected"}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Profile != DefaultProfile || len(rep.Results) == 0 {
		t.Fatalf("profile %q, %d results: want the default profile and a result", rep.Profile, len(rep.Results))
	}
}
