// Package contract declares the quickstart's flows: types, triggers and error codes, and
// no handler code. The server binds handlers to these declarations; a client imports only
// this package and clientx, so it links none of the server.
package contract

import (
	"net/http"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai/agui"
)

// Greeter is a unit of plain flows.
var Greeter = engine.NewUnit("greeter")

// HelloIn is the input of greeter.hello.
type HelloIn struct {
	Name string `json:"name"`
}

// HelloOut is its output.
type HelloOut struct {
	Message string `json:"message"`
}

// DivideIn is the input of greeter.divide.
type DivideIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

// DivideOut is its output.
type DivideOut struct {
	Quotient float64 `json:"quotient"`
}

// DivideByZeroData is the payload of the DivideByZero error.
type DivideByZeroData struct {
	Dividend float64 `json:"dividend"`
}

// DivideByZero is greeter.divide's declared error code.
var DivideByZero = engine.NewCode[DivideByZeroData]("DivideByZero", http.StatusBadRequest)

var (
	// Hello is served over REST at GET /hello/:name (and over RPC, like every flow).
	Hello = engine.Define[HelloIn, HelloOut](Greeter, "hello", engine.GET("/hello/:name"), engine.Public())
	// Divide has no trigger: RPC only, POST /_engine/greeter/divide.
	Divide = engine.Define[DivideIn, DivideOut](Greeter, "divide", engine.Public(), engine.Errors(DivideByZero))
)

// Tools is the unit of the agent's tools.
var Tools = engine.NewUnit("tools")

// WeatherIn is the weather tool's input.
type WeatherIn struct {
	City string `json:"city"`
}

// WeatherOut is the weather tool's output.
type WeatherOut struct {
	City  string `json:"city"`
	TempC int    `json:"tempC"`
}

// TransferIn is the transfer tool's input.
type TransferIn struct {
	To     string  `json:"to"`
	Amount float64 `json:"amount"`
}

// TransferOut is the transfer tool's output.
type TransferOut struct {
	OK     bool    `json:"ok"`
	To     string  `json:"to"`
	Amount float64 `json:"amount"`
}

var (
	// Weather is a tool the agent may call.
	Weather = engine.Define[WeatherIn, WeatherOut](Tools, "weather", engine.Public(), engine.Describe("Current temperature of a city in °C."))
	// Transfer needs a human's approval above 100.
	Transfer = engine.Define[TransferIn, TransferOut](Tools, "transfer", engine.Public(), engine.Describe("Send money to someone."))
)

// Chat is the unit of the agent's streaming flow.
var Chat = engine.NewUnit("chat")

// ChatIn is the chat flow's input.
type ChatIn struct {
	Message string `json:"message"`
}

// Ask streams the agent's run as AG-UI events and returns its outcome. It is durable, so
// the run can park for an approval and resume later, on any instance. Its types come
// from ai/agui, the protocol's vocabulary, so this package still links no server code.
var Ask = engine.DefineStream[ChatIn, agui.Event, agui.RunOutput](Chat, "ask", engine.POST("/chat"), engine.Public(), engine.Durable())
