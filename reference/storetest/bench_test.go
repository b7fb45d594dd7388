package storetest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/reference"
)

// BenchmarkStore measures the store operations one request costs: a miss
// (Claim of a fresh scope, then Complete) and a replay (Claim that finds the
// completed record). scripts/bench-stores.sh prints them as ratios to memory.
func BenchmarkStore(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			s, _ := be.open(b)
			ctx := context.Background()
			resp := reference.Response{Status: 201, Header: map[string][]string{"Content-Type": {"application/json"}},
				Body: []byte(`{"id":"ch_0123456789abcdef","object":"charge","amount":1000,"currency":"usd"}`)}
			claim := func(key string) reference.ClaimRequest {
				return reference.ClaimRequest{Scope: reference.Scope{Principal: "alice", Method: "POST", Path: "/v1/charges", Key: key},
					Fingerprint: "fp", Lease: 30 * time.Second, TTL: time.Hour}
			}
			run := fmt.Sprintf("%d-", time.Now().UnixNano())
			b.Run("claim-complete", func(b *testing.B) {
				i := 0
				for b.Loop() {
					i++
					r := claim(run + fmt.Sprint(i))
					c, err := s.Claim(ctx, r)
					if err != nil || c.Outcome != reference.Claimed {
						b.Fatalf("claim: %v %v", c.Outcome, err)
					}
					if err := s.Complete(ctx, r.Scope, c.Token, resp); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("replay", func(b *testing.B) {
				r := claim(run + "replayed")
				c, err := s.Claim(ctx, r)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Complete(ctx, r.Scope, c.Token, resp); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					c, err := s.Claim(ctx, r)
					if err != nil || c.Outcome != reference.Existing {
						b.Fatalf("replay claim: %v %v", c.Outcome, err)
					}
				}
			})
		})
	}
}

// BenchmarkHTTP measures the demo app end to end over loopback HTTP on each
// store: miss (a fresh key runs the handler; on PostgreSQL the charge and
// record commit in one transaction) and hit (a replay).
func BenchmarkHTTP(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			base := serveDemo(b, be, time.Hour, 30*time.Second)
			tr := &http.Transport{MaxIdleConnsPerHost: 4}
			b.Cleanup(tr.CloseIdleConnections)
			client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			const body = `{"amount":1000,"currency":"usd"}`
			post := func(key string) int {
				req, _ := http.NewRequest(http.MethodPost, base+"/v1/charges", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer alice")
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", `"`+key+`"`)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode
			}
			run := fmt.Sprintf("%d-", time.Now().UnixNano())
			b.Run("miss", func(b *testing.B) {
				i := 0
				for b.Loop() {
					i++
					if st := post(run + fmt.Sprint(i)); st != http.StatusCreated {
						b.Fatalf("miss: %d", st)
					}
				}
			})
			b.Run("hit", func(b *testing.B) {
				post(run + "hit")
				for b.Loop() {
					if st := post(run + "hit"); st != http.StatusCreated {
						b.Fatalf("hit: %d", st)
					}
				}
			})
		})
	}
}
