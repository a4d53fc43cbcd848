package journal

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/bbc28f59/engine/internal/offstack"
)

// offloaded runs every call of a driver with CapBlockingIO off the caller's goroutine
// and waits for it. database/sql and the SQL drivers under it grow a goroutine's stack to
// tens of KiB, and Go never shrinks a stack below what it needs while idle by much: an
// agent stream that idles between tokens for minutes would keep that stack after one
// journal write. The calls run on the few goroutines of [offstack.Run] instead, whose
// stacks have already grown; a fresh goroutine for every call spent 8 % of an unpaced
// SQLite run's CPU growing its stack, and handing calls to goroutines over channels made
// a durable flow's three writes on SQLite cost a fifth more than the same writes by hand
// (BenchmarkDurableStep).
type offloaded struct{ d Driver }

// off runs fn off the caller's stack and returns its results; a panic becomes an error.
func off[T any](fn func() (T, error)) (v T, err error) {
	offstack.Run(func() {
		defer func() {
			if p := recover(); p != nil {
				var zero T
				v, err = zero, fmt.Errorf("journal: driver panic: %v", p)
			}
		}()
		v, err = fn()
	})
	return v, err
}

// off2 is off for a call with two results.
func off2[A, B any](fn func() (A, B, error)) (A, B, error) {
	type pair struct {
		a A
		b B
	}
	p, err := off(func() (pair, error) {
		a, b, err := fn()
		return pair{a, b}, err
	})
	return p.a, p.b, err
}

func off0(fn func() error) error {
	_, err := off(func() (struct{}, error) { return struct{}{}, fn() })
	return err
}

func (o offloaded) Capabilities() Capability { return o.d.Capabilities() }

func (o offloaded) Migrate(ctx context.Context) error {
	return off0(func() error { return o.d.Migrate(ctx) })
}

func (o offloaded) InsertRun(ctx context.Context, rec RunRecord) error {
	return off0(func() error { return o.d.InsertRun(ctx, rec) })
}

func (o offloaded) GetRun(ctx context.Context, id string) (RunRecord, error) {
	return off(func() (RunRecord, error) { return o.d.GetRun(ctx, id) })
}

func (o offloaded) ClaimRun(ctx context.Context, id, owner string, now, expires time.Time) (RunRecord, error) {
	return off(func() (RunRecord, error) { return o.d.ClaimRun(ctx, id, owner, now, expires) })
}

func (o offloaded) ClaimRunLoaded(ctx context.Context, id, owner string, now, expires time.Time) (ClaimedRun, error) {
	return off(func() (ClaimedRun, error) { return claimRunLoaded(ctx, o.d, id, owner, now, expires) })
}

func (o offloaded) SuspendRun(ctx context.Context, f Fence, now time.Time) (bool, error) {
	return off(func() (bool, error) { return suspendRun(ctx, o.d, f, now) })
}

func (o offloaded) RenewLease(ctx context.Context, f Fence, expires time.Time) error {
	return off0(func() error { return o.d.RenewLease(ctx, f, expires) })
}

func (o offloaded) GetRunParks(ctx context.Context, id string) (RunRecord, []ParkRecord, error) {
	return off2(func() (RunRecord, []ParkRecord, error) { return getRunParks(ctx, o.d, id) })
}

func (o offloaded) RenewLeases(ctx context.Context, fences []Fence, expires time.Time) ([]Fence, error) {
	return off(func() ([]Fence, error) { return renewLeases(ctx, o.d, fences, expires) })
}

func (o offloaded) ReleaseRun(ctx context.Context, f Fence) error {
	return off0(func() error { return o.d.ReleaseRun(ctx, f) })
}

func (o offloaded) UpdateRun(ctx context.Context, f Fence, u RunUpdate, now time.Time) error {
	return off0(func() error { return o.d.UpdateRun(ctx, f, u, now) })
}

func (o offloaded) LoadSteps(ctx context.Context, runID string) ([]StepRecord, error) {
	return off(func() ([]StepRecord, error) { return o.d.LoadSteps(ctx, runID) })
}

func (o offloaded) InsertStep(ctx context.Context, f Fence, s StepRecord, w StepWrites) error {
	return off0(func() error { return o.d.InsertStep(ctx, f, s, w) })
}

func (o offloaded) InsertPark(ctx context.Context, f Fence, p ParkRecord) (ParkRecord, error) {
	return off(func() (ParkRecord, error) { return o.d.InsertPark(ctx, f, p) })
}

func (o offloaded) ListParks(ctx context.Context, runID string) ([]ParkRecord, error) {
	return off(func() ([]ParkRecord, error) { return o.d.ListParks(ctx, runID) })
}

func (o offloaded) Decide(ctx context.Context, runID, key, owner string, d Decision, now time.Time) (DecideResult, error) {
	return off(func() (DecideResult, error) { return o.d.Decide(ctx, runID, key, owner, d, now) })
}

func (o offloaded) ExpiredParks(ctx context.Context, now time.Time, limit int) ([]ParkRecord, error) {
	return off(func() ([]ParkRecord, error) { return o.d.ExpiredParks(ctx, now, limit) })
}

func (o offloaded) RecoverableRuns(ctx context.Context, now time.Time, limit int) ([]string, error) {
	return off(func() ([]string, error) { return o.d.RecoverableRuns(ctx, now, limit) })
}

func (o offloaded) ClaimLease(ctx context.Context, name, owner string, now, expires time.Time) (bool, error) {
	return off(func() (bool, error) { return o.d.ClaimLease(ctx, name, owner, now, expires) })
}

