package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/store/internal/record"
	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"
)

// BindOption configures [Bind].
type BindOption func(*bindConfig)

type bindConfig struct {
	read, write []engine.BindOption
	tenant      bool
	createTable bool
	now         func() time.Time
}

// ReadGates adds bind options (gates) to list and get.
func ReadGates(opts ...engine.BindOption) BindOption {
	return func(c *bindConfig) { c.read = append(c.read, opts...) }
}

// WriteGates adds bind options (gates) to create, update and remove.
func WriteGates(opts ...engine.BindOption) BindOption {
	return func(c *bindConfig) { c.write = append(c.write, opts...) }
}

// TenantScoped scopes rows to the caller's tenant through the field tagged
// store:"tenant": set from the principal on create, and a condition of every query, so
// another tenant's row is NotFound. Calls without a principal are Unauthorized; a
// principal without a tenant is Forbidden {gate: "tenant"}.
func TenantScoped() BindOption { return func(c *bindConfig) { c.tenant = true } }

// CreateTable creates the table (and its tenant index) at start when missing.
func CreateTable() BindOption { return func(c *bindConfig) { c.createTable = true } }

// WithNow sets the clock of created fields (default time.Now), for tests.
func WithNow(now func() time.Time) BindOption { return func(c *bindConfig) { c.now = now } }

type binder[T any] struct {
	r      *Resource[T]
	m      *record.Model
	db     *bun.DB
	cfg    bindConfig
	cols   map[string]schema.Safe // Go field name → quoted column
	idCol  schema.Safe
	tenCol schema.Safe
	uuidID bool // the id column is of a uuid type, which refuses other text in a query
}

// Bind binds the resource's five flows to db. It is an [engine.Option]: a problem with
// the resource, its record type or the options is reported by [engine.New].
func Bind[T any](r *Resource[T], db *bun.DB, opts ...BindOption) engine.Option {
	b := &binder[T]{r: r, db: db, cfg: bindConfig{now: time.Now}}
	for _, o := range opts {
		o(&b.cfg)
	}
	err := b.prepare()
	if r == nil {
		return engine.InvalidOption(err) // no flows to bind the error to
	}
	failing := func(extra []engine.BindOption) []engine.BindOption {
		if err != nil {
			return append([]engine.BindOption{engine.InvalidBindOption(err)}, extra...)
		}
		return extra
	}
	o := []engine.Option{
		engine.Bind(r.List, b.list, failing(b.cfg.read)...),
		engine.Bind(r.Get, b.get, failing(b.cfg.read)...),
		engine.Bind(r.Create, b.create, failing(b.cfg.write)...),
		engine.Bind(r.Update, b.update, failing(b.cfg.write)...),
		engine.Bind(r.Remove, b.remove, failing(b.cfg.write)...),
	}
	if b.cfg.createTable && err == nil {
		o = append(o, engine.OnStart(func(ctx context.Context, _ *engine.App) error { return b.createTable(ctx) }))
	}
	return engine.Options(o...)
}

func (b *binder[T]) prepare() error {
	if b.r == nil {
		return errors.New("store.Bind: nil resource")
	}
	m, _, err := record.Declare(reflect.TypeFor[T]())
	if err != nil {
		return err
	}
	b.m = m
	if b.db == nil {
		return errors.New("store.Bind: nil db")
	}
	if b.cfg.now == nil {
		b.cfg.now = time.Now
	}
	table := b.db.Table(reflect.TypeFor[T]())
	b.cols = map[string]schema.Safe{}
	for _, f := range table.Fields {
		b.cols[f.GoName] = f.SQLName
		if f.GoName == m.ID.GoName {
			b.uuidID = strings.EqualFold(f.UserSQLType, "uuid") // bun:"type:uuid"
		}
	}
	for _, f := range b.m.Fields {
		if _, ok := b.cols[f.GoName]; !ok {
			return fmt.Errorf("store: field %s of %v is not a bun column", f.GoName, b.m.Type)
		}
	}
	b.idCol = b.cols[b.m.ID.GoName]
	if b.cfg.tenant {
		if b.m.Tenant == nil {
			return fmt.Errorf(`store: %v is tenant scoped but has no field tagged store:"tenant"`, b.m.Type)
		}
		b.tenCol = b.cols[b.m.Tenant.GoName]
	}
	return nil
}

