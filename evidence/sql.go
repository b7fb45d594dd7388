package evidence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// SQL source bounds: a small pool (the engine's cases probe concurrently)
// and a timeout on every query.
const (
	sqlMaxConns     = 4
	sqlQueryTimeout = 5 * time.Second
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
	conn, password, err := o.Connector()
	if err != nil {
		return nil, fmt.Errorf("oracle.sql.dsn: %v", err)
	}
	q, nargs, err := apispec.Placeholders(o.Query, "$1")
	if err != nil {
		return nil, fmt.Errorf("oracle.sql.query: %v", err)
	}
	if !strings.HasPrefix(o.DSN, apispec.MySQLScheme) {
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
