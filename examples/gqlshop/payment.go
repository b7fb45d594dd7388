package main

import (
	"fmt"
	"maps"
	"net/http"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
)

// paymentCreate is the same charge with its key as an input field,
// paymentCreate(input: {idempotencyKey: "…", amount: …}), the form of
// Shopify's subscriptionBillingAttemptCreate (SubscriptionBillingAttemptInput.
// idempotencyKey) and of many GraphQL APIs before directives: the schema
// requires the field, so a request without it fails validation (a
// BAD_USER_INPUT error, before any lookup). The idempotency errors come
// as userErrors entries with the codes of Shopify's inventory mutations
// (InventorySetQuantitiesUserErrorCode: IDEMPOTENCY_KEY_PARAMETER_MISMATCH,
// IDEMPOTENCY_CONCURRENT_REQUEST), beside the charge's own (CARD_DECLINED).
// The fingerprint is the input without its key.

// payment runs paymentCreate for customer, once per key; its
// idempotency errors are userErrors entries.
func (s *server) payment(w http.ResponseWriter, customer string, field *ast.Field, input map[string]any) {
	key, _ := input["idempotencyKey"].(string)
	if strings.TrimSpace(key) == "" || len(key) > maxKey {
		writeUserError(w, field, codeBadInput, fmt.Sprintf("idempotencyKey must be 1 to %d characters, not blank", maxKey))
		return
	}
	args := maps.Clone(input)
	delete(args, "idempotencyKey")
	s.answerOnce(w, customer+"\x00"+field.Name+"\x00"+key, digestOf(field.Name, args), func() ([]byte, bool) {
		c := s.execute(key, args)
		return c.answer(field, "payment"), !c.failed
	}, func(code, msg string) { writeUserError(w, field, code, msg) })
}

// writeUserError answers field with no payment and one userErrors entry
// (under HTTP 200, as every GraphQL answer).
func writeUserError(w http.ResponseWriter, field *ast.Field, code, msg string) {
	payload := map[string]any{"payment": nil, "userErrors": []any{
		map[string]any{"code": code, "message": msg, "field": []any{"input", "idempotencyKey"}}}}
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{alias(field): project(field.SelectionSet, payload)}})
}
