package main

import (
	"context"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/providers/openai"
)

// The structured-output part: weather.extract asks model default for a typed value.
var WeatherUnit = engine.NewUnit("weather")

// ExtractIn is the text weather.extract reads.
type ExtractIn struct {
	Text string `json:"text"`
}

// Extracted is the value the model is asked for.
type Extracted struct {
	City  string  `json:"city"`
	TempC float64 `json:"tempC"`
}

// Extract asks the model for the city and temperature a text speaks of, as a typed value.
var Extract = engine.Define[ExtractIn, Extracted](WeatherUnit, "extract",
	engine.Describe("Extract the city and its temperature in degrees Celsius from a text, with the model."),
	engine.Errors(ai.InvalidModelOutput))

func init() {
	register("extract", func(_ context.Context, e *env) (engine.Option, error) {
		prov, err := openai.New(openai.Options{BaseURL: e.ModelBaseURL, APIKey: e.ModelAPIKey})
		if err != nil {
			return nil, err
		}
		model := ai.Model("default", prov, e.ModelName, ai.WithPricing(1.0, 2.0))
		return engine.Bind(Extract, func(fx *engine.Fx, in ExtractIn) (Extracted, error) {
			return ai.AskAs[Extracted](fx, model, "Which city, and what temperature in degrees Celsius, does this text speak of?\n\n"+in.Text,
				ai.AskOptions{Name: "weather"})
		}), nil
	})
}
