package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/record"
	"github.com/reinhq/rein/session"
)

// settingsColumn is the stored spelling of a thread's settings: it never
// changes with record.Settings.
type settingsColumn struct {
	Workspace    string   `json:"workspace,omitempty"`
	Model        string   `json:"model,omitempty"`
	Instructions string   `json:"instructions,omitempty"`
	EnableTools  []string `json:"enable_tools,omitempty"`
	DisableTools []string `json:"disable_tools,omitempty"`
	Approval     string   `json:"approval,omitempty"`
	Sandbox      string   `json:"sandbox,omitempty"`
	MaxRounds    int      `json:"max_rounds,omitempty"`
	Approved     []string `json:"approved,omitempty"`
	KBs          []string `json:"kbs,omitempty"`
	ForceTools   []string `json:"force_tools,omitempty"`
	// Output is the thread's output schema (record.Settings.Output), as a
	// string: jsonb would reorder the schema's keys, and the order of its
	// properties is the order the model is asked to answer in.
	Output string `json:"output,omitempty"`
}

func settingsJSON(st record.Settings) ([]byte, error) {
	b, err := json.Marshal(settingsColumn{
		Workspace: st.Workspace, Model: st.Model, Instructions: st.Instructions, EnableTools: st.EnableTools,
		DisableTools: st.DisableTools, Approval: st.Approval, Sandbox: st.Sandbox, MaxRounds: st.MaxRounds, Approved: st.Approved,
		Output: string(st.Output), KBs: st.KBs, ForceTools: st.ForceTools,
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: settings: %w", err)
	}
	return b, nil
}

func readSettings(b []byte) (record.Settings, error) {
	var c settingsColumn
	if err := json.Unmarshal(b, &c); err != nil {
		return record.Settings{}, err
	}
	return record.Settings{
		Workspace: c.Workspace, Model: c.Model, Instructions: c.Instructions, EnableTools: c.EnableTools,
		DisableTools: c.DisableTools, Approval: c.Approval, Sandbox: c.Sandbox, MaxRounds: c.MaxRounds, Approved: c.Approved,
		Output: outputOf(c.Output), KBs: c.KBs, ForceTools: c.ForceTools,
	}, nil
}

// outputOf is a stored output schema as record.Settings keeps it; nil for
// none.
func outputOf(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// titleMax bounds a title in runes.
const titleMax = 80

// shortTitle makes a one-line title of at most titleMax runes.
func shortTitle(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= titleMax {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:titleMax-1])) + "…"
}

// SaveThread implements session.Store: it creates the thread or updates its
// title and settings; Created is kept from the first save.
func (s *Store) SaveThread(ctx context.Context, th session.Thread) error {
	if th.ID == "" {
		return errors.New("pgstore: SaveThread: the thread has no id")
	}
	settings, err := settingsJSON(th.Settings)
	if err != nil {
		return err
	}
	now := time.Now().UnixNano()
	created := now
	if !th.Created.IsZero() {
		created = th.Created.UnixNano()
	}
	_, err = s.pool.Exec(ctx, `
INSERT INTO threads (id, created, updated, title, settings, parent_thread, parent_turn, parent_call, owner) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (id) DO UPDATE SET updated = excluded.updated, settings = excluded.settings,
	title = CASE WHEN excluded.title = '' THEN threads.title ELSE excluded.title END`,
		th.ID, created, now, shortTitle(th.Title), settings, th.Parent.ThreadID, th.Parent.TurnID, th.Parent.CallID, th.Owner)
	if err != nil {
		return fmt.Errorf("pgstore: save thread %s: %w", th.ID, err)
	}
	return nil
}

const threadColumns = `id, created, updated, title, settings, nturns, parent_thread, parent_turn, parent_call, owner`

func scanThread(row pgx.Row) (session.Thread, error) {
	var th session.Thread
	var created, updated int64
	var settings []byte
	if err := row.Scan(&th.ID, &created, &updated, &th.Title, &settings, &th.Turns, &th.Parent.ThreadID, &th.Parent.TurnID, &th.Parent.CallID, &th.Owner); err != nil {
		return session.Thread{}, err
	}
	th.Created, th.Updated = time.Unix(0, created), time.Unix(0, updated)
	st, err := readSettings(settings)
	if err != nil {
		return session.Thread{}, fmt.Errorf("pgstore: thread %s settings: %w", th.ID, err)
	}
	th.Settings = st
	return th, nil
}

// ListThreads implements session.Store: the threads users started, most
// recently updated first, a page of limit (all when limit <= 0) after
// cursor.
func (s *Store) ListThreads(ctx context.Context, limit int, cursor string) ([]session.Thread, string, error) {
	return s.FindThreads(ctx, record.ThreadQuery{Limit: limit, Cursor: cursor})
}

// ListAllThreads implements session.ThreadTree: ListThreads with
// sub-agents' threads too.
func (s *Store) ListAllThreads(ctx context.Context, limit int, cursor string) ([]session.Thread, string, error) {
	return s.FindThreads(ctx, record.ThreadQuery{Limit: limit, Cursor: cursor, Children: true})
}

