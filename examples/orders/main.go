package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "listen address")
	ttl := flag.Duration("ttl", 24*time.Hour, "how long a completed response is replayed, counted from completion")
	flag.Parse()
	if *ttl <= 0 {
		fmt.Fprintln(os.Stderr, "orders: -ttl must be positive")
		os.Exit(2)
	}
	srv := &http.Server{
		Addr:              *addr,
		Handler:           newShop(*ttl),
		ReadHeaderTimeout: 5 * time.Second,
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Printf("orders: listening on http://%s (ttl %s)", *addr, *ttl)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
