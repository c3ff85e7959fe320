// Package trace records a rank's timeline in the Chrome trace event format
// (the JSON Perfetto and chrome://tracing open): one complete ("X") event
// per operation, with its start and duration in microseconds, pid the rank
// and tid the goroutine or stream that ran it.
//
// Events are kept in memory and written whole (WriteFile), so the file is
// valid JSON whichever exit path writes it; past MaxEvents, events are
// counted and dropped rather than growing without bound.
//
// Layer: a leaf (standard library only).
package trace
