// Package wake is the in-process wake-up hub the drivers share: subscribers per key get a
// coalescing signal after rows are committed.
package wake

import "sync"

// Hub fans signals out to subscribers of a key. The zero value is not usable; use New.
type Hub struct {
	mu    sync.Mutex
	subs  map[string]map[*sub]struct{}
	count int
	// OnChange, when set, is called (outside the hub's lock) after the first subscriber
	// arrives and after the last leaves; it reads [Hub.Active] to reconcile, so calls
	// racing each other still converge (Postgres starts and stops its listener with it).
	OnChange func()
}

type sub struct{ ch chan struct{} }

// New returns an empty hub.
func New() *Hub { return &Hub{subs: map[string]map[*sub]struct{}{}} }

// Subscribe registers for key; the channel holds at most one pending signal.
func (h *Hub) Subscribe(key string) (<-chan struct{}, func()) {
	s := &sub{ch: make(chan struct{}, 1)}
	h.mu.Lock()
	m := h.subs[key]
	if m == nil {
		m = map[*sub]struct{}{}
		h.subs[key] = m
	}
	m[s] = struct{}{}
	h.count++
	first := h.count == 1
	cb := h.OnChange
	h.mu.Unlock()
	if first && cb != nil {
		cb()
	}
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.subs[key], s)
			if len(h.subs[key]) == 0 {
				delete(h.subs, key)
			}
			h.count--
			last := h.count == 0
			cb := h.OnChange
			h.mu.Unlock()
			if last && cb != nil {
				cb()
			}
		})
	}
}

// Active reports whether anyone is subscribed.
func (h *Hub) Active() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count > 0
}

// Notify wakes every subscriber of key.
func (h *Hub) Notify(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[key] {
		signal(s.ch)
	}
}

// NotifyAll wakes every subscriber (after a reconnect, or from a backstop poll).
func (h *Hub) NotifyAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.subs {
		for s := range m {
			signal(s.ch)
		}
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
