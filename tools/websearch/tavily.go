package websearch

import (
	"context"
	"net/http"
)

// tavily searches with Tavily's search API (POST /search, the key as a
// bearer token).
type tavily struct{ *client }

func (t *tavily) Name() string { return Tavily }

// tavilyRequest is the body of a Tavily search.
type tavilyRequest struct {
	Query          string   `json:"query"`
	MaxResults     int      `json:"max_results"`
	SearchDepth    string   `json:"search_depth"`
	TimeRange      string   `json:"time_range,omitempty"`
	IncludeDomains []string `json:"include_domains,omitempty"`
}

// tavilyAnswer is the part of Tavily's answer rein reads.
type tavilyAnswer struct {
	Results []struct {
		Title         string `json:"title"`
		URL           string `json:"url"`
		Content       string `json:"content"`
		PublishedDate string `json:"published_date"`
	} `json:"results"`
}

func (t *tavily) Search(ctx context.Context, q Query) ([]Result, error) {
	body := tavilyRequest{Query: q.Text, MaxResults: q.MaxResults, SearchDepth: "basic", TimeRange: string(q.Recency)}
	if q.Site != "" {
		body.IncludeDomains = []string{q.Site}
	}
	var a tavilyAnswer
	if err := t.post(ctx, body, http.Header{"Authorization": {"Bearer " + t.key}}, &a); err != nil {
		return nil, err
	}
	var out []Result
	for _, r := range a.Results {
		if res, ok := result(r.Title, r.URL, r.Content, r.PublishedDate); ok {
			out = append(out, res)
		}
		if len(out) == q.MaxResults {
			break
		}
	}
	return out, nil
}
