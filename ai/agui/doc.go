// Package agui is the AG-UI event vocabulary the engine streams for agent runs, as Go types.
//
// Each event type of the service contract is one struct ([RunStarted], [TextMessageContent],
// [RunFinished], …) that implements the sealed [Event] interface. Encoding with
// encoding/json gives the exact wire form: camelCase names, "type" first, optional fields
// left out when empty, so every event passes the AG-UI schema with no unknown top-level
// field. [Decode] turns any event JSON back into its typed form; a type this package does
// not model comes back as [Unknown] holding the raw JSON, so a newer producer never breaks
// an older reader.
//
// Decoded events are values (agui.RunStarted, not *agui.RunStarted); switch on them by
// value:
//
//	switch ev := ev.(type) {
//	case agui.TextMessageContent:
//		fmt.Print(ev.Delta)
//	case agui.RunFinished:
//		…
//	}
package agui