// ListChildren implements session.ThreadTree.
func (s *Store) ListChildren(ctx context.Context, id string) ([]session.Thread, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+threadColumns+` FROM threads WHERE parent_thread = $1 ORDER BY created, id`, id)
	if err != nil {
		return nil, fmt.Errorf("pgstore: children of %s: %w", id, err)
	}
	defer rows.Close()
	var out []session.Thread
	for rows.Next() {
		th, err := scanThread(rows)
		if err != nil {
			return nil, fmt.Errorf("pgstore: children of %s: %w", id, err)
		}
		out = append(out, th)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: children of %s: %w", id, err)
	}
	return out, nil
}

// FindThreads implements session.ThreadFinder: the threads q selects, most
// recently updated first; the search is ILIKE's (case-insensitive).
func (s *Store) FindThreads(ctx context.Context, tq record.ThreadQuery) ([]session.Thread, string, error) {
	if len(tq.Search) > record.MaxThreadSearch {
		return nil, "", fmt.Errorf("pgstore: a thread search of %d bytes is too long; give at most %d", len(tq.Search), record.MaxThreadSearch)
	}
	var where []string
	var args []any
	if !tq.Children {
		where = append(where, `parent_thread = ''`)
	}
	if tq.Cursor != "" {
		u, id, ok := strings.Cut(tq.Cursor, "/")
		n, err := strconv.ParseInt(u, 10, 64)
		if !ok || err != nil {
			return nil, "", fmt.Errorf("pgstore: bad cursor %q: pass the next cursor of the previous page", tq.Cursor)
		}
		where = append(where, fmt.Sprintf(`(updated, id) < ($%d, $%d)`, len(args)+1, len(args)+2))
		args = append(args, n, id)
	}
	if tq.Owned {
		where = append(where, fmt.Sprintf(`owner = $%d`, len(args)+1))
		args = append(args, tq.Owner)
	}
	if tq.Search != "" {
		where = append(where, fmt.Sprintf(`title ILIKE $%d ESCAPE '\'`, len(args)+1))
		args = append(args, record.LikePattern(tq.Search))
	}
	q := `SELECT ` + threadColumns + ` FROM threads`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY updated DESC, id DESC`
	limit := tq.Limit
	if limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, limit+1)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("pgstore: threads: %w", err)
	}
	defer rows.Close()
	var out []session.Thread
	for rows.Next() {
		th, err := scanThread(rows)
		if err != nil {
			return nil, "", fmt.Errorf("pgstore: threads: %w", err)
		}
		out = append(out, th)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("pgstore: threads: %w", err)
	}
	next := ""
	if limit > 0 && len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		next = strconv.FormatInt(last.Updated.UnixNano(), 10) + "/" + last.ID
	}
	return out, next, nil
}

// LoadThread implements session.Store. A running turn whose lease expired
// (its node is gone) is closed first, in the database, as a cut turn.
func (s *Store) LoadThread(ctx context.Context, id string) (*session.Snapshot, error) {
	snap, expired, err := s.read(ctx, id)
	if err != nil || !expired {
		return snap, err
	}
	if err := s.normalize(ctx, id); err != nil {
		return nil, err
	}
	snap, _, err = s.read(ctx, id)
	return snap, err
}

// read reads a thread in one snapshot of the database and reports whether
// a running turn of it holds an expired lease.
func (s *Store) read(ctx context.Context, id string) (*session.Snapshot, bool, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, false, fmt.Errorf("pgstore: load %s: %w", id, err)
	}
	defer tx.Rollback(ctx)
	th, err := scanThread(tx.QueryRow(ctx, `SELECT `+threadColumns+` FROM threads WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, notFound(id)
	}
	if err != nil {
		return nil, false, fmt.Errorf("pgstore: load %s: %w", id, err)
	}
	snap := &session.Snapshot{Thread: th}
	if snap.Items, err = queryItems(ctx, tx, `WHERE thread = $1`, id); err != nil {
		return nil, false, err
	}
	var expired bool
	if snap.Turns, expired, err = queryTurns(ctx, tx, id); err != nil {
		return nil, false, err
	}
	inHistory := make(map[string]bool, len(snap.Items))
	for _, it := range snap.Items {
		inHistory[it.ID] = true
	}
	rows, err := tx.Query(ctx, `
SELECT s.turn, s.item FROM steers s JOIN turns t ON t.id = s.turn
WHERE s.thread = $1 AND s.delivered IS NULL AND t.status != 'running' ORDER BY s.n`, id)
	if err != nil {
		return nil, false, fmt.Errorf("pgstore: steers of %s: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var turn string
		var b []byte
		if err := rows.Scan(&turn, &b); err != nil {
			return nil, false, fmt.Errorf("pgstore: steers of %s: %w", id, err)
		}
		var it llm.Item
		if err := json.Unmarshal(b, &it); err != nil {
			return nil, false, fmt.Errorf("pgstore: steer of turn %s: %w", turn, err)
		}
		if inHistory[it.ID] {
			continue
		}
		if snap.Steers == nil {
			snap.Steers = make(map[string][]llm.Item)
		}
		snap.Steers[turn] = append(snap.Steers[turn], it)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("pgstore: steers of %s: %w", id, err)
	}
	return snap, expired, nil
}