func (b *binder[T]) createTable(ctx context.Context) error {
	if _, err := b.db.NewCreateTable().Model((*T)(nil)).IfNotExists().Exec(ctx); err != nil {
		return fmt.Errorf("store: creating table of %v: %w", b.m.Type, err)
	}
	if b.cfg.tenant {
		name := b.db.Table(reflect.TypeFor[T]()).Name + "_tenant_idx"
		_, err := b.db.NewCreateIndex().Model((*T)(nil)).Index(name).
			ColumnExpr("?, ?", b.tenCol, b.idCol).IfNotExists().Exec(ctx)
		if err != nil {
			return fmt.Errorf("store: creating tenant index of %v: %w", b.m.Type, err)
		}
	}
	return nil
}

// tenantOf returns the caller's tenant when the resource is scoped.
func (b *binder[T]) tenantOf(fx *engine.Fx) (string, error) {
	if !b.cfg.tenant {
		return "", nil
	}
	p := fx.Principal()
	if p == nil {
		return "", engine.Unauthorized()
	}
	if p.Tenant == "" {
		return "", engine.Forbidden("tenant", "the caller has no tenant")
	}
	return p.Tenant, nil
}

// scope adds the id and tenant conditions shared by get, update and remove.
func (b *binder[T]) scope(q bun.QueryBuilder, id, tenant string) bun.QueryBuilder {
	q = q.Where("? = ?", b.idCol, id)
	if b.cfg.tenant {
		q = q.Where("? = ?", b.tenCol, tenant)
	}
	return q
}

func notFound() error { return engine.NotFound("record not found") }

