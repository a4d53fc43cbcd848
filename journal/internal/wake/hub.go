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

// sub is one subscription: a channel, or a function run on a new goroutine per signal.
type sub struct {
	ch chan struct{}
	fn func()
}

// New returns an empty hub.
func New() *Hub { return &Hub{subs: map[string]map[*sub]struct{}{}} }

// Subscribe registers for key; the channel holds at most one pending signal.
func (h *Hub) Subscribe(key string) (<-chan struct{}, func()) {
	s := &sub{ch: make(chan struct{}, 1)}
	return s.ch, h.add(key, s)
}

// SubscribeFunc registers fn for key: each signal runs fn on a new goroutine, so a
// subscriber that waits rarely holds no goroutine of its own. The function returned
// ends the subscription (a signal already delivered may still run fn).
func (h *Hub) SubscribeFunc(key string, fn func()) func() {
	return h.add(key, &sub{fn: fn})
}

// add registers s for key and returns the function that removes it.
func (h *Hub) add(key string, s *sub) func() {
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
	return func() {
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
		s.signal()
	}
}

// NotifyAll wakes every subscriber (after a reconnect, or from a backstop poll).
func (h *Hub) NotifyAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.subs {
		for s := range m {
			s.signal()
		}
	}
}

func (s *sub) signal() {
	if s.fn != nil {
		go s.fn()
		return
	}
	select {
	case s.ch <- struct{}{}:
	default:
	}
}
