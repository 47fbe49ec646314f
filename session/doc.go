// Package session is rein's scheduler (DESIGN §9): threads that last, with
// one running turn per thread and many threads at once.
//
// A [Scheduler] starts turns ([Scheduler.Start]; a turn started while
// another runs is queued, first in first out), adds input to the running
// turn ([Scheduler.Steer]; the input is persisted before the call returns),
// cancels it ([Scheduler.Interrupt]), answers a paused turn so that the same
// turn goes on ([Scheduler.Answer]) and fans a thread's events out to
// several subscribers ([Scheduler.Subscribe]) without ever blocking the turn.
//
// A one-shot client (rein run, rein answer) takes the same path:
// [Scheduler.RunTurn] and [Scheduler.AnswerTurn] start or answer a turn and
// wait for where it stops, interrupting it when the caller gives up, so a
// turn of any door is claimed, journaled, traced, watched and recorded in
// one place.
//
// Persistence is behind the small [Store] interface; [MemStore] keeps
// everything in memory.
package session