// badText is the issue of a value that holds text no database column takes alike: a NUL
// byte (Postgres refuses it in text; bun cannot quote it for either driver) or invalid
// UTF-8. It looks into maps, slices and pointers, as far as a JSON value nests.
func badText(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); strings.IndexByte(s, 0) >= 0 {
			return "must not contain a NUL character"
		} else if !utf8.ValidString(s) {
			return "must be valid UTF-8"
		}
	case reflect.Interface, reflect.Pointer:
		if !v.IsNil() {
			return badText(v.Elem())
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return "" // bytes: no text
		}
		for i := range v.Len() {
			if msg := badText(v.Index(i)); msg != "" {
				return msg
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if msg := badText(it.Key()); msg != "" {
				return msg
			}
			if msg := badText(it.Value()); msg != "" {
				return msg
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				continue
			}
			if msg := badText(v.Field(i)); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// unstorableID reports whether id cannot be a stored record's, which is answered
// NotFound without a query: one with text no database keeps (see [badText]), or, for a
// uuid-typed key, anything but a UUID in its 36-character form (the only form create
// makes; Postgres fails the query on text that is not a UUID).
func (b *binder[T]) unstorableID(id string) bool {
	if b.uuidID {
		_, err := uuid.Parse(id)
		return len(id) != 36 || err != nil
	}
	return badText(reflect.ValueOf(id)) != ""
}

func (b *binder[T]) list(fx *engine.Fx, in Query) ([]T, error) {
	tenant, err := b.tenantOf(fx)
	if err != nil {
		return nil, err
	}
	limit := DefaultLimit
	filters := map[string]any{}
	cursor := ""
	var issues []engine.ValidationIssue
	type cond struct {
		col schema.Safe
		val any
	}
	var conds []cond
	for _, k := range slices.Sorted(maps.Keys(in)) {
		v := in[k]
		switch k {
		case "limit":
			n, ok := asLimit(v)
			if !ok {
				issues = append(issues, engine.ValidationIssue{Path: "limit", Message: fmt.Sprintf("must be an integer from 1 to %d", MaxLimit)})
				continue
			}
			limit = n
		case "cursor":
			s, ok := v.(string)
			if !ok {
				issues = append(issues, engine.ValidationIssue{Path: "cursor", Message: "must be a string"})
				continue
			}
			cursor = s
		default:
			f := b.m.ByJSON[k]
			if f == nil || !f.Filter {
				issues = append(issues, engine.ValidationIssue{Path: k, Message: "not a filter of this list"})
				continue
			}
			if msg := badText(reflect.ValueOf(v)); msg != "" {
				issues = append(issues, engine.ValidationIssue{Path: k, Message: msg})
				continue
			}
			typed, err := convert(v, f.Type)
			if err != nil {
				issues = append(issues, engine.ValidationIssue{Path: k, Message: err.Error()})
				continue
			}
			filters[k] = v
			conds = append(conds, cond{col: b.cols[f.GoName], val: typed})
		}
	}
	if len(issues) > 0 {
		return nil, engine.Invalid(issues...)
	}
	digest := queryDigest(filters)
	rows := make([]T, 0, limit+1)
	q := b.db.NewSelect().Model(&rows).OrderExpr("? ASC", b.idCol).Limit(int64(limit + 1))
	if b.cfg.tenant {
		q = q.Where("? = ?", b.tenCol, tenant)
	}
	for _, c := range conds {
		q = q.Where("? = ?", c.col, c.val)
	}
	if cursor != "" {
		after, err := decodeCursor(cursor, digest)
		if err != nil {
			return nil, err
		}
		q = q.Where("? > ?", b.idCol, after)
	}
	if err := q.Scan(fx.Context()); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: list: %w", err)
	}
	if len(rows) > limit {
		rows = rows[:limit]
		last := reflect.ValueOf(&rows[limit-1]).Elem().FieldByIndex(b.m.ID.Index).String()
		fx.SetMeta("nextCursor", encodeCursor(last, digest))
	}
	return rows, nil
}

// asLimit reads a limit, a whole number from 1 to MaxLimit, in whichever type it was
// decoded as. The input schema refuses other limits first, but an application may adjust
// that schema: the query's bound is this check.
func asLimit(v any) (int, bool) {
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case json.Number:
		var err error
		if f, err = n.Float64(); err != nil {
			return 0, false
		}
	case int:
		f = float64(n)
	case int64:
		f = float64(n)
	default:
		return 0, false
	}
	if f != math.Trunc(f) || f < 1 || f > MaxLimit {
		return 0, false // NaN too: it is not equal to itself
	}
	return int(f), true
}

// convert turns a decoded JSON value into a value of the field's Go type, through JSON so
// the field's own decoding rules (time formats, custom types) apply.
func convert(v any, t reflect.Type) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, errors.New("not a valid value")
	}
	p := reflect.New(t)
	if err := json.Unmarshal(raw, p.Interface()); err != nil {
		return nil, fmt.Errorf("expected a value of type %s", t.Kind())
	}
	return p.Elem().Interface(), nil
}

func (b *binder[T]) load(ctx context.Context, id, tenant string) (T, error) {
	var row T
	if b.unstorableID(id) {
		return row, notFound()
	}
	q := b.db.NewSelect().Model(&row).Limit(1)
	q = b.scope(q.QueryBuilder(), id, tenant).Unwrap().(*bun.SelectQuery)
	if err := q.Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return row, notFound()
		}
		return row, fmt.Errorf("store: get: %w", err)
	}
	return row, nil
}

func (b *binder[T]) get(fx *engine.Fx, in ID) (T, error) {
	tenant, err := b.tenantOf(fx)
	if err != nil {
		var zero T
		return zero, err
	}
	return b.load(fx.Context(), in.ID, tenant)
}