func (o offloaded) ReleaseLease(ctx context.Context, name, owner string) error {
	return off0(func() error { return o.d.ReleaseLease(ctx, name, owner) })
}

func (o offloaded) CreateStream(ctx context.Context, s Stream) error {
	return off0(func() error { return o.d.CreateStream(ctx, s) })
}

func (o offloaded) GetStream(ctx context.Context, id string) (Stream, error) {
	return off(func() (Stream, error) { return o.d.GetStream(ctx, id) })
}

func (o offloaded) FinishStream(ctx context.Context, id string, f *Fence, rows []EventRow, now time.Time) (int64, error) {
	return off(func() (int64, error) { return o.d.FinishStream(ctx, id, f, rows, now) })
}

func (o offloaded) AppendEvents(ctx context.Context, f *Fence, a Append) error {
	return off0(func() error { return o.d.AppendEvents(ctx, f, a) })
}

func (o offloaded) AppendBatch(ctx context.Context, batch []FencedAppend) []error {
	errs, err := off(func() ([]error, error) { return o.d.AppendBatch(ctx, batch), nil })
	if err != nil { // the driver panicked: every append failed
		errs = make([]error, len(batch))
		for i := range errs {
			errs[i] = err
		}
	}
	return errs
}

func (o offloaded) ReadEvents(ctx context.Context, streamID string, after int64, limit int) ([]EventRow, error) {
	return off(func() ([]EventRow, error) { return o.d.ReadEvents(ctx, streamID, after, limit) })
}

func (o offloaded) ReadStream(ctx context.Context, id string, after int64, limit int) (Stream, []EventRow, error) {
	return off2(func() (Stream, []EventRow, error) { return o.d.ReadStream(ctx, id, after, limit) })
}

func (o offloaded) ReadStreamEnd(ctx context.Context, id string) (Stream, []EventRow, error) {
	return off2(func() (Stream, []EventRow, error) { return readStreamEnd(ctx, o.d, id) })
}

func (o offloaded) LastSeq(ctx context.Context, streamID string) (int64, error) {
	return off(func() (int64, error) { return o.d.LastSeq(ctx, streamID) })
}

// Subscribe touches no database: it registers a channel in process.
func (o offloaded) Subscribe(streamID string) (<-chan struct{}, func()) {
	return o.d.Subscribe(streamID)
}

func (o offloaded) DeleteFinishedStreams(ctx context.Context, before time.Time, limit int) (int, error) {
	return off(func() (int, error) { return o.d.DeleteFinishedStreams(ctx, before, limit) })
}

func (o offloaded) StaleStreams(ctx context.Context, before time.Time, limit int) ([]Stream, error) {
	return off(func() ([]Stream, error) { return o.d.StaleStreams(ctx, before, limit) })
}

func (o offloaded) CloseStream(ctx context.Context, id string, event json.RawMessage, now time.Time) error {
	return off0(func() error { return o.d.CloseStream(ctx, id, event, now) })
}

var _ Driver = offloaded{}

func (o offloaded) SetSignal(ctx context.Context, topic string, value json.RawMessage, once bool, now time.Time) (TopicValue, []string, error) {
	type res struct {
		v    TopicValue
		runs []string
	}
	r, err := off(func() (res, error) {
		v, runs, err := o.d.SetSignal(ctx, topic, value, once, now)
		return res{v, runs}, err
	})
	return r.v, r.runs, err
}

func (o offloaded) GetSignal(ctx context.Context, topic string) (TopicValue, error) {
	return off(func() (TopicValue, error) { return o.d.GetSignal(ctx, topic) })
}

func (o offloaded) Publish(ctx context.Context, topic string, payload json.RawMessage, now time.Time) (int64, []string, error) {
	type res struct {
		seq  int64
		runs []string
	}
	r, err := off(func() (res, error) {
		seq, runs, err := o.d.Publish(ctx, topic, payload, now)
		return res{seq, runs}, err
	})
	return r.seq, r.runs, err
}

func (o offloaded) ReadMessages(ctx context.Context, topic string, after int64, limit int) ([]Message, error) {
	return off(func() ([]Message, error) { return o.d.ReadMessages(ctx, topic, after, limit) })
}

func (o offloaded) DeleteMessages(ctx context.Context, before time.Time, limit int) (int, error) {
	return off(func() (int, error) { return o.d.DeleteMessages(ctx, before, limit) })
}

func (o offloaded) ListRuns(ctx context.Context, q RunQuery) ([]RunRecord, error) {
	return off(func() ([]RunRecord, error) { return o.d.ListRuns(ctx, q) })
}

func (o offloaded) PendingParks(ctx context.Context, q ParkQuery) ([]ParkRecord, error) {
	return off(func() ([]ParkRecord, error) { return o.d.PendingParks(ctx, q) })
}

func (o offloaded) RunStreams(ctx context.Context, runID string) ([]Stream, error) {
	return off(func() ([]Stream, error) { return o.d.RunStreams(ctx, runID) })
}

func (o offloaded) HeldLeases(ctx context.Context, now time.Time) ([]LeaseRecord, []OwnerRecord, error) {
	type res struct {
		leases []LeaseRecord
		owners []OwnerRecord
	}
	r, err := off(func() (res, error) {
		l, ow, err := o.d.HeldLeases(ctx, now)
		return res{l, ow}, err
	})
	return r.leases, r.owners, err
}
