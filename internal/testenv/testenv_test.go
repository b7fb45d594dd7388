package testenv

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestMain(m *testing.M) { Main(m) }

// The shared PostgreSQL answers, and each test's schema is its own: a table
// created through one DSN is invisible through another.
func TestPostgresSchemasAreIsolated(t *testing.T) {
	a, b := RequirePostgres(t), RequirePostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pgExec(ctx, a, "CREATE TABLE only_here (x int)"); err != nil {
		t.Fatal(err)
	}
	if err := pgExec(ctx, a, "SELECT * FROM only_here"); err != nil {
		t.Fatalf("table not visible in its own schema: %v", err)
	}
	if err := pgExec(ctx, b, "SELECT * FROM only_here"); err == nil {
		t.Fatal("table of schema a is visible through schema b's DSN")
	}
	conn, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	t.Logf("postgres %s via %s", v, PostgresHow())
}

// A restartable Redis comes back on the same port after a kill, empty.
func TestRedisRestartSamePort(t *testing.T) {
	rs := RequireRestartableRedis(t)
	addr := rs.Addr()
	rs.Kill()
	if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
		c.Close()
		t.Fatal("redis still accepts connections after Kill")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rs.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if rs.Addr() != addr {
		t.Fatalf("restarted on %s, want %s", rs.Addr(), addr)
	}
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatalf("not reachable after restart: %v", err)
	}
	c.Close()
}

// The shared Redis is reachable at the URL RequireRedis gives.
func TestRequireRedis(t *testing.T) {
	u := RequireRedis(t)
	if u == "" {
		t.Fatal("empty URL")
	}
	t.Logf("redis %s via %s", u, RedisHow())
}

// A Kafka cluster from RequireKafka takes a record on a topic of the test's
// own and gives it back to a consumer: the real protocol, both ways.
func TestRequireKafkaRoundTrip(t *testing.T) {
	brokers, how := RequireKafka(t)
	topic := KafkaTopic(t, brokers, 2)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "hello" {
		t.Fatalf("consumed %d records, want the one produced", len(recs))
	}
	t.Logf("kafka %v via %s, topic %s", brokers, how, topic)
}
