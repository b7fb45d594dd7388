package evidence

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"modernc.org/sqlite"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// SQL source bounds: a small pool (the engine's cases probe concurrently)
// and a timeout on every query.
const (
	sqlMaxConns     = 4
	sqlQueryTimeout = 5 * time.Second
	sqlDialTimeout  = 5 * time.Second
	// sqliteBusy is how long a SQLite read waits for the API's write lock.
	sqliteBusy = 5 * time.Second
)

// sqlSource is an open SQL oracle: a bounded pool and its query.
type sqlSource struct {
	db       *sql.DB
	query    string
	nargs    int // the key, once per placeholder the driver reads
	password string
	dsn      string
}

func openSQL(o *apispec.SQLOracle) (*sqlSource, error) {
	src, err := o.Source()
	if err != nil {
		return nil, fmt.Errorf("oracle.sql.dsn: %v", err)
	}
	conn, err := connector(src)
	if err != nil {
		return nil, fmt.Errorf("oracle.sql.dsn: %s", apispec.RedactPassword(err.Error(), src.Password))
	}
	q, nargs, err := apispec.Placeholders(o.Query, "$1")
	if err != nil {
		return nil, fmt.Errorf("oracle.sql.query: %v", err)
	}
	if src.Kind == apispec.SQLPostgres {
		// PostgreSQL reads $1 itself, however often it appears.
		q, nargs = o.Query, min(nargs, 1)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(sqlMaxConns)
	db.SetMaxIdleConns(sqlMaxConns)
	db.SetConnMaxIdleTime(time.Minute)
	return &sqlSource{db: db, query: q, nargs: nargs, password: src.Password, dsn: o.DSN}, nil
}

// connector is the one pinned driver of each database kind: pgx for
// PostgreSQL, go-sql-driver/mysql for MySQL and MariaDB, modernc.org/sqlite
// (pure Go) for SQLite.
func connector(src apispec.SQLSource) (driver.Connector, error) {
	switch src.Kind {
	case apispec.SQLMySQL:
		cfg, err := mysql.ParseDSN(src.DSN)
		if err != nil {
			return nil, errors.New("not a MySQL DSN (want mysql://user:pass@tcp(host:3306)/db)")
		}
		if cfg.Timeout == 0 {
			cfg.Timeout = sqlDialTimeout
		}
		return mysql.NewConnector(cfg)
	case apispec.SQLSQLite:
		// Read-only: the oracle never writes to, nor creates, the API's
		// database. A missing file is an error now, not an empty count later.
		if _, err := os.Stat(src.DSN); err != nil {
			return nil, fmt.Errorf("SQLite database: %v", err)
		}
		q := url.Values{"mode": {"ro"}, "_pragma": {fmt.Sprintf("busy_timeout(%d)", sqliteBusy.Milliseconds())}}
		return dsnConnector{d: &sqlite.Driver{}, dsn: "file:" + src.DSN + "?" + q.Encode()}, nil
	default:
		cfg, err := pgx.ParseConfig(src.DSN)
		if err != nil {
			return nil, errors.New("not a PostgreSQL DSN (want postgres://user:pass@host:5432/db or host=… user=…)")
		}
		if cfg.ConnectTimeout == 0 {
			cfg.ConnectTimeout = sqlDialTimeout
		}
		return stdlib.GetConnector(*cfg), nil
	}
}

// dsnConnector is a driver.Connector for a driver that offers none.
type dsnConnector struct {
	d   driver.Driver
	dsn string
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }
func (c dsnConnector) Driver() driver.Driver                        { return c.d }

func (s *sqlSource) PerKey() bool { return s.nargs > 0 }

// Sees: a committed row is counted however the request answered, on every
// replica that writes to the database.
func (s *sqlSource) Sees() Sight {
	return Sight{ErrorAnswers: true, LostResponses: true, Replicas: true}
}

func (s *sqlSource) Count(ctx context.Context, key string, _ func(wire.Exchange)) (int, error) {
	if s.PerKey() && key == "" {
		return 0, fmt.Errorf("oracle sql: a per-key query cannot count requests sent without a key")
	}
	n, err := s.read(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("oracle sql: %s", s.redact(err.Error()))
	}
	return n, nil
}

func (s *sqlSource) Total(ctx context.Context, rec func(wire.Exchange)) (int, bool, error) {
	if s.PerKey() {
		return 0, false, nil
	}
	n, err := s.Count(ctx, "", rec)
	return n, true, err
}

// read runs the query with key bound to each placeholder: one row, one
// integer column.
func (s *sqlSource) read(ctx context.Context, key string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, sqlQueryTimeout)
	defer cancel()
	args := make([]any, s.nargs)
	for i := range args {
		args[i] = key
	}
	rows, err := s.db.QueryContext(ctx, s.query, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	if cols, err := rows.Columns(); err != nil || len(cols) != 1 {
		return 0, fmt.Errorf("the query returns %d columns; want one integer", len(cols))
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return 0, err
		}
		return 0, errors.New("the query returned no row; want one integer (select count(*) …)")
	}
	var n sql.NullInt64
	if err := rows.Scan(&n); err != nil {
		return 0, fmt.Errorf("want one integer: %v", err)
	}
	if !n.Valid {
		return 0, errors.New("the query returned NULL; want one integer (select count(*) …)")
	}
	if rows.Next() {
		return 0, errors.New("the query returned more than one row; want one integer (select count(*) …)")
	}
	return int(n.Int64), rows.Err()
}

// redact removes the DSN and its password from a driver's message.
func (s *sqlSource) redact(msg string) string {
	return apispec.RedactPassword(strings.ReplaceAll(msg, s.dsn, "<dsn>"), s.password)
}

func (s *sqlSource) Close() error { return s.db.Close() }
