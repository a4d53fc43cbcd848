// Package memory is the in-process [journal.Driver] for tests and examples. It has the
// same semantics as the SQL drivers (atomic claims, fencing, exactly-once decisions,
// gap-free seqs) behind one mutex, and keeps nothing across restarts of the process.
// Several journals may share one Driver to simulate several instances.
package memory

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/internal/wake"
)

// Driver keeps the journal in maps guarded by one mutex.
type Driver struct {
	mu      sync.Mutex
	runs    map[string]*entry
	leases  map[string]lease
	streams map[string]*streamEntry
	topics  map[string]*topicEntry
	// waiting indexes the runs with a pending park on a topic (topic → run ids), so a
	// signal or a publish looks at its waiters, not at every run ever stored. Entries
	// whose park was decided otherwise (a timeout) are pruned by the next set or publish.
	waiting map[string]map[string]struct{}
	stops   map[string]time.Time // stream id → when its stop was requested
	// open holds the runs the recovery scans look at: every run until it is final with
	// no undecided park, which the scans prune. Without it each scan would walk every run
	// ever stored, under d.mu, while new runs wait for it.
	open    map[string]*entry
	threads map[string][]journal.ThreadRun
	hub     *wake.Hub
}

// streamEntry is a stream with its rows, so one map lookup finds both.
type streamEntry struct {
	journal.Stream
	rows []journal.EventRow // gap-free by seq
}

// entry is a run with its steps and parks, so one map lookup finds everything.
type entry struct {
	rec   journal.RunRecord
	steps []journal.StepRecord // ordered by position
	parks []*journal.ParkRecord
}

func (e *entry) park(key string) *journal.ParkRecord {
	for _, p := range e.parks {
		if p.Key == key {
			return p
		}
	}
	return nil
}

type lease struct {
	owner   string
	expires time.Time
}

var _ journal.Driver = (*Driver)(nil)

// New returns an empty driver.
func New() *Driver {
	return &Driver{
		runs:    map[string]*entry{},
		open:    map[string]*entry{},
		leases:  map[string]lease{},
		streams: map[string]*streamEntry{},
		topics:  map[string]*topicEntry{},
		waiting: map[string]map[string]struct{}{},
		stops:   map[string]time.Time{},
		threads: map[string][]journal.ThreadRun{},
		hub:     wake.New(),
	}
}

// Capabilities implements journal.Driver: in-process only, not durable.
func (d *Driver) Capabilities() journal.Capability { return 0 }

// Migrate implements journal.Driver; there is no schema.
func (d *Driver) Migrate(context.Context) error { return nil }

func clone(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return bytes.Clone(b)
}

// InsertRun implements journal.Driver.
func (d *Driver) InsertRun(_ context.Context, rec journal.RunRecord) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.runs[rec.ID]; ok {
		return journal.ErrConflict
	}
	rec.Input, rec.Principal, rec.Output = clone(rec.Input), clone(rec.Principal), clone(rec.Output)
	e := &entry{rec: rec}
	d.runs[rec.ID], d.open[rec.ID] = e, e
	return nil
}

// GetRun implements journal.Driver.
func (d *Driver) GetRun(_ context.Context, id string) (journal.RunRecord, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.runs[id]
	if !ok {
		return journal.RunRecord{}, journal.ErrNotFound
	}
	return e.rec, nil
}

// ClaimRun implements journal.Driver.
func (d *Driver) ClaimRun(_ context.Context, id, owner string, now, expires time.Time) (journal.RunRecord, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.runs[id]
	if !ok {
		return journal.RunRecord{}, journal.ErrNotFound
	}
	r := &e.rec
	if r.Status.Final() {
		return journal.RunRecord{}, journal.ErrRunFinished
	}
	if r.LeaseOwner != "" && r.LeaseOwner != owner && r.LeaseExpires.After(now) {
		return journal.RunRecord{}, journal.BusyError(id, r.LeaseOwner, r.LeaseExpires, now)
	}
	r.LeaseOwner, r.LeaseExpires, r.Status, r.UpdatedAt = owner, expires, journal.StatusRunning, now
	r.Epoch++
	return *r, nil
}

// fenced returns the run when f still holds its lease. Caller holds d.mu.
func (d *Driver) fenced(f journal.Fence) (*entry, error) {
	e, ok := d.runs[f.RunID]
	if !ok {
		return nil, journal.ErrNotFound
	}
	if e.rec.LeaseOwner != f.Owner || e.rec.Epoch != f.Epoch || f.Owner == "" {
		return nil, journal.ErrLeaseLost
	}
	return e, nil
}

