package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tcpg "github.com/testcontainers/testcontainers-go/modules/postgres"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
)

var (
	dockerOnce sync.Once
	dockerErr  error
)

// dockerAvailable probes the Docker engine once per process. It answers
// fast when there is no socket at all, and bounds the probe otherwise: a
// hung daemon must not hang the tests.
func dockerAvailable() error {
	dockerOnce.Do(func() { dockerErr = probeDocker() })
	return dockerErr
}

func probeDocker() error {
	if os.Getenv("IDEMCHECK_NO_DOCKER") != "" {
		return errors.New("docker: disabled by IDEMCHECK_NO_DOCKER")
	}
	if os.Getenv("DOCKER_HOST") == "" && !anyDockerSocket() {
		return errors.New("docker: no DOCKER_HOST and no docker socket")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := withDeadline(ctx, func() error {
		c, err := testcontainers.NewDockerClientWithOpts(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Ping(ctx, client.PingOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	return nil
}

// anyDockerSocket looks where testcontainers looks for an engine socket.
func anyDockerSocket() bool {
	cands := []string{"/var/run/docker.sock"}
	if home, err := os.UserHomeDir(); err == nil {
		cands = append(cands, filepath.Join(home, ".docker", "run", "docker.sock"),
			filepath.Join(home, ".docker", "desktop", "docker.sock"),
			filepath.Join(home, ".testcontainers.properties"))
	}
	if xdg := os.Getenv("XDG_RUNTIME_DIR"); xdg != "" {
		cands = append(cands, filepath.Join(xdg, "docker.sock"))
	}
	cands = append(cands, fmt.Sprintf("/run/user/%d/docker.sock", os.Getuid()))
	for _, c := range cands {
		if _, err := os.Stat(c); err == nil {
			return true
		}
	}
	return false
}

// withDeadline runs f in a goroutine and gives up when ctx ends: some
// testcontainers paths ignore their context (provider setup).
func withDeadline(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func dockerPostgres(ctx context.Context) (string, func(), error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	var c *tcpg.PostgresContainer
	err := withDeadline(ctx, func() error {
		var err error
		c, err = tcpg.Run(ctx, "postgres:16-alpine",
			tcpg.WithDatabase("idemcheck"), tcpg.WithUsername("postgres"), tcpg.WithPassword("postgres"),
			tcpg.BasicWaitStrategies())
		return err
	})
	if err != nil {
		return "", nil, fmt.Errorf("docker postgres: %w", err)
	}
	dsn, err := c.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		_ = testcontainers.TerminateContainer(c)
		return "", nil, fmt.Errorf("docker postgres: %w", err)
	}
	return dsn, func() { _ = testcontainers.TerminateContainer(c) }, nil
}

func dockerRedis(ctx context.Context) (string, func(), error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	var c *tcredis.RedisContainer
	err := withDeadline(ctx, func() error {
		var err error
		c, err = tcredis.Run(ctx, "redis:7-alpine")
		return err
	})
	if err != nil {
		return "", nil, fmt.Errorf("docker redis: %w", err)
	}
	url, err := c.ConnectionString(ctx)
	if err != nil {
		_ = testcontainers.TerminateContainer(c)
		return "", nil, fmt.Errorf("docker redis: %w", err)
	}
	return url, func() { _ = testcontainers.TerminateContainer(c) }, nil
}
