package websearch

import (
	"context"
	"net/url"
	"strconv"
)

// searxng searches a SearXNG instance through its search API
// (GET /search?q=…&format=json). The JSON format must be enabled in the
// instance's settings; an instance that has it off answers 403.
type searxng struct{ *client }

func (s *searxng) Name() string { return SearXNG }

// searxngAnswer is the part of SearXNG's JSON answer rein reads.
type searxngAnswer struct {
	Results []struct {
		URL           string `json:"url"`
		Title         string `json:"title"`
		Content       string `json:"content"`
		PublishedDate string `json:"publishedDate"`
	} `json:"results"`
}

// searxngRange maps recency to SearXNG's time_range, whose documented
// values are day, month and year: a week is asked as a month.
var searxngRange = map[Recency]string{PastDay: "day", PastWeek: "month", PastMonth: "month", PastYear: "year"}

func (s *searxng) Search(ctx context.Context, q Query) ([]Result, error) {
	params := url.Values{"q": {siteQuery(q)}, "format": {"json"}, "pageno": {strconv.Itoa(1)}}
	if tr := searxngRange[q.Recency]; tr != "" {
		params.Set("time_range", tr)
	}
	var a searxngAnswer
	if err := s.get(ctx, params, nil, &a); err != nil {
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
