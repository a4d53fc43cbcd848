package journal

import (
	"context"
	"errors"
	"time"
)

// CleanupResult reports what one retention pass did.
type CleanupResult struct {
	// Leader is false when another instance holds the scheduler lease (nothing was done).
	Leader bool
	// Deleted counts streams finished before the retention window, removed with their rows.
	Deleted int
	// Closed counts unfinished streams past the age limit, closed with the expiry event
	// of the journal's log policy.
	Closed int
	// Messages counts channel messages older than ChannelRetention, deleted.
	Messages int
}

// CleanupOnce runs retention when this instance holds (or takes) the scheduler lease:
// streams finished more than FinishedRetention ago are deleted with their rows; streams
// unfinished and older than UnfinishedMaxAge get one row, the expiry event of the
// journal's log policy ([LogPolicy.Expired]), are marked finished and lose their earlier
// rows (the expiry row stays until the finished rule removes it); channel messages
// older than ChannelRetention are deleted.
func (j *Journal) CleanupOnce(ctx context.Context) (CleanupResult, error) {
	var res CleanupResult
	if err := j.checkOpen(); err != nil {
		return res, err
	}
	now := j.now()
	ttl := j.opts.CleanupInterval * 2
	if ttl < j.opts.LeaseTTL {
		ttl = j.opts.LeaseTTL
	}
	ok, err := j.d.ClaimLease(ctx, schedulerLease, j.opts.Owner, now, now.Add(ttl))
	if err != nil || !ok {
		return res, err
	}
	res.Leader = true
	policy := j.logPolicy()
	for {
		stale, err := j.d.StaleStreams(ctx, now.Add(-j.opts.UnfinishedMaxAge), recoverBatch)
		if err != nil {
			return res, err
		}
		for _, s := range stale {
			ev := policy.expired(j.opts.UnfinishedMaxAge)
			j.tails.drop(s.ID)
			if err := j.d.CloseStream(ctx, s.ID, ev, now); err != nil && !errors.Is(err, ErrNotFound) {
				return res, err
			}
			res.Closed++
		}
		if len(stale) < recoverBatch {
			break
		}
	}
	for {
		n, err := j.d.DeleteFinishedStreams(ctx, now.Add(-j.opts.FinishedRetention), recoverBatch)
		res.Deleted += n
		if err != nil {
			return res, err
		}
		if n < recoverBatch {
			break
		}
	}
	for {
		n, err := j.d.DeleteMessages(ctx, now.Add(-j.opts.ChannelRetention), recoverBatch)
		res.Messages += n
		if err != nil {
			return res, err
		}
		if n < recoverBatch {
			break
		}
	}
	return res, nil
}

// Retention is how long a journal keeps what is done with ([Options]).
type Retention struct {
	// FinishedStreams is [Options.FinishedRetention]; UnfinishedStreams is
	// [Options.UnfinishedMaxAge]; ChannelMessages is [Options.ChannelRetention].
	FinishedStreams, UnfinishedStreams, ChannelMessages time.Duration
}

// Retention returns the journal's retention, defaults applied: for operators (the
// console's health page).
func (j *Journal) Retention() Retention {
	return Retention{FinishedStreams: j.opts.FinishedRetention, UnfinishedStreams: j.opts.UnfinishedMaxAge,
		ChannelMessages: j.opts.ChannelRetention}
}
