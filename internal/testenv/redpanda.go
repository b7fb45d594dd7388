package testenv

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/modules/redpanda"
)

// redpandaImage is the Redpanda release RequireRedpanda runs (override:
// IDEMCHECK_REDPANDA_IMAGE).
const redpandaImage = "docker.redpanda.com/redpandadata/redpanda:v24.2.4"

var (
	redpandaOnce     sync.Once
	redpandaBrokers  []string
	redpandaStop     func()
	redpandaErr      error
	redpandaNoDocker error // why no Docker daemon answered
)

// RequireRedpanda returns the seed broker of the test binary's shared
// Redpanda container (Kafka's protocol, another implementation than
// kfake's), started through testcontainers' Redpanda module and stopped by
// Main. Without a Docker daemon it skips t at once, whatever
// IDEMCHECK_REQUIRE_STORES says: the probe answers immediately when there
// is no socket and gives up after 3 s on one that does not answer. A
// daemon that answers but cannot start the container skips t, or fails it
// under IDEMCHECK_REQUIRE_STORES=1.
func RequireRedpanda(t testing.TB) []string {
	t.Helper()
	redpandaOnce.Do(func() {
		if redpandaNoDocker = dockerAvailable(); redpandaNoDocker != nil {
			return
		}
		img := os.Getenv("IDEMCHECK_REDPANDA_IMAGE")
		if img == "" {
			img = redpandaImage
		}
		var broker string
		broker, redpandaStop, redpandaErr = dockerRedpanda(context.Background(), img)
		if redpandaErr == nil {
			redpandaBrokers = []string{broker}
			fmt.Fprintf(os.Stderr, "testenv: redpanda %s via docker\n", img)
		}
	})
	switch {
	case redpandaNoDocker != nil:
		t.Skipf("redpanda runs in Docker (testcontainers), and no Docker daemon answers: %v", redpandaNoDocker)
	case redpandaErr != nil:
		unavailable(t, "redpanda", redpandaErr)
	}
	return redpandaBrokers
}

func dockerRedpanda(ctx context.Context, img string) (string, func(), error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	var c *redpanda.Container
	err := withDeadline(ctx, func() error {
		var err error
		c, err = redpanda.Run(ctx, img)
		return err
	})
	if err != nil {
		return "", nil, fmt.Errorf("docker redpanda: %w", err)
	}
	broker, err := c.KafkaSeedBroker(ctx)
	if err != nil {
		_ = testcontainers.TerminateContainer(c)
		return "", nil, fmt.Errorf("docker redpanda: %w", err)
	}
	return broker, func() { _ = testcontainers.TerminateContainer(c) }, nil
}
