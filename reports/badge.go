package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/idemcheck/idemcheck/scenarios"
)

// Badge is a shields.io endpoint badge (https://shields.io/badges/endpoint-badge):
// a CI job publishes it and a README shows
// https://img.shields.io/endpoint?url=<where it is published>.
type Badge struct {
	SchemaVersion int    `json:"schemaVersion"` // always 1
	Label         string `json:"label"`
	Message       string `json:"message"`
	Color         string `json:"color"`
}

// badgeColours colour a badge by level; a vendor profile's level is
// yellowgreen.
var badgeColours = map[string]string{
	scenarios.LevelFull:          "brightgreen",
	scenarios.LevelCore:          "green",
	scenarios.LevelClient:        "brightgreen",
	scenarios.LevelNone:          "lightgrey",
	scenarios.LevelNotConformant: "red",
}

// BadgeOf is the run's badge: "draft-07 core · 13/13 MUST · 31/37 SHOULD".
func BadgeOf(rep *scenarios.Report) Badge {
	c := rep.Conformance()
	colour, ok := badgeColours[c.Level]
	if !ok {
		colour = "yellowgreen"
	}
	parts := []string{c.Level}
	if c.Level == scenarios.LevelNotConformant {
		parts = append(parts, strings.Fields(c.Blocker)[0]) // the requirement ID
	}
	parts = append(parts, fmt.Sprintf("%d/%d MUST", c.Must.Verified, c.Must.Total), fmt.Sprintf("%d/%d SHOULD", c.Should.Verified, c.Should.Total))
	label := "Idempotency-Key"
	if rep.Client {
		label = "Idempotency-Key client"
	}
	return Badge{SchemaVersion: 1, Label: label, Message: strings.Join(parts, " · "), Color: colour}
}

// WriteBadge writes the run's shields.io endpoint JSON.
func WriteBadge(w io.Writer, rep *scenarios.Report) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(BadgeOf(rep))
}
