package scenarios_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/evidence"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/scenarios"
)

const dsnPassword = "pw-s3cret-9f2"

// sqlDatabase is one real database the SQL oracle is tested on.
type sqlDatabase struct {
	driver, dsn string // for the API's own connection
	oracleDSN   string // as the config names it
	create      string
	insert      string
}

func postgresDatabase(t *testing.T) sqlDatabase {
	dsn := testenv.RequirePostgres(t)
	// The local server trusts every login: a password in the DSN is sent
	// and ignored, so its redaction is tested on a working connection.
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), dsnPassword)
	return sqlDatabase{driver: "pgx", dsn: dsn, oracleDSN: u.String(),
		create: "create table orders (idempotency_key text not null)",
		insert: "insert into orders (idempotency_key) values ($1)"}
}

func mysqlDatabase(t *testing.T) sqlDatabase {
	dsn := testenv.RequireMySQL(t)
	return sqlDatabase{driver: "mysql", dsn: dsn, oracleDSN: "mysql://" + dsn,
		create: "create table orders (idempotency_key varchar(255) not null)",
		insert: "insert into orders (idempotency_key) values (?)"}
}

// sqliteDatabase is a SQLite file the API writes (WAL, so the oracle's
// read-only connection reads beside it) and the oracle names as sqlite:PATH.
func sqliteDatabase(t *testing.T) sqlDatabase {
	path := filepath.Join(t.TempDir(), "orders.db")
	return sqlDatabase{driver: "sqlite", dsn: "file:" + path + "?_pragma=journal_mode(wal)&_pragma=busy_timeout(5000)", oracleDSN: "sqlite:" + path,
		create: "create table orders (idempotency_key text not null)",
		insert: "insert into orders (idempotency_key) values (?)"}
}

// TestSQLOracle: the orders API stores an order per execution in a real
// database; the SQL oracle counts its rows for the bare key (the API
// receives the sf-string "k" and stores k) and the correct API passes the
// replay and mismatch families with "(oracle)" evidence. A query that
// cannot run is one note, its cases inconclusive. The DSN's password is in
// no report, note or error.
func TestSQLOracle(t *testing.T) {
	for _, row := range []struct {
		name string
		open func(*testing.T) sqlDatabase
		// query: $1 twice and once inside quotes, so the MySQL placeholder
		// translation is exercised.
		query string
	}{
		{"postgres", postgresDatabase, "select count(*) from orders where idempotency_key = $1"},
		{"mysql", mysqlDatabase, "select count(*) from orders where idempotency_key = $1 and (idempotency_key = $1 or '$1' = 'x')"},
		{"sqlite", sqliteDatabase, "select count(*) from orders where idempotency_key = $1 and (idempotency_key = $1 or '$1' = 'x')"},
	} {
		t.Run(row.name, func(t *testing.T) {
			db := row.open(t)
			conn, err := sql.Open(db.driver, db.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := conn.ExecContext(ctx, db.create); err != nil {
				t.Fatal(err)
			}
			t.Setenv("IDEMCHECK_TEST_DATABASE_URL", db.oracleDSN)
			api := &ordersAPI{db: conn, insert: db.insert}
			tg := startOrders(t, api, fmt.Sprintf("oracle: {sql: {dsn: \"${IDEMCHECK_TEST_DATABASE_URL}\", query: %q}}\n", row.query))
			if tg.GlobalOracle() {
				t.Fatal("a query with $1 counts per key")
			}
			passesOnOracle(t, tg)

			// A query on a missing table: one note, inconclusive cases,
			// no password anywhere.
			bad := startOrders(t, &ordersAPI{}, "oracle: {sql: {dsn: \"${IDEMCHECK_TEST_DATABASE_URL}\", query: \"select count(*) from nowhere where k = $1\"}}\n")
			rep := runSelected(t, bad, ietf(t), "replay/single-execution")
			if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "oracle sql:") || rep.Results[0].Status != scenarios.Inconclusive {
				t.Errorf("a failing query: notes %q, %s; want one note naming the SQL oracle and an inconclusive case", rep.Notes, rep.Results[0].Status)
			}
			b, _ := json.Marshal(rep)
			if strings.Contains(string(b), dsnPassword) || strings.Contains(rep.Notes[0], dsnPassword) {
				t.Errorf("the DSN's password is in the report: %s", b)
			}
		})
	}
}

