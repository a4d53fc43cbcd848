package journal

import (
	"context"
	"errors"
	"net/url"
	"time"
)

// ThreadTopic is the wake-up key of a conversation thread: [Journal.AddThreadRun] wakes
// its subscribers.
func ThreadTopic(threadID string) string { return "thread/" + url.PathEscape(threadID) }

// AddThreadRun records the stream streamID as the next run of thread threadID and returns
// its position in the thread (from 1). See [Driver.AddThreadRun].
func (j *Journal) AddThreadRun(ctx context.Context, threadID, streamID string) (int64, error) {
	if threadID == "" || streamID == "" {
		return 0, errors.New("journal: AddThreadRun needs a thread and a stream")
	}
	if unstorable(threadID) || unstorable(streamID) {
		return 0, ErrUnstorableID
	}
	if err := j.checkOpen(); err != nil {
		return 0, err
	}
	return j.d.AddThreadRun(ctx, threadID, streamID, j.now())
}

// ThreadRuns returns up to limit runs of the thread after position after, in order.
func (j *Journal) ThreadRuns(ctx context.Context, threadID string, after int64, limit int) ([]ThreadRun, error) {
	if limit <= 0 {
		limit = 100
	}
	if unstorable(threadID) {
		return nil, nil // no thread can have that id: none of its runs
	}
	return j.d.ThreadRuns(ctx, threadID, after, limit)
}

// AddThreadRun implements Driver.
func (o offloaded) AddThreadRun(ctx context.Context, threadID, streamID string, now time.Time) (int64, error) {
	return off(func() (int64, error) { return o.d.AddThreadRun(ctx, threadID, streamID, now) })
}

// ThreadRuns implements Driver.
func (o offloaded) ThreadRuns(ctx context.Context, threadID string, after int64, limit int) ([]ThreadRun, error) {
	return off(func() ([]ThreadRun, error) { return o.d.ThreadRuns(ctx, threadID, after, limit) })
}
