// Package security holds no code of its own: its tests attack rein as an
// adversary would — a hostile web page, a hostile model, a hostile
// repository, a careless second process, a full disk — through the real
// rein binary or server, and pin each breach once closed (DESIGN §12).
//
// Run the group alone with `go test ./security/`.
package security
