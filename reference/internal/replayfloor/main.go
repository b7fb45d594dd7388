package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/idemcheck/idemcheck/reference/minheap"
)

// A replay of the demo's charge as `idemcheck serve` sends it: the same
// status, header fields and body size (TestFloorAnswersAsTheReference
// keeps the two in step, so the floor cannot drift below what a replay
// must write).
var (
	body     = []byte(`{"id":"ch_8041eeb4a2505ff5575e9144","object":"charge","amount":1000,"currency":"usd","captured":true,"created":"2026-12-07T06:36:03.245984849Z"}`)
	replayed = http.Header{
		"Content-Disposition": {`inline; filename="charge, ch_8041eeb4a2505ff5575e9144.json"`},
		"Content-Type":        {"application/json"},
		"Etag":                {`"ch_8041eeb4a2505ff5575e9144"`},
		"Idempotent-Replayed": {"true"},
		"Location":            {"/v1/charges/ch_8041eeb4a2505ff5575e9144"},
		"Vary":                {"Accept-Encoding"},
		"Content-Length":      {fmt.Sprint(len(body))},
	}
)

// floor reads the request body and writes the stored replay: nothing else.
func floor(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	h := w.Header()
	for k, v := range replayed {
		h[k] = v
	}
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(body)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	// serve's collector policy, as its timeouts below: the two differ
	// only in how they answer.
	defer minheap.KeepUnlessSet(minheap.Default)()
	srv := &http.Server{
		Addr: *addr,
		// As cmd/idemcheck/serve.go sets them: net/http re-arms them per request.
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      75 * time.Second,
		IdleTimeout:       120 * time.Second,
		Handler:           http.HandlerFunc(floor),
	}
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "replayfloor:", err)
		os.Exit(1)
	}
}