// RenewLease implements journal.Driver.
func (d *Driver) RenewLease(_ context.Context, f journal.Fence, expires time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, err := d.fenced(f)
	if err != nil {
		return err
	}
	e.rec.LeaseExpires = expires
	return nil
}

// ReleaseRun implements journal.Driver.
func (d *Driver) ReleaseRun(_ context.Context, f journal.Fence) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, err := d.fenced(f)
	if err != nil {
		return err
	}
	e.rec.LeaseOwner = ""
	return nil
}

// UpdateRun implements journal.Driver.
func (d *Driver) UpdateRun(_ context.Context, f journal.Fence, u journal.RunUpdate, now time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, err := d.fenced(f)
	if err != nil {
		return err
	}
	r := &e.rec
	r.Status, r.Output, r.Error, r.LeaseOwner, r.UpdatedAt = u.Status, clone(u.Output), u.Error, "", now
	return nil
}

// LoadSteps implements journal.Driver.
func (d *Driver) LoadSteps(_ context.Context, runID string) ([]journal.StepRecord, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.runs[runID]; ok && len(e.steps) > 0 {
		return append([]journal.StepRecord(nil), e.steps...), nil
	}
	return nil, nil
}

// InsertStep implements journal.Driver.
func (d *Driver) InsertStep(_ context.Context, f journal.Fence, s journal.StepRecord, w journal.StepWrites) error {
	d.mu.Lock()
	e, err := d.fenced(f)
	if err == nil {
		err = d.checkStep(e, &s, &w)
	}
	if err != nil {
		d.mu.Unlock()
		return err
	}
	var wake []string
	for _, st := range w.Opens {
		if topic := d.openStream(st); topic != "" {
			wake = append(wake, topic)
		}
	}
	for _, a := range w.Appends {
		d.streams[a.StreamID].store(a)
	}
	s.Result = clone(s.Result)
	e.steps = append(e.steps, s)
	slices.SortFunc(e.steps, func(a, b journal.StepRecord) int { return cmp.Compare(a.Position, b.Position) })
	d.mu.Unlock()
	for _, a := range w.Appends {
		d.hub.Notify(a.StreamID)
	}
	for _, topic := range wake {
		d.hub.Notify(topic)
	}
	return nil
}

// checkStep validates everything a step's write stores before any of it is. d.mu is held.
func (d *Driver) checkStep(e *entry, s *journal.StepRecord, w *journal.StepWrites) error {
	for _, old := range e.steps {
		if old.Position == s.Position {
			return journal.ErrStepExists
		}
	}
	for i, st := range w.Opens {
		if _, ok := d.streams[st.ID]; ok || slices.ContainsFunc(w.Opens[:i], func(o journal.Stream) bool { return o.ID == st.ID }) {
			return journal.ErrConflict
		}
	}
	for i, a := range w.Appends {
		if slices.ContainsFunc(w.Appends[:i], func(o journal.Append) bool { return o.StreamID == a.StreamID }) {
			return fmt.Errorf("journal: step write appends to stream %s twice", a.StreamID)
		}
		st, ok := d.streams[a.StreamID]
		if !ok {
			// A stream the same write opens is empty.
			i := slices.IndexFunc(w.Opens, func(o journal.Stream) bool { return o.ID == a.StreamID })
			if i < 0 {
				return journal.ErrNotFound
			}
			st = &streamEntry{Stream: w.Opens[i]}
		}
		if st.RunID != "" && st.RunID != e.rec.ID {
			return journal.ErrLeaseLost
		}
		if err := st.check(a.Rows); err != nil {
			return err
		}
	}
	return nil
}

// InsertPark implements journal.Driver.
func (d *Driver) InsertPark(_ context.Context, f journal.Fence, p journal.ParkRecord) (journal.ParkRecord, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, err := d.fenced(f)
	if err != nil {
		return journal.ParkRecord{}, err
	}
	if old := e.park(p.Key); old != nil {
		return copyPark(old), nil
	}
	p.Payload, p.Decision = clone(p.Payload), nil
	if t := d.topics[p.Topic]; p.Topic != "" && t != nil && t.Version > p.After {
		p.Decision = &journal.Decision{Kind: journal.DecisionApprove, Payload: clone(t.Value), DecidedAt: p.CreatedAt}
	}
	e.parks = append(e.parks, &p)
	if p.Topic != "" && p.Decision == nil {
		w := d.waiting[p.Topic]
		if w == nil {
			w = map[string]struct{}{}
			d.waiting[p.Topic] = w
		}
		w[e.rec.ID] = struct{}{}
	}
	return copyPark(&p), nil
}

