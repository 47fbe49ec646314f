package server

import (
	"bufio"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
)

// Named tokens. A server may take, besides its one token (the admin, who
// sees every thread), tokens with names: a team sharing one server. A
// connection signed in with a named token sees only the threads it created
// (their record keeps the name, record.Thread.Owner): thread/list lists
// only those, and every method naming another thread answers as for a
// thread that does not exist, so ids cannot be probed.

// NamedToken is one of Config.NamedTokens.
type NamedToken struct {
	// Name owns the threads the token creates: letters, digits, '.', '_'
	// and '-', at most 64 bytes.
	Name string
	// Token is the secret a client sends, as the admin token is sent.
	Token string
	// KnowledgeBases, when not nil, are the only knowledge bases the
	// token's threads may attach (none when empty): initialize,
	// knowledge/list and thread/start know no other, and name no other in
	// an error. nil grants every base of the server, as every model and
	// workspace the server allows. The server's own --kb bases are every
	// thread's regardless.
	KnowledgeBases []string
}

// Limits of named tokens.
const (
	// MaxNamedTokens bounds the named tokens of one server.
	MaxNamedTokens = 1024
	// minTokenLen is the shortest secret a named token may be.
	minTokenLen = 16
	// maxTokenLen bounds a token (it travels in a header).
	maxTokenLen = 1024
	// maxTokenFile bounds a token file.
	maxTokenFile = 1 << 20
	// maxGrantedKBs bounds the knowledge bases one token is granted, and
	// maxKBName each one's name.
	maxGrantedKBs = 256
	maxKBName     = 128
)

var tokenName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// CheckNamedTokens reports what is wrong with tokens: a bad or repeated
// name, a short or repeated secret, or one equal to the admin token. The
// message never holds a secret.
func CheckNamedTokens(admin string, tokens []NamedToken) error {
	if len(tokens) > MaxNamedTokens {
		return fmt.Errorf("server: %d named tokens; give at most %d", len(tokens), MaxNamedTokens)
	}
	names := make(map[string]bool, len(tokens))
	secrets := make(map[string]bool, len(tokens))
	for i, t := range tokens {
		if !tokenName.MatchString(t.Name) {
			return fmt.Errorf("server: named token %d: the name %q is not 1 to 64 letters, digits, '.', '_' or '-'", i+1, clip(t.Name))
		}
		if names[t.Name] {
			return fmt.Errorf("server: the token name %q is given twice; give each name once", t.Name)
		}
		if len(t.Token) < minTokenLen || len(t.Token) > maxTokenLen {
			return fmt.Errorf("server: the token of %q must be %d to %d bytes long (openssl rand -hex 32 makes one)", t.Name, minTokenLen, maxTokenLen)
		}
		if strings.TrimSpace(t.Token) != t.Token || strings.ContainsAny(t.Token, "\r\n") {
			return fmt.Errorf("server: the token of %q has spaces around it or a line break in it", t.Name)
		}
		if secrets[t.Token] || t.Token == admin {
			return fmt.Errorf("server: the token of %q is also another token's; give each its own", t.Name)
		}
		if len(t.KnowledgeBases) > maxGrantedKBs {
			return fmt.Errorf("server: the token %q is granted %d knowledge bases; grant at most %d", t.Name, len(t.KnowledgeBases), maxGrantedKBs)
		}
		for _, kb := range t.KnowledgeBases {
			if kb == "" || len(kb) > maxKBName || strings.ContainsAny(kb, ", \t\r\n") {
				return fmt.Errorf("server: the token %q is granted the knowledge base %q: give names of 1 to %d bytes without commas or spaces", t.Name, clip(kb), maxKBName)
			}
		}
		names[t.Name], secrets[t.Token] = true, true
	}
	return nil
}

// ReadNamedTokens reads a token file: one NAME=TOKEN a line, optionally
// followed by kb=BASE,BASE… granting the token those knowledge bases only
// (kb= alone grants none; without kb= the token may attach every base);
// blank lines and lines starting with # are skipped. It reads at most
// 1 MiB and checks what it read (CheckNamedTokens, against the admin
// token). The errors name lines, never secrets.
func ReadNamedTokens(r io.Reader, admin string) ([]NamedToken, error) {
	sc := bufio.NewScanner(io.LimitReader(r, maxTokenFile+1))
	sc.Buffer(make([]byte, 0, 4096), maxTokenLen+128)
	var out []NamedToken
	n, read := 0, 0
	for sc.Scan() {
		n++
		read += len(sc.Bytes()) + 1
		if read > maxTokenFile {
			return nil, fmt.Errorf("server: the token file is over %d bytes", maxTokenFile)
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, tok, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("server: token file line %d is not NAME=TOKEN", n)
		}
		nt := NamedToken{Name: strings.TrimSpace(name), Token: strings.TrimSpace(tok)}
		if fields := strings.Fields(nt.Token); len(fields) > 1 {
			// NAME=TOKEN kb=…: what follows the token grants.
			nt.Token = fields[0]
			for _, f := range fields[1:] {
				list, ok := strings.CutPrefix(f, "kb=")
				if !ok || nt.KnowledgeBases != nil {
					return nil, fmt.Errorf("server: token file line %d: after NAME=TOKEN only one kb=BASE,… may follow", n)
				}
				nt.KnowledgeBases = []string{}
				if list != "" {
					nt.KnowledgeBases = strings.Split(list, ",")
				}
			}
		}
		out = append(out, nt)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("server: token file line %d is longer than %d bytes", n+1, maxTokenLen+128)
		}
		return nil, fmt.Errorf("server: token file: %w", err)
	}
	if err := CheckNamedTokens(admin, out); err != nil {
		return nil, err
	}
	return out, nil
}

// principal is who a connection acts as: the admin (every thread) or a
// named token (its own threads).
type principal struct {
	// name is the named token's name; "" for the admin.
	name string
}

// admin reports whether p sees every thread.
func (p principal) admin() bool { return p.name == "" }

// needsCredentials reports whether a WebSocket must carry credentials: a
// server with a token or named tokens.
func (s *Server) needsCredentials(token string) bool {
	return token != "" || len(s.c.NamedTokens) > 0
}

// whoseToken returns who got is the token of: the admin token, then each
// named token, every comparison in constant time.
func (s *Server) whoseToken(got, admin string) (principal, bool) {
	if got == "" {
		return principal{}, false
	}
	found, who := false, principal{}
	if admin != "" && subtle.ConstantTimeCompare([]byte(got), []byte(admin)) == 1 {
		found = true
	}
	for _, t := range s.c.NamedTokens {
		if subtle.ConstantTimeCompare([]byte(got), []byte(t.Token)) == 1 && !found {
			found, who = true, principal{name: t.Name}
		}
	}
	return who, found
}

// authenticate returns who r's credentials name: the bearer token in the
// Authorization header or a subprotocol, or a live session cookie.
func (s *Server) authenticate(r *http.Request, admin string) (principal, bool) {
	if got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if who, ok := s.whoseToken(got, admin); ok {
			return who, true
		}
	}
	if t, ok := subprotocolToken(r); ok {
		if who, ok := s.whoseToken(t, admin); ok {
			return who, true
		}
	}
	if c, err := r.Cookie(cookieName(r)); err == nil {
		return s.signins.valid(c.Value)
	}
	return principal{}, false
}
