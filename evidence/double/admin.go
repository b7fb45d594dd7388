package double

import (
	"encoding/json"
	"net/http"
)

// AdminPrefix starts the double's own paths; calls under it are never
// routed nor journaled.
const AdminPrefix = "/__idemcheck/"

// JournalPath serves the journal and the counts as JSON (Snapshot);
// ?token=T keeps only T's calls and counts.
const JournalPath = AdminPrefix + "journal"

// Snapshot is what JournalPath serves.
type Snapshot struct {
	Totals Totals       `json:"totals"`
	Routes []RouteCount `json:"routes"`
	// Tokens are the tracked tokens' exact counts per route.
	Tokens map[string]map[string]int `json:"tokens"`
	// Calls are the journal's kept calls, oldest first.
	Calls []Call `json:"calls"`
}

// RouteCount is one route's exact counts.
type RouteCount struct {
	Name      string `json:"name"`
	Calls     int    `json:"calls"`
	Untokened int    `json:"untokened"`
}

// Snapshot copies the counts and the journal (token "": all of them).
func (s *Server) Snapshot(token string) Snapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	snap := Snapshot{Totals: s.j.totals, Tokens: map[string]map[string]int{}, Calls: []Call{}}
	for i, r := range s.cfg.Routes {
		snap.Routes = append(snap.Routes, RouteCount{Name: r.Name, Calls: s.j.routed[i], Untokened: s.j.untokened[i]})
	}
	for t, st := range s.tracked {
		if token != "" && t != token {
			continue
		}
		counts := map[string]int{}
		for i, n := range st.calls {
			counts[s.cfg.Routes[i].Name] = n
		}
		snap.Tokens[t] = counts
	}
	s.j.each(func(c Call) {
		if token == "" || c.Token == token {
			snap.Calls = append(snap.Calls, c)
		}
	})
	return snap
}

func (s *Server) admin(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != JournalPath {
		http.Error(w, "unknown admin path; GET "+JournalPath+"[?token=T]", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(s.Snapshot(r.URL.Query().Get("token")))
}