func copyPark(p *journal.ParkRecord) journal.ParkRecord {
	c := *p
	if p.Decision != nil {
		dc := *p.Decision
		c.Decision = &dc
	}
	return c
}

// ListParks implements journal.Driver.
func (d *Driver) ListParks(_ context.Context, runID string) ([]journal.ParkRecord, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.runs[runID]
	if !ok || len(e.parks) == 0 {
		return nil, nil
	}
	out := make([]journal.ParkRecord, len(e.parks))
	for i, p := range e.parks {
		out[i] = copyPark(p)
	}
	slices.SortFunc(out, func(a, b journal.ParkRecord) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Decide implements journal.Driver.
func (d *Driver) Decide(_ context.Context, runID, key, owner string, dec journal.Decision, now time.Time) (journal.DecideResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.runs[runID]
	if !ok {
		return journal.DecideResult{}, journal.ErrNotFound
	}
	p := e.park(key)
	if p == nil {
		return journal.DecideResult{}, journal.ErrNotFound
	}
	if p.Decision != nil {
		return journal.DecideResult{}, journal.ErrConflict
	}
	r := &e.rec
	if r.LeaseOwner != "" && r.LeaseOwner != owner && r.LeaseExpires.After(now) {
		return journal.DecideResult{}, journal.BusyError(runID, r.LeaseOwner, r.LeaseExpires, now)
	}
	dec.Payload = clone(dec.Payload)
	p.Decision = &dec
	if p.Topic != "" {
		d.unwait(p.Topic, e)
	}
	return journal.DecideResult{Runnable: e.runnable()}, nil
}

// unwait forgets that run e waits on topic, once none of its parks there is pending (a
// wait timed out or was decided). Caller holds d.mu.
func (d *Driver) unwait(topic string, e *entry) {
	for _, p := range e.parks {
		if p.Topic == topic && p.Decision == nil {
			return
		}
	}
	if w := d.waiting[topic]; w != nil {
		delete(w, e.rec.ID)
		if len(w) == 0 {
			delete(d.waiting, topic)
		}
	}
}

// runnable reports a parked run with no pending park. Caller holds d.mu.
func (e *entry) runnable() bool {
	if e.rec.Status != journal.StatusParked {
		return false
	}
	for _, p := range e.parks {
		if p.Decision == nil {
			return false
		}
	}
	return true
}

// openRuns prunes the runs that are over (final, every park decided) from d.open and
// returns it. d.mu must be held.
func (d *Driver) openRuns() map[string]*entry {
	for id, e := range d.open {
		if e.rec.Status.Final() && !slices.ContainsFunc(e.parks, func(p *journal.ParkRecord) bool { return p.Decision == nil }) {
			delete(d.open, id)
		}
	}
	return d.open
}

// ExpiredParks implements journal.Driver.
func (d *Driver) ExpiredParks(_ context.Context, now time.Time, limit int) ([]journal.ParkRecord, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []journal.ParkRecord
	for _, e := range d.openRuns() {
		for _, p := range e.parks {
			if p.Decision == nil && !p.Deadline.After(now) {
				out = append(out, copyPark(p))
			}
		}
	}
	slices.SortFunc(out, func(a, b journal.ParkRecord) int { return a.Deadline.Compare(b.Deadline) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// RecoverableRuns implements journal.Driver.
func (d *Driver) RecoverableRuns(_ context.Context, now time.Time, limit int) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for id, e := range d.openRuns() {
		r := &e.rec
		free := r.LeaseOwner == "" || !r.LeaseExpires.After(now)
		if (r.Status == journal.StatusRunning && free) || (free && e.runnable()) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// ClaimLease implements journal.Driver.
func (d *Driver) ClaimLease(_ context.Context, name, owner string, now, expires time.Time) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l, ok := d.leases[name]
	if ok && l.owner != "" && l.owner != owner && l.expires.After(now) {
		return false, nil
	}
	d.leases[name] = lease{owner: owner, expires: expires}
	return true, nil
}

// ReleaseLease implements journal.Driver.
func (d *Driver) ReleaseLease(_ context.Context, name, owner string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if l, ok := d.leases[name]; ok && l.owner == owner {
		delete(d.leases, name)
	}
	return nil
}
