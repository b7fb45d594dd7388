package scenarios

import (
	"context"
	"errors"
	"net"
	"net/http"
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

func TestMergePatchAndPointers(t *testing.T) {
	got, err := mergePatch([]byte(`{"a":1,"b":{"c":2,"d":3}}`), []byte(`{"a":null,"b":{"c":5},"e":[1]}`))
	if err != nil || !jsonEqual(got, []byte(`{"b":{"c":5,"d":3},"e":[1]}`)) {
		t.Errorf("mergePatch = %s, %v", got, err)
	}
	doc, _ := decodeJSON([]byte(`{"a/b":{"m~n":[10,20]}}`))
	if v, ok := lookupPointer(doc, "/a~1b/m~0n/1"); !ok || v.(interface{ String() string }).String() != "20" {
		t.Errorf("lookupPointer escaped tokens = %v, %v", v, ok)
	}
	for _, bad := range []string{"a", "/a~", "/~2"} {
		if _, err := parsePointer(bad); err == nil {
			t.Errorf("parsePointer(%q) accepted", bad)
		}
	}
}