// decodeFields checks that every key is writable and decodes the values into a record.
// Keys are taken in sorted order, so the issues and the columns set come out the same
// whatever the map's order.
func (b *binder[T]) decodeFields(in Fields, skip string) (T, []string, error) {
	var row T
	var issues []engine.ValidationIssue
	var present []string
	body := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(in)) {
		if k == skip {
			continue
		}
		f := b.m.ByJSON[k]
		if f == nil || !f.Writable() {
			issues = append(issues, engine.ValidationIssue{Path: k, Message: "not a writable field"})
			continue
		}
		if msg := badText(reflect.ValueOf(in[k])); msg != "" {
			issues = append(issues, engine.ValidationIssue{Path: k, Message: msg})
			continue
		}
		body[k] = in[k]
		present = append(present, f.GoName)
	}
	if len(issues) > 0 {
		return row, nil, engine.Invalid(issues...)
	}
	raw, err := json.Marshal(body)
	if err == nil {
		err = json.Unmarshal(raw, &row)
	}
	if err != nil {
		return row, nil, engine.Invalid(engine.ValidationIssue{Message: err.Error()})
	}
	return row, present, nil
}

func (b *binder[T]) create(fx *engine.Fx, in Fields) (T, error) {
	var zero T
	tenant, err := b.tenantOf(fx)
	if err != nil {
		return zero, err
	}
	row, _, err := b.decodeFields(in, "")
	if err != nil {
		return zero, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return zero, err
	}
	rv := reflect.ValueOf(&row).Elem()
	rv.FieldByIndex(b.m.ID.Index).SetString(id.String())
	if b.cfg.tenant {
		rv.FieldByIndex(b.m.Tenant.Index).SetString(tenant)
	}
	now := b.cfg.now().UTC().Truncate(time.Microsecond) // what both databases keep
	for _, f := range b.m.Fields {
		if f.Created {
			rv.FieldByIndex(f.Index).Set(reflect.ValueOf(now))
		}
	}
	if _, err := b.db.NewInsert().Model(&row).Exec(fx.Context()); err != nil {
		return zero, fmt.Errorf("store: create: %w", err)
	}
	return row, nil
}

func (b *binder[T]) update(fx *engine.Fx, in Fields) (T, error) {
	var zero T
	tenant, err := b.tenantOf(fx)
	if err != nil {
		return zero, err
	}
	id, _ := in["id"].(string)
	if id == "" {
		return zero, engine.Invalid(engine.ValidationIssue{Path: "id", Message: "required"})
	}
	row, present, err := b.decodeFields(in, "id")
	if err != nil {
		return zero, err
	}
	if b.unstorableID(id) {
		return zero, notFound()
	}
	if len(present) > 0 {
		q := b.db.NewUpdate().Model((*T)(nil))
		for _, name := range present {
			q = q.Set("? = ?", b.cols[name], reflect.ValueOf(&row).Elem().FieldByName(name).Interface())
		}
		q = b.scope(q.QueryBuilder(), id, tenant).Unwrap().(*bun.UpdateQuery)
		res, err := q.Exec(fx.Context())
		if err != nil {
			return zero, fmt.Errorf("store: update: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return zero, notFound()
		}
	}
	return b.load(fx.Context(), id, tenant)
}

func (b *binder[T]) remove(fx *engine.Fx, in ID) (engine.NoContent, error) {
	tenant, err := b.tenantOf(fx)
	if err != nil {
		return engine.NoContent{}, err
	}
	if b.unstorableID(in.ID) {
		return engine.NoContent{}, notFound()
	}
	q := b.db.NewDelete().Model((*T)(nil))
	q = b.scope(q.QueryBuilder(), in.ID, tenant).Unwrap().(*bun.DeleteQuery)
	res, err := q.Exec(fx.Context())
	if err != nil {
		return engine.NoContent{}, fmt.Errorf("store: remove: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return engine.NoContent{}, notFound()
	}
	return engine.NoContent{}, nil
}
