package memory

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// The operator queries scan the maps: the memory driver holds what fits in a process, and
// serves tests and examples, not a journal of millions of runs.

// newer orders newest first: CreatedAt, then ID, then Key, all descending.
func newer(a, b journal.Cursor) int {
	if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
		return c
	}
	if c := strings.Compare(b.ID, a.ID); c != 0 {
		return c
	}
	return strings.Compare(b.Key, a.Key)
}

// page sorts out newest first and keeps up to limit records after the cursor.
func page[T any](out []T, pos func(T) journal.Cursor, after journal.Cursor, limit int) []T {
	if limit <= 0 {
		return nil
	}
	slices.SortFunc(out, func(a, b T) int { return newer(pos(a), pos(b)) })
	if !after.IsZero() {
		i, _ := slices.BinarySearchFunc(out, after, func(x T, c journal.Cursor) int {
			if newer(pos(x), c) <= 0 {
				return -1
			}
			return 1
		})
		out = out[i:]
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// ListRuns implements journal.Driver.
func (d *Driver) ListRuns(_ context.Context, q journal.RunQuery) ([]journal.RunRecord, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []journal.RunRecord
	for _, e := range d.runs {
		r := e.rec
		if (q.Status == "" || r.Status == q.Status) && (q.Flow == "" || r.Flow == q.Flow) && (q.Tenant == "" || r.Tenant == q.Tenant) {
			out = append(out, r)
		}
	}
	return page(out, func(r journal.RunRecord) journal.Cursor { return journal.Cursor{CreatedAt: r.CreatedAt, ID: r.ID} }, q.After, q.Limit), nil
}

// PendingParks implements journal.Driver.
func (d *Driver) PendingParks(_ context.Context, q journal.ParkQuery) ([]journal.ParkRecord, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []journal.ParkRecord
	for _, e := range d.runs {
		if q.Tenant != "" && e.rec.Tenant != q.Tenant {
			continue
		}
		for _, p := range e.parks {
			if p.Decision == nil && p.Topic == "" {
				out = append(out, copyPark(p))
			}
		}
	}
	return page(out, func(p journal.ParkRecord) journal.Cursor {
		return journal.Cursor{CreatedAt: p.CreatedAt, ID: p.RunID, Key: p.Key}
	}, q.After, q.Limit), nil
}

// RunStreams implements journal.Driver.
func (d *Driver) RunStreams(_ context.Context, runID string) ([]journal.Stream, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []journal.Stream
	for _, s := range d.streams {
		if s.RunID == runID && runID != "" {
			out = append(out, s.Stream)
		}
	}
	slices.SortFunc(out, func(a, b journal.Stream) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// HeldLeases implements journal.Driver.
func (d *Driver) HeldLeases(_ context.Context, now time.Time) ([]journal.LeaseRecord, []journal.OwnerRecord, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var leases []journal.LeaseRecord
	for name, l := range d.leases {
		if l.owner != "" && l.expires.After(now) {
			leases = append(leases, journal.LeaseRecord{Name: name, Owner: l.owner, Expires: l.expires})
		}
	}
	slices.SortFunc(leases, func(a, b journal.LeaseRecord) int { return strings.Compare(a.Name, b.Name) })
	held := map[string]*journal.OwnerRecord{}
	for _, e := range d.runs {
		r := e.rec
		if r.LeaseOwner == "" || !r.LeaseExpires.After(now) {
			continue
		}
		o := held[r.LeaseOwner]
		if o == nil {
			o = &journal.OwnerRecord{Owner: r.LeaseOwner}
			held[r.LeaseOwner] = o
		}
		o.Runs++
		if r.LeaseExpires.After(o.Expires) {
			o.Expires = r.LeaseExpires
		}
	}
	owners := make([]journal.OwnerRecord, 0, len(held))
	for _, o := range held {
		owners = append(owners, *o)
	}
	slices.SortFunc(owners, func(a, b journal.OwnerRecord) int { return strings.Compare(a.Owner, b.Owner) })
	return leases, owners, nil
}
