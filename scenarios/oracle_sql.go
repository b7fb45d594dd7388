package scenarios

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// SQLOracle counts executions in the API's own database: Query returns
// one integer, "$1" in it is the key. The key is the bare key, as the API
// stores it: for key_syntax sf-string the header carries "\"k\"" and $1 is
// k (the quotes removed). A query without $1 is a global count (the run
// goes serial).
//
// DSN kinds: postgres://… or postgresql://… or "host=… user=…"
// (PostgreSQL, pgx); mysql://user:pass@tcp(host:3306)/db (MySQL or
// MariaDB, go-sql-driver/mysql's DSN after the mysql:// prefix). For MySQL
// each $1 becomes a ? placeholder.
type SQLOracle struct {
	// DSN is never shown: reports name it by its ${NAME} or redact its
	// password.
	DSN   string `yaml:"dsn" json:"-"`
	Query string `yaml:"query" json:"query"`
}

// SQL source bounds: a small pool (the engine's cases probe concurrently)
// and a timeout on every query, connecting included.
const (
	sqlMaxConns     = 4
	sqlQueryTimeout = 5 * time.Second
	sqlDialTimeout  = 5 * time.Second
)

// mysqlScheme prefixes a MySQL DSN in the config.
const mysqlScheme = "mysql://"

func (o *SQLOracle) perKey() bool {
	_, n, _ := placeholders(o.Query, "$1")
	return n > 0
}

func (o *SQLOracle) validate(at string) error {
	if strings.TrimSpace(o.Query) == "" {
		return fmt.Errorf("%s.query: want a query returning one integer (e.g. select count(*) from orders where idempotency_key = $1)", at)
	}
	if _, _, err := placeholders(o.Query, "$1"); err != nil {
		return fmt.Errorf("%s.query: %v", at, err)
	}
	if _, _, err := o.connector(); err != nil {
		return fmt.Errorf("%s.dsn: %v", at, err)
	}
	return nil
}

// connector parses the DSN: the driver's connector and the password that
// errors must not show.
func (o *SQLOracle) connector() (c driver.Connector, password string, err error) {
	switch dsn := o.DSN; {
	case dsn == "":
		return nil, "", errors.New("want a database URL: postgres://user:pass@host:5432/db, host=… user=… (PostgreSQL) or mysql://user:pass@tcp(host:3306)/db")
	case strings.HasPrefix(dsn, mysqlScheme):
		cfg, err := mysql.ParseDSN(strings.TrimPrefix(dsn, mysqlScheme))
		if err != nil {
			return nil, "", errors.New("not a MySQL DSN (want mysql://user:pass@tcp(host:3306)/db)")
		}
		if cfg.Timeout == 0 {
			cfg.Timeout = sqlDialTimeout
		}
		conn, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, cfg.Passwd, errors.New(redactPassword(err.Error(), cfg.Passwd))
		}
		return conn, cfg.Passwd, nil
	default:
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			return nil, "", errors.New("not a PostgreSQL DSN (want postgres://user:pass@host:5432/db or host=… user=…; mysql://… for MySQL)")
		}
		if cfg.ConnectTimeout == 0 {
			cfg.ConnectTimeout = sqlDialTimeout
		}
		return stdlib.GetConnector(*cfg), cfg.Password, nil
	}
}

// sqlSource is an open SQL oracle: a bounded pool and its query.
type sqlSource struct {
	db       *sql.DB
	query    string
	nargs    int // the key, once per placeholder the driver reads
	password string
	dsn      string
}

func openSQL(o *SQLOracle) (*sqlSource, error) {
	conn, password, err := o.connector()
	if err != nil {
		return nil, fmt.Errorf("oracle.sql.dsn: %v", err)
	}
	q, nargs, err := placeholders(o.Query, "$1")
	if err != nil {
		return nil, fmt.Errorf("oracle.sql.query: %v", err)
	}
	if !strings.HasPrefix(o.DSN, mysqlScheme) {
		// PostgreSQL reads $1 itself, however often it appears.
		q, nargs = o.Query, min(nargs, 1)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(sqlMaxConns)
	db.SetMaxIdleConns(sqlMaxConns)
	db.SetConnMaxIdleTime(time.Minute)
	return &sqlSource{db: db, query: q, nargs: nargs, password: password, dsn: o.DSN}, nil
}

func (s *sqlSource) PerKey() bool { return s.nargs > 0 }

// Sees: a committed row is counted however the request answered, on every
// replica that writes to the database.
func (s *sqlSource) Sees() Sight {
	return Sight{ErrorAnswers: true, LostResponses: true, Replicas: true}
}

func (s *sqlSource) Count(ctx context.Context, key string, _ func(Exchange)) (int, error) {
	if s.PerKey() && key == "" {
		return 0, fmt.Errorf("oracle sql: a per-key query cannot count requests sent without a key")
	}
	n, err := s.read(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("oracle sql: %s", s.redact(err.Error()))
	}
	return n, nil
}

func (s *sqlSource) Total(ctx context.Context, rec func(Exchange)) (int, bool, error) {
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
	return redactPassword(strings.ReplaceAll(msg, s.dsn, "<dsn>"), s.password)
}

func redactPassword(msg, password string) string {
	if password == "" {
		return msg
	}
	return strings.ReplaceAll(msg, password, redactedMark)
}

func (s *sqlSource) Close() error { return s.db.Close() }

// placeholders counts the occurrences of ph outside quoted text in q and
// returns q with each replaced by "?" (MySQL's placeholder). Another
// numbered placeholder ($2) is an error: the key is the only argument.
func placeholders(q, ph string) (string, int, error) {
	var b strings.Builder
	n := 0
	var quote byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == '$' && i+1 < len(q) && q[i+1] >= '0' && q[i+1] <= '9':
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			if q[i:j] != ph {
				return "", 0, fmt.Errorf("%s: the key is the only argument; write it %s", q[i:j], ph)
			}
			b.WriteByte('?')
			n++
			i = j - 1
			continue
		}
		b.WriteByte(c)
	}
	return b.String(), n, nil
}
