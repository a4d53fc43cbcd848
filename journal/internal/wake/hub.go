// Package wake is the in-process wake-up hub the drivers share: subscribers per key get a
// coalescing signal after rows are committed.
package wake

import "sync"

// Hub fans signals out to subscribers of a key. The zero value is not usable; use New.
type Hub struct {
	mu    sync.Mutex
	subs  map[string]*sub // the newest subscription of each key, linked to the others
	count int
	// OnChange, when set, is called (outside the hub's lock) after the first subscriber
	// arrives and after the last leaves; it reads [Hub.Active] to reconcile, so calls
	// racing each other still converge (Postgres starts and stops its listener with it).
	OnChange func()
}

// sub is one subscription: a channel, or a function run on a new goroutine per signal.
// The subscriptions of a key form a list, so a key with one subscriber, an idle stream's
// stop watch, costs the hub one small object.
type sub struct {
	ch         chan struct{}
	fn         func()
	h          *Hub
	key        string
	prev, next *sub // under h.mu
	gone       bool // under h.mu: removed
}

// New returns an empty hub.
func New() *Hub { return &Hub{subs: map[string]*sub{}} }

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
	s.h, s.key = h, key
	h.mu.Lock()
	if head := h.subs[key]; head != nil {
		s.next, head.prev = head, s
	}
	h.subs[key] = s
	h.count++
	first := h.count == 1
	cb := h.OnChange
	h.mu.Unlock()
	if first && cb != nil {
		cb()
	}
	return s.remove
}

// remove ends the subscription; calling it again does nothing.
func (s *sub) remove() {
	h := s.h
	h.mu.Lock()
	if s.gone {
		h.mu.Unlock()
		return
	}
	s.gone = true
	switch {
	case s.prev != nil:
		s.prev.next = s.next
	case s.next != nil:
		h.subs[s.key] = s.next
	default:
		delete(h.subs, s.key)
	}
	if s.next != nil {
		s.next.prev = s.prev
	}
	s.prev, s.next = nil, nil
	h.count--
	last := h.count == 0
	cb := h.OnChange
	h.mu.Unlock()
	if last && cb != nil {
		cb()
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
	for s := h.subs[key]; s != nil; s = s.next {
		s.signal()
	}
}

// NotifyAll wakes every subscriber (after a reconnect, or from a backstop poll).
func (h *Hub) NotifyAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, head := range h.subs {
		for s := head; s != nil; s = s.next {
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
