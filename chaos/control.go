package chaos

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
)

// Control returns the JSON control API of p:
//
//	GET    /faults        active rules and known kinds
//	POST   /faults        add a rule: {"spec":"drop-response:0.3"} or the bare spec as text
//	DELETE /faults/{id}   remove a rule
//	POST   /reset         remove all rules, forget attempts and counters
//	GET    /counters      requests, forwarded, upstream errors, faults by kind
//
// It answers loopback clients only.
func Control(p *Proxy) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /faults", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"faults": p.Rules(), "kinds": Kinds()})
	})
	mux.HandleFunc("POST /faults", func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		if err != nil {
			writeError(w, http.StatusBadRequest, "body: "+err.Error())
			return
		}
		spec := strings.TrimSpace(string(raw))
		if strings.HasPrefix(spec, "{") {
			var in struct {
				Spec string `json:"spec"`
			}
			dec := json.NewDecoder(strings.NewReader(spec))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&in); err != nil {
				writeError(w, http.StatusBadRequest, "body: "+err.Error()+` (want {"spec":"kind:..."})`)
				return
			}
			spec = in.Spec
		}
		rule, err := p.AddRule(spec)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		writeJSON(w, http.StatusCreated, rule)
	})
	mux.HandleFunc("DELETE /faults/{id}", func(w http.ResponseWriter, r *http.Request) {
		if !p.RemoveRule(r.PathValue("id")) {
			writeError(w, http.StatusNotFound, "no fault with id "+r.PathValue("id"))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, _ *http.Request) {
		p.Reset()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /counters", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, p.Counters())
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			writeError(w, http.StatusForbidden, "the control API answers loopback clients only")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