// TestSQLOracleErrors: what the query returns must be one integer; every
// error names the cause and never the password. A query without $1 is a
// global count.
func TestSQLOracleErrors(t *testing.T) {
	db := postgresDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	count := func(dsn, query, key string) (int, bool, error) {
		tg := &apispec.Target{BaseURL: "http://127.0.0.1:9", Oracle: &apispec.Oracle{SQL: &apispec.SQLOracle{DSN: dsn, Query: query}}}
		ev, err := evidence.Open(context.Background(), tg, nil, nil)
		if err != nil {
			return 0, false, err
		}
		defer ev.Close()
		n, err := ev.Count(ctx, key, nil)
		return n, ev.PerKey(), err
	}
	if n, perKey, err := count(db.oracleDSN, "select 3", ""); err != nil || n != 3 || perKey {
		t.Errorf("a global query: %d, per key %v, %v; want 3, false, nil", n, perKey, err)
	}
	for _, c := range []struct{ name, dsn, query, want string }{
		{"text", db.oracleDSN, "select 'seven' where $1 <> ''", "want one integer"},
		{"null", db.oracleDSN, "select null::int where $1 <> ''", "NULL"},
		{"no row", db.oracleDSN, "select 1 where $1 = 'never'", "no row"},
		{"two rows", db.oracleDSN, "select 1 from (values (1), (2)) v where $1 <> ''", "more than one row"},
		{"two columns", db.oracleDSN, "select 1, 2 where $1 <> ''", "2 columns"},
		{"bad sql", db.oracleDSN, "select count(*) from nowhere where k = $1", "nowhere"},
		{"unreachable", "postgres://app:" + dsnPassword + "@127.0.0.1:1/db", "select 1 where $1 <> ''", "127.0.0.1"},
		{"mysql unreachable", "mysql://app:" + dsnPassword + "@tcp(127.0.0.1:1)/db", "select 1 where $1 <> ''", "127.0.0.1:1"},
		{"second argument", db.oracleDSN, "select count(*) from orders where a = $1 and b = $2", "$2: the key is the only argument"},
		{"not a DSN", "mysql://" + dsnPassword + "@@", "select 1 where $1 <> ''", "not a MySQL DSN"},
		{"sqlite file missing", "sqlite:" + filepath.Join(t.TempDir(), "none.db"), "select 1 where $1 <> ''", "none.db: no such file"},
		{"sqlite in memory", "sqlite::memory:", "select 1 where $1 <> ''", "an in-memory database is the API's own"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := count(c.dsn, c.query, "k")
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), dsnPassword) {
				t.Errorf("got %v; want an error with %q and without the password", err, c.want)
			}
		})
	}
}

// TestSQLOracleConfig: a DSN written out in the config is redacted in
// everything the target prints; sql beside url is one line, exit 2.
func TestSQLOracleConfig(t *testing.T) {
	dsn := "postgres://app:" + dsnPassword + "@db.internal:5432/shop"
	tg := ordersTarget(t, "http://127.0.0.1:9", "/order_id", fmt.Sprintf("oracle: {sql: {dsn: %q, query: \"select count(*) from orders\"}}\n", dsn))
	if got := tg.Redact("connect " + dsn); strings.Contains(got, dsnPassword) || !strings.Contains(got, "db.internal") {
		t.Errorf("Redact = %q; want the DSN without its password", got)
	}
	if !tg.GlobalOracle() {
		t.Error("a query without $1 is a global count")
	}
	_, _, err := apispec.ParseConfig([]byte("base_url: http://127.0.0.1:9\nprincipals: [{name: a}]\noperations: [{name: o, method: POST, path: /o}]\noracle: {url: /e, pointer: /n, sql: {dsn: \"postgres://h/db\", query: \"select 1\"}}\n"))
	if err == nil || !strings.Contains(err.Error(), "oracle.sql: an oracle is one source") {
		t.Errorf("sql beside url: %v", err)
	}
}
