package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/internal/knobless"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "listen address")
	provider := flag.String("provider", "http://127.0.0.1:9090", "payment provider base URL (the double)")
	keeps := flag.Bool("keeps-reference", false, "do not pass the order's reference on to the provider")
	effects := flag.Bool("effects", false, "serve GET /v1/effects?key=K (executions per key)")
	config := flag.String("print-config", "", "print the idemcheck config of this shop with this oracle: section (e.g. '{downstream: payments}') and exit")
	flag.Parse()
	if *config != "" {
		fmt.Print(knobless.Config("http://"+*addr, strings.TrimPrefix(*provider, "http://"), *config))
		return
	}
	shop := knobless.New(knobless.Options{ProviderURL: *provider, KeepsReference: *keeps, Effects: *effects})
	defer shop.Close()
	srv := &http.Server{Addr: *addr, Handler: shop, ReadHeaderTimeout: 5 * time.Second}
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "knobless:", err)
		os.Exit(1)
	}
}
