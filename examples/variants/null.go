package variants

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// Null is the broken server that ignores the Idempotency-Key entirely:
// every POST executes and answers 201 {"id": a new id, "status":
// "accepted"} (the id the configs' id_pointer names, which the engine
// checks before the cases). Its counters
// are honest (GET /_effects per table, ?key= per key header value), so a
// config with an oracle sees every execution; without one, nothing it
// answers can be told from a correct server's replay.
func Null() http.Handler {
	var mu sync.Mutex
	runs, perKey := map[string]int{}, map[string]int{}
	mux := http.NewServeMux()
	for _, table := range tables {
		mux.HandleFunc("POST /api/"+table, func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			runs[table]++
			perKey[strings.Trim(r.Header.Get("Idempotency-Key"), `"`)]++ // the oracle names keys unquoted
			id := fmt.Sprintf("%s_%d", table, runs[table])
			mu.Unlock()
			writeJSON(w, http.StatusCreated, map[string]string{"id": id, "status": "accepted"})
		})
	}
	mux.HandleFunc("GET /_effects", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Query().Has("key") {
			writeJSON(w, http.StatusOK, map[string]int{"executions": perKey[r.URL.Query().Get("key")]})
			return
		}
		out := map[string]int{}
		for _, t := range tables {
			out[t] = runs[t]
		}
		writeJSON(w, http.StatusOK, out)
	})
	return mux
}
