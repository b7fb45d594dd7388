package events

import (
	"context"
	"errors"
)

func openNATS(context.Context, *NATS) (source, error) {
	return nil, errors.New("events.nats: not supported yet (use kafka or redis)")
}
