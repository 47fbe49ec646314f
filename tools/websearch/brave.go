package websearch

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// brave searches with the Brave Search API (GET /res/v1/web/search, the
// key in X-Subscription-Token).
type brave struct{ *client }

func (b *brave) Name() string { return Brave }

// braveAnswer is the part of Brave's web search answer rein reads.
type braveAnswer struct {
	Web struct {
		Results []struct {
			Title       string `json:"title"`
			URL         string `json:"url"`
			Description string `json:"description"`
			Age         string `json:"age"`
		} `json:"results"`
	} `json:"web"`
}

// braveFreshness maps recency to Brave's freshness values.
var braveFreshness = map[Recency]string{PastDay: "pd", PastWeek: "pw", PastMonth: "pm", PastYear: "py"}

func (b *brave) Search(ctx context.Context, q Query) ([]Result, error) {
	params := url.Values{"q": {siteQuery(q)}, "count": {strconv.Itoa(q.MaxResults)}}
	if f := braveFreshness[q.Recency]; f != "" {
		params.Set("freshness", f)
	}
	var a braveAnswer
	if err := b.get(ctx, params, http.Header{"X-Subscription-Token": {b.key}}, &a); err != nil {
		return nil, err
	}
	var out []Result
	for _, r := range a.Web.Results {
		if res, ok := result(r.Title, r.URL, r.Description, r.Age); ok {
			out = append(out, res)
		}
		if len(out) == q.MaxResults {
			break
		}
	}
	return out, nil
}
