package llm

// Price is a model's price per million tokens, in US dollars. It belongs
// with the model (a provider's table or the config file gives it); the
// engine turns a round's Usage into cost with it for the cost budget.
type Price struct {
	InputPerM  float64 `json:"input_per_m" toml:"input_per_m"`
	OutputPerM float64 `json:"output_per_m" toml:"output_per_m"`
	// CachedPerM is the price of input read from the provider's cache;
	// zero means the input price.
	CachedPerM float64 `json:"cached_per_m,omitempty" toml:"cached_per_m"`
}

// Cost returns the price of u. Cached input is counted at CachedPerM, never
// more of it than the input itself.
func (p Price) Cost(u Usage) float64 {
	cached := u.CachedInputTokens
	if cached > u.InputTokens {
		cached = u.InputTokens
	}
	cachedPrice := p.CachedPerM
	if cachedPrice == 0 {
		cachedPrice = p.InputPerM
	}
	return (float64(u.InputTokens-cached)*p.InputPerM + float64(cached)*cachedPrice + float64(u.OutputTokens)*p.OutputPerM) / 1e6
}
