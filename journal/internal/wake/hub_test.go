package wake

import (
	"fmt"
	"testing"
)

// TestHubRemoveInAnyOrder subscribes three channels to a key and one to another, removes
// them in every order (each removal twice), and checks after each step that a notify
// reaches exactly the subscriptions left and that OnChange saw the hub turn busy and idle.
func TestHubRemoveInAnyOrder(t *testing.T) {
	orders := [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	for _, order := range orders {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			h := New()
			var changes []bool
			h.OnChange = func() { changes = append(changes, h.Active()) }
			var chs []<-chan struct{}
			var stops []func()
			for range 3 {
				ch, stop := h.Subscribe("k")
				chs, stops = append(chs, ch), append(stops, stop)
			}
			other, stopOther := h.Subscribe("other")
			left := map[int]bool{0: true, 1: true, 2: true}
			check := func() {
				t.Helper()
				h.Notify("k")
				for i, ch := range chs {
					select {
					case <-ch:
						if !left[i] {
							t.Fatalf("removed subscription %d was signalled", i)
						}
					default:
						if left[i] {
							t.Fatalf("subscription %d was not signalled", i)
						}
					}
				}
				select {
				case <-other:
					t.Fatal("a notify of k signalled a subscriber of another key")
				default:
				}
			}
			check()
			for _, i := range order {
				stops[i]()
				stops[i]()
				delete(left, i)
				check()
			}
			if !h.Active() {
				t.Fatal("hub idle while a subscription of another key remains")
			}
			h.NotifyAll()
			select {
			case <-other:
			default:
				t.Fatal("NotifyAll missed the remaining subscription")
			}
			stopOther()
			if h.Active() || len(h.subs) != 0 {
				t.Fatalf("hub still holds %d keys after every subscription ended", len(h.subs))
			}
			if fmt.Sprint(changes) != "[true false]" {
				t.Fatalf("OnChange saw %v, want [true false]", changes)
			}
		})
	}
}
