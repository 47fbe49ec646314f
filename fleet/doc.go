// Package fleet has no code of its own: tests that run several rein serve
// processes on one PostgreSQL database and one Redis, as a fleet behind a
// load balancer would, and kill them. They build the rein command and skip
// without PostgreSQL or Redis (or fail under REIN_REQUIRE_SERVICES=1).
package fleet
