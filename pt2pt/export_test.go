package pt2pt

// SetGosched replaces the scheduler pass of passScheduler until the
// returned function restores it.
func SetGosched(f func()) (restore func()) {
	old := gosched
	gosched = f
	return func() { gosched = old }
}

// SchedulerEvery is schedulerEvery, for tests.
const SchedulerEvery = schedulerEvery