const turnColumns = `id, seq, status, stop_reason, answer, error, usage, cost, rounds, settlement_rounds, tool_steps, input, started, ended,
	CASE WHEN status = 'paused' THEN pause END, CASE WHEN status = 'paused' THEN state END, status = 'running' AND lease_until < now(), output, output_spec`

// queryTurns reads a thread's turns in order, a paused turn with its pause
// and state, and reports whether a running one holds an expired lease.
func queryTurns(ctx context.Context, q pgx.Tx, threadID string) ([]session.Turn, bool, error) {
	return queryTurnsWhere(ctx, q, threadID, "")
}

// queryTurnsWhere is queryTurns of the turns that also match and (a
// constant condition such as "AND status = 'queued'", never input).
func queryTurnsWhere(ctx context.Context, q pgx.Tx, threadID, and string) ([]session.Turn, bool, error) {
	rows, err := q.Query(ctx, `SELECT `+turnColumns+` FROM turns WHERE thread = $1 `+and+` ORDER BY seq`, threadID)
	if err != nil {
		return nil, false, fmt.Errorf("pgstore: turns of %s: %w", threadID, err)
	}
	defer rows.Close()
	var out []session.Turn
	anyExpired := false
	for rows.Next() {
		t := session.Turn{ThreadID: threadID}
		var usage []byte
		var input string
		var started int64
		var ended *int64
		var pause, state *string
		var expired bool
		var output, spec string
		if err := rows.Scan(&t.ID, &t.Seq, &t.Status, &t.StopReason, &t.Answer, &t.Error, &usage, &t.Cost, &t.Rounds, &t.SettlementRounds, &t.ToolSteps,
			&input, &started, &ended, &pause, &state, &expired, &output, &spec); err != nil {
			return nil, false, fmt.Errorf("pgstore: turns of %s: %w", threadID, err)
		}
		if t.OutputSpec, err = record.ParseOutputSpec(t.ID, spec); err != nil {
			return nil, false, fmt.Errorf("pgstore: %w", err)
		}
		if output != "" {
			t.Output = json.RawMessage(output)
		}
		anyExpired = anyExpired || expired
		t.Started = time.Unix(0, started)
		if ended != nil {
			t.Ended = time.Unix(0, *ended)
		}
		if err := json.Unmarshal(usage, &t.Usage); err != nil {
			return nil, false, fmt.Errorf("pgstore: turn %s usage: %w", t.ID, err)
		}
		if input != "[]" && input != "" {
			if err := json.Unmarshal([]byte(input), &t.Input); err != nil {
				return nil, false, fmt.Errorf("pgstore: turn %s input: %w", t.ID, err)
			}
		}
		if pause != nil {
			t.Pause = new(record.Pause)
			if err := json.Unmarshal([]byte(*pause), t.Pause); err != nil {
				return nil, false, fmt.Errorf("pgstore: turn %s pause: %w", t.ID, err)
			}
		}
		if state != nil {
			if !json.Valid([]byte(*state)) {
				return nil, false, fmt.Errorf("pgstore: thread %s: the paused turn %s's stored state is not JSON, so nothing can resume it", threadID, t.ID)
			}
			t.State = json.RawMessage(*state)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("pgstore: turns of %s: %w", threadID, err)
	}
	return out, anyExpired, nil
}

// queryItems reads items in history order; where filters them.
func queryItems(ctx context.Context, q pgx.Tx, where string, args ...any) ([]llm.Item, error) {
	rows, err := q.Query(ctx, `SELECT id, turn, role, origin, parts FROM items `+where+` ORDER BY seq`, args...)
	if err != nil {
		return nil, fmt.Errorf("pgstore: items: %w", err)
	}
	defer rows.Close()
	var out []llm.Item
	for rows.Next() {
		var it llm.Item
		var role, origin, parts string
		if err := rows.Scan(&it.ID, &it.TurnID, &role, &origin, &parts); err != nil {
			return nil, fmt.Errorf("pgstore: items: %w", err)
		}
		if it.Role, err = llm.ParseRole(role); err != nil {
			return nil, fmt.Errorf("pgstore: item %s: %w", it.ID, err)
		}
		if it.Origin, err = llm.ParseOrigin(origin); err != nil {
			return nil, fmt.Errorf("pgstore: item %s: %w", it.ID, err)
		}
		if err := json.Unmarshal([]byte(parts), &it.Parts); err != nil {
			return nil, fmt.Errorf("pgstore: item %s: %w", it.ID, err)
		}
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: items: %w", err)
	}
	return slices.Clip(out), nil
}

var _ session.ThreadFinder = (*Store)(nil)
