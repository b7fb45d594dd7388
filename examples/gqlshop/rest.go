package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// POST /v1/charges is the same charge over REST with the key in the JSON
// body ({"idempotency_key": "…", "amount": …}), as many REST APIs keep
// it: 201 with the charge, 402 for a declined card (kept and replayed),
// 503 for gqlshop's own failure (not kept), 400 for a missing or invalid
// key or body (before any lookup), 422 for a key used with another body,
// 409 with Retry-After while its first request runs; a replay carries
// Idempotent-Replayed: true (the Agentic Commerce Protocol's rules).

// restAnswer is a kept REST answer: its status and body.
type restAnswer struct {
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

func (s *server) restCharge(w http.ResponseWriter, r *http.Request) {
	customer, ok := s.users[r.Header.Get("Authorization")]
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid API token"})
		return
	}
	var in map[string]any
	d := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	d.UseNumber()
	if err := d.Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body is not a JSON object: " + err.Error()})
		return
	}
	key, _ := in["idempotency_key"].(string)
	delete(in, "idempotency_key")
	_, amountOK := in["amount"].(json.Number)
	switch cur, _ := in["currency"].(string); {
	case strings.TrimSpace(key) == "" || len(key) > maxKey:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "idempotency_key: required, 1 to 255 characters, not blank"})
		return
	case !amountOK || cur == "":
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "amount (an integer) and currency are required"})
		return
	}
	answer, o := s.once(customer+"\x00rest-charges\x00"+key, digestOf("rest-charges", in), func() ([]byte, bool) {
		c := s.execute(key, in)
		ans := restAnswer{Status: http.StatusCreated}
		switch {
		case c.failed:
			ans.Status, ans.Body = http.StatusServiceUnavailable, []byte(`{"error":"the card provider is unavailable"}`)
		case c.charge == nil:
			ans.Status, ans.Body = http.StatusPaymentRequired, []byte(`{"error":"card_declined"}`)
		default:
			ans.Body, _ = json.Marshal(c.charge)
		}
		b, _ := json.Marshal(ans)
		return b, !c.failed
	})
	switch o {
	case mismatched:
		msg := map[string]any{"error": "idempotency_key was used with another body"}
		if s.defect == leaksPayload && answer != nil {
			msg["original"] = json.RawMessage(answer)
		}
		writeJSON(w, http.StatusUnprocessableEntity, msg)
		return
	case inFlight:
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusConflict, map[string]string{"error": "a request with this idempotency_key is in progress"})
		return
	}
	var ans restAnswer
	_ = json.Unmarshal(answer, &ans)
	if o == replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ans.Status)
	_, _ = w.Write(bytes.TrimSpace(ans.Body))
}
