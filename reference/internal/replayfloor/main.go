package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// A replay of the demo's charge, byte for byte in size and headers.
var (
	body     = []byte(`{"id":"ch_1dbe0c27f03b8361a15e2328","object":"charge","amount":1000,"currency":"usd","created":"2026-11-24T03:47:32.798572697Z"}`)
	hvJSON   = []string{"application/json"}
	hvTrue   = []string{"true"}
	hvLoc    = []string{"/v1/charges/ch_1dbe0c27f03b8361a15e2328"}
	hvLength = []string{fmt.Sprint(len(body))}
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	srv := &http.Server{
		Addr: *addr,
		// As cmd/idemcheck/serve.go sets them: net/http re-arms them per request.
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      75 * time.Second,
		IdleTimeout:       120 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			h := w.Header()
			h["Content-Type"], h["Idempotent-Replayed"], h["Location"], h["Content-Length"] = hvJSON, hvTrue, hvLoc, hvLength
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(body)
		}),
	}
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "replayfloor:", err)
		os.Exit(1)
	}
}
