// Package contract declares what a shared contract of an agent app declares: a plain
// flow, a durable agent flow streaming AG-UI events, a streaming flow of the AI SDK UI
// message stream, and a store resource. A client imports it with clientx; the clientsize
// test holds that this links none of the server.
package contract

import (
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/uimessage"
	"github.com/bbc28f59/engine/store/resource"
)

// Chat is the agent's unit.
var Chat = engine.NewUnit("chat")

// Note is a record of the notes resource. Its bun tags need no import; without
// bun.BaseModel bun names its table notes.
type Note struct {
	ID        string    `bun:"id,pk" json:"id" store:"id"`
	Tenant    string    `bun:"tenant,notnull" json:"-" store:"tenant"`
	Title     string    `bun:"title,notnull" json:"title" store:"filter"`
	CreatedAt time.Time `bun:"created_at,notnull" json:"createdAt" store:"created"`
}

var (
	// Ask is the agent's durable streaming flow.
	Ask = engine.DefineStream[agui.Input, agui.Event, agui.RunOutput](Chat, "ask", engine.POST("/chat"), engine.Durable())
	// AskUI streams the same agent as the AI SDK's UI message stream.
	AskUI = engine.DefineStream[uimessage.Request, uimessage.Chunk, agui.RunOutput](Chat, "ui", engine.POST("/chat/ui"), engine.Durable())
	// Notes is a store resource at /notes.
	Notes = resource.Define[Note](engine.NewUnit("notes"), "/notes")
)
